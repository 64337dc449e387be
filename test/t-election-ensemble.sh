#!/usr/bin/env bash
# t-election-ensemble.sh - the latch's leader while ZooKeeper servers die,
# on a three-server ensemble (runs under test/with-zk). Five participants
# (lockworker --recipe latch --hold-forever, the ensemble's whole
# connection string, the default ZKR_ELECTION_SUSPEND_DROP) write one
# journal, as in t-election-faults.sh: "ACQ pid seq token t_ms L" when
# they start to lead, "TOUCH pid token t_ms" every 10 ms while they lead
# (each right after a check that they still lead), "LOST pid token t_ms"
# when they find they do not (then they exit 75, and a new participant
# takes the place). The faults:
#   a follower killed: the follower the leading participant is connected
#     to (found with the servers' "cons"), so its connection drops and it
#     must step down; a new participant leads. Should the leading
#     participant sit on the ZooKeeper leader when the follower's turn
#     comes, a follower is killed all the same and the check is the other
#     way round: the leader, untouched, keeps leading (said in a diag);
#   the ZooKeeper leader killed: the ensemble loses its quorum for a
#     while, every connection drops, the leading participant steps down,
#     and once a new ZooKeeper leader serves a new participant leads.
# The follower's turn comes first when the leading participant is on a
# follower, else second. Each killed server is started again once a new
# participant leads (or, away from it, once it is seen to keep leading). The
# journal check: the leaders' intervals never overlap, the fencing tokens
# grow, every fault that reached the leader is followed by one new
# leader. No duration is asserted.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start --servers 3
echo "1..13"
T=6000
path="/zkr-test/t-election-ensemble-$$/leader"
J=$tmp/journal
: >"$J"

count() {
	"$py" - "$hosts" "$path" <<'PY' 2>/dev/null
import logging, sys
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
zk = KazooClient(hosts=sys.argv[1], timeout=10.0); zk.start(timeout=20)
try:
    print(len(zk.get_children(sys.argv[2])))
except NoNodeError:
    print(0)
zk.stop()
PY
}
count_is() { [ "$(count)" = "$1" ]; }
finish() {
	wait_for "$2" pid_gone "$1" || {
		kill -9 "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	}
	wait "$1"
}

wk=()
nslots=0
slot_of() {
	local i
	for ((i = 0; i < nslots; i++)); do [ "${wk[i]}" = "$1" ] && echo $i && return; done
}
join_one() {
	local i=$nslots
	"$worker" --servers "$hosts" --path "$path" --recipe latch --hold-forever \
		--session-ms $T --id "p$i" --log "$J" >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
	wk[i]=$!
	pids+=($!)
	nslots=$((nslots + 1))
}
acqs() { grep -c '^ACQ' "$J"; }
leader() { awk '$1 == "ACQ" { p = $2 } END { print p }' "$J"; }
more_acqs() { [ "$(acqs)" -gt "$1" ]; }
touches_of() { grep -c "^TOUCH $1 " "$J"; }
writes_after() { [ "$(touches_of "$1")" -gt "$2" ]; }
# server_of PID: the server participant PID is connected to (cons), or
# nothing
server_of() {
	local s sid i
	s=$(slot_of "$1")
	sid=$(awk '$1 == "SESSION" { print $2; exit }' "$tmp/w$s.out")
	[ -n "$sid" ] || return
	for i in 1 2 3; do
		if sb 4lw "$i" cons 2>/dev/null | grep -q "sid=0x$sid[,)]"; then
			echo "$i"
			return
		fi
	done
}
connected() { [ -n "$(server_of "$1")" ]; }

for i in 1 2 3 4 5; do join_one; done
wait_for 60 count_is 5 && wait_for 30 more_acqs 0
ok $? "5 participants joined the election on a three-server ensemble; one leads"

faults=0 reached=0
t_start=$SECONDS
# fault_round KIND: KIND is follower or leader
fault_round() {
	local kind=$1 L nb t0=$SECONDS srv zl victim st s
	L=$(leader) nb=$(acqs)
	wait_for 20 connected "$L"
	srv=$(server_of "$L")
	zl=$(sb leader)
	if [ "$kind" = leader ]; then
		victim=$zl
	elif [ -n "$srv" ] && [ "$srv" != "$zl" ]; then
		victim=$srv
	else
		victim=1
		[ "$zl" = 1 ] && victim=2
		[ "$srv" = "$victim" ] && victim=3
	fi
	diag "leading participant $L on server ${srv:-?}; ZooKeeper leader $zl; killing server $victim ($kind)"
	sb kill "$victim" >/dev/null
	faults=$((faults + 1))
	if [ "$kind" = leader ] || [ "$victim" = "$srv" ]; then
		reached=$((reached + 1))
		wait_for 60 more_acqs "$nb"
		local rc=$? now
		now=$(leader)
		[ $rc -eq 0 ] && [ "$now" != "$L" ]
		ok $? "the $kind (server $victim) killed: a new participant leads (${now:-none}; $((SECONDS - t0)) s)"
		s=$(slot_of "$L")
		finish "$L" 30
		st=$?
		[ $st -eq 75 ] && grep -q '^LOST' "$tmp/w$s.out"
		ok $? "the old leader stepped down: LOST, exit 75 ($st)"
		join_one
	else
		local t
		t=$(touches_of "$L")
		wait_for 20 writes_after "$L" "$t" && [ "$(acqs)" = "$nb" ] && [ "$(leader)" = "$L" ]
		ok $? "the $kind (server $victim) killed, away from the leading participant: it keeps leading (same token, no new ACQ)"
		! grep -q "^LOST $L " "$J" && ! pid_gone "$L"
		ok $? "it never logged LOST"
	fi
	sb start-server "$victim" >/dev/null 2>"$tmp/start-$victim.err" &&
		sb wait-ready "$victim" >/dev/null 2>&1
	st=$?
	[ $st -eq 0 ] || sed 's/^/# /' "$tmp/start-$victim.err" | tail -n 5
	ok $st "server $victim serves again"
}
# the follower's turn first if the leading participant sits on a
# follower now, else the ZooKeeper leader's first (a new participant
# leads after it, perhaps on a follower)
L=$(leader)
wait_for 20 connected "$L"
if [ "$(server_of "$L")" != "$(sb leader)" ]; then
	fault_round follower
	fault_round leader
else
	fault_round leader
	fault_round follower
fi
diag "the faults took $((SECONDS - t_start)) s"

verdict=$(journal_verdict "$J")
[ "${verdict%% *}" = ok ]
ok $? "journal: the leaders' intervals never overlap, one writer at a time, the tokens grow"
[ "${verdict%% *}" = ok ] || diag "$verdict"
nacq=$(acqs)
[ "$nacq" = $((reached + 1)) ]
ok $? "every fault that reached the leader ($reached of $faults) was followed by exactly one new leader ($nacq leaders in all)"
L=$(leader)
! pid_gone "$L" && wait_for 10 writes_after "$L" "$(touches_of "$L")"
ok $? "the last leader ($L) still leads and writes"
wait_for 30 count_is 5
ok $? "5 participants live, 5 nodes"
for ((i = 0; i < nslots; i++)); do
	pid_gone "${wk[i]}" || kill -TERM "${wk[i]}"
done
wait_for 30 count_is 0
ok $? "no node left once they are gone"
st=$(sb status | grep -c running)
[ "$st" = 3 ]
ok $? "all three servers running at the end"
