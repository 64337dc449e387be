#!/usr/bin/env bash
# t-election-faults.sh - the latch's leader under faults of its own, on a
# standalone server (runs under test/with-zk). Five participants
# (lockworker --recipe latch --hold-forever), each through a test/zkproxy
# of its own, write one journal: "ACQ pid seq token t_ms L" when they start
# to lead, "TOUCH pid token t_ms" every 10 ms while they lead (each right
# after a check that they still lead, timed right before it), "LOST pid
# token t_ms" when they find they do not (then they exit 75; a new
# participant takes the place of each one that goes, so five stay live).
# The leader of the moment is hit by, in turn:
#   SIGKILL;
#   SIGSTOP past its session timeout, then SIGCONT (it must not write as
#     leader after it resumes);
#   its session expired: its proxy black-holes every frame, both ways,
#     until the server has expired the session and another participant
#     leads, then lets them flow (the client is told the session expired);
#   its node deleted by another client;
#   its connection cut (the proxy resets it and keeps serving, so the
#     client may reconnect at once with the same session): under
#     ZKR_ELECTION_SUSPEND_DROP it stops leading at the cut, steps down,
#     and the next one leads.
# After each fault a new participant leads. The journal check: the leaders'
# intervals [ACQ, last TOUCH] follow one another and never overlap (no line
# of a leader after the next one's ACQ but the one write in flight, timed
# before that ACQ: see testlib.sh; and the times agree), the fencing
# tokens grow, every fault is followed by one new leader. No duration is
# asserted: the waits are for conditions, bounded generously.
set -u
TESTLIB_NEEDS="worker proxy kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start
echo "1..20"
T=4000
path="/zkr-test/t-election-faults-$$/leader"
J=$tmp/journal
: >"$J"
target=${hosts%%,*}

# kz CMD ARG: count (children of ARG), delete (the node ARG)
cat >"$tmp/kz.py" <<'EOF'
import logging, sys
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
cmd, hosts, arg = sys.argv[1:4]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=10)
rc = 0
if cmd == "count":
    try:
        print(len(zk.get_children(arg)))
    except NoNodeError:
        print(0)
elif cmd == "delete":
    try:
        zk.delete(arg)
    except NoNodeError:
        rc = 1
zk.stop()
zk.close()
sys.exit(rc)
EOF
kz() { timeout 30 "$py" "$tmp/kz.py" "$1" "$hosts" "$2" 2>>"$tmp/kz.err"; }
count_is() { [ "$(kz count "$path")" = "$1" ]; }

