#!/usr/bin/env bash
# zkr-ls against a real server: the queue of a zkr lock in order (table
# and JSON), Curator's and kazoo's nodes, -r over a tree, bad input and no
# server. Runs under test/with-zk.
set -u
TESTLIB_NEEDS="proxy"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
[ -x "$zls" ] || skip "tools/zkr-ls not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-ls-$$"
echo "1..41"

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
# what could not be written is an error, as for coreutils (issue 85)
"$zls" -r --json "$root" >/dev/full 2>"$tmp/full.err"
st=$?
[ $st -eq 1 ] && grep -q "^zkr-ls: write error: " "$tmp/full.err"
ok $? "-r --json to a full device: exit 1, 'write error' (got $st: $(head -1 "$tmp/full.err"))"
"$zls" "$root/tree/a" >&- 2>"$tmp/closed.err"
st=$?
[ $st -eq 1 ] && grep -q "^zkr-ls: write error" "$tmp/closed.err"
ok $? "a listing with stdout closed: exit 1, 'write error' (got $st: $(head -1 "$tmp/closed.err"))"
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
# a chroot that does not exist is said to be missing (issue 85): it was
# shown as a free lock and an empty tree
nc="/zkr-test-nochroot-$$"
"$zls" -s "$hosts$nc" "$root/q" >"$tmp/nc.out" 2>"$tmp/nc.err"
st=$?
[ $st -eq 1 ] && [ ! -s "$tmp/nc.out" ] &&
  grep -qF "zkr-ls: cannot read $root/q: the chroot $nc of the connection string does not exist" "$tmp/nc.err"
ok $? "a chroot that does not exist: exit 1 saying so, not a free lock (got $st: $(head -1 "$tmp/nc.err"))"
"$zls" -r -s "$hosts$nc" / >"$tmp/nc.out" 2>"$tmp/nc.err"
st=$?
[ $st -eq 1 ] && grep -qF "the chroot $nc of the connection string does not exist" "$tmp/nc.err" &&
  ! grep -q "no locks" "$tmp/nc.out"
ok $? "-r under a chroot that does not exist: exit 1 saying so, not an empty tree (got $st)"

# --- -r over a hostile tree (issue 17, item 6) ---
# aa, batches/1718409600/job and zz hold a lock each; "locked" may not be
# read (world:anyone create+delete only) and hides a lock; "long/..." holds
# a lock at a path over 1024 bytes; 1718409600 is a persistent node with a
# sequence-like name (a Unix time), not a contender.
w="$root/walk"
long="$w/long/$(printf 'a%.0s' {1..300})/$(printf 'b%.0s' {1..300})/$(printf 'c%.0s' {1..300})/$(printf 'd%.0s' {1..300})"
/usr/bin/python3 - "$hosts" "$w" "$long" "$root/utf" "$tmp/fixture.ready" <<'PY' &
import sys, time
from kazoo.client import KazooClient
from kazoo.security import make_acl
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
w, long, utf, ready = sys.argv[2:6]
def lock(path, data):
    zk.create(path + "/_c_0-lock-", data, ephemeral=True, sequence=True, makepath=True)
lock(w + "/aa", b"host=h pid=1 id=aa")
zk.ensure_path(w + "/batches/1718409600")
lock(w + "/batches/1718409600/job", b"host=h pid=2 id=batch")
zk.create(w + "/locked", acl=[make_acl("world", "anyone", create=True, delete=True)])
zk.create(w + "/locked/job")
zk.create(w + "/locked/job/_c_0-lock-", b"host=h pid=3 id=hidden", ephemeral=True, sequence=True)
lock(long, b"host=h pid=4 id=long")
lock(w + "/zz", b"host=h pid=5 id=zz")
# UTF-8 (2, 3 and 4 bytes), control characters, '"' and '\', and bytes
# that are not UTF-8: a lone 0xff, a truncated sequence, a surrogate
lock(utf + "/\u00fcn\u00efc\u00f6d\u00e9",
     b"host=h\xc3\xb6st pid=6 id=j\xc3\xb6b \xe2\x9c\x93\x01\x1f\x7f\n\"q\\ "
     b"\xff\xc3(\xed\xa0\x80\xf0\x9f\x98\x80")
