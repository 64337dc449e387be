#!/usr/bin/env bash
# zkr-lock --permits N against a real server: N holders really run
# together (each waits at a barrier for the others, so overlap is
# measured, not assumed), one more waits until a holder leaves and then
# finds only N-1 others inside, never more than N at once under load,
# try-once and time-out (conflict status, no node left), distinct fencing
# tokens, a lease lost while the command runs (exit 75), SIGINT while
# waiting, usage errors, and zkr-ls showing the semaphore's holders and
# waiters (table, JSON, -r) but not a mutex at PATH/locks, and kazoo's
# semaphore layout refused. Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-lock-sem-$$"
echo "1..52"

# nodes PATH...: the number of children of the paths that exist, now
nodes() {
  "$py" - "$hosts" "$@" <<'PY' 2>/dev/null
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
print(sum(len(zk.get_children(p)) for p in sys.argv[2:] if zk.exists(p)))
zk.stop()
PY
}
# exists PATH: the node exists
exists() {
  "$py" - "$hosts" "$1" <<'PY' 2>/dev/null
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
sys.exit(0 if zk.exists(sys.argv[2]) else 1)
PY
}

# --- usage errors: exit 64, nothing created ---
usage_says() { # usage_says DESCRIPTION PATTERN ARGS...
  local d=$1 pat=$2; shift 2
  "$zl" "$@" >"$tmp/us.out" 2>&1; local st=$?
  [ $st -eq 64 ] && grep -qF -- "$pat" "$tmp/us.out"
  ok $? "usage error 64 saying '$pat': $d (got $st: $(head -1 "$tmp/us.out"))"
}
for bad in 0 65537 -1 +2 0x10 ' 2' 2.0 1e3 '' two 99999999999999999999; do
  usage_says "--permits '$bad'" "invalid --permits '$bad'" --permits "$bad" "$root/u" -- true
done
usage_says "--permits with --read" "exclude each other" --permits 2 --read "$root/u" -- true
usage_says "--write with --permits" "exclude each other" --write --permits 2 "$root/u" -- true
usage_says "--permits without a value" "option '--permits' needs an argument" --permits
! exists "$root/u"
ok $? "the refused invocations created nothing"
"$zl" --permits 65536 -t 0 "$root/max" -- true
ok $? "--permits 65536 (ZKR_SEMAPHORE_MAX) is accepted"
"$zl" --help | grep -q -- '--permits N'
ok $? "--help describes --permits"

# --- two holders inside at the same moment; a third waits for one ---
# h1 and h2 each announce themselves, wait (up to 20 s) until both have,
# and then stay until told to go; that only ends well if both hold a lease
# at once. Each records its environment and removes its mark when leaving.
holder() { # holder NAME: the command of a holder
  echo "echo \"\$ZKR_FENCING_TOKEN \$ZKR_LOCK_NODE\" >'$tmp/$1.env'; touch '$tmp/in.$1';
    for i in \$(seq 1 400); do [ \$(ls '$tmp' | grep -c '^in\\.') -ge 2 ] && break; sleep 0.05; done
    [ \$(ls '$tmp' | grep -c '^in\\.') -ge 2 ] || exit 9
    touch '$tmp/both.$1'
    while [ ! -e '$tmp/go.$1' ]; do sleep 0.05; done; rm -f '$tmp/in.$1'"
}
"$zl" --permits 2 --id h1 "$root/s" -- sh -c "$(holder h1)" 2>"$tmp/h1.err" &
h1=$!; pids+=($h1)
"$zl" --permits 2 --id h2 "$root/s" -- sh -c "$(holder h2)" 2>"$tmp/h2.err" &
h2=$!; pids+=($h2)
wait_for 30 test -e "$tmp/both.h1" -a -e "$tmp/both.h2"
ok $? "two zkr-lock --permits 2 processes both hold a lease at the same moment"

read -r tok1 node1 <"$tmp/h1.env"
read -r tok2 node2 <"$tmp/h2.env"
[ "${tok1:-0}" -gt 0 ] && [ "${tok2:-0}" -gt 0 ] && [ "$tok1" != "$tok2" ]
ok $? "ZKR_FENCING_TOKEN is set and differs between the holders ($tok1, $tok2)"
[[ $node1 == "$root/s/leases/_c_"*"-lease-"[0-9]* ]] && [[ $node2 == "$root/s/leases/_c_"*"-lease-"[0-9]* ]] &&
  [ "$node1" != "$node2" ]
ok $? "ZKR_LOCK_NODE is each holder's lease node ($node1)"

