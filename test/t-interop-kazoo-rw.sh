#!/usr/bin/env bash
# zkr's read-write lock beside kazoo 2.8's (Debian's python3-kazoo), on one
# path, against a real standalone server. kazoo's WriteLock made with
# extra_lock_patterns=["__WRIT__", "__READ__"] and ReadLock made with
# extra_lock_patterns=["__WRIT__"] see zkr's nodes; zkr reads kazoo's
# __rlock__ as a reader and __lock__ as a writer. Also what kazoo 2.8's
# ReadLock bug (python-zk/kazoo #649: a reader waits for the highest writer
# in the queue, even one queued after it) does beside a zkr writer.
# Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start
root="/zkr-test/t-interop-kazoo-rw-$$"
echo "1..12"

# kz KIND PATH TIMEOUT [HOLD-FILE]: take kazoo's lock of KIND (read, write)
# within TIMEOUT seconds; print HELD, keep it until HOLD-FILE exists (or
# release at once), exit 0; exit 1 if it timed out.
cat >"$tmp/kz.py" <<'EOF'
import logging, os, sys, time
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout
hosts, kind, path = sys.argv[1:4]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=10)
if kind == "names":  # the children now, one per line
    for c in sorted(zk.get_children(path) if zk.exists(path) else []):
        print(c)
    zk.stop()
    sys.exit(0)
timeout = sys.argv[4]
hold = sys.argv[5] if len(sys.argv) > 5 else None
if kind == "write":
    lock = zk.WriteLock(path, "kazoo-writer", extra_lock_patterns=["__WRIT__", "__READ__"])
else:
    lock = zk.ReadLock(path, "kazoo-reader", extra_lock_patterns=["__WRIT__"])
try:
    got = lock.acquire(timeout=float(timeout))
except LockTimeout:
    got = False
if not got:
    zk.stop()
    sys.exit(1)
print("HELD", lock.node, flush=True)
while hold and not os.path.exists(hold):
    time.sleep(0.02)
lock.release()
zk.stop()
sys.exit(0)
EOF
kz() { "$py" "$tmp/kz.py" "$hosts" "$@"; }
zkr() { exec "$worker" --servers "$hosts" --session-ms 4000 "$@"; } # (zkr ...) in the foreground

# --- a kazoo writer holds: zkr readers and writers wait ---
L=$root/a
kz write "$L" 10 "$tmp/a.go" >"$tmp/a.out" 2>&1 &
a=$!; pids+=($a)
wait_for 20 grep -q '^HELD' "$tmp/a.out"
ok $? "kazoo's WriteLock holds $L"
(zkr --path "$L" --recipe read --timeout-ms 0 2>/dev/null)
r=$?
(zkr --path "$L" --recipe write --timeout-ms 0 2>/dev/null)
w=$?
[ $r -eq 1 ] && [ $w -eq 1 ]
ok $? "a zkr reader and a zkr writer trying once do not get it (exit $r $w)"
touch "$tmp/a.go"
wait $a
(zkr --path "$L" --recipe read --timeout-ms 5000 2>/dev/null)
ok $? "once it is released, a zkr reader gets it"

# --- a zkr reader holds: a kazoo reader shares, a kazoo writer waits ---
L=$root/b
zkr --path "$L" --recipe read --hold-forever >"$tmp/b.out" 2>&1 &
b=$!; pids+=($b)
wait_for 20 grep -q '^HELD' "$tmp/b.out"
ok $? "a zkr reader holds $L"
kz read "$L" 5
ok $? "kazoo's ReadLock shares it"
kz write "$L" 1
st=$?
[ $st -eq 1 ]
ok $? "kazoo's WriteLock times out (exit $st)"
kill -TERM $b; wait $b 2>/dev/null

# --- a zkr writer holds: kazoo readers and writers wait ---
L=$root/c
zkr --path "$L" --recipe write --hold-forever >"$tmp/c.out" 2>&1 &
c=$!; pids+=($c)
wait_for 20 grep -q '^HELD' "$tmp/c.out"
ok $? "a zkr writer holds $L"
kz read "$L" 1
r=$?
kz write "$L" 1
w=$?
[ $r -eq 1 ] && [ $w -eq 1 ]
ok $? "kazoo's ReadLock and WriteLock time out (exit $r $w)"

# --- kazoo 2.8's ReadLock bug (#649) beside zkr ---
# A writer W1 (kazoo's, released on cue) holds; a kazoo reader K queues;
# a zkr writer W2 queues after K with no deadline to speak of; then W1
# releases. Right: K holds at once, and (K releasing at once) W2 right after
# it. kazoo 2.8's K waits for the highest writer, W2, which waits for K:
# neither moves until W2 gives up, here by being killed (a deadline of its
# own would make the check depend on the machine's load).
kill -TERM $c; wait $c 2>/dev/null
[ "$(children "$L")" = 0 ]
ok $? "the zkr writer's node went with its session"
L=$root/d
kz write "$L" 30 "$tmp/w1.go" >"$tmp/w1.out" 2>&1 &
w1=$!; pids+=($w1)
wait_for 30 grep -q '^HELD' "$tmp/w1.out"
kz read "$L" 600 >"$tmp/k.out" 2>&1 &
k=$!; pids+=($k)
children_reach 60 2 "$L"
(zkr --path "$L" --recipe write --timeout-ms 600000 --log "$tmp/w2.log" 2>"$tmp/w2.err") &
w2=$!; pids+=($w2)
children_reach 60 3 "$L"
queued=$?
[ $queued -eq 0 ] || kz names "$L" | sed 's/^/# node: /'
touch "$tmp/w1.go"
wait $w1
sleep 2
kill -0 $w2 2>/dev/null
w2alive=$?
[ $queued -eq 0 ] && [ $w2alive -eq 0 ] && [ ! -s "$tmp/w2.log" ] && ! grep -q '^HELD' "$tmp/k.out"
st=$?
ok $st "kazoo 2.8's reader and the zkr writer queued after it wait for each other: neither holds 2 s after the first writer left (queued: $queued, writer waiting: $w2alive)"
[ $w2alive -eq 0 ] || sed 's/^/# writer: /' "$tmp/w2.err" | head -n 20
t0=$(date +%s%N)
kill -KILL $w2; wait $w2 2>/dev/null
wait_for 60 grep -q '^HELD' "$tmp/k.out"
ok $? "the kazoo reader holds once the zkr writer is gone ($((($(date +%s%N) - t0) / 1000000)) ms after it was killed, its session expiring; kazoo #649)"
wait $k
[ "$(children "$root/a" "$root/b" "$root/d")" = 0 ]
ok $? "no node left"
