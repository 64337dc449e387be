#!/usr/bin/env bash
# t-sandbox.sh - TAP tests of scripts/zk-sandbox against real ZooKeeper servers.
# Meant to run under test/with-zk (ZKR_SANDBOX, ZKR_SANDBOX_DIR set); without
# it, uses ../scripts/zk-sandbox and a private mktemp directory.

# shellcheck disable=SC2317  # functions run from traps

set -u
TESTLIB_NEEDS="" # kazoo optional: the quorum check skips itself without it
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"

ens=$ZKR_SANDBOX_DIR/ensemble   # second sandbox dir, for the ensemble
testlib_on_exit() {
	sb --dir "$ens" stop >/dev/null 2>&1
	sb stop >/dev/null 2>&1
}

echo "1..26"

# ---------------------------------------------------------------- standalone
t0=$SECONDS
out=$(sb start 2>"$ZKR_SANDBOX_DIR/start.err")
rc=$?
[ $rc -eq 0 ] && [[ $out =~ ^127\.0\.0\.1:[0-9]+$ ]]
ok $? "standalone start prints one connection string ($out, $((SECONDS - t0)) s)"
if [ $rc -ne 0 ]; then diag "$(cat "$ZKR_SANDBOX_DIR/start.err")"; fi

port=$(sb port 1)
[ "$(sb 4lw 1 ruok)" = imok ] && [ "$out" = "127.0.0.1:$port" ]
ok $? "ruok answers imok on the client port"

st=$(sb status)
[[ $st =~ ^1\ [0-9]+\ $port\ running\ standalone$ ]]
ok $? "status shows server 1 running standalone ($st)"

[ "$(sb env)" = "ZKR_SERVERS=$out" ] && [ "$(sb connstr)" = "$out" ] && [ "$(sb leader)" = 1 ]
ok $? "env, connstr and leader agree"

sb start >/dev/null 2>"$ZKR_SANDBOX_DIR/start2.err"
rc=$?
[ $rc -ne 0 ] && grep -q 'already runs' "$ZKR_SANDBOX_DIR/start2.err"
ok $? "second start on the same dir refuses (rc $rc)"

pid1=$(sb pid 1)
sb stop && pid_gone "$pid1"
ok $? "stop leaves no process (pid $pid1 gone)"

sb stop
ok $? "stop again is a no-op with exit 0"

# ---------------------------------------------------------------- ensemble
t0=$SECONDS
out=$(sb --dir "$ens" start --servers 3 2>"$ZKR_SANDBOX_DIR/ens.err")
rc=$?
[ $rc -eq 0 ] && [[ $out =~ ^127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]]
ok $? "3-server ensemble starts ($out, $((SECONDS - t0)) s)"
if [ $rc -ne 0 ]; then diag "$(cat "$ZKR_SANDBOX_DIR/ens.err")"; fi

pids=()
for i in 1 2 3; do pids+=("$(sb --dir "$ens" pid "$i")"); done

leader=$(sb --dir "$ens" leader)
sb --dir "$ens" 4lw "$leader" srvr | grep -q '^Mode: leader$'
ok $? "leader ($leader) says Mode: leader in srvr"

nfollow=$(sb --dir "$ens" status | awk '$4 == "running" && $5 == "follower"' | wc -l)
[ "$nfollow" -eq 2 ]
ok $? "status shows two running followers"

sb --dir "$ens" kill "$leader"
ok $? "kill the leader"

pid_gone "${pids[leader - 1]}" &&
	sb --dir "$ens" status | grep -q "^$leader - [0-9]* stopped -$"
ok $? "killed leader's process is gone, status says stopped"

t0=$SECONDS
new=$(sb --dir "$ens" leader)
[ -n "$new" ] && [ "$new" != "$leader" ] && [ $((SECONDS - t0)) -le 30 ]
ok $? "a different leader ($new) within 30 s ($((SECONDS - t0)) s)"

sb --dir "$ens" 4lw "$new" srvr | grep -q '^Mode: leader$'
ok $? "new leader's srvr says leader"

sb --dir "$ens" start-server "$leader"
ok $? "start-server brings the old leader back"

sb --dir "$ens" 4lw "$leader" srvr | grep -q '^Mode: follower$'
ok $? "old leader ($leader) rejoined as follower"

follower=$(sb --dir "$ens" status | awk '$5 == "follower" { print $1; exit }')
sb --dir "$ens" pause "$follower"
sb --dir "$ens" status | grep -q "^$follower [0-9]* [0-9]* paused -$"
ok $? "pause $follower: status says paused"

sb --dir "$ens" resume "$follower"
sb --dir "$ens" wait-ready "$follower" &&
	sb --dir "$ens" status | grep -q "^$follower [0-9]* [0-9]* running follower$"
ok $? "resume $follower: status says running follower"

sb --dir "$ens" restart "$follower" &&
	sb --dir "$ens" status | grep -q "^$follower [0-9]* [0-9]* running follower$"
ok $? "restart $follower"

sb --dir "$ens" wait-ready
ok $? "wait-ready on the whole ensemble"

# an ensemble that lost its quorum comes back when its servers are started
# together (one at a time, a lone member never serves)
for i in 1 2 3; do sb --dir "$ens" kill "$i"; done
[ "$(sb --dir "$ens" status | awk '$4 == "stopped"' | wc -l)" -eq 3 ]
ok $? "kill all three servers"

t0=$SECONDS
sb --dir "$ens" start-server 1 2 3 2>"$ZKR_SANDBOX_DIR/ss.err"
rc=$?
[ $rc -eq 0 ] && [ "$(sb --dir "$ens" status | awk '$4 == "running" && $5 != "-"' | wc -l)" -eq 3 ]
ok $? "start-server 1 2 3 brings the whole ensemble back (rc $rc, $((SECONDS - t0)) s)"
if [ $rc -ne 0 ]; then diag "$(cat "$ZKR_SANDBOX_DIR/ss.err")"; fi

if /usr/bin/python3 -c 'import kazoo' 2>/dev/null; then
	/usr/bin/python3 - "$(sb --dir "$ens" connstr)" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
zk.create("/t-sandbox-after-quorum-loss", b"x")
assert zk.get("/t-sandbox-after-quorum-loss")[0] == b"x"
zk.stop()
PY
	ok $? "a client can write to the ensemble again"
else
	ok 0 "# SKIP python3-kazoo is not installed"
fi

sb --dir "$ens" start-server 1 9 >/dev/null 2>&1
ok $(($? == 64 ? 0 : 1)) "start-server with a server the sandbox does not have: exit 64"

pids=()
for i in 1 2 3; do pids+=("$(sb --dir "$ens" pid "$i")"); done
sb --dir "$ens" stop
rc=$?
gone=0
for p in "${pids[@]}"; do pid_gone "$p" || gone=1; done
[ $rc -eq 0 ] && [ $gone -eq 0 ]
ok $? "stop ends all three servers (${pids[*]})"

[ ! -e "$ens/sandbox.state" ] && ! ls -d "$ens"/server* >/dev/null 2>&1
ok $? "stop removes the sandbox files"

exit 0
