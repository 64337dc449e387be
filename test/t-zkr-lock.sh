#!/usr/bin/env bash
# zkr-lock against a real server: every option and exit status, the
# command's environment, mutual exclusion between processes, SIGINT while
# waiting, signals forwarded while the command runs, and the lock lost
# while the command runs (session expired by a pause, node deleted by
# another client, zkr-lock SIGKILLed). Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
zls="$builddir/tools/zkr-ls"
[ -x "$zl" ] || skip "tools/zkr-lock not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-lock-$$"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
echo "1..105"

# --- usage errors: exit 64, nothing created ---
"$zl" --help >"$tmp/help" 2>&1
ok $? "--help exits 0"
grep -q -- '--conflict-exit-code' "$tmp/help"
ok $? "--help lists the options"
usage() { # usage DESCRIPTION ARGS...
  local d=$1; shift
  "$zl" "$@" >"$tmp/u.out" 2>&1; local st=$?
  [ $st -eq 64 ] && grep -q "^zkr-lock: " "$tmp/u.out"
  ok $? "usage error exits 64 with a message: $d (got $st: $(head -1 "$tmp/u.out"))"
}
usage "no arguments"
usage "no command" "$root/u"
usage "no command after --" "$root/u" --
usage "unknown option" --frobnicate "$root/u" -- true
usage "negative timeout" -t -1 "$root/u" -- true
usage "timeout not a number" -t soon "$root/u" -- true
usage "conflict exit code out of range" -E 256 "$root/u" -- true
usage "session timeout 0" --session-timeout 0 "$root/u" -- true
usage "id with a control character" --id "$(printf 'a\tb')" "$root/u" -- true
usage "relative lock path" zkr-test/u -- true
usage "lock path with //" "$root//u" -- true
usage "lock path under /zookeeper" /zookeeper/u -- true
usage "malformed servers" -s "127.0.0.1:notaport" "$root/u" -- true
usage "--permits 0 (a semaphore has 1 to 65536 leases)" --permits 0 "$root/u" -- true
[ "$(children "$root")" = 0 ]
ok $? "usage errors created nothing on the server"

# --- no server: exit 69 ---
t0=$(now_ms)
"$zl" -s 127.0.0.1:1 --connect-timeout 1500 "$root/x" -- touch "$tmp/ran69" 2>"$tmp/e69"
st=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran69" ] && grep -q "cannot reach ZooKeeper" "$tmp/e69"
ok $? "no server reachable: exit 69 after $(($(now_ms) - t0)) ms, command not run"

# --- a chroot that does not exist is named (issue 85): it was "no such node" ---
nc="/zkr-test-nochroot-$$"
bad=
for o in "" -r "--permits 2"; do
  # shellcheck disable=SC2086 # $o: no option, or one with its value
  "$zl" $o -s "$hosts$nc" "$root/x" -- touch "$tmp/ran-nc" 2>"$tmp/enc"
  st=$?
  [ $st -eq 69 ] && [ ! -e "$tmp/ran-nc" ] &&
    grep -qF "zkr-lock: cannot acquire $root/x: the chroot $nc of the connection string does not exist" "$tmp/enc" ||
    bad="$bad [${o:-mutex}: $st $(head -1 "$tmp/enc")]"
done
[ -z "$bad" ]
ok $? "a chroot that does not exist: exit 69 saying so, command not run (mutex, -r, --permits)$bad"

# --- runs the command, passes its status through ---
"$zl" "$root/a" -- sh -c 'exit 7'
ok $(($? == 7 ? 0 : 1)) "exit status of the command is passed through (7)"
"$zl" "$root/a" -- sh -c 'kill -TERM $$'
ok $(($? == 143 ? 0 : 1)) "a command ended by SIGTERM gives 128+15"
"$zl" "$root/a" -- "$tmp/does-not-exist"
ok $(($? == 127 ? 0 : 1)) "a command that does not exist gives 127"
printf 'not executable\n' >"$tmp/noexec"
"$zl" "$root/a" -- "$tmp/noexec" 2>/dev/null
ok $(($? == 126 ? 0 : 1)) "a command that is not executable gives 126"
"$zl" "$root/a" true -x 2>/dev/null
ok $? "COMMAND without -- and with its own options"
[ "$(children "$root/a")" = 0 ]
ok $? "every run released its node"

