#!/usr/bin/env bash
# t-interop-curator.sh - TAP tests: zkr's mutex and Apache Curator's
# InterProcessMutex share one lock (same node layout, same queue), as do
# the read-write locks, the semaphores, zkr's latch and Curator's
# LeaderLatch, and zkr's selector and Curator's LeaderSelector, against a
# real standalone server. The Curator side is test/CuratorLock.java, compiled
# here against Debian's jars (libcurator-recipes-java and friends); the zkr
# side is test/lockworker. python3-kazoo (Debian's /usr/bin/python3) counts
# the children of the lock paths.
#
# Meant to run under test/with-zk (ZKR_SANDBOX, ZKR_SANDBOX_DIR set); without
# it, uses ../scripts/zk-sandbox and a private mktemp directory.
# Skips when java, javac, the jars, kazoo or lockworker are missing, unless
# ZKR_TEST_NO_SKIP=1 (then: Bail out!, exit 1).

# shellcheck disable=SC2317  # functions run from traps

set -u
TESTLIB_NEEDS="worker kazoo javac"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
src=$here/CuratorLock.java
[ -f "$src" ] || skip_all "$src is missing"
curator_classpath
d=$ZKR_SANDBOX_DIR/interop
mkdir -p "$d" || exit 99

pids=() # contenders this script started, not yet reaped
forget() { # forget PID
	local p rest=()
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || rest+=("$p")
	done
	pids=("${rest[@]}")
}
t_start=$SECONDS

# finish PID SECONDS: wait up to SECONDS for PID to end; returns its exit
# status, or 124 after killing it
finish() {
	local i rc
	for ((i = 0; i < $2 * 20; i++)); do
		pid_gone "$1" && break
		sleep 0.05
	done
	if ! pid_gone "$1"; then
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		forget "$1"
		return 124
	fi
	wait "$1"
	rc=$?
	forget "$1"
	return $rc
}

# stop PID: end a holder this script started (SIGTERM), reap it
stop() {
	kill -TERM "$1" 2>/dev/null
	finish "$1" 5 >/dev/null
	return 0
}

# wait_line FILE REGEX [SECONDS]: until a line of FILE matches REGEX (grep -E)
wait_line() {
	local i limit=$((${3:-10} * 20))
	for ((i = 0; i < limit; i++)); do
		grep -aEq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# The contenders. Both exec, so that $! is the pid they log.
jopts=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto)
cur() { exec java "${jopts[@]}" -cp "$d/classes:$cp" CuratorLock --servers "$servers" "$@"; }
zkr() { exec "$worker" --servers "$servers" "$@"; }

# kz CMD PATH ARGS...: the kazoo helper (count, names, wait-count, set)
cat >"$d/zk.py" <<'EOF'
import logging, sys, time
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

cmd, hosts, path = sys.argv[1], sys.argv[2], sys.argv[3]
args = sys.argv[4:]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=10)

def kids():
    try:
        return zk.get_children(path)
    except NoNodeError:
        return []

rc = 0
if cmd == "count":  # count PATH: number of children (0 if PATH is gone)
    print(len(kids()))
elif cmd == "names":  # names PATH: the children in sequence order
    for k in sorted(kids(), key=lambda k: int(k[-10:])):
        print(k)
elif cmd == "wait-count":  # wait-count PATH N SECONDS: until exactly N
    want, end = int(args[0]), time.time() + float(args[1])
    while len(kids()) != want:
        if time.time() > end:
            rc = 1
            break
        time.sleep(0.02)
    print(len(kids()))
elif cmd == "set":  # set NODE DATA
    zk.set(path, args[0].encode())
zk.stop()
zk.close()
sys.exit(rc)
EOF
kz() { timeout 30 "$py" "$d/zk.py" "$1" "$servers" "${@:2}" 2>>"$d/kz.err"; }

# watched NODE [SECONDS]: some session has a data watch on NODE (wchp)
watched() {
	local i
	for ((i = 0; i < ${2:-2} * 20; i++)); do
		sb 4lw 1 wchp 2>/dev/null | grep -qxF -- "$1" && return 0
		sleep 0.05
	done
	return 1
}

# check_log FILE: ACQ/REL lines strictly alternate, each REL by the pid of
# the ACQ before it (no two holders at once), fencing tokens grow; prints
# "ok PIDS..." (the pids in acquisition order) or "bad REASON"
check_log() {
	awk '
	$1 == "ACQ" {
		if (holder != "") { print "bad ACQ by " $2 " while " holder " holds (line " NR ")"; bad = 1; exit }
		if (n > 0 && $4 + 0 <= last + 0) { print "bad token " $4 " after " last " (line " NR ")"; bad = 1; exit }
		holder = $2; last = $4; order = order " " $2; n++
	}
	$1 == "REL" {
		if (holder != $2) { print "bad REL by " $2 " while holder is \"" holder "\" (line " NR ")"; bad = 1; exit }
		holder = ""
	}
	END { if (!bad) print "ok" order }' "$1"
}

echo "1..49"