# finish PID SECONDS: wait for PID to end (SIGKILL after SECONDS); its
# exit status (124 if killed)
finish() {
	wait_for "$2" pid_gone "$1" || {
		kill -9 "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	}
	wait "$1"
}

# The participants: wk[i] the worker's pid, by slot i (its proxy's files
# in $tmp/p<i>).
wk=()
nslots=0
slot_of() { # slot_of PID: the slot of worker PID
	local i
	for ((i = 0; i < nslots; i++)); do [ "${wk[i]}" = "$1" ] && echo $i && return; done
}
join_one() { # a new participant behind its own proxy
	local i=$nslots port
	mkdir -p "$tmp/p$i"
	: >"$tmp/p$i/events"
	"$proxy" --listen 0 --target "$target" --port-file "$tmp/p$i/port" \
		--control-file "$tmp/p$i/control" --event-file "$tmp/p$i/events" \
		</dev/null >"$tmp/p$i/stdout" 2>"$tmp/p$i/stderr" &
	pids+=($!)
	wait_for 10 test -s "$tmp/p$i/port" || { echo "Bail out! proxy $i did not start"; exit 1; }
	port=$(cat "$tmp/p$i/port")
	"$worker" --servers "127.0.0.1:$port" --path "$path" --recipe latch \
		--hold-forever --session-ms $T --id "p$i" --log "$J" \
		>"$tmp/w$i.out" 2>"$tmp/w$i.err" &
	wk[i]=$!
	pids+=($!)
	nslots=$((nslots + 1))
}
# proxy SLOT CMD: run CMD in that participant's proxy and wait until done
proxy_cmd() {
	local d=$tmp/p$1
	printf '%s\n' "$2" >"$d/control.tmp" && mv "$d/control.tmp" "$d/control"
	wait_for 10 grep -qxF "done $2" "$d/events"
}
acqs() { grep -c '^ACQ' "$J"; }
leader() { awk '$1 == "ACQ" { p = $2 } END { print p }' "$J"; }
# new_leader N: wait until the journal has more than N ACQ lines
more_acqs() { [ "$(acqs)" -gt "$1" ]; }
touches_of() { grep -c "^TOUCH $1 " "$J"; }

for i in 1 2 3 4 5; do join_one; done
wait_for 30 count_is 5 && wait_for 20 more_acqs 0
ok $? "5 participants joined, each through a proxy of its own; one leads"
L=$(leader)
diag "the first leader is $L (p$(slot_of "$L"))"

faults=0
t_start=$SECONDS
# after_fault OLD N DESC: a new participant led after the fault on OLD
# (the journal had N ACQ lines before), and OLD's place is taken
after_fault() {
	local old=$1 before=$2
	wait_for 30 more_acqs "$before"
	local rc=$?
	local now
	now=$(leader)
	[ $rc -eq 0 ] && [ "$now" != "$old" ]
	ok $? "$3: a new participant leads (${now:-none}, p$(slot_of "$now"); $((SECONDS - t_fault)) s)"
	faults=$((faults + 1))
	join_one
}

# ---- SIGKILL
L=$(leader) nb=$(acqs) t_fault=$SECONDS
kill -9 "$L"
after_fault "$L" "$nb" "leader SIGKILLed"
finish "$L" 5 >/dev/null

# ---- SIGSTOP past the session timeout, then SIGCONT
L=$(leader) nb=$(acqs) t_fault=$SECONDS
kill -STOP "$L"
wait_for 5 is_stopped "$L"
t_stop=$(touches_of "$L")
after_fault "$L" "$nb" "leader SIGSTOPped past its session timeout"
N=$(leader)
kill -CONT "$L"
finish "$L" 30
st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/w$(slot_of "$L").out"
ok $? "resumed, the old leader finds it does not lead and exits 75 (exit $st)"
late=$(touched_in_time "$J" "$L" "$N") && [ "$(touches_of "$L")" -le $((t_stop + 1)) ]
ok $? "it wrote nothing after it was resumed ($t_stop TOUCH lines before the stop, $(touches_of "$L") at the end, ${late:-?} in flight: see testlib.sh)"

# ---- its session expired (the proxy black-holes it past the timeout)
L=$(leader) nb=$(acqs) t_fault=$SECONDS s=$(slot_of "$L")
proxy_cmd "$s" blackhole
ok $? "the leader's proxy black-holes its connection"
after_fault "$L" "$nb" "the leader's session expired on the server"
proxy_cmd "$s" flow
finish "$L" 30
st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/w$s.out"
ok $? "the old leader learned it does not lead and exits 75 (exit $st)"

# ---- its node deleted by another client
L=$(leader) nb=$(acqs) t_fault=$SECONDS s=$(slot_of "$L")
node=$(awk '$1 == "HELD" { print $2; exit }' "$tmp/w$s.out")
kz delete "$node"
ok $? "the leader's node deleted by another client ($node)"
after_fault "$L" "$nb" "leader node deleted"
finish "$L" 30
st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/w$s.out"
ok $? "the old leader stopped leading and exits 75 (exit $st)"

# ---- its connection cut (it comes back at once, with the same session)
L=$(leader) nb=$(acqs) t_fault=$SECONDS s=$(slot_of "$L")
proxy_cmd "$s" cut-all
ok $? "the leader's connection is cut (reset by the proxy)"
after_fault "$L" "$nb" "leader's connection cut"
finish "$L" 30
st=$?
[ $st -eq 75 ] && grep -q '^LOST' "$tmp/w$s.out" &&
	grep -q '^conn [0-9]* closed cut-all' "$tmp/p$s/events"
ok $? "the old leader stepped down at the cut and exits 75 (exit $st; its proxy opened $(grep -c '^conn [0-9]* open' "$tmp/p$s/events") connections)"

diag "the faults took $((SECONDS - t_start)) s"
# ---- the journal
# verdict: "ok N PIDS" or "bad REASON"
verdict=$(journal_verdict "$J")
[ "${verdict%% *}" = ok ]
ok $? "journal: the leaders' intervals never overlap, one writer at a time, the tokens grow"
[ "${verdict%% *}" = ok ] || diag "$verdict"
nacq=$(acqs)
[ "$nacq" = $((faults + 1)) ]
ok $? "every fault ($faults) was followed by exactly one new leader ($nacq leaders in all)"
# every leader but the last wrote, and stopped writing before the next one
nlost=$(grep -c '^LOST' "$J")
[ "$nlost" = 4 ]
ok $? "the 4 leaders that survived their fault each logged LOST ($nlost)"
L=$(leader)
writes_after() { [ "$(touches_of "$1")" -gt "$2" ]; }
! pid_gone "$L" && wait_for 5 writes_after "$L" "$(touches_of "$L")"
ok $? "the last leader ($L) still leads and writes"

# the live participants are the last 5 that joined
live=0
for ((i = 0; i < nslots; i++)); do pid_gone "${wk[i]}" || live=$((live + 1)); done
wait_for 20 count_is 5
ok $? "5 participants live ($live), 5 nodes"
for ((i = 0; i < nslots; i++)); do
	pid_gone "${wk[i]}" || kill -TERM "${wk[i]}"
done
wait_for 30 count_is 0
ok $? "no node left once they are gone"