# --- environment ---
ZKR_FENCING_TOKEN=stale "$zl" --id envtest "$root/env" -- sh -c \
  'echo "$ZKR_FENCING_TOKEN $ZKR_LOCK_NODE"; '"'$zls'"' --json '"'$root/env'"' > '"'$tmp/env.json'"'' \
  >"$tmp/env.out"
read -r tok node <"$tmp/env.out"
/usr/bin/python3 - "$tmp/env.json" "$tok" "$node" "$root/env" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["contenders"]
tok, node, path = int(sys.argv[2]), sys.argv[3], sys.argv[4]
assert len(q) == 1 and q[0]["role"] == "holder", q
assert q[0]["token"] == tok, (q[0]["token"], tok)
assert node == path + "/" + q[0]["node"], (node, q[0]["node"])
assert q[0]["node"].startswith("_c_") and "-lock-" in q[0]["node"]
assert q[0]["id"] == "envtest"
PY
ok $? "ZKR_FENCING_TOKEN ($tok) is the node's czxid, ZKR_LOCK_NODE its path, --id stored; an inherited token is replaced"
"$zl" "$root/env" -- sh -c 'echo $ZKR_FENCING_TOKEN' >"$tmp/tok2"
[ "$(cat "$tmp/tok2")" -gt "$tok" ]
ok $? "the next acquisition gets a larger token ($(cat "$tmp/tok2") > $tok)"

# --- mutual exclusion between processes ---
for i in 1 2 3 4; do
  (for j in 1 2 3 4 5; do
    "$zl" "$root/mx" -- sh -c "mkdir '$tmp/cs' 2>/dev/null || exit 3; echo $i >>'$tmp/mx.log'; sleep 0.02; rmdir '$tmp/cs'" || exit 1
  done) &
  pids+=($!)
done
bad=0
for p in "${pids[@]: -4}"; do wait "$p" || bad=1; done
[ $bad -eq 0 ] && [ "$(wc -l <"$tmp/mx.log")" -eq 20 ]
ok $? "4 processes x 5 runs: 20 critical sections, never two at once"

# --- held by another: -t 0, -t N, -E ---
"$zl" --id holder "$root/b" -- sh -c "echo \$\$ >'$tmp/holder.pid'; exec sleep 30" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/holder.pid"
ok $? "a holder runs"
"$zl" -t 0 "$root/b" -- touch "$tmp/ran-t0"
st=$?
[ $st -eq 1 ] && [ ! -e "$tmp/ran-t0" ]
ok $? "-t 0 while held: exit 1 (got $st), command not run"
"$zl" -t 0 -E 42 "$root/b" -- touch "$tmp/ran-E"
ok $(($? == 42 ? 0 : 1)) "-E 42 changes the conflict exit status"
t0=$(now_ms)
"$zl" -t 0.6 "$root/b" -- touch "$tmp/ran-t"
st=$?; dt=$(($(now_ms) - t0))
[ $st -eq 1 ] && [ ! -e "$tmp/ran-t" ] && [ $dt -ge 600 ]
ok $? "-t 0.6 while held: exit 1 after $dt ms"
[ "$(children "$root/b")" = 1 ]
ok $? "the timed-out waiters left no node (only the holder's)"

# --- -v: queue position, acquired, released ---
"$zl" -v "$root/b" -- true 2>"$tmp/v.err" &
v=$!; pids+=($v)
wait_for 20 grep -q "waiting for $root/b: 1 ahead" "$tmp/v.err"
ok $? "-v reports how many are ahead while waiting"

