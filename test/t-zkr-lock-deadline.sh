#!/usr/bin/env bash
# zkr-lock's deadlines and signals while the server does not answer (it
# is SIGSTOPped): a waiter with -t gives up at its deadline (exit 1, or
# the -E value) instead of waiting, on its way out, for a deletion that
# cannot reach the server (it waited half the session timeout more); a
# SIGTERM ends a waiter, and a zkr-lock still connecting, at once (exit
# 143). The node is left to the end of its ZooKeeper session. Each bound is far below
# what the old code took (the session timeout here is 20 s: its half is
# 10 s) and far above what the new one needs (about 1.5 s to close the
# connection). Runs under test/with-zk.
set -u
TESTLIB_NEEDS="kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-lock-deadline-$$"
echo "1..6"
resume() { sb resume 1 >/dev/null 2>&1; }
testlib_on_exit() { resume; }

"$zl" "$root/l" -- sh -c "echo held >'$tmp/held'; sleep 120" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/held"
ok $? "a holder"

# elapsed CMD...: run CMD, set $st and $ms (its wall time)
elapsed() {
  local t0=$(date +%s%N)
  "$@"; st=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
}

# a waiter with -t 3, then the server stops answering
"$zl" --session-timeout 20000 -t 3 -E 7 "$root/l" -- true 2>"$tmp/w.err" &
w=$!; pids+=($w)
children_reach 20 2 "$root/l"
t0=$(date +%s%N)
sb pause 1 >/dev/null
wait $w; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $st -eq 7 ] && [ $ms -lt 9000 ]
ok $? "a waiter with -t 3 -E 7, the server stopped: exit 7 after ${ms} ms (under 9 s; it took 3 + 10 + 1.5 s)"

# SIGTERM to a waiter while the server does not answer
resume
"$zl" --session-timeout 20000 "$root/l" -- true 2>"$tmp/w2.err" &
w=$!; pids+=($w)
children_reach 20 2 "$root/l"
sb pause 1 >/dev/null
sleep 0.5
t0=$(date +%s%N)
kill -TERM $w
wait $w; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $st -eq 143 ] && [ $ms -lt 6000 ]
ok $? "SIGTERM to a waiter, the server stopped: exit 143 after ${ms} ms (under 6 s)"

# SIGTERM while connecting to a server that does not answer
"$zl" --session-timeout 20000 --connect-timeout 60000 "$root/l" -- true 2>"$tmp/c.err" &
c=$!; pids+=($c)
sleep 1
t0=$(date +%s%N)
kill -TERM $c
wait $c; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $st -eq 143 ] && [ $ms -lt 3000 ]
ok $? "SIGTERM while connecting (--connect-timeout 60): exit 143 after ${ms} ms (under 3 s)"

# -t while connecting: the connection is governed by --connect-timeout
elapsed "$zl" --connect-timeout 2000 -t 1 "$root/l" -- true 2>"$tmp/c2.err"
[ $st -eq 69 ] && [ $ms -lt 8000 ]
ok $? "no server answering: exit 69 at --connect-timeout 2 (got $st after ${ms} ms)"

resume
kill -TERM $h; wait $h 2>/dev/null
children_reach 90 0 "$root/l"
ok $? "once the server answers again, nothing is left (the waiters' nodes go with their sessions)"
