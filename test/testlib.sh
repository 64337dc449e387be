# test/testlib.sh - sourced (not run) by every shell test.
#
# Before sourcing, a test may set TESTLIB_NEEDS to what it needs besides
# the ZooKeeper server (default: "worker kazoo"): any of
#   worker   test/lockworker built        proxy   test/zkproxy built
#   kazoo    Debian's python3-kazoo       javac   a Java compiler
# A missing need skips the test (or bails out with ZKR_TEST_NO_SKIP=1, as
# in CI).
#
# Sets: builddir, worker, proxy, py (Debian's python3), here (test/), tmp
# (a private directory, removed at exit), pids (processes to end at exit),
# ZKR_SANDBOX and ZKR_SANDBOX_DIR (those of test/with-zk; a test run
# directly gets scripts/zk-sandbox and a private directory, stopped and
# removed at exit), hosts (after zkt_start).
# Provides: skip/skip_all, ok, diag, wait_for, pid_gone, sb, zkt_start,
# children. A test may define testlib_on_exit, called first at exit.
builddir=${abs_top_builddir:-.}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
worker="$builddir/test/lockworker"
proxy="$builddir/test/zkproxy"
py=/usr/bin/python3 # Debian's python3-kazoo, not a python3 found in PATH
skip() {
  if [ "${ZKR_TEST_NO_SKIP:-0}" = 1 ]; then echo "Bail out! would skip, but ZKR_TEST_NO_SKIP=1: $*"; exit 1; fi
  echo "1..0 # SKIP $*"; exit 0
}
skip_all() { skip "$@"; }
if ! command -v java >/dev/null 2>&1 || [ ! -r "${ZKR_SANDBOX_JAVA_DIR:-/usr/share/java}/zookeeper.jar" ]; then
  skip "java or zookeeper.jar missing (apt-get install zookeeper default-jre-headless)"
fi
for need in ${TESTLIB_NEEDS-worker kazoo}; do
  case $need in
    worker) [ -x "$worker" ] || skip "test/lockworker not built" ;;
    proxy) [ -x "$proxy" ] || skip "test/zkproxy not built" ;;
    kazoo) "$py" -c 'import kazoo' 2>/dev/null || skip "$py cannot import kazoo (apt-get install python3-kazoo)" ;;
    javac) command -v javac >/dev/null 2>&1 || skip "javac missing (apt-get install default-jdk-headless)" ;;
    *) echo "Bail out! testlib.sh: unknown need '$need'"; exit 1 ;;
  esac
done
own_dir=
if [ -z "${ZKR_SANDBOX:-}" ]; then
  ZKR_SANDBOX=$here/../scripts/zk-sandbox
fi
if [ -z "${ZKR_SANDBOX_DIR:-}" ]; then
  ZKR_SANDBOX_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zkr-test.XXXXXX") || exit 99
  own_dir=$ZKR_SANDBOX_DIR