# --- SIGINT while waiting (a background job of a script starts with SIGINT
# --- ignored, which zkr-lock keeps: so give it the default first) ---
/usr/bin/python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$zl" "$root/b" -- touch "$tmp/ran-int" &
w=$!; pids+=($w)
wait_for 20 sh -c "'$zls' --json '$root/b' | grep -q '\"position\":3'"
ok $? "a second waiter queued (position 3)"
kill -INT $w
wait $w; st=$?
[ $st -eq 130 ] && [ ! -e "$tmp/ran-int" ]
ok $? "SIGINT while waiting: ends by SIGINT (status $st), command not run"
"$zls" --json "$root/b" >"$tmp/b.json"
/usr/bin/python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["contenders"]; assert len(q)==2, q' "$tmp/b.json"
ok $? "its node left the queue at once (holder and -v waiter remain)"
kill -TERM "$(cat "$tmp/holder.pid")"
wait $h
wait $v; st=$?
[ $st -eq 0 ] && grep -q "acquired $root/b" "$tmp/v.err" && grep -q "released $root/b" "$tmp/v.err"
ok $? "-v reports acquired and released"
sleep 0.3
[ "$(children "$root/b")" = 0 ]
ok $? "queue empty afterwards"

# --- SIGTERM to zkr-lock while the command runs: forwarded ---
"$zl" "$root/f" -- sh -c "trap 'echo got-term >\"$tmp/fwd\"; exit 5' TERM; echo ready >\"$tmp/fready\"; while :; do sleep 0.05; done" &
f=$!; pids+=($f)
wait_for 20 test -s "$tmp/fready"
kill -TERM $f
wait $f; st=$?
[ $st -eq 5 ] && grep -q got-term "$tmp/fwd"
ok $? "SIGTERM to zkr-lock reaches the command; its status (5) is returned (got $st)"
[ "$(children "$root/f")" = 0 ]
ok $? "and the lock is released"

# --- lock lost while the command runs: session expired (zkr-lock paused) ---
T=2000
"$zl" --session-timeout $T --kill-after 1 "$root/e" -- sh -c \
  "trap '' TERM; echo \$\$ >'$tmp/e.pid'; while :; do date +%s%N >>'$tmp/e.touch'; sleep 0.05; done" \
  2>"$tmp/e.err" &
e=$!; pids+=($e)
wait_for 20 test -s "$tmp/e.pid"
ok $? "holder runs a command that ignores SIGTERM"
"$zl" --session-timeout $T "$root/e" -- sh -c "date +%s%N >'$tmp/e.next'" &
e2=$!; pids+=($e2)
sleep 0.5
kill -STOP $e
wait $e2; st=$?
[ $st -eq 0 ] && [ -s "$tmp/e.next" ]
ok $? "while zkr-lock is stopped its session expires and the waiter gets the lock"
kill -CONT $e
wait $e; st=$?
[ $st -eq 75 ]
ok $? "resumed zkr-lock exits 75 (got $st)"
[ $st -eq 75 ] || sed 's/^/# e.err: /' "$tmp/e.err"
grep -q "lost" "$tmp/e.err" && grep -q "SIGKILL" "$tmp/e.err"
ok $? "it reported the loss, sent SIGTERM, then SIGKILL after --kill-after"
cpid=$(cat "$tmp/e.pid")
! kill -0 "$cpid" 2>/dev/null
ok $? "the command is gone"

# --- lock lost: node deleted by another client ---
"$zl" --kill-after 5 "$root/d" -- sh -c "trap 'exit 9' TERM; echo ready >'$tmp/d.ready'; while :; do sleep 0.05; done" 2>"$tmp/d.err" &
d=$!; pids+=($d)
wait_for 20 test -s "$tmp/d.ready"
/usr/bin/python3 - "$hosts" "$root/d" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
for c in zk.get_children(sys.argv[2]):
    zk.delete(sys.argv[2] + "/" + c)
zk.stop()
PY
t0=$(now_ms)
wait $d; st=$?
[ $st -eq 75 ] && grep -q "lost" "$tmp/d.err"
ok $? "node deleted by another client: command terminated, exit 75 ($(($(now_ms) - t0)) ms after the delete)"

# --- zkr-lock SIGKILLed: the command dies with it, the lock passes on ---
"$zl" --session-timeout $T "$root/k" -- sh -c "echo \$\$ >'$tmp/k.pid'; exec sleep 60" &
k=$!; pids+=($k)
wait_for 20 test -s "$tmp/k.pid"
"$zl" --session-timeout $T "$root/k" -- true &
k2=$!; pids+=($k2)
sleep 0.3
kill -9 $k
wait_for 5 sh -c "! kill -0 $(cat "$tmp/k.pid") 2>/dev/null"
ok $? "SIGKILL of zkr-lock kills its command too"
wait $k2
ok $? "the waiter gets the lock once the killed holder's session expires"

