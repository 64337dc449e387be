#!/usr/bin/env bash
# zkr-lock --read/--write against a real server: readers really run
# together (each waits at a barrier for the others, so overlap is
# measured, not assumed), a writer runs alone and only after the readers
# queued before it, readers queued behind a writer wait for it, the
# aliases, usage errors, and zkr-ls showing several holders. Runs under
# test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-lock-rw-$$"
echo "1..14"

# --- three readers inside at the same moment ---
# Each reader announces itself, then waits (up to 20 s) until all three
# have: that only ends well if all three hold the read lock at once.
barrier() { # barrier NAME N: a reader's command
  echo "touch '$tmp/in.$1'; for i in \$(seq 1 400); do [ \$(ls '$tmp' | grep -c '^in\\.') -ge $2 ] && exit 0; sleep 0.05; done; exit 9"
}
rs=()
for i in 1 2 3; do
  "$zl" --read "$root/a" -- sh -c "$(barrier r$i 3)" &
  rs+=($!); pids+=($!)
done
st=0
for p in "${rs[@]}"; do wait "$p" || st=$?; done
[ $st -eq 0 ]
ok $? "three zkr-lock --read processes all hold the lock at the same moment (exit $st)"
rm -f "$tmp"/in.*

# --- a writer while readers hold: excluded; queued readers wait for it ---
"$zl" --shared "$root/b" -- sh -c "echo \$\$ >'$tmp/r1.pid'; while [ ! -e '$tmp/r1.go' ]; do sleep 0.05; done" &
r1=$!; pids+=($r1)
wait_for 20 test -s "$tmp/r1.pid"
"$zl" --write -t 0 "$root/b" -- true
st=$?
[ $st -eq 1 ]
ok $? "--write -t 0 while a reader holds: exit 1 (got $st)"
"$zl" -w -t 0 -E 7 "$root/b" -- true
st=$?
[ $st -eq 7 ]
ok $? "-w with -E 7: exit 7 (got $st)"
"$zl" -r -t 0 "$root/b" -- true
st=$?
[ $st -eq 0 ]
ok $? "-r -t 0 while a reader holds: runs at once (got $st)"
date +%s%N >"$tmp/w.queued"
"$zl" --exclusive "$root/b" -- sh -c "date +%s%N >'$tmp/w.start'; sleep 0.3; date +%s%N >'$tmp/w.end'" &
w=$!; pids+=($w)
children_reach 20 2 "$root/b"
"$zl" --read "$root/b" -- sh -c "date +%s%N >'$tmp/r2.start'" &
r2=$!; pids+=($r2)
children_reach 20 3 "$root/b"
sleep 0.3
[ ! -e "$tmp/w.start" ] && [ ! -e "$tmp/r2.start" ]
ok $? "a writer queued behind the reader waits, and so does a reader queued behind the writer"
touch "$tmp/r1.go"
wait $r1; wait $w; st=$?; wait $r2; st2=$?
[ $st -eq 0 ] && [ $st2 -eq 0 ] && [ -s "$tmp/w.start" ] && [ -s "$tmp/r2.start" ] &&
  [ "$(cat "$tmp/r2.start")" -ge "$(cat "$tmp/w.end")" ]
ok $? "then the writer runs, and the second reader only after the writer ended"
[ "$(children "$root/b")" = 0 ]
ok $? "no node left"

# --- zkr-ls shows several holders ---
"$zl" --read "$root/c" -- sh -c "touch '$tmp/c1'; while [ ! -e '$tmp/c.go' ]; do sleep 0.05; done" &
c1=$!; pids+=($c1)
"$zl" --read "$root/c" -- sh -c "touch '$tmp/c2'; while [ ! -e '$tmp/c.go' ]; do sleep 0.05; done" &
c2=$!; pids+=($c2)
wait_for 20 test -e "$tmp/c1" -a -e "$tmp/c2"
"$zl" --write "$root/c" -- true &
c3=$!; pids+=($c3)
children_reach 20 3 "$root/c"
"$zls" --json "$root/c" >"$tmp/c.json" 2>"$tmp/c.err"
$py - "$tmp/c.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["contenders"]
kinds = [c["kind"] for c in q]
roles = [c["role"] for c in q]
assert kinds == ["read", "read", "write"], kinds
assert roles == ["holder", "holder", "waiter"], roles
PY
ok $? "zkr-ls --json: two readers both marked holder, the writer waiting"
"$zls" "$root/c" >"$tmp/c.txt" 2>&1
[ "$(grep -c 'holder' "$tmp/c.txt")" -ge 2 ] && grep -q 'read' "$tmp/c.txt" && grep -q 'write' "$tmp/c.txt"
ok $? "zkr-ls text output names the kinds and both holders"
touch "$tmp/c.go"
wait $c1; wait $c2; wait $c3; st=$?
[ $st -eq 0 ]
ok $? "the writer ran after both readers"

# --- usage ---
"$zl" --read --write "$root/u" -- true 2>"$tmp/u.err"
st=$?
[ $st -eq 64 ] && grep -q "exclude each other" "$tmp/u.err"
ok $? "--read with --write: usage error 64 (got $st)"
"$zl" --read --permits 3 "$root/u" -- true 2>"$tmp/u.err"
st=$?
[ $st -eq 64 ] && grep -q "exclude each other" "$tmp/u.err"
ok $? "--read with --permits (the semaphore): usage error 64 (got $st)"
"$zl" --help | grep -q -- '--shared'
ok $? "--help lists --read/--shared and --write/--exclusive"
[ "$(children "$root/u")" = -1 ] || [ "$(children "$root/u")" = 0 ]
ok $? "usage errors create nothing"
