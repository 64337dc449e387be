#!/usr/bin/env bash
# Revocation between zkr and Apache Curator (Debian's
# libcurator-recipes-java), both ways, against a real server: zkr-lock
# --revoke asks a Curator InterProcessMutex holder that called
# makeRevocable(), and it releases; Curator's Revoker.attemptRevoke() asks
# a zkr-lock --revocable holder, whose command gets SIGTERM and which then
# releases; a Curator holder that ignores the request is evicted by
# --grace and the lock passes on. The Curator side is
# test/CuratorRevoke.java, compiled here. Runs under test/with-zk.
set -u
TESTLIB_NEEDS="javac"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
curator_classpath
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-interop-revoke-$$"
echo "1..9"

mkdir -p "$tmp/classes"
javac -nowarn -d "$tmp/classes" -cp "$cp" "$here/CuratorRevoke.java" 2>"$tmp/javac.err"
ok $? "CuratorRevoke.java compiles"
cur() { exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$tmp/classes:$cp" CuratorRevoke "$1" "$hosts" "$2"; }

# --- zkr revokes a revocable Curator holder ---
cur hold "$root/c" >"$tmp/c.out" 2>"$tmp/c.err" &
c=$!; pids+=($c)
wait_for 60 grep -q HELD "$tmp/c.out"
ok $? "a Curator holder that called makeRevocable()"
"$zl" --revoke -t 20 "$root/c" 2>"$tmp/r1.err"
st=$?
[ $st -eq 0 ]
ok $? "zkr-lock --revoke: exit 0, released (got $st: $(head -1 "$tmp/r1.err"))"
wait $c; st=$?
[ $st -eq 0 ] && grep -q REVOKED "$tmp/c.out" && grep -q RELEASED "$tmp/c.out"
ok $? "Curator's listener ran and it released (exit $st: $(tr '\n' ' ' <"$tmp/c.out"))"

# --- Curator revokes a zkr-lock --revocable holder ---
"$zl" --revocable "$root/z" -- sh -c "trap 'echo term >\"$tmp/z.term\"; exit 5' TERM; echo held >'$tmp/z.held'; while :; do sleep 0.1; done" 2>"$tmp/z.err" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/z.held"
(cur revoke "$root/z") >"$tmp/rv.out" 2>"$tmp/rv.err"
st=$?
[ $st -eq 0 ] && grep -q "^ASKED $root/z/" "$tmp/rv.out"
ok $? "Revoker.attemptRevoke() on the zkr holder's node ($(cat "$tmp/rv.out"))"
wait $h; st=$?
[ $st -eq 5 ] && [ -s "$tmp/z.term" ]
ok $? "the zkr holder's command got SIGTERM; zkr-lock exited with its status 5 (got $st)"
children_reach 20 0 "$root/z"
ok $? "and released: no node left"

# --- a Curator holder that does not let go is evicted ---
cur hold "$root/e" >"$tmp/e.out" 2>"$tmp/e.err" &
c=$!; pids+=($c)
wait_for 60 grep -q HELD "$tmp/e.out"
kill -STOP $c # (stopped: its listener cannot run, it does not release)
"$zl" -t 30 "$root/e" -- sh -c "echo ran >'$tmp/e.next'" 2>/dev/null &
w=$!; pids+=($w)
children_reach 20 2 "$root/e"
"$zl" --revoke -t 10 --grace 1 "$root/e" 2>"$tmp/r3.err"
st=$?
[ $st -eq 3 ]
ok $? "--grace 1 evicts the Curator holder that does not release: exit 3 (got $st)"
wait $w; st=$?
[ $st -eq 0 ] && [ -s "$tmp/e.next" ]
ok $? "the zkr waiter behind it ran next (exit $st)"
kill -KILL $c 2>/dev/null
wait $c 2>/dev/null || true