# --- try once on a free lock ---
"$zl" -t 0 "$root/free" -- true
ok $? "-t 0 on a free lock runs the command"
[ "$(children "$root/a" "$root/env" "$root/mx" "$root/b" "$root/f" "$root/e" "$root/d" "$root/k" "$root/free")" = 0 ]
ok $? "no contender node left in any lock used"

# --- strict numbers and option errors (issue 17, item 7) ---
usage_says() { # usage_says DESCRIPTION PATTERN ARGS...: exit 64, PATTERN in the message
  local d=$1 pat=$2; shift 2
  "$zl" "$@" >"$tmp/us.out" 2>&1; local st=$?
  [ $st -eq 64 ] && grep -qF -- "$pat" "$tmp/us.out"
  ok $? "usage error exits 64 saying '$pat': $d (got $st: $(head -1 "$tmp/us.out"))"
}
usage_says "-t 0x10 (hexadecimal)" "invalid timeout '0x10'" -t 0x10 "$root/u" -- true
usage_says "-t ' 5' (leading space)" "invalid timeout ' 5'" -t ' 5' "$root/u" -- true
usage_says "-t +5 (sign)" "invalid timeout '+5'" -t +5 "$root/u" -- true
usage_says "-t 1e3 (exponent)" "invalid timeout '1e3'" -t 1e3 "$root/u" -- true
usage_says "-t 5. (no fraction digits)" "invalid timeout '5.'" -t 5. "$root/u" -- true
usage_says "-t 0.0004 (positive, rounds to 0 ms)" "at least 0.001" -t 0.0004 "$root/u" -- true
usage_says "--kill-after 0.0001" "invalid --kill-after" --kill-after 0.0001 "$root/u" -- true
usage_says "-t 9999999999 (over the maximum, issue 85)" "at most 1000000000" -t 9999999999 "$root/u" -- true
usage_says "--kill-after 9999999999 (over the maximum)" "at most 1000000000" --kill-after 9999999999 "$root/u" -- true
usage_says "-E ' 3'" "invalid conflict exit code" -E ' 3' "$root/u" -- true
usage_says "--session-timeout 1" "100 to 1073741823" --session-timeout 1 "$root/u" -- true
usage_says "--session-timeout 99" "100 to 1073741823" --session-timeout 99 "$root/u" -- true
usage_says "--session-timeout 2^30" "100 to 1073741823" --session-timeout 1073741824 "$root/u" -- true
usage_says "--session-timeout 0x100" "invalid session timeout" --session-timeout 0x100 "$root/u" -- true
usage_says "an unknown option in a cluster is named" "unknown option '-x'" -vx "$root/u" -- true
usage_says "a missing argument in a cluster is named" "option '-t' needs an argument" -vt
usage_says "an abbreviated long option is named" "option '--timeout' needs an argument" --timeo
usage_says "a long option given an argument it does not take" "option '--verbose' takes no argument" --verbose=2 "$root/u" -- true
"$zl" -t "$(printf '1\033[2J')" "$root/u" -- true 2>"$tmp/esc.err"
st=$?
[ $st -eq 64 ] && grep -qF "'1\\x1b[2J'" "$tmp/esc.err" && ! grep -q "$(printf '\033')" "$tmp/esc.err"
ok $? "a control character in an argument is escaped in the message (got $st: $(head -1 "$tmp/esc.err"))"
"$zl" "$(printf '/a\tb')" -- true 2>"$tmp/esc2.err"
st=$?
[ $st -eq 64 ] && grep -qF "'/a\\tb'" "$tmp/esc2.err" && ! grep -q "$(printf '\t')" "$tmp/esc2.err"
ok $? "a control character in the lock path is escaped in the message (got $st: $(head -1 "$tmp/esc2.err"))"
[ "$(children "$root/u")" = 0 ]
ok $? "the refused options created nothing"

