#!/usr/bin/env bash
# zkr-lock's lock control against a real server: --max-hold gives up a
# lock, a side of a read-write lock or a lease held by a command that
# never ends (a live loop, not a stopped process): its node deleted, the
# command's process group terminated as on a loss, exit 75, the next
# contender in; a command that ends in time is not touched; the option's
# number rule (that of -t, without 0). Revocation: --revoke asks the
# holders (exit 0 released or nothing held, 1 still held at -t), a
# --revocable holder's command gets SIGTERM and zkr-lock exits with its
# status; --grace evicts a holder that does not let go (exit 3; the
# holder's command is terminated, exit 75); a creator-only lock refuses
# the eviction without the credentials (exit 69). --and takes several
# locks as one set: all held while the command runs (single-lock users of
# each excluded), sets in opposite orders never deadlock, --read applies
# to every path; --and with --permits, or a path twice, is exit 64, and
# so is --yield-after without --and or with a bad number. Runs
# under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-lock-control-$$"
echo "1..50"

usage_says() { # usage_says DESCRIPTION PATTERN ARGS...: exit 64, PATTERN in the message
  local d=$1 pat=$2; shift 2
  "$zl" "$@" >"$tmp/us.out" 2>&1; local st=$?
  [ $st -eq 64 ] && grep -qF -- "$pat" "$tmp/us.out"
  ok $? "usage error exits 64 saying '$pat': $d (got $st: $(head -1 "$tmp/us.out"))"
}

# --- --max-hold: the numbers ---
usage_says "--max-hold 0" "invalid --max-hold '0'" --max-hold 0 "$root/u" -- true
usage_says "--max-hold -1" "invalid --max-hold '-1'" --max-hold -1 "$root/u" -- true
usage_says "--max-hold 0.0004 (rounds to 0 ms)" "at least 0.001" --max-hold 0.0004 "$root/u" -- true
usage_says "--max-hold 1e3" "invalid --max-hold '1e3'" --max-hold 1e3 "$root/u" -- true
usage_says "--max-hold over the maximum" "at most 1000000000" --max-hold 1000000001 "$root/u" -- true
[ "$(children "$root")" = 0 ]
ok $? "usage errors created nothing on the server"

# --- a wedged command: given up at --max-hold ---
# The command loops (alive, running, never ending) and leaves a marker
# each turn; zkr-lock must end it and its background child.
wedged() { # wedged MARK: the script of a loop that never ends, with a child
  echo "sleep 300 & while :; do date +%s%N >'$1'; sleep 0.05; done"
}
t0=$(date +%s%N)
"$zl" --max-hold 1.5 --kill-after 2 --stats "$root/m" -- sh -c "$(wedged "$tmp/m.mark")" 2>"$tmp/m.err" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/m.mark"
ok $? "the command runs and loops"
"$zl" -t 30 "$root/m" -- sh -c "date +%s%N >'$tmp/w.got'" 2>"$tmp/w.err" &
w=$!; pids+=($w)
wait $h; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $st -eq 75 ]
ok $? "--max-hold 1.5: exit 75 (got $st after ${ms} ms)"
grep -q "held for --max-hold" "$tmp/m.err"
ok $? "the message says the maximum hold was reached ($(grep -m1 lost "$tmp/m.err"))"
grep -q "lost" "$tmp/m.err" && grep -q '"outcome"\|lost, exit status 75' "$tmp/m.err"
ok $? "--stats says lost, exit status 75"
m1=$(cat "$tmp/m.mark"); sleep 0.5; m2=$(cat "$tmp/m.mark")
[ "$m1" = "$m2" ]
ok $? "the command's loop no longer runs"
wait $w; st=$?
[ $st -eq 0 ] && [ -s "$tmp/w.got" ]
ok $? "the waiter got the lock and ran (exit $st)"
children_reach 20 0 "$root/m"
ok $? "no node left"

# --- a command that ends in time is not touched ---
"$zl" --max-hold 30 "$root/m" -- sh -c 'exit 3'
st=$?
[ $st -eq 3 ]
ok $? "a command ending before --max-hold: its own status (got $st)"

# --- a read side and a lease ---
"$zl" -r --max-hold 1 --kill-after 1 "$root/rw" -- sh -c "$(wedged "$tmp/r.mark")" 2>"$tmp/r.err"
st=$?
[ $st -eq 75 ] && grep -q "held for --max-hold" "$tmp/r.err"
ok $? "--read --max-hold 1 with a wedged command: exit 75 (got $st)"
"$zl" --permits 2 --max-hold 1 --kill-after 1 "$root/sem" -- sh -c "$(wedged "$tmp/s.mark")" 2>"$tmp/s.err"
st=$?
[ $st -eq 75 ] && grep -q "lease of .* lost .*held for --max-hold" "$tmp/s.err"
ok $? "--permits 2 --max-hold 1 with a wedged command: exit 75 (got $st: $(head -1 "$tmp/s.err"))"
[ "$(children "$root/rw")" = 0 ] && [ "$(children "$root/sem/leases")" = 0 ]
ok $? "their nodes deleted"

