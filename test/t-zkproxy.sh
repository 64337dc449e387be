#!/usr/bin/env bash
# t-zkproxy.sh - TAP tests of test/zkproxy, the fault-injecting ZooKeeper
# proxy, against a real standalone server, with python3-kazoo as the client.
# Meant to run under test/with-zk (ZKR_SANDBOX, ZKR_SANDBOX_DIR set); without
# it, uses ../scripts/zk-sandbox and a private mktemp directory.
#
# The proxy binary: $abs_top_builddir/test/zkproxy if abs_top_builddir is set,
# else ./test/zkproxy.  If ZKR_TEST_WRAPPER is set (e.g. valgrind), the proxy
# runs under it, and its exit status counts.

# shellcheck disable=SC2317  # functions run from traps

set -u
TESTLIB_NEEDS="proxy kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"

d=$ZKR_SANDBOX_DIR/zkproxy
mkdir -p "$d" || exit 99
wrapper=()
if [ -n "${ZKR_TEST_WRAPPER:-}" ]; then
	# shellcheck disable=SC2206  # a command line: split it
	wrapper=($ZKR_TEST_WRAPPER)
fi

pids=() # proxies and background clients this script started, not yet reaped
reap() { # reap PID: wait for it, forget it; returns its status
	local p rest=() rc
	wait "$1"
	rc=$?
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || rest+=("$p")
	done
	pids=("${rest[@]}")
	return $rc
}
testlib_on_exit() {
	exec 7>&- 2>/dev/null
}