# the bounds themselves work against the server (which clamps them to its
# [2, 20] ticks); 1073741824 used to fail as "cannot reach ZooKeeper"
"$zl" --session-timeout 100 "$root/st" -- true
ok $? "--session-timeout 100: acquired, command run"
"$zl" -t 0.0005 "$root/st" -- true 2>/dev/null
st=$?
[ $st -eq 0 ] || [ $st -eq 1 ]
ok $? "-t 0.0005 (rounds to 1 ms) is accepted (got $st: acquired, or not within 1 ms)"
"$zl" --session-timeout 1073741823 "$root/st" -- true
ok $? "--session-timeout 1073741823 (2^30-1): acquired, command run"
"$zl" -t 5.25 --kill-after 0.5 "$root/st" -- true
ok $? "-t 5.25 --kill-after 0.5 accepted"

# --- errors while creating the lock path: what they are, not "no such node" ---
for p in "emoji$(printf '\xf0\x9f\x98\x80')" "c1$(printf '\xc2\x85')" \
         "private$(printf '\xee\x80\x80')" "bad$(printf '\xff')"; do
  "$zl" "$root/pe/$p" -- true 2>"$tmp/pe.err"
  st=$?
  [ $st -eq 64 ] && grep -q "invalid" "$tmp/pe.err"
  ok $? "a path the server would refuse exits 64 (got $st: $(head -1 "$tmp/pe.err"))"
done
/usr/bin/python3 - "$hosts" "$root" <<'PY' >"$tmp/acl.out" 2>&1
import sys
from kazoo.client import KazooClient
from kazoo.security import make_acl
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
zk.ensure_path(sys.argv[2])
zk.create(sys.argv[2] + "/secure2", b"", acl=[make_acl("world", "anyone", read=True)])
zk.stop()
PY
ok $? "a node readable by anyone, writable by no one ($(tail -1 "$tmp/acl.out"))"
"$zl" "$root/secure2/job" -- touch "$tmp/ran" 2>"$tmp/acl.err"
st=$?
[ $st -eq 69 ] && grep -q "not authorized" "$tmp/acl.err" && [ ! -e "$tmp/ran" ]
ok $? "a lock under it: 'not authorized', exit 69, command not run (got $st: $(head -1 "$tmp/acl.err"))"
/usr/bin/python3 - "$hosts" "$root" <<'PY' >"$tmp/eph.out" 2>&1 &
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
zk.ensure_path(sys.argv[2])
zk.create(sys.argv[2] + "/eph", b"", ephemeral=True)
print("created", flush=True)
time.sleep(30)
PY
pids+=($!)
wait_for 20 grep -q created "$tmp/eph.out"
ok $? "another client's ephemeral node"
"$zl" "$root/eph/job" -- touch "$tmp/ran" 2>"$tmp/eph.err"
st=$?
[ $st -eq 69 ] && grep -q "ephemeral" "$tmp/eph.err" && [ ! -e "$tmp/ran" ]
ok $? "a lock under it says so, exit 69, command not run (got $st: $(head -1 "$tmp/eph.err"))"
kill "${pids[-1]}" 2>/dev/null

