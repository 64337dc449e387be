#!/usr/bin/env bash
# zkr-ls against a real server: the queue of a zkr lock in order (table
# and JSON), Curator's and kazoo's nodes, -r over a tree, bad input and no
# server. Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
[ -x "$zls" ] || skip "tools/zkr-ls not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-ls-$$"
echo "1..16"

"$zls" "$root/none" >"$tmp/none.out"
st=$?
[ $st -eq 0 ] && grep -q "0 contenders" "$tmp/none.out"
ok $? "a lock that does not exist: 0 contenders, exit 0"

# a holder and two waiters, queued in a known order
"$zl" --id first "$root/q" -- sh -c "echo \$\$ >'$tmp/h.pid'; exec sleep 30" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/h.pid"
"$zl" --id "second one" "$root/q" -- true &
w1=$!; pids+=($w1)
wait_for 20 sh -c "'$zls' --json '$root/q' | grep -q '\"position\":2'"
"$zl" --id third "$root/q" -- true &
w2=$!; pids+=($w2)
wait_for 20 sh -c "'$zls' --json '$root/q' | grep -q '\"position\":3'"
ok $? "three contenders queued"

"$zls" "$root/q" >"$tmp/q.out"
ok $? "table listing exits 0"
awk 'NR==1 && /3 contenders/ {a=1} NR==3 && $1==1 && $2=="holder" && $7=="first" {b=1}
     NR==4 && $1==2 && $2=="waiter" && $7=="second" {c=1}
     NR==5 && $1==3 && $2=="waiter" && $7=="third" {d=1} END {exit !(a&&b&&c&&d)}' "$tmp/q.out"
ok $? "table: holder first, then the waiters in queue order, with their ids"

"$zls" --json "$root/q" >"$tmp/q.json"
/usr/bin/python3 - "$tmp/q.json" "$h" "$w1" "$w2" "$(hostname)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
q = d["contenders"]
pids = [int(x) for x in sys.argv[2:5]]
assert [c["position"] for c in q] == [1, 2, 3], q
assert [c["role"] for c in q] == ["holder", "waiter", "waiter"], q
assert [c["id"] for c in q] == ["first", "second one", "third"], q
assert [c["pid"] for c in q] == pids, ([c["pid"] for c in q], pids)
assert all(c["host"] == sys.argv[5] for c in q), q
seqs = [c["seq"] for c in q]
assert seqs == sorted(seqs) and len(set(seqs)) == 3, seqs
toks = [c["token"] for c in q]
assert toks == sorted(toks) and toks[0] > 0, toks
sess = [c["session"] for c in q]
assert len(set(sess)) == 3 and all(s.startswith("0x") for s in sess), sess
assert all(c["node"].endswith("%010d" % c["seq"]) for c in q), q
assert all(c["age_ms"] >= 0 and c["queued_at_ms"] > 0 for c in q), q
assert q[0]["age_ms"] >= q[2]["age_ms"], q
PY
ok $? "JSON: positions, roles, ids, pids, host, ascending seq and tokens, sessions, ages"

# the session shown is the owner's: compare with the server's view
/usr/bin/python3 - "$hosts" "$root/q" "$tmp/q.json" <<'PY'
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
q = json.load(open(sys.argv[3]))["contenders"]
for c in q:
    _, st = zk.get(sys.argv[2] + "/" + c["node"])
    assert int(c["session"], 16) == st.ephemeralOwner, (c, st)
    assert c["token"] == st.czxid, (c, st)
zk.stop()
PY
ok $? "session and token match the nodes' ephemeralOwner and czxid"

kill -TERM "$(cat "$tmp/h.pid")"
wait $h; wait $w1; wait $w2
"$zls" "$root/q" | grep -q "0 contenders"
ok $? "empty once all are done"

# Curator's layout (what InterProcessMutex writes: _c_<uuid>-lock-<seq>,
# data = the client's IP address) and a kazoo Lock, side by side
/usr/bin/python3 - "$hosts" "$root" <<'PY' &
import sys, time, uuid
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
root = sys.argv[2]
zk.create(root + "/curator/_c_%s-lock-" % uuid.uuid4(), b"127.0.0.1",
          ephemeral=True, sequence=True, makepath=True)
lock = zk.Lock(root + "/kazoo", "kazoo-worker")
lock.acquire()

time.sleep(30)
PY
py=$!; pids+=($py)
wait_for 20 sh -c "'$zls' --json '$root/kazoo' | grep -q '\"position\":1'"
"$zls" --json "$root/curator" >"$tmp/c.json"
"$zls" --json "$root/kazoo" >"$tmp/k.json"
/usr/bin/python3 - "$tmp/c.json" "$tmp/k.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["contenders"]
k = json.load(open(sys.argv[2]))["contenders"]
assert len(c) == 1 and c[0]["role"] == "holder" and c[0]["data"] == "127.0.0.1", c
assert "-lock-" in c[0]["node"] and "pid" not in c[0], c
assert len(k) == 1 and k[0]["role"] == "holder" and k[0]["data"] == "kazoo-worker", k
assert "__lock__" in k[0]["node"], k
PY
ok $? "Curator's and kazoo's nodes are listed with their data"
"$zls" "$root/curator" | grep -q "data:127.0.0.1"
ok $? "table shows foreign node data in the ID column"

# -r: every lock under a tree, and nothing else
"$zl" "$root/tree/a" -- sh -c "echo x >'$tmp/ta'; exec sleep 30" &
ta=$!; pids+=($ta)
"$zl" "$root/tree/sub/b" -- sh -c "echo x >'$tmp/tb'; exec sleep 30" &
tb=$!; pids+=($tb)
wait_for 20 test -s "$tmp/ta" -a -s "$tmp/tb"
"$zls" -r "$root/tree" >"$tmp/r.out"
ok $? "-r exits 0"
grep -q "^$root/tree/a: 1 contender" "$tmp/r.out" &&
  grep -q "^$root/tree/sub/b: 1 contender" "$tmp/r.out" &&
  [ "$(grep -c 'contender' "$tmp/r.out")" -eq 2 ]
ok $? "-r lists exactly the two locks in the tree"
"$zls" -r --json "$root" >"$tmp/r.json"
/usr/bin/python3 - "$tmp/r.json" "$root" <<'PY'
import json, sys
locks = json.load(open(sys.argv[1]))["locks"]
paths = sorted(l["path"] for l in locks)
r = sys.argv[2]
assert paths == sorted([r + "/curator", r + "/kazoo", r + "/tree/a",
                        r + "/tree/sub/b"]), paths
PY
ok $? "-r --json from the test root finds zkr's, Curator's and kazoo's locks"
kill $py 2>/dev/null; kill -TERM $ta $tb; wait $ta $tb $py 2>/dev/null

# bad input and no server
"$zls" "no/slash" >/dev/null 2>"$tmp/bad.err"
[ $? -eq 64 ] && grep -q "invalid" "$tmp/bad.err"
ok $? "relative path: exit 64 with a message"
"$zls" "$root//x" >/dev/null 2>&1
ok $(($? == 64 ? 0 : 1)) "path with //: exit 64"
"$zls" --bogus "$root" >/dev/null 2>&1
ok $(($? == 64 ? 0 : 1)) "unknown option: exit 64"
"$zls" -s 127.0.0.1:1 --connect-timeout 1000 "$root/q" >/dev/null 2>&1
ok $(($? == 69 ? 0 : 1)) "no server reachable: exit 69"