fi
export ZKR_SANDBOX ZKR_SANDBOX_DIR
sb() { bash "$ZKR_SANDBOX" "$@"; }
tmp=$(mktemp -d)
pids=()
testlib_cleanup() {
  local p
  if declare -F testlib_on_exit >/dev/null; then testlib_on_exit; fi
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    local end=$((SECONDS + 3))
    while ! pid_gone "$p" && [ $SECONDS -lt $end ]; do sleep 0.05; done
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  if [ -n "$own_dir" ]; then sb stop >/dev/null 2>&1; rm -rf "$own_dir"; fi
  rm -rf "$tmp"
}
trap testlib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# zkt_start [--servers N]: start the sandbox, set $hosts
# curator_classpath: $cp set to Debian's Curator jars and what they need
# (libcurator-recipes-java and friends, in $ZKR_SANDBOX_JAVA_DIR or
# /usr/share/java), with the no-op slf4j binding when there is one (else
# slf4j's 3-line warning); the test is skipped when a jar is missing.
curator_classpath() {
  local jdir=${ZKR_SANDBOX_JAVA_DIR:-/usr/share/java} j
  cp=
  for j in curator-recipes curator-framework curator-client zookeeper \
    zookeeper-jute guava slf4j-api; do
    [ -f "$jdir/$j.jar" ] || skip "$jdir/$j.jar missing (apt-get install" \
      "libcurator-recipes-java libcurator-framework-java" \
      "libcurator-client-java libzookeeper-java)"
    cp=$cp${cp:+:}$jdir/$j.jar
  done
  if [ -f "$jdir/slf4j-nop.jar" ]; then cp=$cp:$jdir/slf4j-nop.jar; fi
}
zkt_start() {
  hosts=$(sb start "$@") || { echo "Bail out! sandbox did not start"; exit 1; }
}
n=0
ok() { # ok STATUS DESCRIPTION [DIRECTIVE]
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2${3:+ # $3}"; else echo "not ok $n - $2${3:+ # $3}"; fi
}
diag() { printf '# %s\n' "$@"; }
wait_for() { # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.05; done
  return 1
}
# term_blocked PID NAME: the process runs the program NAME itself (its
# executable is NAME or libtool's lt-NAME, not the bash that runs libtool's
# wrapper script: that one's comm is NAME too, and bash blocks SIGTERM
# around each of its forks) and one of its threads has SIGTERM (15, bit
# 0x4000) blocked (the main thread's mask shows it unblocked while it waits
# in sigtimedwait)
term_blocked() {
  local exe t m
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}
  case ${exe##*/} in "$2" | "lt-$2") ;; *) return 1 ;; esac
  for t in /proc/"$1"/task/*/status; do
    m=$(awk '/^SigBlk:/ {print $2}' "$t" 2>/dev/null) || continue
    [ -n "$m" ] && [ $((0x$m & 0x4000)) -ne 0 ] && return 0
  done
  return 1
}
# px_start DIR: a test/zkproxy to the server ($hosts), its port in
# DIR/port, its events in DIR/events, commanded through DIR/control
px_start() {
  mkdir -p "$1" && : >"$1/events"
  "$proxy" --listen 0 --target "$hosts" --port-file "$1/port" \
    --control-file "$1/control" --event-file "$1/events" \
    </dev/null >/dev/null 2>"$1/stderr" &
  pids+=($!)
  wait_for 10 test -s "$1/port"
}
# px_cmd DIR CMD: have the proxy of DIR do CMD and wait until it is done
px_cmd() {
  printf '%s\n' "$2" >"$1/control.tmp" && mv "$1/control.tmp" "$1/control"
  wait_for 10 grep -qxF "done $2" "$1/events"
}
# pid_gone PID: the process no longer exists (or is a zombie awaiting reaping)
pid_gone() {
  [ ! -e "/proc/$1" ] && return 0
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  [ "${s%% *}" = Z ]
}
# is_stopped PID: the process is stopped (state T), e.g. by SIGSTOP
is_stopped() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s%% *}" = T ]
}
# children PATH...: total number of children of the given paths, once none
# is left or after 20 s (nodes of sessions that died go at their expiry)
children() {
  "$py" - "$hosts" "$@" <<'PY' 2>/dev/null
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
deadline = time.time() + 20
while True:
    n = sum(len(zk.get_children(p)) for p in sys.argv[2:] if zk.exists(p))
    if n == 0 or time.time() > deadline:
        break
    time.sleep(0.2)
print(n); zk.stop()
PY
}


# children_reach SECONDS N PATH...: the paths come to have N children in
# all within SECONDS (polled from one client; exit 1 if not). Use this, not
# wait_for with "$(children ...)", whose $(...) runs once, before wait_for
# polls its result.
children_reach() {
  "$py" - "$hosts" "$@" <<'PY' 2>/dev/null
import sys, time
from kazoo.client import KazooClient
secs, want, paths = float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
deadline = time.time() + secs
while True:
    n = sum(len(zk.get_children(p)) for p in paths if zk.exists(p))
    if n == want or time.time() > deadline:
        break
    time.sleep(0.05)
zk.stop()
sys.exit(0 if n == want else 1)
PY
}
# The write in flight. lockworker stamps each TOUCH line with the time
# taken right before its check that it still holds, then writes it. A
# pause (SIGSTOP, or a plain delay) can fall between the check and the
# write; the line then lands after the next holder's ACQ line, with a
# time before it. No check can close that window (a fencing token or a
# guarded write does), so the tests allow that one line and nothing
# else: a check that passed once the next holder was in would carry a
# later time.
#
# touched_in_time LOG OLD NEW: every TOUCH line of OLD in LOG has a time
# (its last field) earlier than NEW's ACQ time (the ACQ line's fifth
# field), and at most one follows NEW's ACQ line. Prints how many follow
# it; false if NEW has no ACQ line or the rule is broken.
touched_in_time() {
  awk -v old="$2" -v new="$3" '
	$1 == "ACQ" && $2 == new && !seen { seen = 1; acq = $5 + 0; next }
	$1 == "TOUCH" && $2 == old { t[++n] = $NF + 0; after[n] = seen }
	END {
		if (!seen) exit 1
		for (i = 1; i <= n; i++) {
			if (t[i] >= acq) exit 1
			late += after[i]
		}
		print late
		exit late > 1
	}' "$1"
}
# journal_verdict FILE: check an election journal of lockworker's latch and
# selector lines ("ACQ pid seq token t", "TOUCH pid token t", ...): the
# leaders' terms never overlap, only the current leader writes, with its
# token, tokens grow, nobody leads twice. A write of the previous leader
# after the new one's ACQ line is the write in flight (above) if its time
# is before that ACQ and it is the only one; any other is an overlap.
# Prints "ok N PIDS" or "bad REASON".
journal_verdict() {
  awk '
	function bad(why) { print "bad " why " (line " NR ": " $0 ")"; failed = 1; exit }
	$1 == "ACQ" {
		if (n && $4 + 0 <= tok + 0) bad("token " $4 " not above " tok)
		if (n && $5 + 0 < last + 0) bad("ACQ at " $5 " before the last write of the previous leader at " last)
		if ($2 in led) bad("a leader led twice")
		prev = cur; ptok = tok; late = 0
		cur = $2; tok = $4; last = $5; acq = $5; led[$2] = 1; order = order " " $2; n++
		next
	}
	$1 == "TOUCH" && n > 1 && $2 == prev && $3 == ptok && $4 + 0 < acq + 0 && !late {
		late = 1 # the write in flight
		next
	}
	$1 == "TOUCH" {
		if ($2 != cur) bad("a write by " $2 " while " cur " leads")
		if ($3 != tok) bad("a write with token " $3 " under token " tok)
		last = $4
	}
	END { if (!failed) print "ok " n order }' "$1"
}