"$zl" --permits 2 -t 0 "$root/s" -- touch "$tmp/ran-t0"
st=$?
[ $st -eq 1 ] && [ ! -e "$tmp/ran-t0" ]
ok $? "-t 0 while both leases are held: exit 1 (got $st), command not run"
"$zl" --permits 2 -t 0 -E 42 -v "$root/s" -- touch "$tmp/ran-E" 2>"$tmp/E.err"
st=$?
[ $st -eq 42 ] && [ ! -e "$tmp/ran-E" ] && grep -q "not acquired (tried once)" "$tmp/E.err"
ok $? "-E 42 changes the conflict status, -v says why (got $st: $(head -1 "$tmp/E.err"))"
"$zl" --permits 2 -t 0.5 "$root/s" -- touch "$tmp/ran-t"
st=$?
[ $st -eq 1 ] && [ ! -e "$tmp/ran-t" ]
ok $? "-t 0.5 while both leases are held: exit 1 (got $st), command not run"
[ "$(nodes "$root/s/leases")" = 2 ] && [ "$(nodes "$root/s/locks")" = 0 ]
ok $? "the try-once and the time-out left no node (the two leases only)"

# the third counts who is inside when it runs
"$zl" -v --permits 2 --id w3 "$root/s" -- sh -c \
  "ls '$tmp' | grep -c '^in\\.' >'$tmp/w3.inside'; echo \"\$ZKR_FENCING_TOKEN\" >'$tmp/w3.tok'" \
  2>"$tmp/w3.err" &
w3=$!; pids+=($w3)
# queued: admitted, with its lease node created and waiting
wait_for 20 sh -c "'$zls' --json '$root/s' | grep -q '\"kind\":\"lease\",[^}]*\"id\":\"w3\"'"
ok $? "the third is queued: its lease node is there"
[ ! -e "$tmp/w3.inside" ] && ! pid_gone $w3
ok $? "the third waits while two hold"
wait_for 20 grep -q "waiting for $root/s: no lease free of 2" "$tmp/w3.err"
ok $? "-v says that it waits for a lease ($(grep waiting "$tmp/w3.err" | head -1))"

# --- zkr-ls: the semaphore's holders and waiter ---
"$zls" --json --permits 2 "$root/s" >"$tmp/s.json"
"$py" - "$tmp/s.json" "$root/s" "$tok1" "$tok2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["path"] == sys.argv[2] and d["type"] == "semaphore" and d["permits"] == 2, d
q = d["contenders"]
rows = [(c["kind"], c["role"], c["id"]) for c in q]
assert sorted(rows[:2]) == [("lease", "holder", "h1"), ("lease", "holder", "h2")], rows
assert rows[2:] == [("lease", "waiter", "w3"), ("admission", "waiter", "w3")], rows
assert sorted(c["token"] for c in q[:2]) == sorted([int(sys.argv[3]), int(sys.argv[4])]), q
assert [c["position"] for c in q] == [1, 2, 3, 4], q
assert all(c["node"].startswith("leases/_c_") and "-lease-" in c["node"] for c in q[:3]), q
assert q[3]["node"].startswith("locks/_c_") and "-lock-" in q[3]["node"], q
PY
ok $? "zkr-ls --json --permits 2: two lease holders (tokens as in the environment), the third waiting for a lease and admitted"
"$zls" --json "$root/s" >"$tmp/s0.json"
"$py" - "$tmp/s0.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["type"] == "semaphore" and "permits" not in d, d
roles = [(c["kind"], c["role"]) for c in d["contenders"]]
assert roles == [("lease", "holder"), ("lease", "holder"), ("lease", "waiter"),
                 ("admission", "waiter")], roles
PY
ok $? "zkr-ls --json without --permits: the admitted contender's lease node is still a waiter"
"$zls" --permits 2 "$root/s" >"$tmp/s.txt"
head -1 "$tmp/s.txt" | grep -q "^$root/s: semaphore, 2 leases held of 2, 1 waiting$" &&
  awk '$2=="holder" && $10=="lease" {h++} $2=="waiter" && $7=="w3" && ($10=="lease" || $10=="admission") {w++}
       END {exit !(h==2 && w==2)}' "$tmp/s.txt"
