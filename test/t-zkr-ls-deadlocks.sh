#!/usr/bin/env bash
# zkr-ls --deadlocks against a real server: two kazoo clients that each
# hold one lock and wait for the other's (a real deadlock, made by lock
# users that take their locks one by one) are found, with both sessions
# named (exit 3), also after a revocation request overwrote a waiter's
# data (waiters are placed by their session); zkr multi-lock sets in
# opposite orders are not a deadlock (exit 0); zkr-ls shows a set's
# nodes and a revocation request; usage errors exit 64. Runs under
# test/with-zk.
set -u
TESTLIB_NEEDS="kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zls="$builddir/tools/zkr-ls"
zl="$builddir/tools/zkr-lock"
[ -x "$zls" ] || skip "tools/zkr-ls not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-ls-deadlocks-$$"
echo "1..9"

"$zls" --deadlocks --json "$root/a" >/dev/null 2>&1
[ $? -eq 64 ]
ok $? "--deadlocks with --json: exit 64"
"$zls" --deadlocks "$root/a" relative >/dev/null 2>&1
[ $? -eq 64 ]
ok $? "--deadlocks with a relative path: exit 64"
"$zls" --deadlocks "$root/a" "$root/b" >"$tmp/none.out"
st=$?
[ $st -eq 0 ] && grep -q "no wait-for cycle" "$tmp/none.out"
ok $? "nothing queued: exit 0 ($(cat "$tmp/none.out"))"

# two kazoo clients: each holds one lock and waits for the other's
/usr/bin/python3 - "$hosts" "$root" >"$tmp/kz.out" 2>&1 <<'PY' &
import sys, threading, time, logging
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
hosts, root = sys.argv[1], sys.argv[2]
c1 = KazooClient(hosts=hosts); c1.start(timeout=20)
c2 = KazooClient(hosts=hosts); c2.start(timeout=20)
a1, b1 = c1.Lock(root + "/a", "one"), c1.Lock(root + "/b", "one")
a2, b2 = c2.Lock(root + "/a", "two"), c2.Lock(root + "/b", "two")
a1.acquire(); b2.acquire()
threading.Thread(target=lambda: b1.acquire(timeout=20), daemon=True).start()
threading.Thread(target=lambda: a2.acquire(timeout=20), daemon=True).start()
print("deadlocked", flush=True)
time.sleep(20)
PY
k=$!; pids+=($k)
wait_for 20 grep -q deadlocked "$tmp/kz.out"
children_reach 20 2 "$root/a" && children_reach 20 2 "$root/b"
"$zls" --deadlocks "$root/a" "$root/b" >"$tmp/dl.out"
st=$?
[ $st -eq 3 ] && grep -q "deadlock: 2 sessions" "$tmp/dl.out" &&
  [ "$(grep -c 'waits at' "$tmp/dl.out")" -eq 2 ]
ok $? "two clients each holding one lock and waiting for the other's: exit 3 (got $st)"
sed 's/^/# /' "$tmp/dl.out"
# a revocation request on a waiter's node: still placed by its session
w=$("$zls" --json "$root/b" | /usr/bin/python3 -c 'import json,sys; print([c["node"] for c in json.load(sys.stdin)["contenders"] if c["role"] == "waiter"][0])')
/usr/bin/python3 - "$hosts" "$root/b/$w" <<'PY'
import sys, logging
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1]); c.start(timeout=20)
c.set(sys.argv[2], b"__REVOKE__"); c.stop()
PY
"$zls" "$root/b" >"$tmp/rv.out"
grep -q "revocation-requested" "$tmp/rv.out"
ok $? "zkr-ls shows the revocation request in the ID column"
"$zls" --deadlocks "$root/a" "$root/b" >/dev/null
[ $? -eq 3 ]
ok $? "the waiter whose data the request overwrote is still placed: exit 3"
kill $k 2>/dev/null; wait $k 2>/dev/null
children_reach 30 0 "$root/a"

# zkr sets in opposite orders: no cycle
"$zl" --id mine --and "$root/s/y" "$root/s/x" -- sleep 3 &
h=$!; pids+=($h)
children_reach 20 1 "$root/s/x"
"$zl" --and "$root/s/x" "$root/s/y" -- true &
w1=$!; pids+=($w1)
children_reach 20 2 "$root/s/x"
"$zls" --deadlocks "$root/s/x" "$root/s/y" >"$tmp/sets.out"
st=$?
[ $st -eq 0 ]
ok $? "zkr sets taken in opposite orders: no cycle, exit 0 (got $st: $(cat "$tmp/sets.out"))"
"$zls" "$root/s/x" >"$tmp/set.out"
grep -q "mine\[set of 2\]" "$tmp/set.out"
ok $? "zkr-ls shows a set's node with its id and the set's size"
"$zls" --json "$root/s/x" | grep -q '"set":2'
ok $? "and in JSON"
wait $h; wait $w1