# wait_line FILE REGEX [SECONDS]: until a line of FILE matches REGEX (grep -E)
wait_line() {
	local i limit=$((${3:-10} * 20))
	for ((i = 0; i < limit; i++)); do
		grep -aEq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_file FILE [SECONDS]: until FILE exists
wait_file() {
	local i limit=$((${2:-10} * 20))
	for ((i = 0; i < limit; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# control CMD...: write the commands (one an argument) to the control file
# the way tests should: a temporary file, then rename
control() {
	printf '%s\n' "$@" >"$d/control.tmp" && mv "$d/control.tmp" "$d/control"
}

# count_lines FILE REGEX
count_lines() { grep -acE -- "$2" "$1" 2>/dev/null; }

# ---------------------------------------------------------------- client
cat >"$d/client.py" <<'EOF'
import os, sys, time, threading
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, OperationTimeoutError

RETRY = {"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 0.3}

def client(hosts, timeout=4.0):
    zk = KazooClient(hosts=hosts, timeout=timeout, connection_retry=RETRY)
    states = []
    cv = threading.Condition()
    def listener(s):
        with cv:
            states.append(s)
            cv.notify_all()
    zk.add_listener(listener)
    return zk, states, cv

def wait_state(states, cv, want, after, limit):
    end = time.time() + limit
    with cv:
        while want not in states[after:]:
            left = end - time.time()
            if left <= 0:
                return False
            cv.wait(left)
    return True

def done(zk):
    zk.stop()
    zk.close()

cmd, hosts = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
if cmd == "put":  # put HOSTS PATH DATA: create (parents too) and read back
    zk, _, _ = client(hosts)
    zk.start(timeout=5)
    zk.create(args[0], args[1].encode(), makepath=True)
    print(zk.get(args[0])[0].decode())
    done(zk)
elif cmd == "exists":  # exists HOSTS PATH: yes or no
    zk, _, _ = client(hosts)
    zk.start(timeout=5)
    print("yes" if zk.exists(args[0]) else "no")
    done(zk)
elif cmd == "cut":  # cut HOSTS PATH: a create whose connection is cut
    zk, states, cv = client(hosts)
    zk.start(timeout=5)
    sid = zk.client_id[0]
    mark = len(states)
    try:
        zk.create(args[0], b"cut")
        print("created")
    except ConnectionLoss:
        print("loss")
    ok = wait_state(states, cv, KazooState.CONNECTED, mark, 8)
    same = zk.connected and zk.client_id[0] == sid
    print("reconnected" if ok and same else "not-reconnected %s" % states)
    done(zk)
elif cmd == "connect":  # connect HOSTS SECONDS: start, within SECONDS
    zk, _, _ = client(hosts)
    t = time.time()
    zk.start(timeout=float(args[0]))
    zk.get("/")
    print("connected %.2f" % (time.time() - t))
    done(zk)
elif cmd == "drop":  # drop HOSTS READY: connect, touch READY, see a drop
    zk, states, cv = client(hosts)
    zk.start(timeout=5)
    sid = zk.client_id[0]
    mark = len(states)
    open(args[0], "w").close()
    lost = wait_state(states, cv, KazooState.SUSPENDED, mark, 8)
    back = lost and wait_state(states, cv, KazooState.CONNECTED, mark, 8)
    zk.get("/")
    same = zk.client_id[0] == sid
    print("%s %s %s" % ("suspended" if lost else "no-suspend",
                        "reconnected" if back else "no-reconnect",
                        "same-session" if same else "new-session"))
    done(zk)
elif cmd == "stall":  # stall HOSTS READY GO: a read during a blackhole
    zk, states, cv = client(hosts, timeout=3.0)
    zk.start(timeout=5)
    open(args[0], "w").close()
    while not os.path.exists(args[1]):
        time.sleep(0.02)
    mark = len(states)
    t = time.time()
    try:
        zk.get("/")
        print("answered")
    except (ConnectionLoss, OperationTimeoutError):
        print("stalled %.1f" % (time.time() - t))
    sys.stdout.flush()
    open(args[0] + ".stalled", "w").close()
    back = wait_state(states, cv, KazooState.CONNECTED, mark, 10)
    try:
        zk.get("/")
        print("reconnected" if back else "no-reconnect")
    except Exception as e:
        print("failed %r" % e)
    done(zk)
EOF
# kz ARGS...: run the client helper, quietly (kazoo logs to stderr)
kz() { timeout 25 "$py" "$d/client.py" "$@" 2>>"$d/client.err" 7>&-; }

# ---------------------------------------------------------------- start
echo "1..25"

t0=$SECONDS
if ! connstr=$(sb start 2>"$d/start.err"); then
	echo "Bail out! zk-sandbox start failed: $(tail -n 3 "$d/start.err" | tr '\n' ' ')"
	exit 1
fi
diag "server $connstr ($((SECONDS - t0)) s)"

# stdin is a fifo this script holds open, for the stdin-command test
rm -f "$d/stdin"
mkfifo "$d/stdin" || exit 99
exec 7<>"$d/stdin"
: >"$d/events"
ZKPROXY_DEBUG=1 "${wrapper[@]}" "$proxy" --listen 0 --target "$connstr" \
	--port-file "$d/port" --control-file "$d/control" \
	--event-file "$d/events" <&7 7>&- >"$d/stdout" 2>"$d/stderr" &
ppid=$!
pids+=("$ppid")

wait_line "$d/stdout" '^[0-9]+$' 20 && [ -s "$d/port" ]
port=$(head -n 1 "$d/stdout")
[[ $port =~ ^[0-9]+$ ]] && [ "$port" = "$(cat "$d/port" 2>/dev/null)" ]
ok $? "proxy prints its port first on stdout and in the port file ($port)"
if ! [[ $port =~ ^[0-9]+$ ]]; then
	diag "$(cat "$d/stderr")"
	echo "Bail out! the proxy did not start"
	exit 1
fi
via=127.0.0.1:$port
root=/zkproxy-test-$$

# ---------------------------------------------------------------- relay
out=$(kz put "$via" "$root/a" hello)
[ "$out" = hello ]
ok $? "a client through the proxy creates and reads a node ($out)"

[ "$(kz exists "$connstr" "$root/a")" = yes ]
ok $? "the node is on the server"

grep -aq '^conn [0-9]* open$' "$d/events" && grep -aq '^conn [0-9]* closed ' "$d/events"
ok $? "event file records the connection opening and closing"

grep -aq 'ConnectRequest' "$d/stderr" && grep -aq 'type=1 (create)' "$d/stderr" &&
	grep -aq 'type=4 (getdata)' "$d/stderr"
ok $? "ZKPROXY_DEBUG=1 logs each frame's type and xid"

# ---------------------------------------------------------------- cut-after-request
control "cut-after-request create"
wait_line "$d/events" '^done cut-after-request create$' 5
ok $? "cut-after-request is acknowledged in the event file"

[ ! -s "$d/control" ]
ok $? "the control file is truncated after it is read"

out=$(kz cut "$via" "$root/cut")
[ "$(head -n 1 <<<"$out")" = loss ]
ok $? "the create through the proxy loses its connection ($(tr '\n' ' ' <<<"$out"))"

wait_line "$d/events" '^fired create xid=[0-9]+$' 5
ok $? "the event file says the cut fired ($(grep -a '^fired' "$d/events"))"

[ "$(kz exists "$connstr" "$root/cut")" = yes ]
ok $? "yet the node exists on the server (checked directly)"

[ "$(sed -n 2p <<<"$out")" = reconnected ]
ok $? "the client reconnects through the proxy with the same session"

[ "$(count_lines "$d/events" '^fired')" -eq 1 ]
ok $? "one-shot: the cut fired once"

# ---------------------------------------------------------------- refuse / accept
control refuse
wait_line "$d/events" '^done refuse$' 5
ok $? "refuse is acknowledged"

refused0=$(count_lines "$d/events" '^refused$')
kz connect "$via" 15 >"$d/connect.out" &
cpid=$!
pids+=("$cpid")
wait_line "$d/events" '^refused$' 10 && sleep 1
[ "$(count_lines "$d/events" '^refused$')" -gt "$refused0" ] && kill -0 "$cpid" 2>/dev/null &&
	[ ! -s "$d/connect.out" ]
ok $? "while refusing, a new client is not served ($(count_lines "$d/events" '^refused$') refused)"

control accept
wait_line "$d/events" '^done accept$' 5
reap "$cpid"
rc=$?
out=$(cat "$d/connect.out")
[ $rc -eq 0 ] && [[ $out == connected* ]]
ok $? "after accept, the waiting client connects ($out)"

# ---------------------------------------------------------------- cut-all
rm -f "$d/ready"
kz drop "$via" "$d/ready" >"$d/drop.out" &
cpid=$!
pids+=("$cpid")
wait_file "$d/ready" 10
control cut-all
wait_line "$d/events" '^done cut-all$' 5
ok $? "cut-all is acknowledged"

grep -aq '^conn [0-9]* closed cut-all$' "$d/events"
ok $? "cut-all closed the client's connection"

reap "$cpid"
out=$(cat "$d/drop.out")
[ "$out" = "suspended reconnected same-session" ]
ok $? "the client saw the drop (SUSPENDED), then reconnected ($out)"

# ---------------------------------------------------------------- blackhole / flow
rm -f "$d/ready" "$d/ready.stalled" "$d/go"
kz stall "$via" "$d/ready" "$d/go" >"$d/stall.out" &
cpid=$!
pids+=("$cpid")
wait_file "$d/ready" 10
control blackhole
wait_line "$d/events" '^done blackhole$' 5
ok $? "blackhole is acknowledged"
touch "$d/go"
wait_file "$d/ready.stalled" 10
out=$(head -n 1 "$d/stall.out")
[[ $out == stalled* ]]
ok $? "while blackholed, a read gets no answer ($out s)"

control flow
wait_line "$d/events" '^done flow$' 5
reap "$cpid"
out=$(sed -n 2p "$d/stall.out")
[ "$out" = reconnected ]
ok $? "after flow, the client reconnects and reads ($out)"

# ---------------------------------------------------------------- bad input
control "frobnicate" "cut-after-request nosuchop"
wait_line "$d/events" "^error bad request type 'nosuchop'" 5 &&
	grep -aq '^error unknown command: frobnicate$' "$d/events"
ok $? "unknown commands and request types are reported as errors"

"$proxy" --listen 0 >/dev/null 2>&1 </dev/null
rc1=$?
"$proxy" --listen 0 --target 127.0.0.1:2181 --bogus >/dev/null 2>&1 </dev/null
rc2=$?
[ $rc1 -eq 64 ] && [ $rc2 -eq 64 ]
ok $? "bad arguments exit 64 ($rc1, $rc2)"

# ---------------------------------------------------------------- stdin, quit, signals
printf 'quit\n' >&7
rc=124
for ((i = 0; i < 200; i++)); do
	if ! kill -0 "$ppid" 2>/dev/null; then
		reap "$ppid"
		rc=$?
		break
	fi
	sleep 0.05
done
[ $rc -eq 0 ] && grep -aq '^done quit$' "$d/events"
ok $? "quit on stdin: the proxy exits 0 (rc $rc)"
if [ $rc -ne 0 ]; then diag "$(tail -n 20 "$d/stderr")"; fi

"${wrapper[@]}" "$proxy" --listen 0 --target "$connstr" --port-file "$d/port2" \
	</dev/null 7>&- >/dev/null 2>"$d/stderr2" &
p2=$!
pids+=("$p2")
for ((i = 0; i < 200; i++)); do [ -s "$d/port2" ] && break; sleep 0.05; done
out=$(kz put "127.0.0.1:$(cat "$d/port2")" "$root/b" again)
kill -TERM "$p2"
reap "$p2"
rc=$?
[ "$out" = again ] && [ $rc -eq 0 ]
ok $? "a proxy with no control file relays, and exits 0 on SIGTERM (rc $rc)"
if [ $rc -ne 0 ]; then diag "$(tail -n 20 "$d/stderr2")"; fi

# clean up the test's nodes, directly
"$py" - "$connstr" "$root" 2>/dev/null <<'EOF'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=5)
zk.delete(sys.argv[2], recursive=True); zk.stop(); zk.close()
EOF
diag "total $((SECONDS - t0)) s"