ok $? "zkr-ls table: the heading counts 2 of 2 held and 1 waiting; KIND lease and admission ($(head -1 "$tmp/s.txt"))"
"$zls" -r --json "$root" >"$tmp/r.json"
"$py" - "$tmp/r.json" "$root/s" <<'PY'
import json, sys
locks = json.load(open(sys.argv[1]))["locks"]
sems = [l for l in locks if l["path"].startswith(sys.argv[2])]
assert [l["path"] for l in sems] == [sys.argv[2]] and sems[0]["type"] == "semaphore", locks
assert len(sems[0]["contenders"]) == 4, sems
PY
ok $? "zkr-ls -r: the semaphore is shown once, not as two locks (locks, leases)"

touch "$tmp/go.h1"
wait $h1; st1=$?
wait $w3; st3=$?
[ $st1 -eq 0 ] && [ $st3 -eq 0 ] && [ "$(cat "$tmp/w3.inside")" = 1 ]
ok $? "when the first holder leaves, the third runs, with one other holder inside (found $(cat "$tmp/w3.inside" 2>/dev/null))"
[ "$(cat "$tmp/w3.tok")" -gt "$tok1" ] && [ "$(cat "$tmp/w3.tok")" -gt "$tok2" ]
ok $? "the third's token is larger than both earlier ones"
grep -q "acquired $root/s after .*node $root/s/leases/" "$tmp/w3.err" && grep -q "released $root/s" "$tmp/w3.err"
ok $? "-v reports the lease node acquired, and the release"
touch "$tmp/go.h2"
wait $h2
ok $? "the second holder ends normally"
[ "$(nodes "$root/s/leases" "$root/s/locks")" = 0 ]
ok $? "no node left"
"$zls" "$root/s" | grep -q "^$root/s: semaphore, 0 leases held, 0 waiting (free)"
ok $? "zkr-ls: the semaphore is free"

# --- never more than N at once: 5 processes x 3 runs, 2 slots ---
for i in 1 2 3 4 5; do
  (for j in 1 2 3; do
    "$zl" --permits 2 "$root/n" -- sh -c \
      "if mkdir '$tmp/slot1' 2>/dev/null; then s=slot1; elif mkdir '$tmp/slot2' 2>/dev/null; then s=slot2; else exit 3; fi
       echo $i >>'$tmp/n.log'; sleep 0.05; rmdir '$tmp/'\$s" || exit 1
  done) &
  pids+=($!)
done
bad=0
for p in "${pids[@]: -5}"; do wait "$p" || bad=1; done
[ $bad -eq 0 ] && [ "$(wc -l <"$tmp/n.log")" -eq 15 ]
ok $? "5 processes x 3 runs with --permits 2: 15 runs, never a third inside"

# --- SIGINT while waiting: leaves the queue ---
"$zl" --permits 1 "$root/i" -- sh -c "touch '$tmp/i.in'; while [ ! -e '$tmp/i.go' ]; do sleep 0.05; done" &
ih=$!; pids+=($ih)
wait_for 20 test -e "$tmp/i.in"
"$py" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$zl" --permits 1 --id int "$root/i" -- touch "$tmp/ran-int" &
iw=$!; pids+=($iw)
wait_for 20 sh -c "'$zls' --json '$root/i' | grep -q '\"kind\":\"lease\",[^}]*\"id\":\"int\"'"
kill -INT $iw
wait $iw; st=$?
[ $st -eq 130 ] && [ ! -e "$tmp/ran-int" ]
ok $? "SIGINT while waiting: ends by SIGINT (status $st), command not run"
[ "$(nodes "$root/i/leases")" = 1 ] && [ "$(nodes "$root/i/locks")" = 0 ]
ok $? "its lease and admission nodes are gone (the holder's lease remains)"
touch "$tmp/i.go"
wait $ih
ok $? "the holder ends normally"

# --- a mutex at PATH/locks is not taken for a semaphore at PATH ---
"$zl" --id plain "$root/dir/locks" -- sh -c "touch '$tmp/pl.in'; while [ ! -e '$tmp/pl.go' ]; do sleep 0.05; done" &
pl=$!; pids+=($pl)
wait_for 20 test -e "$tmp/pl.in"
"$zls" -r "$root/dir" >"$tmp/pl.r" && "$zls" "$root/dir" >"$tmp/pl.1"
[ $? -eq 0 ] && grep -q "^$root/dir/locks: 1 contender" "$tmp/pl.r" && ! grep -q semaphore "$tmp/pl.r" &&
  grep -q "^$root/dir: 0 contenders (free)" "$tmp/pl.1"
ok $? "zkr-ls (-r or not): a mutex at PATH/locks stays a lock, PATH no semaphore"
touch "$tmp/pl.go"
wait $pl

