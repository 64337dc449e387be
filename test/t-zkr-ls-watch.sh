#!/usr/bin/env bash
# zkr-ls --watch against a real server: bad intervals are usage errors;
# with stdout to a file, block after block, each showing the queue as it
# is then (a waiter joins, the holder leaves), the ages growing; JSON one
# document a line; -r; in place (clear, home) on a terminal; SIGINT and
# SIGTERM end it with 0; no server: 69. Runs under test/with-zk.
set -u
TESTLIB_NEEDS="kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
ze="$builddir/tools/zkr-elect"
[ -x "$zls" ] || skip "tools/zkr-ls not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-ls-watch-$$"
echo "1..28"

# a background job of a script starts with SIGINT ignored, which zkr-ls
# keeps (as zkr-lock does): run_dfl gives it the default first
run_dfl() {
  exec "$py" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}

# --- usage errors ---
usage() { # usage DESCRIPTION PATTERN ARGS...
  local d=$1 pat=$2; shift 2
  "$zls" "$@" >"$tmp/u.out" 2>&1
  local st=$?
  [ $st -eq 64 ] && grep -q "^zkr-ls: .*$pat" "$tmp/u.out"
  ok $? "usage error, exit 64: $d (got $st: $(head -1 "$tmp/u.out"))"
}
usage "--watch 0" "invalid --watch interval '0'" --watch 0 "$root/q"
usage "--watch -1" "invalid --watch interval '-1'" --watch -1 "$root/q"
usage "--watch 0.05, below 0.1 s" "invalid --watch interval" --watch 0.05 "$root/q"
usage "--watch=soon" "invalid --watch interval 'soon'" --watch=soon "$root/q"
usage "--watch 1 without PATH" "missing PATH" --watch 1
usage "--watch 9999999999, over the maximum (issue 85)" "at most 1000000000" --watch 9999999999 "$root/q"

# --- a write error ends it (issue 85): it used to go on writing nothing ---
timeout 20 "$zls" --watch 0.1 "$root/q" >/dev/full 2>"$tmp/full.err"
st=$?
[ $st -eq 1 ] && grep -q "^zkr-ls: write error" "$tmp/full.err"
ok $? "stdout a full device: exit 1 with 'write error' at the first block (got $st: $(head -1 "$tmp/full.err"))"

# --- block after block, to a file ---
"$zl" --id holder "$root/q" -- sh -c "echo \$\$ >'$tmp/h.pid'; exec sleep 60" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/h.pid"
run_dfl "$zls" --watch 0.2 "$root/q" >"$tmp/w.out" 2>"$tmp/w.err" &
w=$!; pids+=($w)
blocks() { grep -c '^Every 0.2s: zkr-ls ' "$tmp/w.out"; }
wait_for 30 sh -c "[ \$(grep -c '^Every 0.2s: zkr-ls ' '$tmp/w.out') -ge 3 ]"
ok $? "stdout not a terminal: one block after another ($(blocks) so far)"
! grep -q "$(printf '\033')" "$tmp/w.out"
ok $? "no terminal escape sequences in a file"
grep -q "^$root/q: 1 contender\$" "$tmp/w.out"
ok $? "the blocks show the holder"
"$zl" --id waiter "$root/q" -- true &
wt=$!; pids+=($wt)
wait_for 30 grep -q "^$root/q: 2 contenders\$" "$tmp/w.out"
ok $? "a later block shows the waiter that joined"
kill -TERM "$(cat "$tmp/h.pid")"
wait $h $wt
wait_for 30 grep -q "^$root/q: 0 contenders (free)\$" "$tmp/w.out"
ok $? "a later block shows the lock free once both are done"
awk '/^Every /{b++} /: 1 contender$/{if (!one) one=b} /: 2 contenders$/{if (!two) two=b}
     /0 contenders \(free\)/{if (!free) free=b}
     END {exit !(one && two && free && one < two && two < free)}' "$tmp/w.out"
ok $? "in that order: 1, then 2 contenders, then free (the first of each; the waiter alone holding shows 1 again between them)"
kill -INT $w
wait $w
st=$?
[ $st -eq 0 ] && [ ! -s "$tmp/w.err" ]
ok $? "SIGINT ends --watch with exit 0 (got $st; $(head -1 "$tmp/w.err"))"
awk '/^Every /{n++} END {exit !(n >= 4)}' "$tmp/w.out" && tail -n 1 "$tmp/w.out" | grep -q .
ok $? "every block complete: $(blocks) blocks, the last not cut"

# --- JSON: one document a line, the holder's age growing ---
"$zl" --id holder2 "$root/j" -- sh -c "echo \$\$ >'$tmp/h2.pid'; exec sleep 60" &
h2=$!; pids+=($h2)
wait_for 20 test -s "$tmp/h2.pid"
"$zls" --watch 0.3 --json "$root/j" >"$tmp/j.out" 2>"$tmp/j.err" &
w=$!; pids+=($w)
wait_for 30 sh -c "[ \$(wc -l <'$tmp/j.out') -ge 5 ]"
ok $? "--json: a line per refresh"
kill -TERM $w
wait $w
st=$?
ok $st "SIGTERM ends --watch with exit 0 (got $st)"
"$py" - "$tmp/j.out" <<'PY'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
assert len(docs) >= 5, len(docs)
ages = [d["contenders"][0]["age_ms"] for d in docs]
assert all(d["contenders"][0]["id"] == "holder2" for d in docs), docs
# each refresh reads the node again: the age is the time since it was
# created, so it cannot go down, and five refreshes 0.3 s apart are more
# than a second apart
assert ages == sorted(ages) and ages[-1] - ages[0] >= 1000, ages
PY
ok $? "every line is a JSON document; the holder's age grows from block to block"
kill -TERM "$(cat "$tmp/h2.pid")"
wait $h2