# ---------------------------------------------------------------- set-up
t0=$SECONDS
mkdir -p "$d/classes"
javac -nowarn -d "$d/classes" -cp "$cp" "$src" 2>"$d/javac.err"
rc=$?
ok $rc "CuratorLock.java compiles ($((SECONDS - t0)) s)"
if [ $rc -ne 0 ]; then
	diag "$(grep -v 'bad path element' "$d/javac.err")"
	echo "Bail out! CuratorLock.java does not compile"
	exit 1
fi

servers=$(sb start 2>"$d/start.err")
rc=$?
ok $rc "standalone server starts ($servers)"
if [ $rc -ne 0 ]; then
	diag "$(cat "$d/start.err")"
	echo "Bail out! no server"
	exit 1
fi

# ------------------------------------------- a zkr holder blocks Curator
L=/interop/held-by-zkr
zkr --path "$L" --hold-forever >"$d/zh.out" 2>"$d/zh.err" &
zh=$!
pids+=("$zh")
wait_line "$d/zh.out" '^HELD ' 10
ok $? "zkr holder (lockworker --hold-forever) holds $L"
zh_node=$(awk '$1 == "HELD" { print $2; exit }' "$d/zh.out")

# A Curator acquirer with a 6 s timeout (room for a loaded machine) queues
# behind it, and a zkr waiter
# behind that one. Then a setData on the holder's node (what Curator's
# Revoker.attemptRevoke writes) fires the Curator waiter's data watch:
# Curator must look again, find the holder still there and watch it again,
# not take the lock.
cur --path "$L" --timeout-ms 6000 >"$d/ca.out" 2>"$d/ca.err" &
ca=$!
pids+=("$ca")
zw=
if [ "$(kz wait-count "$L" 2 10)" = 2 ]; then
	zkr --path "$L" --log "$d/zw.log" >"$d/zw.out" 2>"$d/zw.err" &
	zw=$!
	pids+=("$zw")
fi
[ -n "$zw" ] && [ "$(kz wait-count "$L" 3 5)" = 3 ] && watched "$zh_node" 5 &&
	kz set "$zh_node" __REVOKE__ && watched "$zh_node" 5 &&
	[ "$(kz count "$L")" = 3 ] && ! pid_gone "$ca"
ok $? "a setData on the zkr holder's node wakes the queued Curator waiter, which watches it again and stays queued"

finish "$ca" 15
rc=$?
[ $rc -eq 1 ] && grep -q 'timed out' "$d/ca.err" &&
	[ "$(kz wait-count "$L" 2 3)" = 2 ] && ! pid_gone "$zh" &&
	! grep -q LOST "$d/zh.out"
ok $? "Curator's acquire times out (exit $rc) while zkr holds, and removes its node"

# The zkr waiter's predecessor (the Curator node) left without holding: it
# must go on to watch the holder, not take the lock.
[ -n "$zw" ] && watched "$zh_node" 3 && sleep 0.3 && ! pid_gone "$zw" &&
	[ ! -e "$d/zw.log" ] && [ "$(kz count "$L")" = 2 ]
ok $? "the zkr waiter behind the Curator waiter that gave up moves on to watch the holder, still waiting"
if [ -n "$zw" ]; then stop "$zw"; fi

# ------------------------------------------- a Curator holder blocks zkr
L=/interop/held-by-curator
cur --path "$L" --hold-forever >"$d/ch.out" 2>"$d/ch.err" &
ch=$!
pids+=("$ch")
wait_line "$d/ch.out" '^HELD ' 15
ok $? "Curator holder (CuratorLock --hold-forever) holds $L"
ch_node=$(awk '$1 == "HELD" { print $2; exit }' "$d/ch.out")

t0=$(date +%s%N)
zkr --path "$L" --timeout-ms 500 >"$d/za.out" 2>"$d/za.err" &
za=$!
pids+=("$za")
finish "$za" 10
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -eq 1 ] && [ "$(kz wait-count "$L" 1 3)" = 1 ] && ! pid_gone "$ch" &&
	! grep -q LOST "$d/ch.out"
ok $? "lockworker --timeout-ms 500 fails (exit $rc after $ms ms) while Curator holds, and removes its node"

# The same setData (Curator's revocation writes one), now on the Curator
# holder's node, with a zkr waiter behind it: a changed predecessor is
# looked at again, never taken for a release.
zkr --path "$L" --timeout-ms 1500 --log "$d/rv.log" >"$d/zr.out" 2>"$d/zr.err" &
zr=$!
pids+=("$zr")
revoked=0
if [ "$(kz wait-count "$L" 2 5)" = 2 ] && watched "$ch_node" 2; then
	kz set "$ch_node" __REVOKE__ && revoked=1
fi
finish "$zr" 10
rc=$?
[ $revoked = 1 ] && [ $rc -eq 1 ] && ! grep -q '^ACQ' "$d/rv.log" 2>/dev/null && ! pid_gone "$ch"
ok $? "a setData on the Curator holder's node does not let a zkr waiter in (exit $rc)"

stop "$zh"
stop "$ch"