# --- kazoo's semaphore layout at PATH: refused, nothing created ---
"$py" - "$hosts" "$root/kz" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
zk.create(sys.argv[2], b"3", makepath=True)  # kazoo keeps max_leases there
zk.stop()
PY
"$zl" --permits 3 "$root/kz" -- touch "$tmp/ran-kz" 2>"$tmp/kz.err"
st=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran-kz" ] && grep -q "another recipe.s layout" "$tmp/kz.err" &&
  [ "$(nodes "$root/kz")" = 0 ]
ok $? "a path holding kazoo's semaphore layout: exit 69, command not run, nothing created (got $st: $(head -1 "$tmp/kz.err"))"

# --- the lease lost while the command runs: zkr-lock paused past its
# --- session timeout; a waiter gets the lease; zkr-lock exits 75 ---
T=2000
"$zl" --permits 1 --session-timeout $T --kill-after 1 "$root/e" -- sh -c \
  "trap '' TERM; echo \$\$ >'$tmp/e.pid'; while :; do sleep 0.05; done" 2>"$tmp/e.err" &
e=$!; pids+=($e)
wait_for 20 test -s "$tmp/e.pid"
ok $? "a holder runs a command that ignores SIGTERM"
"$zl" --permits 1 --session-timeout $T --id next "$root/e" -- sh -c "echo \$ZKR_FENCING_TOKEN >'$tmp/e.next'" &
e2=$!; pids+=($e2)
wait_for 20 sh -c "'$zls' --json '$root/e' | grep -q '\"id\":\"next\"'"
kill -STOP $e
wait $e2; st=$?
[ $st -eq 0 ] && [ -s "$tmp/e.next" ]
ok $? "while zkr-lock is stopped its session expires and the waiter gets the lease"
kill -CONT $e
wait_for 30 pid_gone $e || kill -9 $e # (a zkr-lock that missed the loss runs on)
wait $e; st=$?
[ $st -eq 75 ]
ok $? "resumed zkr-lock exits 75 (got $st)"
[ $st -eq 75 ] || sed 's/^/# e.err: /' "$tmp/e.err"
grep -q "lease of $root/e lost" "$tmp/e.err" && grep -q "SIGKILL" "$tmp/e.err"
ok $? "it reported the lost lease, sent SIGTERM, then SIGKILL after --kill-after"
! kill -0 "$(cat "$tmp/e.pid")" 2>/dev/null
ok $? "the command is gone"

# --- recipes do not mix on one path; the tools name what they found ---
"$zl" --permits 2 "$root/mix" -- sh -c "echo held >'$tmp/mix.held'; sleep 60" &
mh=$!; pids+=($mh)
wait_for 20 test -s "$tmp/mix.held"
"$zl" -t 5 "$root/mix" -- touch "$tmp/ran-mix" 2>"$tmp/mix.err"
st=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran-mix" ] && grep -q "another recipe's layout: found a semaphore's" "$tmp/mix.err"
ok $? "a plain lock on a semaphore's path: exit 69, command not run, the layout named (got $st: $(head -1 "$tmp/mix.err"))"
"$zl" -w -t 5 "$root/mix" -- touch "$tmp/ran-mix" 2>"$tmp/mix.err"
st=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran-mix" ]
ok $? "a write lock there: exit 69 too (got $st: $(head -1 "$tmp/mix.err"))"
kill -TERM $mh; wait $mh 2>/dev/null
"$zl" "$root/mixm" -- sh -c "echo held >'$tmp/mixm.held'; sleep 60" &
mh=$!; pids+=($mh)
wait_for 20 test -s "$tmp/mixm.held"
"$zl" --permits 2 -t 5 "$root/mixm" -- touch "$tmp/ran-mix" 2>"$tmp/mix.err"
st=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran-mix" ] && grep -q "found a mutex's nodes" "$tmp/mix.err"
ok $? "--permits on a mutex's path: exit 69, the layout named (got $st: $(head -1 "$tmp/mix.err"))"
kill -TERM $mh; wait $mh 2>/dev/null
# --- a semaphore path is at most 1017 bytes: PATH/leases within 1024 ---
long="/$(head -c 1017 /dev/zero | tr '\0' a)"
"$zl" --permits 2 "$long" -- true 2>"$tmp/long.err"
st=$?
[ $st -eq 64 ] && grep -q "at most 1017 bytes" "$tmp/long.err"
ok $? "--permits with a 1018-byte path: usage error, exit 64 (got $st: $(head -1 "$tmp/long.err"))"