# --- COMMAND runs in its own process group: a loss or zkr-lock's death
# --- reaches its background children too ---
delete_children() { # delete_children PATH: another client deletes the nodes
  /usr/bin/python3 - "$hosts" "$1" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
for c in zk.get_children(sys.argv[2]):
    zk.delete(sys.argv[2] + "/" + c)
zk.stop()
PY
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# (its output away from the TAP stream: a subshell left running must not
# hold the test's pipe open)
"$zl" --kill-after 1 "$root/pg" -- sh -c \
  "(echo \$\$ >'$tmp/pg.sub'; while :; do date +%s%N >>'$tmp/pg.log'; sleep 0.1; done) & wait" \
  >/dev/null 2>"$tmp/pg.err" &
p=$!; pids+=($p)
wait_for 20 sh -c "[ \$(wc -l <'$tmp/pg.log') -ge 3 ]"
ok $? "a command whose background subshell writes a log"
delete_children "$root/pg"
wait $p; st=$?
[ $st -eq 75 ]
ok $? "its lock node deleted by another client: exit 75 (got $st)"
a=$(lines "$tmp/pg.log"); sleep 1.5; b=$(lines "$tmp/pg.log")
[ "$a" = "$b" ]
ok $? "the background subshell was stopped with the group (log $a lines, then $b)"
[ -s "$tmp/pg.sub" ] && pids+=($(cat "$tmp/pg.sub"))
"$zl" --session-timeout 2000 "$root/pk" -- sh -c \
  "(sleep 60) & echo \$! >'$tmp/pk.pid'; wait" >/dev/null 2>&1 &
p=$!; pids+=($p)
wait_for 20 test -s "$tmp/pk.pid"
bg=$(cat "$tmp/pk.pid")
kill -9 $p
wait_for 5 sh -c "! kill -0 $bg 2>/dev/null"
ok $? "zkr-lock SIGKILLed: the command's background child dies too"
pids+=($bg)

# --- signals ignored at start stay ignored ---
nohup "$zl" "$root/nh" -- sh -c "sleep 2; echo done >'$tmp/nh.out'" >/dev/null 2>"$tmp/nh.err" &
p=$!; pids+=($p)
sleep 0.7
kill -HUP $p
wait $p; st=$?
[ $st -eq 0 ] && grep -q done "$tmp/nh.out"
ok $? "nohup zkr-lock: SIGHUP is ignored, the command finishes, exit 0 (got $st)"
sh -c "trap '' HUP INT; exec '$zl' '$root/ig' -- grep SigIgn /proc/self/status" >"$tmp/ig.out" 2>&1
ign=$(awk '{print $2}' "$tmp/ig.out")
[ -n "$ign" ] && [ $((0x$ign & 3)) -eq 3 ]
ok $? "signals ignored by the caller (HUP, INT) are ignored in the command too (SigIgn $ign)"

# --- in the foreground of a terminal, ^C reaches the command ---
# (SIGINT back to its default first: a suite started as a background job
# of a script has it ignored, zkr-lock keeps it so, and a shell cannot
# trap a signal ignored at its start. Never wait for ever: on a miss,
# zkr-lock is killed, and with it the command.)
/usr/bin/python3 - "$zl" "$root/tty" >"$tmp/tty.out" 2>&1 <<'PY'
import os, pty, signal, sys, time, select
zl, path = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execv(zl, [zl, path, "--", "sh", "-c",
                  "trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.1; done"])
buf = b""
def read_until(word, secs):
    global buf
    end = time.time() + secs
    while word not in buf and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                buf += os.read(fd, 1024)
            except OSError:
                break
    return word in buf
ok = read_until(b"ready", 20)
os.write(fd, b"\x03")
ok = ok and read_until(b"got-int", 10)
end = time.time() + 10
while True:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() > end:
        ok = False
        os.kill(pid, signal.SIGKILL)
        _, st = os.waitpid(pid, 0)
        break
    time.sleep(0.05)
print("ready-and-int" if ok else "no", os.WEXITSTATUS(st) if os.WIFEXITED(st) else -1)
PY
grep -q "ready-and-int 3" "$tmp/tty.out"
ok $? "^C in zkr-lock's terminal reaches the command, whose status (3) is returned ($(tail -1 "$tmp/tty.out"))"

# --- -v costs no requests while waiting ---
"$zl" "$root/vv" -- sleep 8 &
h=$!; pids+=($h)
sleep 1
vw=()
for i in 1 2 3 4 5; do
  "$zl" -v "$root/vv" -- true 2>"$tmp/vv.$i" &
  vw+=($!); pids+=($!)
done
wait_for 20 sh -c "grep -l 'ahead' '$tmp'/vv.* | wc -l | grep -qx 5"
ok $? "five -v waiters report how many are ahead"
p0=$("$ZKR_SANDBOX" 4lw 1 mntr | awk '$1 == "zk_packets_received" {print $2}')
sleep 3
p1=$("$ZKR_SANDBOX" 4lw 1 mntr | awk '$1 == "zk_packets_received" {print $2}')
[ -n "$p0" ] && [ -n "$p1" ] && [ $((p1 - p0)) -lt 30 ]
ok $? "while they wait for 3 s the server receives $((p1 - p0)) packets (pings; was several requests per waiter per second)"
st=0
for w in "${vw[@]}"; do wait $w || st=1; done
wait $h
[ $st -eq 0 ]
ok $? "each -v waiter gets the lock in turn"

# --- --acl creator --auth USER:PASSWORD ---
usage "--acl creator without --auth" --acl creator "$root/acl" -- true
usage "--acl neither open nor creator" --acl closed "$root/acl" -- true
usage "--auth without USER:" --auth secret "$root/acl" -- true
"$zl" --acl creator --auth app:secret "$root/acl/l" -- sh -c "echo held >'$tmp/acl.held'; sleep 60" &
ah=$!; pids+=($ah)
wait_for 20 test -s "$tmp/acl.held"
cat >"$tmp/acl.py" <<'PY'
import sys, logging
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=10)
p = sys.argv[2]
out = []
for path in [p] + [p + "/" + k for k in sorted(zk.get_children(p))]:
    acls, _ = zk.get_acls(path)
    out.append(",".join("%d:%s:%s" % (a.perms, a.id.scheme, a.id.id.split(":")[0]) for a in acls))
