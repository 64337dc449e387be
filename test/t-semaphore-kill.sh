#!/usr/bin/env bash
# The counting semaphore under process faults, with lockworker --recipe
# semaphore against a real standalone server (runs under test/with-zk):
# (a) one of two lease holders (limit 2) killed with SIGKILL: its lease
#     comes back when its session expires and the waiting contender gets it,
#     while the other holder keeps its lease;
# (b) a lease holder SIGSTOPped past its session timeout: the waiter gets
#     its lease; resumed, the old holder learns LOST (through the state
#     callback) before it writes anything: no TOUCH line of it timed
#     after the stop (at most the write in flight at the stop, see
#     touched_in_time in testlib.sh);
# (c) a contender killed while it waits inside the admission mutex (its
#     lease node created, counting) does not jam the admission mutex: once
#     its session expires the next waiter is admitted, and gets the lease
#     when the holder goes.
# The waits are for conditions (nodes, log lines, exits), bounded
# generously; no duration is asserted.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start
echo "1..19"
T=4000
root="/zkr-test/t-semaphore-kill-$$"

# kz CMD PATH: count (children of PATH, 0 if it is gone) or pids (the pid=
# of each child's data, in sequence order)
cat >"$tmp/kz.py" <<'EOF'
import logging, re, sys
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
cmd, hosts, path = sys.argv[1:4]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=10)
try:
    kids = zk.get_children(path)
except NoNodeError:
    kids = []
if cmd == "count":
    print(len(kids))
elif cmd == "pids":
    out = []
    for k in sorted(kids, key=lambda k: int(k[-10:])):
        try:
            data = zk.get(path + "/" + k)[0].decode()
        except NoNodeError:
            continue
        m = re.search(r"\bpid=(\d+)", data)
        out.append(m.group(1) if m else "?")
    print(" ".join(out))
zk.stop()
zk.close()
EOF
kz() { timeout 30 "$py" "$tmp/kz.py" "$1" "$hosts" "$2" 2>>"$tmp/kz.err"; }
count_is() { [ "$(kz count "$1")" = "$2" ]; }   # count_is PATH N
pids_are() { [ "$(kz pids "$1")" = "$2" ]; }    # pids_are PATH "P1 P2"
acq_of() { grep -q "^ACQ $2 " "$1" 2>/dev/null; } # acq_of LOG PID
# finish PID SECONDS: wait for PID to end (SIGKILL after SECONDS), return
# its exit status (124 if killed)
finish() {
  wait_for "$2" pid_gone "$1" || { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124; }
  wait "$1"
}
sem() { # sem PATH PERMITS ARGS...: a lockworker on the semaphore
  local p=$1 k=$2; shift 2
  exec "$worker" --servers "$hosts" --path "$p" --recipe semaphore --permits "$k" \
    --session-ms $T "$@"
}

# --- (a) SIGKILL of a lease holder, limit 2 ---
A=$root/a
sem "$A" 2 --hold-forever --log "$tmp/a.log" >"$tmp/h1.out" 2>&1 &
h1=$!; pids+=("$h1")
sem "$A" 2 --hold-forever --log "$tmp/a.log" >"$tmp/h1b.out" 2>&1 &
h1b=$!; pids+=("$h1b")
wait_for 20 grep -q '^HELD' "$tmp/h1.out" && wait_for 20 grep -q '^HELD' "$tmp/h1b.out"
ok $? "two holders take the two leases of $A"
sem "$A" 2 --iterations 1 --hold-ms 1 --log "$tmp/a.log" >"$tmp/w1.out" 2>&1 &
w1=$!; pids+=("$w1")
# the waiter is admitted and counts three lease nodes, its own included
wait_for 20 count_is "$A/leases" 3 && count_is "$A/locks" 1 && ! acq_of "$tmp/a.log" $w1
ok $? "a third contender waits inside the admission mutex, its lease node the third"
kill -9 $h1
finish $w1 30; st=$?
[ $st -eq 0 ] && acq_of "$tmp/a.log" $w1
ok $? "after SIGKILL of a holder the waiter gets its lease once the session expires (exit $st)"
! pid_gone $h1b && ! grep -q LOST "$tmp/h1b.out" && wait_for 10 pids_are "$A/leases" "$h1b"
ok $? "the other holder kept its lease throughout; only its lease node is left"
kill -TERM $h1b