# --- revocation: usage ---
usage_says "--grace without --revoke" "--grace goes with --revoke" --grace 1 "$root/u" -- true
usage_says "--revoke with a command" "--revoke takes no COMMAND" --revoke "$root/u" -- true
usage_says "--revoke with --read" "--revoke asks the holders" --revoke -r "$root/u"
usage_says "--grace -1" "invalid --grace '-1'" --revoke --grace -1 "$root/u"
usage_says "--grace 0.0004" "0 or at least 0.001" --revoke --grace 0.0004 "$root/u"
"$zl" --revoke "$root/none"
ok $? "--revoke with nothing held: exit 0"

# --- a --revocable holder lets go ---
"$zl" --revocable "$root/rv" -- sh -c "trap 'echo term >\"$tmp/rv.term\"; exit 7' TERM; echo held >'$tmp/rv.held'; while :; do sleep 0.1; done" 2>"$tmp/rv.err" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/rv.held"
"$zl" --revoke -t 10 "$root/rv"
st=$?
[ $st -eq 0 ]
ok $? "--revoke of a --revocable holder: exit 0 (got $st)"
wait $h; st=$?
[ $st -eq 7 ] && grep -q term "$tmp/rv.term"
ok $? "its command got SIGTERM, zkr-lock exited with its status 7 (got $st)"
grep -q "revocation of .* requested" "$tmp/rv.err"
ok $? "and said why ($(head -1 "$tmp/rv.err"))"
children_reach 20 0 "$root/rv"
ok $? "its node is gone"

# --- a holder that does not let go: -t, then --grace ---
"$zl" --kill-after 1 "$root/ev" -- sh -c "$(wedged "$tmp/ev.mark")" 2>"$tmp/ev.err" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/ev.mark"
"$zl" -t 1 "$root/ev" -- true 2>/dev/null &
w=$!; pids+=($w)
children_reach 20 2 "$root/ev"
"$zl" --revoke -t 1 "$root/ev" 2>"$tmp/ev1.err"
st=$?
[ $st -eq 1 ]
ok $? "--revoke -t 1 of a holder that is not revocable: exit 1, still held (got $st)"
wait $w
"$zl" -t 30 "$root/ev" -- sh -c "echo got >'$tmp/ev.next'" 2>/dev/null &
w=$!; pids+=($w)
children_reach 20 2 "$root/ev"
"$zl" --revoke -t 5 --grace 0.5 "$root/ev" 2>"$tmp/ev2.err"
st=$?
[ $st -eq 3 ]
ok $? "--revoke --grace 0.5: evicted, exit 3 (got $st)"
wait $h; st=$?
[ $st -eq 75 ] && grep -q "node deleted" "$tmp/ev.err"
ok $? "the evicted holder's command was terminated: exit 75 (got $st)"
wait $w; st=$?
[ $st -eq 0 ] && [ -s "$tmp/ev.next" ]
ok $? "the waiter behind it was not touched, and ran next (exit $st)"

# --- a creator-only lock: eviction refused without the credentials ---
"$zl" --auth owner:pw --acl creator --kill-after 1 "$root/acl" -- sh -c "$(wedged "$tmp/acl.mark")" 2>"$tmp/acl.err" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/acl.mark"
"$zl" --revoke -t 2 --grace 0 "$root/acl" 2>"$tmp/acl1.err"
st=$?
[ $st -eq 69 ] && grep -q "not authorized" "$tmp/acl1.err"
ok $? "--grace 0 without the credentials: exit 69 ($(tail -1 "$tmp/acl1.err"))"
"$zl" --auth owner:pw --revoke -t 2 --grace 0 "$root/acl"
st=$?
[ $st -eq 3 ]
ok $? "with --auth: evicted, exit 3 (got $st)"
wait $h; st=$?
[ $st -eq 75 ]
ok $? "the holder's command terminated, exit 75 (got $st)"