# ------------------------------------------- FIFO across implementations
# A zkr holder; behind it Curator, zkr, Curator, zkr waiters, each queued
# only once the one before has its node. The Curator JVMs start first and
# queue on cue (--wait-file), so JVM start-up stays out of the way.
L=/interop/fifo
log=$d/fifo.log
res=$d/fifo.res
common=(--path "$L" --log "$log" --resource "$res" --hold-ms 50)
cur "${common[@]}" --wait-file "$d/go.c1" >"$d/c1.out" 2>"$d/c1.err" &
c1=$!
cur "${common[@]}" --wait-file "$d/go.c2" >"$d/c2.out" 2>"$d/c2.err" &
c2=$!
pids+=("$c1" "$c2")
zkr --path "$L" --hold-forever --session-ms 2000 >"$d/fh.out" 2>"$d/fh.err" &
fh=$!
pids+=("$fh")
queued=0
if wait_line "$d/fh.out" '^HELD ' 10; then
	touch "$d/go.c1"
	if [ "$(kz wait-count "$L" 2 15)" = 2 ]; then
		zkr "${common[@]}" >"$d/z1.out" 2>"$d/z1.err" &
		z1=$!
		pids+=("$z1")
		if [ "$(kz wait-count "$L" 3 10)" = 3 ]; then
			touch "$d/go.c2"
			if [ "$(kz wait-count "$L" 4 15)" = 4 ]; then
				zkr "${common[@]}" >"$d/z2.out" 2>"$d/z2.err" &
				z2=$!
				pids+=("$z2")
				[ "$(kz wait-count "$L" 5 10)" = 5 ] && queued=1
			fi
		fi
	fi
fi
[ $queued = 1 ] && [ ! -e "$log" ]
ok $? "zkr holder, then Curator, zkr, Curator, zkr waiters queue one by one behind it"
expect="${c1:-} ${z1:-} ${c2:-} ${z2:-}"

# Release the holder: killed, its node goes when its session expires (2 s).
t0=$SECONDS
kill -TERM "$fh" 2>/dev/null
fails=
for p in $expect; do
	finish "$p" 20 || fails="$fails $p"
done
stop "$fh"
[ -z "$fails" ] && [ $queued = 1 ]
ok $? "after the holder's session ends, all four waiters finish with exit 0 ($((SECONDS - t0)) s)${fails:+; failed:$fails}"

got=$(check_log "$log")
[ "$got" = "ok $expect" ] && [ ! -e "$res.holder" ]
ok $? "they acquired in queue order, one at a time (expected: $expect; log: $got)"

# ------------------------------------------- mixed contention
L=/interop/mixed
log=$d/mixed.log
res=$d/mixed.res
common=(--path "$L" --log "$log" --resource "$res" --iterations 20 --hold-ms 5)
mixed=()
for i in 1 2 3; do
	cur "${common[@]}" --wait-file "$d/go.mixed" >"$d/mc$i.out" 2>"$d/mc$i.err" &
	mixed+=($!)
	pids+=($!)
done
# the JVMs connected, then all go; zkr joins once Curator holds
for i in 1 2 3; do wait_line "$d/mc$i.out" '^READY' 15; done
t0=$SECONDS
touch "$d/go.mixed"
wait_line "$log" '^ACQ' 10
for i in 1 2 3; do
	zkr "${common[@]}" >"$d/mz$i.out" 2>"$d/mz$i.err" &
	mixed+=($!)
	pids+=($!)
done
codes=
bad=0
for p in "${mixed[@]}"; do
	finish "$p" 40
	rc=$?
	codes="$codes $rc"
	[ $rc -eq 0 ] || bad=1
done
ok $bad "3 Curator + 3 zkr contenders x 20 iterations all exit 0 (exits:$codes, $((SECONDS - t0)) s)"

got=$(check_log "$log")
nacq=$(grep -c '^ACQ' "$log" 2>/dev/null)
# handoffs between the implementations (Curator pids are the first three)
cpids=" ${mixed[0]} ${mixed[1]} ${mixed[2]} "
switches=0
prev=
for p in ${got#ok}; do
	case $cpids in *" $p "*) k=c ;; *) k=z ;; esac
	[ -n "$prev" ] && [ "$k" != "$prev" ] && switches=$((switches + 1))
	prev=$k
done
[ "${got%% *}" = ok ] && [ "$nacq" = 120 ] && [ ! -e "$res.holder" ] &&
	[ $switches -gt 0 ]
ok $? "120 acquisitions ($nacq), never two holders, fencing tokens grow (${got%% *}; $switches Curator<->zkr handoffs)"
if [ "${got%% *}" != ok ]; then diag "$got"; fi

[ "$(kz wait-count "$L" 0 5)" = 0 ]
ok $? "no child node left under $L"

# ------------------------------------------- a zkr release wakes Curator
# zkr releases with a multi {setData "", delete}: the Curator waiter's data
# watch fires with NodeDataChanged (not NodeDeleted); Curator must list the
# children again and take the lock.
L=/interop/zkr-wakes-curator
log=$d/zc.log
cur --path "$L" --log "$log" --wait-file "$d/go.zc" >"$d/zc-c.out" 2>"$d/zc-c.err" &
zc_c=$!
pids+=("$zc_c")
# the holder releases on cue (no hold time to outlast a slow JVM)
zkr --path "$L" --log "$log" --hold-ms 0 --release-file "$d/rel.zc" >"$d/zc-z.out" 2>"$d/zc-z.err" &
zc_z=$!
pids+=("$zc_z")
node=
if wait_line "$log" '^ACQ' 10; then
	node=$(kz names "$L" | head -n 1)
	touch "$d/go.zc"
