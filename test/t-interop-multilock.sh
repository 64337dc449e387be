#!/usr/bin/env bash
# zkr's multi-lock beside Apache Curator's InterProcessMultiLock (Debian's
# libcurator-recipes-java), whose users sort their paths: Curator holds one
# lock while it queues for the next, so a zkr set made in between can wait
# for it while it waits for the set. zkr-lock --and --yield-after 2 must
# find that cycle and yield: first a cycle made on purpose, then 20 rounds
# of two Curator multi-locks and two zkr-lock loops over random sets of
# two or three of three paths (a cycle can run through a path a set does
# not take: its search reads its paths' siblings too). Mutual exclusion holds throughout (every
# holder creates a mark file per lock exclusively), every round completes,
# and no wait lasts longer than the threshold plus 15 s. The Curator side
# is test/CuratorMultiLock.java, compiled here. Runs under test/with-zk.
set -u
TESTLIB_NEEDS="javac"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
curator_classpath
zkt_start
root="/zkr-test/t-interop-multilock-$$"
yield=2
rounds=20
echo "1..9"

mkdir -p "$tmp/classes" "$tmp/marks"
javac -nowarn -d "$tmp/classes" -cp "$cp" "$here/CuratorMultiLock.java" 2>"$tmp/javac.err"
ok $? "CuratorMultiLock.java compiles"
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$tmp/classes:$cp" \
	CuratorMultiLock "$hosts" "$root" "$zl" "$tmp/marks" $yield $rounds \
	>"$tmp/out" 2>"$tmp/err"
st=$?
get() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/out"; }
[ $st -eq 0 ]
ok $? "the run ends (exit $st: $(tail -3 "$tmp/err" | tr '\n' ' '))"
limit=$(( (yield + 15) * 1000 ))
fz=$(get FORCED_YIELDS); fc=$(get FORCED_CURATOR_MS); fk=$(get FORCED_ZKR_MS)
[ "${fz:-0}" -ge 1 ] && [ "${fc:--1}" -ge 0 ] && [ "${fk:--1}" -ge 0 ]
ok $? "the cycle made on purpose: the zkr set yielded (yields ${fz:-?}), both completed"
[ "${fc:-99999999}" -le $limit ]
ok $? "Curator's multi-lock waited ${fc:-?} ms in the cycle (at most $limit)"
[ "$(get CURATOR_DONE)" = $((2 * rounds)) ] && [ "$(get ZKR_DONE)" = $((2 * rounds)) ]
ok $? "every round completes: Curator $(get CURATOR_DONE), zkr $(get ZKR_DONE) of $((2 * rounds)) each"
[ "$(get VIOLATIONS)" = 0 ]
ok $? "never two holders of one lock (violations: $(get VIOLATIONS))"
[ "$(get FAILED)" = 0 ]
ok $? "no failed acquisition (failed: $(get FAILED))"
mc=$(get MAX_WAIT_CURATOR_MS); mz=$(get MAX_WAIT_ZKR_MS)
[ "${mc:-99999999}" -le $limit ] && [ "${mz:-99999999}" -le $limit ]
ok $? "no wait over the threshold plus 15 s: Curator ${mc:-?} ms, zkr ${mz:-?} ms (yields in the rounds: $(get YIELDS))"
children_reach 20 0 "$root/p1" "$root/p2" "$root/p3"
ok $? "no node left behind"