# --- --and: several locks as one set ---
usage_says "--and with --permits" "--and (several locks as one set) and --permits" --and "$root/b" --permits 2 "$root/a" -- true
usage_says "--and naming PATH again" "a path named twice" --and "$root/a" "$root/a" -- true
usage_says "--yield-after without --and" "--yield-after goes with --and" --yield-after 2 "$root/a" -- true
usage_says "--yield-after x" "invalid --yield-after 'x'" --yield-after x --and "$root/b" "$root/a" -- true
usage_says "--yield-after 1e3" "invalid --yield-after '1e3'" --yield-after 1e3 --and "$root/b" "$root/a" -- true
"$zl" --and "$root/and/b" --and "$root/and/c" "$root/and/a" -- sh -c "echo \$ZKR_FENCING_TOKEN >'$tmp/and.tok'; echo held >'$tmp/and.held'; sleep 2" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/and.held"
ok $? "zkr-lock --and B --and C A runs the command holding all three"
"$zl" -t 0 "$root/and/c" -- true 2>/dev/null; st1=$?
"$zl" -t 0 "$root/and/a" -- true 2>/dev/null; st2=$?
[ $st1 -eq 1 ] && [ $st2 -eq 1 ]
ok $? "a single-lock user of C or of A is excluded meanwhile (exit $st1, $st2)"
wait $h; st=$?
[ $st -eq 0 ] && [ "$(cat "$tmp/and.tok")" -gt 0 ]
ok $? "exit 0, with one fencing token for the set ($(cat "$tmp/and.tok"))"
[ "$(children "$root/and/a")" = 0 ] && [ "$(children "$root/and/b")" = 0 ] && [ "$(children "$root/and/c")" = 0 ]
ok $? "every node deleted at the end"
# two processes, opposite orders, 8 rounds each: both complete, never together
loop() { # loop FIRST SECOND TAG
  local i
  for i in 1 2 3 4 5 6 7 8; do
    "$zl" -t 60 --and "$root/o/$2" "$root/o/$1" -- sh -c "
      if [ -e '$tmp/o.in' ]; then echo overlap >>'$tmp/o.bad'; fi
      touch '$tmp/o.in'; sleep 0.05; rm -f '$tmp/o.in'; echo $3 >>'$tmp/o.log'" || echo "fail $3 $?" >>'$tmp/o.bad'
  done
}
loop x y A & l1=$!; pids+=($l1)
loop y x B & l2=$!; pids+=($l2)
wait $l1; wait $l2
[ "$(wc -l <"$tmp/o.log")" -eq 16 ] && [ ! -e "$tmp/o.bad" ]
ok $? "two zkr-lock loops taking {x,y} and {y,x}: 16 rounds, no overlap, no failure ($(cat "$tmp/o.bad" 2>/dev/null))"
# --read applies to every path
"$zl" -r --and "$root/r/b" "$root/r/a" -- sh -c "echo r >'$tmp/r1'; sleep 2" &
r1=$!; pids+=($r1)
wait_for 20 test -s "$tmp/r1"
"$zl" -r -t 0 --and "$root/r/b" "$root/r/a" -- true
ok $? "a second reading set holds beside the first"
"$zl" -w -t 0 "$root/r/b" -- true 2>/dev/null
st=$?
[ $st -eq 1 ]
ok $? "a writer of one of the paths does not (exit $st)"
wait $r1
"$zl" --and "$root/z/b" "relative/a" -- true 2>"$tmp/bad.err"
st=$?
[ $st -eq 64 ] && grep -q "invalid lock path 'relative/a'" "$tmp/bad.err"
ok $? "an invalid path among them is named: exit 64 ($(head -1 "$tmp/bad.err"))"

# --- --and with --max-hold and --revocable: the set's ---
"$zl" --and "$root/mh/b" --max-hold 1 --kill-after 1 "$root/mh/a" -- sh -c "$(wedged "$tmp/mh.mark")" 2>"$tmp/mh.err"
st=$?
[ $st -eq 75 ] && grep -q "held for --max-hold" "$tmp/mh.err" &&
  [ "$(children "$root/mh/a")" = 0 ] && [ "$(children "$root/mh/b")" = 0 ]
ok $? "--and --max-hold 1 with a wedged command: exit 75, both nodes deleted (got $st)"
"$zl" --revocable --and "$root/rvs/b" "$root/rvs/a" -- sh -c "trap 'exit 6' TERM; echo held >'$tmp/rvs.held'; while :; do sleep 0.1; done" 2>/dev/null &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/rvs.held"
"$zl" --revoke "$root/rvs/b"
st1=$?
wait $h; st=$?
[ $st1 -eq 0 ] && [ $st -eq 6 ]
ok $? "--revocable --and: a request on one path ends the command (exit $st), --revoke exits 0 ($st1)"
[ "$(children "$root/rvs/a")" = 0 ] && [ "$(children "$root/rvs/b")" = 0 ]
ok $? "and the whole set is released"
