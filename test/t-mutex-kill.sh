#!/usr/bin/env bash
# A holder killed with SIGKILL: the next waiter acquires once the session
# expires. A holder SIGSTOPped past its session timeout and resumed: the
# next waiter got the lock meanwhile, and the old holder learns LOST before
# it touches the resource again. t-rwlock-kill.sh runs it with the
# read-write lock: a writer holder killed with a reader waiting, a reader
# holder stopped with a writer waiting. Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start
now_ms() { echo $(($(date +%s%N) / 1000000)); }
echo "1..9"
T=4000
root="/zkr-test/t-mutex-kill-$$"
# the recipes of the holder and the waiter of each part (lockworker --recipe)
A_HOLDER=${A_HOLDER:-mutex} A_WAITER=${A_WAITER:-mutex}
B_HOLDER=${B_HOLDER:-mutex} B_WAITER=${B_WAITER:-mutex}
diag "SIGKILL: $A_HOLDER holder, $A_WAITER waiter; SIGSTOP: $B_HOLDER holder, $B_WAITER waiter"

# --- SIGKILL ---
"$worker" --servers "$hosts" --path "$root/a" --recipe "$A_HOLDER" --hold-forever --session-ms $T \
  --log "$tmp/a.log" >"$tmp/h1.out" 2>&1 &
h1=$!; pids+=($h1)
wait_for 20 grep -q '^HELD' "$tmp/h1.out"
ok $? "holder process holds"
"$worker" --servers "$hosts" --path "$root/a" --recipe "$A_WAITER" --iterations 1 --hold-ms 1 \
  --session-ms $T --log "$tmp/a.log" >"$tmp/w1.out" 2>&1 &
w1=$!; pids+=($w1)
sleep 0.5
! grep -q "^ACQ $w1 " "$tmp/a.log"
ok $? "the waiter waits while the holder lives"
t0=$(now_ms)
kill -9 $h1
wait $w1; st=$?
t1=$(now_ms)
[ $st -eq 0 ] && grep -q "^ACQ $w1 " "$tmp/a.log"
ok $? "after SIGKILL of the holder the waiter acquires ($((t1 - t0)) ms later, session timeout $T ms)"

# --- SIGSTOP past the session timeout ---
"$worker" --servers "$hosts" --path "$root/b" --recipe "$B_HOLDER" --hold-forever --session-ms $T \
  --log "$tmp/b.log" >"$tmp/h2.out" 2>&1 &
h2=$!; pids+=($h2)
wait_for 20 grep -q '^HELD' "$tmp/h2.out"
ok $? "second holder holds, touching the resource every 10 ms"
"$worker" --servers "$hosts" --path "$root/b" --recipe "$B_WAITER" --iterations 1 --hold-ms 1500 \
  --session-ms $T --log "$tmp/b.log" >"$tmp/w2.out" 2>&1 &
w2=$!; pids+=($w2)
sleep 0.5
kill -STOP $h2
stopped=$(now_ms)
# stopped for sure (state T) before its writes are counted
wait_for 5 is_stopped $h2
touches=$(grep -c "^TOUCH $h2 " "$tmp/b.log")
wait_for 30 grep -q "^ACQ $w2 " "$tmp/b.log"
ok $? "holder SIGSTOPped: the waiter acquires once the session expires ($(( $(now_ms) - stopped )) ms)"
kill -CONT $h2
wait $h2; st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/h2.out"
ok $? "resumed, the old holder learns LOST (exit $st)"
# After the pause the old holder must not have touched the resource: each
# of its TOUCH lines is timed before the waiter's ACQ, and at most one
# (the write in flight at the stop, see testlib.sh) follows that ACQ line.
late=$(touched_in_time "$tmp/b.log" $h2 $w2)
ok $? "it touched nothing after the new holder got the lock ($touches TOUCH lines before the stop, $(grep -c "^TOUCH $h2 " "$tmp/b.log") at the end, ${late:-?} in flight)"
wait $w2
ok $? "the new holder finished normally"
left=$(children "$root/a" "$root/b")
[ "$left" = 0 ]
ok $? "no node left ($left)"