zk.stop()
print(" ".join(out))
PY
acls=$("$py" "$tmp/acl.py" "$hosts" "$root/acl/l" 2>&1)
[ "$acls" = "31:digest:app,1:world:anyone 31:digest:app,1:world:anyone" ]
ok $? "--acl creator: the lock path and the node it created are every right for app, read for anyone ($acls)"
"$zl" "$root/acl/l" -- true 2>"$tmp/acl.err"
st=$?
[ $st -eq 69 ] && grep -q "not authorized by the ACL of $root/acl/l " "$tmp/acl.err"
ok $? "without the credentials another zkr-lock cannot queue: exit 69, naming the node that refused: $(head -1 "$tmp/acl.err")"
# a creator-only semaphore: the refusing node is its admission child
"$zl" --acl creator --auth app:secret --permits 2 "$root/acl/s" -- sh -c "echo held >'$tmp/acls.held'; sleep 60" &
sh_=$!; pids+=($sh_)
wait_for 20 test -s "$tmp/acls.held"
"$zl" --permits 2 "$root/acl/s" -- true 2>"$tmp/acls.err"
st=$?
[ $st -eq 69 ] && grep -q "not authorized by the ACL of $root/acl/s/locks " "$tmp/acls.err"
ok $? "nor take a lease of a creator-only semaphore: exit 69, naming its admission node: $(head -1 "$tmp/acls.err")"
kill -TERM $sh_; wait $sh_ 2>/dev/null
# a creator-only lock leaves the parents it creates above its path open
"$zl" --acl creator --auth alice:pw "$root/team/alice/job" -- sh -c "echo held >'$tmp/team.held'; sleep 60" &
th=$!; pids+=($th)
wait_for 20 test -s "$tmp/team.held"
"$zl" -t 10 "$root/team/bob/job" -- true 2>"$tmp/team.err"
st=$?
[ $st -eq 0 ]
ok $? "beside a creator-only lock at team/alice/job, team/bob/job is open to anyone (exit $st: $(head -1 "$tmp/team.err"))"
"$zl" --auth bob:pw -t 10 "$root/team/bob/job" -- true 2>"$tmp/team.err"
st=$?
[ $st -eq 0 ]
ok $? "and to other credentials (exit $st: $(head -1 "$tmp/team.err"))"
kill -TERM $th; wait $th 2>/dev/null
"$zl" --auth intruder:pw --acl creator "$root/acl/l" -- true 2>"$tmp/acl2.err"
st=$?
[ $st -eq 69 ] && grep -q "not authorized" "$tmp/acl2.err"
ok $? "nor with other credentials (exit $st)"
"$zl" --auth app:secret --acl creator -t 0 "$root/acl/l" -- true 2>/dev/null
st=$?
[ $st -eq 1 ]
ok $? "with the same credentials it queues and, trying once, is refused as usual (exit $st)"
kill -TERM $ah; wait $ah 2>/dev/null
[ "$("$py" "$tmp/acl.py" "$hosts" "$root/acl/l" 2>&1)" = "31:digest:app,1:world:anyone" ]
ok $? "once the holder is gone no node is left"