# --- -r ---
"$zl" "$root/tree/a" -- sh -c "echo \$\$ >'$tmp/ta.pid'; exec sleep 60" &
ta=$!; pids+=($ta)
"$zl" "$root/tree/b/c" -- sh -c "echo \$\$ >'$tmp/tb.pid'; exec sleep 60" &
tb=$!; pids+=($tb)
wait_for 20 test -s "$tmp/ta.pid" -a -s "$tmp/tb.pid"
"$zls" --watch 0.2 -r "$root/tree" >"$tmp/r.out" 2>&1 &
w=$!; pids+=($w)
wait_for 30 sh -c "[ \$(grep -c '^Every 0.2s: zkr-ls -r ' '$tmp/r.out') -ge 2 ]"
ok $? "-r --watch: blocks"
kill -TERM "$(cat "$tmp/ta.pid")"
wait $ta
# the last complete block: from the last heading but one to the last
last_block() {
  awk '/^Every /{prev=cur; cur=""} {cur=cur $0 "\n"} END {printf "%s", prev}' "$tmp/r.out"
}
a_gone() { last_block | grep -q "^$root/tree/b/c: 1 contender" && ! last_block | grep -q "^$root/tree/a:"; }
wait_for 30 a_gone
ok $? "-r --watch: a lock released drops out of the later blocks"
kill -TERM $w
wait $w
st=$?
grep -q "^$root/tree/a: 1 contender" "$tmp/r.out" && grep -q "^$root/tree/b/c: 1 contender" "$tmp/r.out"
ok $? "-r --watch: the blocks before listed both locks under the tree (exit $st)"
kill -TERM "$(cat "$tmp/tb.pid")"
wait $tb

# --- any recipe's path: a semaphore, an election ---
"$zl" --permits 1 --id lease1 "$root/sem" -- sh -c "echo \$\$ >'$tmp/s.pid'; exec sleep 60" &
sp=$!; pids+=($sp)
"$ze" --id leader1 "$root/el" -- sh -c "echo \$\$ >'$tmp/e.pid'; exec sleep 60" &
ep=$!; pids+=($ep)
wait_for 20 test -s "$tmp/s.pid" -a -s "$tmp/e.pid"
"$zls" --watch 0.2 "$root/sem" >"$tmp/s.out" 2>&1 &
ws=$!; pids+=($ws)
"$zls" --watch 0.2 "$root/el" >"$tmp/e.out" 2>&1 &
we=$!; pids+=($we)
wait_for 30 grep -q "^$root/sem: semaphore, 1 lease held, 0 waiting\$" "$tmp/s.out"
ok $? "a semaphore's path: its leases, refreshed"
wait_for 30 grep -q "^$root/el: election, 1 participant, the first leads\$" "$tmp/e.out"
ok $? "an election's path: its participants, refreshed"
kill -TERM $ws $we "$(cat "$tmp/s.pid")" "$(cat "$tmp/e.pid")"
wait $ws $we $sp $ep

# --- on a terminal: in place ---
"$zl" --id tty "$root/t" -- sh -c "echo \$\$ >'$tmp/t.pid'; exec sleep 60" &
ht=$!; pids+=($ht)
wait_for 20 test -s "$tmp/t.pid"
# script(1) gives zkr-ls a terminal; timeout ends it with SIGTERM
script -qec "timeout --preserve-status -s TERM 2 '$zls' --watch 0.2 '$root/t'" "$tmp/tty.out" >/dev/null 2>&1 </dev/null
st=$?
ok $st "on a terminal: exit 0 after SIGTERM (got $st)"
grep -qF "$(printf '\033[H\033[2J')Every 0.2s: zkr-ls $root/t" "$tmp/tty.out"
ok $? "on a terminal: each block clears the screen and starts at the top"
grep -q "^$root/t: 1 contender" "$tmp/tty.out"
ok $? "on a terminal: the queue is shown"
kill -TERM "$(cat "$tmp/t.pid")"
wait $ht

# --- no server ---
"$zls" --watch 1 -s 127.0.0.1:1 --connect-timeout 500 "$root/q" >/dev/null 2>"$tmp/ns.err"
st=$?
[ $st -eq 69 ] && grep -q "cannot reach ZooKeeper" "$tmp/ns.err"
ok $? "no server reachable: exit 69 as without --watch (got $st)"
# SIGTERM while it still waits for a server (connect timeout 2 minutes):
# it ends at once, with 0, once it has blocked the signal (before, the
# signal would end it by its default action)
"$zls" --watch 1 -s 127.0.0.1:1 --connect-timeout 120000 "$root/q" >/dev/null 2>"$tmp/nc.err" &
w=$!; pids+=($w)
wait_for 20 term_blocked $w zkr-ls || diag "zkr-ls never had SIGTERM blocked"
kill -TERM $w
wait $w
st=$?
# (under ThreadSanitizer its runtime has a thread of its own from before
# main, with no signal blocked, and the kernel may give it the SIGTERM,
# whose default action ends the process: 143 then is the runtime's doing)
if [ -n "${TSAN_OPTIONS:-}" ] && [ $st -eq 143 ]; then st=0; : >"$tmp/nc.err"; fi
[ $st -eq 0 ] && [ ! -s "$tmp/nc.err" ]
ok $? "SIGTERM while waiting for a server: exit 0 at once, not 69 after the connect timeout (got $st)"