# --- (b) SIGSTOP of a lease holder past its session timeout, limit 2 ---
B=$root/b
sem "$B" 2 --hold-forever --log "$tmp/b.log" >"$tmp/h2.out" 2>&1 &
h2=$!; pids+=("$h2")
sem "$B" 2 --hold-forever --log "$tmp/b.log" >"$tmp/h2b.out" 2>&1 &
h2b=$!; pids+=("$h2b")
wait_for 20 grep -q '^HELD' "$tmp/h2.out" && wait_for 20 grep -q '^HELD' "$tmp/h2b.out" &&
  wait_for 5 grep -q "^TOUCH $h2 " "$tmp/b.log"
ok $? "two holders take the two leases of $B, touching the resource every 10 ms"
sem "$B" 2 --iterations 1 --hold-ms 1500 --log "$tmp/b.log" >"$tmp/w2.out" 2>&1 &
w2=$!; pids+=("$w2")
wait_for 20 count_is "$B/leases" 3 && ! acq_of "$tmp/b.log" $w2
ok $? "a third contender waits for a lease"
kill -STOP $h2
# stopped for sure (state T) before its writes are counted
wait_for 5 is_stopped $h2
touches=$(grep -c "^TOUCH $h2 " "$tmp/b.log")
wait_for 30 acq_of "$tmp/b.log" $w2
ok $? "holder SIGSTOPped: the waiter gets a lease once the stopped holder's session expires"
kill -CONT $h2
finish $h2 30; st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/h2.out" && grep -q "^STATE $h2 LOST " "$tmp/b.log"
ok $? "resumed, the old holder learns LOST, through the state callback too (exit $st)"
[ $st -eq 75 ] || diag "$(tail -n 30 "$tmp/h2.out")"
after=$(grep -c "^TOUCH $h2 " "$tmp/b.log")
[ "$after" -le $((touches + 1)) ]
ok $? "it wrote nothing after it was resumed ($touches TOUCH lines before the stop, $after at the end: at most the write in flight, see testlib.sh)"
late=$(touched_in_time "$tmp/b.log" $h2 $w2)
ok $? "each TOUCH of it is timed before the new holder's ACQ; ${late:-?} follows that ACQ line (in flight)"
finish $w2 30; st=$?
[ $st -eq 0 ]
ok $? "the new holder finished normally (exit $st)"
! pid_gone $h2b && ! grep -q LOST "$tmp/h2b.out" && ! grep -q "^STATE $h2b LOST" "$tmp/b.log"
ok $? "the other holder kept its lease throughout"
kill -TERM $h2b

# --- (c) a contender killed inside the admission mutex, limit 1 ---
C=$root/c
sem "$C" 1 --hold-forever --log "$tmp/c.log" >"$tmp/h3.out" 2>&1 &
h3=$!; pids+=("$h3")
wait_for 20 grep -q '^HELD' "$tmp/h3.out"
ok $? "a holder takes the one lease of $C"
sem "$C" 1 --iterations 1 --hold-ms 1 --log "$tmp/c.log" >"$tmp/c3.out" 2>&1 &
c3=$!; pids+=("$c3")
wait_for 20 pids_are "$C/leases" "$h3 $c3" && pids_are "$C/locks" "$c3"
ok $? "a contender holds the admission mutex, its lease node waiting behind the holder's"
sem "$C" 1 --iterations 1 --hold-ms 1 --log "$tmp/c.log" >"$tmp/w3.out" 2>&1 &
w3=$!; pids+=("$w3")
wait_for 20 pids_are "$C/locks" "$c3 $w3" && pids_are "$C/leases" "$h3 $c3"
ok $? "a second contender queues for the admission mutex behind it"
kill -9 $c3
# c3's session expires: its admission and lease nodes go; w3 is admitted
# and creates its lease node, which waits behind the holder's
wait_for 30 pids_are "$C/leases" "$h3 $w3" && pids_are "$C/locks" "$w3" && ! acq_of "$tmp/c.log" $w3
ok $? "once the killed contender's session expires the next waiter is admitted and waits for the lease"
kill -TERM $h3
finish $w3 30; st=$?
[ $st -eq 0 ] && acq_of "$tmp/c.log" $w3
ok $? "when the holder's session ends the admitted waiter gets the lease (exit $st)"
! acq_of "$tmp/c.log" $c3
ok $? "the killed contender never held"

left=$(children "$A/leases" "$A/locks" "$B/leases" "$B/locks" "$C/leases" "$C/locks")
[ "$left" = 0 ]
ok $? "no node left under leases/ or locks/ ($left)"