open(ready, "w").close()
time.sleep(60)
PY
fx=$!; pids+=($fx)
wait_for 30 test -e "$tmp/fixture.ready"
ok $? "fixture: locks, an unreadable node, a path over 1024 bytes, a persistent sequential node"

"$zls" -r "$w" >"$tmp/w.out" 2>"$tmp/w.err"
st=$?
[ $st -eq 2 ]
ok $? "-r over a tree with unreadable parts: exit 2, partial listing (got $st)"
grep -q "^$w/aa: 1 contender" "$tmp/w.out" && grep -q "^$w/zz: 1 contender" "$tmp/w.out" &&
  grep -q "^$w/batches/1718409600/job: 1 contender" "$tmp/w.out" &&
  [ "$(grep -c 'contender' "$tmp/w.out")" -eq 3 ]
ok $? "-r goes on past the skipped subtrees and lists the three readable locks"
grep -q "warning: skipped $w/locked: .*authorized" "$tmp/w.err"
ok $? "a warning names the unreadable node ($(head -1 "$tmp/w.err"))"
grep -qF "warning: skipped $w/long/aaaa" "$tmp/w.err" && grep -q "longer than 1024 bytes" "$tmp/w.err"
ok $? "a warning names the path over 1024 bytes"
! grep -q "^$w/batches: " "$tmp/w.out" && ! grep -q "0x0 " "$tmp/w.out"
ok $? "the persistent node 1718409600 is not shown as a contender of session 0x0"
"$zls" "$w/batches" >"$tmp/b.out"
[ $? -eq 0 ] && grep -q "^$w/batches: 0 contenders" "$tmp/b.out"
ok $? "zkr-ls on the parent of the persistent node: 0 contenders"

"$zls" -r --json "$w" >"$tmp/w.json" 2>/dev/null
st=$?
/usr/bin/python3 - "$tmp/w.json" "$w" <<'PY'
import json, sys
locks = json.load(open(sys.argv[1], encoding="utf-8"))["locks"]
w = sys.argv[2]
got = {l["path"]: [(c["role"], c["id"]) for c in l["contenders"]] for l in locks}
want = {w + "/aa": [("holder", "aa")], w + "/batches/1718409600/job": [("holder", "batch")],
        w + "/zz": [("holder", "zz")]}
assert got == want, got
assert all(c["session"] != "0x0" for l in locks for c in l["contenders"]), locks
PY
[ $? -eq 0 ] && [ $st -eq 2 ]
ok $? "-r --json: valid JSON with the three locks, exit 2"

"$zls" -r "$w/locked" >"$tmp/l.out" 2>"$tmp/l.err"
st=$?
[ $st -eq 2 ] && grep -q "warning: skipped $w/locked" "$tmp/l.err" && grep -q "no locks under $w/locked (some subtrees skipped)" "$tmp/l.out"
ok $? "-r on an unreadable PATH: warning, exit 2 (got $st)"
"$zls" "$w/locked/job" >/dev/null 2>"$tmp/l1.err"
st=$?
"$zls" "$w/locked" >/dev/null 2>"$tmp/l2.err"
st2=$?
[ $st -eq 0 ] && [ $st2 -eq 1 ] && grep -q "authorized" "$tmp/l2.err"
ok $? "without -r: a readable lock below is listed ($st); the unreadable node is an error, exit 1 ($st2)"

# --json: UTF-8 as is, control characters escaped, other bytes as \u00XX
"$zls" --json "$root/utf/ünïcödé" >"$tmp/u.json"
/usr/bin/python3 - "$tmp/u.json" "$root/utf" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # strict: the output is valid UTF-8
assert "\u00fcn\u00efc\u00f6d\u00e9" in text, text       # as is, not escaped
assert "\\u00ff" in text and "\\u0001" in text and "\\n" in text, text
assert not any(b < 0x20 for b in raw.rstrip(b"\n")), raw  # no raw control bytes
d = json.loads(text)
assert d["path"] == sys.argv[2] + "/\u00fcn\u00efc\u00f6d\u00e9", d["path"]
c = d["contenders"][0]
assert c["host"] == "h\u00f6st", c["host"]
want = ("j\u00f6b \u2713\x01\x1f\x7f\n\"q\\ " + "\u00ff" + "\u00c3(" +
        "\u00ed\u00a0\u0080" + "\U0001f600")
assert c["id"] == want, (c["id"], want)
PY
ok $? "--json: UTF-8 path and id as is, control characters escaped, invalid bytes as \\u00XX"