fi
[ -n "$node" ] && [ "$(kz wait-count "$L" 2 10)" = 2 ] && watched "$L/$node" 10 &&
	! grep -q '^REL' "$log"
ok $? "a Curator waiter queues behind a zkr holder, with a data watch on the holder's node"
touch "$d/rel.zc"

finish "$zc_z" 10
rz=$?
finish "$zc_c" 10
rc=$?
# the Curator ACQ after the zkr REL, and how long after
lag=$(awk -v c="$zc_c" -v z="$zc_z" '
	$1 == "REL" && $2 == z { rel = $5 }
	$1 == "ACQ" && $2 == c && rel != "" { print $5 - rel; exit }' "$log")
[ $rz -eq 0 ] && [ $rc -eq 0 ] && [ "$(check_log "$log")" = "ok $zc_z $zc_c" ] &&
	[ -n "$lag" ] && [ "$lag" -lt 10000 ] # a bound, not a speed claim (loaded CI)
ok $? "zkr's release wakes the Curator waiter, which acquires ${lag:-?} ms after it (exits $rz $rc)"

# ------------------------------------------- a Curator release wakes zkr
L=/interop/curator-wakes-zkr
log=$d/cz.log
cur --path "$L" --log "$log" --hold-ms 0 --release-file "$d/rel.cz" >"$d/cz-c.out" 2>"$d/cz-c.err" &
cz_c=$!
pids+=("$cz_c")
cz_z=
if wait_line "$log" '^ACQ' 15; then
	node=$(kz names "$L" | head -n 1)
	zkr --path "$L" --log "$log" >"$d/cz-z.out" 2>"$d/cz-z.err" &
	cz_z=$!
	pids+=("$cz_z")
fi
[ -n "$cz_z" ] && [ "$(kz wait-count "$L" 2 10)" = 2 ] && watched "$L/$node" 10 &&
	! grep -q '^REL' "$log"
ok $? "a zkr waiter queues behind a Curator holder, watching the holder's node"
touch "$d/rel.cz"

finish "$cz_c" 10
rc=$?
rz=124
if [ -n "$cz_z" ]; then
	finish "$cz_z" 10
	rz=$?
fi
lag=$(awk -v c="$cz_c" -v z="$cz_z" '
	$1 == "REL" && $2 == c { rel = $5 }
	$1 == "ACQ" && $2 == z && rel != "" { print $5 - rel; exit }' "$log")
[ $rz -eq 0 ] && [ $rc -eq 0 ] && [ "$(check_log "$log")" = "ok $cz_c $cz_z" ] &&
	[ -n "$lag" ] && [ "$lag" -lt 10000 ] # a bound, not a speed claim (loaded CI)
ok $? "Curator's release (delete) wakes the zkr waiter, which acquires ${lag:-?} ms after it (exits $rc $rz)"

[ "$(kz wait-count /interop/zkr-wakes-curator 0 5)" = 0 ] &&
	[ "$(kz wait-count /interop/curator-wakes-zkr 0 5)" = 0 ]
ok $? "no child node left under either lock"

(cur --path "$L-r" --recipe bogus) >/dev/null 2>"$d/recipe.err"
st=$?
[ $st -eq 64 ] && grep -q "unknown recipe 'bogus'" "$d/recipe.err"
ok $? "the Curator fixture refuses an unknown --recipe (exit $st)"

# ------------------------------------------- the read-write lock
# Curator's InterProcessReadWriteLock and zkr's share a path: readers of
# either library hold together, a writer of either excludes everyone.
L=/interop/rwlock
cur --path "$L" --recipe read --hold-forever --session-ms 2000 >"$d/cr.out" 2>"$d/cr.err" &
cr=$!
pids+=("$cr")
wait_line "$d/cr.out" '^HELD ' 15
ok $? "a Curator reader holds $L ($(awk '$1 == "HELD" {print $2; exit}' "$d/cr.out" | sed 's|.*/||'))"
(zkr --path "$L" --recipe read --timeout-ms 5000) >/dev/null 2>"$d/zr.err"
r1=$?
(zkr --path "$L" --recipe write --timeout-ms 500) >/dev/null 2>"$d/zw2.err"
r2=$?
[ $r1 -eq 0 ] && [ $r2 -eq 1 ] && [ "$(kz wait-count "$L" 1 5)" = 1 ]
ok $? "beside it a zkr reader holds (exit $r1) and a zkr writer times out (exit $r2), leaving no node"
stop "$cr"
[ "$(kz wait-count "$L" 0 15)" = 0 ]
ok $? "the Curator reader's node goes with its session"

zkr --path "$L" --recipe read --hold-forever --session-ms 2000 >"$d/zr2.out" 2>"$d/zr2.err" &
zr=$!
pids+=("$zr")
wait_line "$d/zr2.out" '^HELD ' 10
ok $? "a zkr reader holds $L"
(cur --path "$L" --recipe read --timeout-ms 5000) >/dev/null 2>"$d/cr2.err"
r1=$?
(cur --path "$L" --recipe write --timeout-ms 500) >/dev/null 2>"$d/cw2.err"
r2=$?
[ $r1 -eq 0 ] && [ $r2 -eq 1 ] && [ "$(kz wait-count "$L" 1 5)" = 1 ]
ok $? "beside it a Curator reader holds (exit $r1) and a Curator writer times out (exit $r2), leaving no node"
stop "$zr"
[ "$(kz wait-count "$L" 0 15)" = 0 ]
ok $? "the zkr reader's node goes with its session"

# Mixed: 3 zkr and 3 Curator processes, each operation a read with
# probability 0.8, on one resource with an overlap check on both sides.
: >"$d/rw.log"
rws=()
for i in 1 2 3; do
	zkr --path "$L" --recipe mixed --iterations 15 --hold-ms 5 \
		--log "$d/rw.log" --resource "$d/rw.res" --timeout-ms 60000 2>>"$d/rw.err" &
	rws+=($!)
	pids+=($!)
	cur --path "$L" --recipe mixed --iterations 15 --hold-ms 5 \
		--log "$d/rw.log" --resource "$d/rw.res" --timeout-ms 60000 2>>"$d/rw.err" &
	rws+=($!)
	pids+=($!)
done
bad=0
for p in "${rws[@]}"; do
	finish "$p" 120 || bad=$((bad + 1))
done
acq=$(grep -c '^ACQ' "$d/rw.log")
maxin=$(awk '$1 == "ACQ" && $6 == "R" && $7 > m {m = $7} END {print m + 0}' "$d/rw.log")
[ $bad -eq 0 ] && [ "$acq" = 90 ] && [ "$(kz wait-count "$L" 0 10)" = 0 ]
ok $? "6 mixed processes (3 zkr, 3 Curator): 90 acquisitions, no overlap seen by either side, at most $maxin readers inside at once, no node left"
[ $bad -eq 0 ] || diag "$(sort "$d/rw.err" | uniq -c | head -5)"

# ------------------------------------------- the counting semaphore
# Curator's InterProcessSemaphoreV2 and zkr's semaphore share a path: one
# admission mutex (PATH/locks), one set of lease nodes (PATH/leases), every
# lease node counted by both.
# sem_in_order LOG A B: A's first ACQ comes before B's, both present
sem_in_order() {
	awk -v a="$2" -v b="$3" '$1 == "ACQ" && $2 == a && !ia { ia = NR }
		$1 == "ACQ" && $2 == b && !ib { ib = NR }
		END { exit !(ia && ib && ia < ib) }' "$1"
}
S=/interop/sem-zkr-held
zkr --path "$S" --recipe semaphore --permits 2 --hold-forever >"$d/sz1.out" 2>"$d/sz1.err" &
sz1=$!
zkr --path "$S" --recipe semaphore --permits 2 --hold-forever >"$d/sz2.out" 2>"$d/sz2.err" &
sz2=$!
pids+=("$sz1" "$sz2")
wait_line "$d/sz1.out" '^HELD ' 10 && wait_line "$d/sz2.out" '^HELD ' 10
ok $? "two zkr holders take both leases of $S (limit 2)"
(cur --path "$S" --recipe semaphore --permits 2 --timeout-ms 1500) >/dev/null 2>"$d/sc1.err"
r1=$?
[ $r1 -eq 1 ] && grep -q 'timed out' "$d/sc1.err" &&
	[ "$(kz wait-count "$S/leases" 2 5)" = 2 ] && [ "$(kz wait-count "$S/locks" 0 5)" = 0 ]
ok $? "Curator, limit 2, counts zkr's two lease nodes as leases: it times out (exit $r1), leaving no node"
(cur --path "$S" --recipe semaphore --permits 3 --timeout-ms 10000) >/dev/null 2>"$d/sc2.err"
r2=$?
[ $r2 -eq 0 ] && ! grep -q LOST "$d/sz1.out" "$d/sz2.out"
ok $? "Curator, limit 3, gets a third lease beside them (exit $r2): it counted exactly two"
stop "$sz1"
stop "$sz2"

S=/interop/sem-curator-held
cur --path "$S" --recipe semaphore --permits 2 --hold-forever >"$d/sc3.out" 2>"$d/sc3.err" &
sc3=$!
cur --path "$S" --recipe semaphore --permits 2 --hold-forever >"$d/sc4.out" 2>"$d/sc4.err" &
sc4=$!
pids+=("$sc3" "$sc4")
wait_line "$d/sc3.out" '^HELD ' 20 && wait_line "$d/sc4.out" '^HELD ' 20
ok $? "two Curator holders take both leases of $S (limit 2)"
(zkr --path "$S" --recipe semaphore --permits 2 --timeout-ms 1000) >/dev/null 2>"$d/sz3.err"
r1=$?
[ $r1 -eq 1 ] && [ "$(kz wait-count "$S/leases" 2 5)" = 2 ] && [ "$(kz wait-count "$S/locks" 0 5)" = 0 ]
ok $? "zkr, limit 2, counts Curator's two lease nodes as leases: it times out (exit $r1), leaving no node"
(zkr --path "$S" --recipe semaphore --permits 3 --timeout-ms 10000) >/dev/null 2>"$d/sz4.err"
r2=$?
[ $r2 -eq 0 ] && ! grep -q LOST "$d/sc3.out" "$d/sc4.out"
ok $? "zkr, limit 3, gets a third lease beside them (exit $r2): it counted exactly two"
stop "$sc3"
stop "$sc4"

# FIFO across implementations: a zkr and a Curator holder fill the limit
# (2); a waiter of one kind is admitted and waits with its lease node, one
# of the other kind queues for the admission mutex behind it; the holder
# of the first kind goes (its session ends): the waiters get in in that
# order. Once with zkr first, once with Curator first.
# sem_fifo NAME FIRST(zkr|cur): sets fifo_ok, fifo_w1, fifo_w2
sem_fifo() {
	local S=/interop/sem-fifo-$1 log=$d/sf-$1.log k=(--recipe semaphore --permits 2)
	local h1 h2 w1 w2 queued=0
	fifo_ok=1 fifo_w1="" fifo_w2=""
	# the holders: the one of the first waiter's kind ends with its session
	if [ "$2" = zkr ]; then
		zkr --path "$S" "${k[@]}" --hold-forever --session-ms 2000 >"$d/sf-$1-h1.out" 2>&1 &
		h1=$!
		cur --path "$S" "${k[@]}" --hold-forever >"$d/sf-$1-h2.out" 2>&1 &
		h2=$!
	else
		cur --path "$S" "${k[@]}" --hold-forever --session-ms 2000 >"$d/sf-$1-h1.out" 2>&1 &
		h1=$!
		zkr --path "$S" "${k[@]}" --hold-forever >"$d/sf-$1-h2.out" 2>&1 &
		h2=$!
	fi
	pids+=("$h1" "$h2")
	# the Curator waiter's JVM starts now and queues on cue
	cur --path "$S" "${k[@]}" --log "$log" --hold-ms 300 --wait-file "$d/go.sf-$1" \
		>"$d/sf-$1-c.out" 2>"$d/sf-$1-c.err" &
	local cw=$!
	pids+=("$cw")
	wait_line "$d/sf-$1-h1.out" '^HELD ' 20 && wait_line "$d/sf-$1-h2.out" '^HELD ' 20 &&
		wait_line "$d/sf-$1-c.out" '^READY' 20 || return
	local zw_start='zkr --path "$S" "${k[@]}" --log "$log" --hold-ms 300 >"$d/sf-$1-z.out" 2>"$d/sf-$1-z.err" &'
	if [ "$2" = zkr ]; then
		eval "$zw_start"
		w1=$! w2=$cw
		pids+=("$w1")
	else
		touch "$d/go.sf-$1"
		w1=$cw
	fi
	# the first waiter is admitted: the third lease node, the only lock node
	if [ "$(kz wait-count "$S/leases" 3 20)" = 3 ] && [ "$(kz wait-count "$S/locks" 1 5)" = 1 ]; then
		if [ "$2" = zkr ]; then
			touch "$d/go.sf-$1"
		else
			eval "$zw_start"
			w2=$!
			pids+=("$w2")
		fi
		# the second queues for the admission mutex and makes no lease node
		[ "$(kz wait-count "$S/locks" 2 20)" = 2 ] && [ "$(kz count "$S/leases")" = 3 ] &&
			[ ! -e "$log" ] && queued=1
	fi
	fifo_w1=$w1 fifo_w2=$w2
	[ $queued = 1 ] || return
	kill -TERM "$h1"
	finish "$w1" 30 && finish "$w2" 30 && sem_in_order "$log" "$w1" "$w2" &&
		! grep -q LOST "$d/sf-$1-h2.out" && fifo_ok=0
	stop "$h1"
	stop "$h2"
}
sem_fifo zc zkr
ok $fifo_ok "zkr and Curator holders fill the limit; a zkr waiter admitted first, a Curator waiter queued behind it: after a release they get in in that order ($fifo_w1 then $fifo_w2)"
[ "$(kz wait-count /interop/sem-fifo-zc/leases 0 15)" = 0 ] && [ "$(kz count /interop/sem-fifo-zc/locks)" = 0 ]
ok $? "no node left under its leases/ or locks/"
sem_fifo cz cur
ok $fifo_ok "the same with a Curator waiter admitted first and a zkr waiter queued behind it ($fifo_w1 then $fifo_w2)"
[ "$(kz wait-count /interop/sem-fifo-cz/leases 0 15)" = 0 ] && [ "$(kz count /interop/sem-fifo-cz/locks)" = 0 ]
ok $? "no node left under its leases/ or locks/"

# Mixed: 3 Curator processes x 40 leases and 3 zkr processes x 15, limit
# 2, on one resource: each holder announces itself and counts those
# inside. The zkr workers start once a Curator worker holds (a JVM starts
# slowly: started together, the zkr workers could be done before any
# Curator one began), and the Curator workers have more to do, so both
# kinds queue through one admission mutex at the same time.
S=/interop/sem-mixed
: >"$d/sm.log"
sms=()
scur=""
for i in 1 2 3; do
	cur --path "$S" --recipe semaphore --permits 2 --iterations 40 --hold-ms 30 \
		--log "$d/sm.log" --resource "$d/sm.res" --timeout-ms 60000 >/dev/null 2>>"$d/sm.err" &
	sms+=($!)
	pids+=($!)
	scur="$scur $!"
done
cur_acq() { # a Curator worker has taken a lease
	local p
	for p in $scur; do grep -q "^ACQ $p " "$d/sm.log" && return 0; done
	return 1
}
wait_for 60 cur_acq || diag "no Curator worker took a lease within 60 s"
szk=" "
for i in 1 2 3; do
	zkr --path "$S" --recipe semaphore --permits 2 --iterations 15 --hold-ms 30 \
		--log "$d/sm.log" --resource "$d/sm.res" --timeout-ms 60000 >/dev/null 2>>"$d/sm.err" &
	sms+=($!)
	pids+=($!)
	szk="$szk$! "
done
t0=$SECONDS
codes=
bad=0
for p in "${sms[@]}"; do
	finish "$p" 120
	rc=$?
	codes="$codes $rc"
	[ $rc -eq 0 ] || bad=1
done
acq=$(grep -c '^ACQ' "$d/sm.log")
[ $bad -eq 0 ] && [ "$acq" = 165 ]
ok $? "3 Curator processes x 40 leases and 3 zkr processes x 15 (limit 2) all exit 0, none seeing more than 2 inside (exits:$codes; $acq acquisitions, $((SECONDS - t0)) s)"
[ $bad -eq 0 ] || diag "$(sort "$d/sm.err" | uniq -c | head -5)"
# the counts the holders saw, and the log's ACQ..REL intervals (each holder
# writes both while it holds): at most 2 deep, and how often a zkr and a
# Curator holder were inside together
maxin=$(awk '$1 == "ACQ" && $7 > m { m = $7 } END { print m + 0 }' "$d/sm.log")
maxrep=$(awk '$1 == "MAX" && $3 > m { m = $3 } END { print m + 0 }' "$d/sm.log")
read -r deep cross < <(awk -v z="$szk" '
	$1 == "ACQ" { if (h[$2]) bad = 1; h[$2] = 1; n++; if (n > m) m = n
		if (n == 2) { k = ""; for (p in h) k = k (index(z, " " p " ") ? "z" : "c"); if (k == "zc" || k == "cz") x++ } }
	$1 == "REL" { if (!h[$2]) bad = 1; delete h[$2]; n-- }
	END { print (bad ? "bad" : m + 0), x + 0 }' "$d/sm.log")
[ "$maxin" = 2 ] && [ "$maxrep" = 2 ] && [ "$deep" = 2 ] && [ "${cross:-0}" -gt 0 ]
ok $? "the limit is reached and never passed, across languages (most inside: $maxin by ACQ lines, $maxrep by the workers, $deep by the log; a zkr and a Curator holder together $cross times)"
[ "$(kz wait-count "$S/leases" 0 10)" = 0 ] && [ "$(kz wait-count "$S/locks" 0 5)" = 0 ] &&
	! ls "$d"/sm.res.lease.* >/dev/null 2>&1
ok $? "no node left under leases/ or locks/, no holder left inside"

# ------------------------------------------- the election
# zkr's latch and Curator's LeaderLatch on one path (latch- nodes), and
# zkr's selector and Curator's LeaderSelector on another (lock- nodes).
# Each term of either side writes ACQ, TOUCH (each after a check that it
# still leads) and REL lines to one log, with the leader's fencing token.
# pass_on NAME RECIPE A B C: participants of kinds A, B, C (zkr or cur)
# queue in that order; A leads until told, then leadership must pass on
# close, A to B to C; sets pass_ok, pass_who ("PID_A PID_B PID_C")
pass_on() {
	local L=/interop/elect-$1 log=$d/el-$1.log r=$2 i k p
	local who=() go=() args
	pass_ok=1 pass_who=
	# the JVMs start first and join on cue
	for i in 0 1 2; do
		k=${*:3+i:1}
		args=(--path "$L" --recipe "$r" --log "$log" --resource "$d/el-$1.res" --hold-ms 200 --end free)
		[ $i = 0 ] && args+=(--release-file "$d/rel.$1")
		if [ "$k" = cur ]; then
			cur "${args[@]}" --wait-file "$d/go.$1.$i" >"$d/el-$1-$i.out" 2>"$d/el-$1-$i.err" &
			who[i]=$!
			pids+=($!)
		fi
	done
	for i in 0 1 2; do
		if [ -n "${who[i]:-}" ]; then wait_line "$d/el-$1-$i.out" '^READY' 20 || return; fi
	done
	for i in 0 1 2; do
		k=${*:3+i:1}
		args=(--path "$L" --recipe "$r" --log "$log" --resource "$d/el-$1.res" --hold-ms 200 --end free)
		[ $i = 0 ] && args+=(--release-file "$d/rel.$1")
		if [ "$k" = cur ]; then
			touch "$d/go.$1.$i"
		else
			zkr "${args[@]}" >"$d/el-$1-$i.out" 2>"$d/el-$1-$i.err" &
			who[i]=$!
			pids+=($!)
		fi
		if [ $i = 0 ]; then
			wait_line "$log" "^ACQ ${who[0]} " 20 || return
		else
			[ "$(kz wait-count "$L" $((i + 1)) 20)" = $((i + 1)) ] || return
		fi
	done
	pass_who="${who[*]}"
	# all queued, A leads and nobody else wrote
	[ "$(grep -c '^ACQ' "$log")" = 1 ] || return
	touch "$d/rel.$1"
	for p in "${who[@]}"; do
		finish "$p" 30 || return
	done
	[ "$(check_log "$log")" = "ok $pass_who" ] && [ ! -e "$d/el-$1.res.holder" ] && pass_ok=0
}
# mixed_terms NAME RECIPE: 2 Curator and 2 zkr participants x 5 terms;
# sets mix_ok, mix_got (check_log's verdict), mix_sw (handoffs between
# the languages), mix_codes
mixed_terms() {
	local L=/interop/elect-mixed-$1 log=$d/em-$1.log ps=() cp2=" " i p rc prev= kk
	: >"$log"
	for i in 1 2; do
		cur --path "$L" --recipe "$2" --log "$log" --resource "$d/em-$1.res" \
			--iterations 5 --hold-ms 30 --timeout-ms 60000 --wait-file "$d/go.em-$1" \
			>"$d/em-$1-c$i.out" 2>>"$d/em-$1.err" &
		ps+=($!)
		pids+=($!)
		cp2="$cp2$! "
	done
	for i in 1 2; do wait_line "$d/em-$1-c$i.out" '^READY' 20; done
	touch "$d/go.em-$1"
	for i in 1 2; do
		zkr --path "$L" --recipe "$2" --log "$log" --resource "$d/em-$1.res" \
			--iterations 5 --hold-ms 30 --timeout-ms 60000 \
			>"$d/em-$1-z$i.out" 2>>"$d/em-$1.err" &
		ps+=($!)
		pids+=($!)
	done
	mix_ok=0 mix_codes= mix_sw=0
	for p in "${ps[@]}"; do
		finish "$p" 90
		rc=$?
		mix_codes="$mix_codes $rc"
		[ $rc -eq 0 ] || mix_ok=1
	done
	mix_got=$(check_log "$log")
	for p in ${mix_got#ok}; do
		case $cp2 in *" $p "*) kk=c ;; *) kk=z ;; esac
		[ -n "$prev" ] && [ "$kk" != "$prev" ] && mix_sw=$((mix_sw + 1))
		prev=$kk
	done
	[ "${mix_got%% *}" = ok ] && [ "$(grep -c '^ACQ' "$log")" = 20 ] &&
		[ ! -e "$d/em-$1.res.holder" ] && [ $mix_sw -gt 0 ] || mix_ok=1
	[ $mix_ok = 0 ] || diag "$(sort "$d/em-$1.err" 2>/dev/null | uniq -c | head -5)"
}

pass_on latch-czc latch cur zkr cur
ok $pass_ok "LeaderLatch, zkr latch, LeaderLatch queue on one path; each close hands leadership to the next, Java to C and back ($pass_who)"
pass_on latch-zcz latch zkr cur zkr
ok $pass_ok "zkr latch, LeaderLatch, zkr latch: from C to Java and back ($pass_who)"
mixed_terms latch latch
ok $mix_ok "2 LeaderLatch + 2 zkr latch processes x 5 terms: one leader at a time, fencing tokens grow (${mix_got%% *}; $mix_sw Java<->C handoffs; exits:$mix_codes)"
[ "$(kz wait-count /interop/elect-latch-czc 0 10)" = 0 ] &&
	[ "$(kz wait-count /interop/elect-latch-zcz 0 10)" = 0 ] &&
	[ "$(kz wait-count /interop/elect-mixed-latch 0 10)" = 0 ]
ok $? "no latch node left"

pass_on sel-czc selector cur zkr cur
ok $pass_ok "LeaderSelector, zkr selector, LeaderSelector queue on one path; each term's end hands leadership to the next, Java to C and back ($pass_who)"
pass_on sel-zcz selector zkr cur zkr
ok $pass_ok "zkr selector, LeaderSelector, zkr selector: from C to Java and back ($pass_who)"
mixed_terms sel selector
ok $mix_ok "2 LeaderSelector (autoRequeue) + 2 zkr selector (requeue) processes x 5 terms: one leader at a time, fencing tokens grow (${mix_got%% *}; $mix_sw Java<->C handoffs; exits:$mix_codes)"
[ "$(kz wait-count /interop/elect-sel-czc 0 10)" = 0 ] &&
	[ "$(kz wait-count /interop/elect-sel-zcz 0 10)" = 0 ] &&
	[ "$(kz wait-count /interop/elect-mixed-sel 0 10)" = 0 ]
ok $? "no selector node left"

diag "took $((SECONDS - t_start)) s"
exit 0