# --- error messages: the option named, control characters escaped ---
"$zls" -vv "$root" >/dev/null 2>"$tmp/vv.err"
st=$?
[ $st -eq 64 ] && grep -q "unknown option '-v'" "$tmp/vv.err"
ok $? "an unknown option in a cluster is named (got $st: $(head -1 "$tmp/vv.err"))"
"$zls" "$(printf '/a\033[2Jb')" >/dev/null 2>"$tmp/esc.err"
st=$?
[ $st -eq 64 ] && grep -qF '/a\x1b[2Jb:' "$tmp/esc.err" && ! grep -q "$(printf '\033')" "$tmp/esc.err"
ok $? "a control character in PATH is escaped in the message (got $st: $(head -1 "$tmp/esc.err"))"
kill $fx 2>/dev/null; wait $fx 2>/dev/null

# --- --timeout: how long one path's listing may take ---
for bad in 0 -1 0.0001 soon 2147484; do
  "$zls" --timeout "$bad" "$root/q" >/dev/null 2>"$tmp/tb.err"
  st=$?
  [ $st -eq 64 ] && grep -q "^zkr-ls: invalid --timeout '$bad'" "$tmp/tb.err" || break
done
ok $? "--timeout 0, -1, 0.0001, soon, 2147484: usage errors, exit 64 (last: $st: $(head -1 "$tmp/tb.err"))"
"$zls" --timeout 30 --json "$root/q" >/dev/null 2>"$tmp/t30.err"
ok $? "--timeout 30: a listing within it, exit 0 ($(head -1 "$tmp/t30.err"))"
# a listing that gets no answer: the proxy forwards the getChildren, then
# swallows everything both ways. It must end at its --timeout with
# "deadline passed": the default (10 s) would outlast the 9 s allowed, and
# the client gives the connection up after 2/3 of the session timeout
# (about 6.7 s) with another message.
px_start "$tmp/px"
px_cmd "$tmp/px" "blackhole-after-request getchildren,getchildren2"
t0=$(date +%s%N)
timeout 9 "$zls" -s "127.0.0.1:$(cat "$tmp/px/port")" --timeout 1 "$root/q" >"$tmp/bh.out" 2>"$tmp/bh.err"
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $st -eq 1 ] && grep -q "^zkr-ls: cannot read $root/q: deadline passed" "$tmp/bh.err"
ok $? "a listing with no answer ends with exit 1 at --timeout 1 (got $st after $ms ms: $(head -1 "$tmp/bh.err"))"
grep -q "^fired getchildren" "$tmp/px/events"
ok $? "(the proxy swallowed it from the getChildren on)"

# --- IPv6 loopback: [::1]:PORT as documented, and ::1:PORT ---
if ip -6 addr show lo 2>/dev/null | grep -q 'inet6 ::1/'; then
  trap '"$ZKR_SANDBOX" --dir "$tmp/v6" stop >/dev/null 2>&1; testlib_cleanup' EXIT
  v6=$("$ZKR_SANDBOX" --dir "$tmp/v6" start --client-address ::1 2>"$tmp/v6.err")
  [[ $v6 =~ ^\[::1\]:[0-9]+$ ]]
  ok $? "a sandbox listening on ::1 only ($v6)"
  "$zls" -s "$v6" --connect-timeout 5000 / >/dev/null 2>"$tmp/v6a.err"
  ok $? "zkr-ls -s [::1]:PORT connects ($(head -1 "$tmp/v6a.err"))"
  "$zls" -s "::1:${v6##*:}" --connect-timeout 5000 / >/dev/null 2>"$tmp/v6b.err"
  ok $? "zkr-ls -s ::1:PORT connects ($(head -1 "$tmp/v6b.err"))"
  "$zl" -s "$v6,127.0.0.1:1" --connect-timeout 5000 "$root/v6" -- sh -c 'test "$ZKR_FENCING_TOKEN" -gt 0'
  ok $? "zkr-lock -s [::1]:PORT,... takes the lock and runs the command"
  "$ZKR_SANDBOX" --dir "$tmp/v6" stop
else
  for d in sandbox "zkr-ls [::1]" "zkr-ls ::1" "zkr-lock [::1]"; do
    ok 0 "# SKIP no IPv6 loopback address on lo ($d)"
  done
fi
