#!/usr/bin/env bash
# zkr-elect against a real server: bad usage, the command's environment,
# one leader at a time between two processes (and the second after the
# first's command), --requeue alternating, leadership lost by a pause
# past the session timeout, --leader and --observe (text and JSON), and
# zkr-ls's view of an election. Runs under test/with-zk. No timing
# assertions: every step waits for a condition.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
ze="$builddir/tools/zkr-elect"
zls="$builddir/tools/zkr-ls"
[ -x "$ze" ] || skip "tools/zkr-elect not built"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-elect-$$"
echo "1..57"

# participants PATH: how many participants zkr-ls sees at PATH
participants() {
  "$zls" --json "$1" | "$py" -c 'import json,sys; print(len(json.load(sys.stdin)["contenders"]))'
}
has_participants() { [ "$(participants "$1")" = "$2" ]; }
# gate ID: shell code that waits until the test creates the file go-ID
gate() { echo "while [ ! -e '$tmp/go-$1' ]; do sleep 0.05; done"; }

# --- usage errors: exit 64, nothing created ---
"$ze" --help >"$tmp/help" 2>&1
[ $? -eq 0 ] && grep -q -- '--requeue' "$tmp/help" && grep -q -- '--observe' "$tmp/help"
ok $? "--help exits 0 and lists the options"
usage() { # usage DESCRIPTION ARGS...
  local d=$1; shift
  "$ze" "$@" >"$tmp/u.out" 2>&1; local st=$?
  [ $st -eq 64 ] && grep -q "^zkr-elect: " "$tmp/u.out"
  ok $? "usage error exits 64 with a message: $d (got $st: $(head -1 "$tmp/u.out"))"
}
usage "no arguments"
usage "no command" "$root/u"
usage "unknown option" --frobnicate "$root/u" -- true
usage "--leader and --observe together" --leader --observe "$root/u"
usage "--leader with a command" --leader "$root/u" true
usage "--json without --leader or --observe" --json "$root/u" -- true
usage "--requeue with --leader" --requeue --leader "$root/u"
usage "bad --kill-after" --kill-after soon "$root/u" -- true
usage "session timeout 0" --session-timeout 0 "$root/u" -- true
usage "id with a control character" --id "$(printf 'a\tb')" "$root/u" -- true
usage "relative path" zkr-test/u -- true
usage "path under /zookeeper" /zookeeper/u -- true
[ "$(children "$root")" = 0 ]
ok $? "usage errors created nothing on the server"

# --- no leader ---
"$ze" --leader "$root/none" >"$tmp/none.out" 2>&1
st=$?
[ $st -eq 1 ] && [ ! -s "$tmp/none.out" ]
ok $? "--leader with nobody leading exits 1 (got $st)"
"$ze" --leader --json "$root/none" >"$tmp/none.json"
st=$?
[ $st -eq 1 ] && "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["leader"] is None, d' "$tmp/none.json"
ok $? "--leader --json with nobody leading: {\"leader\":null}, exit 1 (got $st)"
# a chroot that does not exist is named (issue 85): joining said "no such
# node", --leader "no leader"
nc="/zkr-test-nochroot-$$"
"$ze" -s "$hosts$nc" "$root/x" -- touch "$tmp/ran-nc" 2>"$tmp/enc"
st=$?
"$ze" --leader -s "$hosts$nc" "$root/x" >"$tmp/lnc.out" 2>"$tmp/lnc"
st2=$?
[ $st -eq 69 ] && [ ! -e "$tmp/ran-nc" ] && [ $st2 -eq 69 ] && [ ! -s "$tmp/lnc.out" ] &&
  grep -qF "cannot join the election at $root/x: the chroot $nc of the connection string does not exist" "$tmp/enc" &&
  grep -qF "the chroot $nc of the connection string does not exist" "$tmp/lnc"
ok $? "a chroot that does not exist: joining and --leader exit 69 saying so (got $st: $(head -1 "$tmp/enc"); $st2: $(head -1 "$tmp/lnc"))"

# --- the command's environment and status ---
ZKR_FENCING_TOKEN=stale ZKR_LEADER_NODE=stale "$ze" --id envtest "$root/env" -- sh -c \
  'echo "$ZKR_FENCING_TOKEN $ZKR_LEADER_NODE"; '"'$ze'"' --leader --json '"'$root/env'"' >'"'$tmp/env.json'"'; exit 7' \
  >"$tmp/env.out"
st=$?
ok $((st == 7 ? 0 : 1)) "without --requeue zkr-elect exits with the command's status (7, got $st)"
read -r tok node <"$tmp/env.out"
"$py" - "$tmp/env.json" "$tok" "$node" "$root/env" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tok, node, path = int(sys.argv[2]), sys.argv[3], sys.argv[4]
l = d["leader"]
assert d["path"] == path, d
assert l["token"] == tok, (l, tok)
assert l["node"] == node, (l, node)
assert node.startswith(path + "/_c_") and "-latch-" in node, node
assert l["id"] == "envtest" and l["pid"] > 0 and l["session"].startswith("0x"), l
PY
ok $? "ZKR_FENCING_TOKEN ($tok) and ZKR_LEADER_NODE are the leader's token and latch node (inherited values replaced)"
[ "$(children "$root/env")" = 0 ]
ok $? "it left the election when the command ended"

# --- two participants: one command at a time, the second after the first ---
# cmd ID: a command that logs its start (with its token), waits for the
# file go-ID, logs its end
cmd() {
  echo "echo \"start $1 \$ZKR_FENCING_TOKEN\" >>'$tmp/two.log'; $(gate "$1"); echo \"end $1\" >>'$tmp/two.log'; exit ${2:-0}"
}
"$ze" --id A "$root/two" -- sh -c "$(cmd A 3)" &
a=$!; pids+=($a)
wait_for 30 grep -qs "start A" "$tmp/two.log"
ok $? "the first zkr-elect leads and runs its command"
"$ze" --id "B b" "$root/two" -- sh -c "$(cmd B)" &
b=$!; pids+=($b)
wait_for 30 has_participants "$root/two" 2
ok $? "the second joined and waits"
"$ze" --leader "$root/two" >"$tmp/lead.out"
st=$?
[ $st -eq 0 ] && grep -q "^id=A host=$(hostname) pid=$a token=[0-9]* node=$root/two/_c_.*-latch-[0-9]*\$" "$tmp/lead.out"
ok $? "--leader prints the leader's id, host, pid, token and node, exit 0 (got $st: $(cat "$tmp/lead.out"))"
"$ze" --leader --json "$root/two" | "$py" -m json.tool >"$tmp/lead.json"
ok $? "--leader --json is valid JSON"
"$py" -c 'import json,sys; l=json.load(open(sys.argv[1]))["leader"]; assert l["id"]=="A" and l["pid"]==int(sys.argv[2]), l' "$tmp/lead.json" "$a"
ok $? "--leader --json names the leader"
"$zls" "$root/two" >"$tmp/ls.out"
awk 'NR==1 && /election, 2 participants/ {a=1} NR==3 && $1==1 && $2=="holder" && $7=="A" && $(NF-1)=="latch" {b=1}
     NR==4 && $1==2 && $2=="waiter" && $7=="B" && $(NF-1)=="latch" {c=1} END {exit !(a&&b&&c)}' "$tmp/ls.out"
ok $? "zkr-ls shows the election: the leader as holder, KIND latch"
"$zls" --json "$root/two" | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert d["type"] == "election", d
q = d["contenders"]
assert [c["kind"] for c in q] == ["latch", "latch"], q
assert [c["role"] for c in q] == ["holder", "waiter"], q
assert [c["id"] for c in q] == ["A", "B b"], q'
ok $? "zkr-ls --json: type election, kind latch, the leader first as holder"
[ "$(grep -c start "$tmp/two.log")" = 1 ]
ok $? "only the leader's command runs"
touch "$tmp/go-A"
wait $a; st=$?
ok $((st == 3 ? 0 : 1)) "the first exits with its command's status when it ends (3, got $st)"
wait_for 30 grep -qs "start B" "$tmp/two.log"
ok $? "the second leads once the first's command has ended"
touch "$tmp/go-B"
wait $b; st=$?
ok $((st == 0 ? 0 : 1)) "the second exits 0 (got $st)"
"$py" - "$tmp/two.log" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
assert [l[:2] for l in lines] == [["start", "A"], ["end", "A"], ["start", "B"], ["end", "B"]], lines
assert int(lines[2][2]) > int(lines[0][2]) > 0, lines
PY
ok $? "start and end lines never interleave; the second's token is larger"
"$ze" --leader "$root/two" >/dev/null
ok $(($? == 1 ? 0 : 1)) "nobody leads afterwards (--leader exits 1)"

# --- --requeue: two participants take turns ---
rq() { # rq ID
  "$ze" --requeue --id "$1" "$root/rq" -- sh -c "echo \"start $1 \$ZKR_FENCING_TOKEN\" >>'$tmp/rq.log'; sleep 0.2; echo \"end $1\" >>'$tmp/rq.log'" &
}
rq X; x=$!; pids+=($x)
wait_for 30 grep -qs "start X" "$tmp/rq.log"
rq Y; y=$!; pids+=($y)
wait_for 60 sh -c "[ \$(grep -c start '$tmp/rq.log') -ge 8 ]"
ok $? "with --requeue the command runs again and again"
kill -TERM $x $y
wait $x; sx=$?
wait $y; sy=$?
[ $sx -eq 143 ] && [ $sy -eq 143 ]
ok $? "SIGTERM ends both (143 and 143, got $sx and $sy)"
"$py" - "$tmp/rq.log" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
starts = [l for l in lines if l[0] == "start"]
# never two at once: every start is followed by the end of the same one
for i, l in enumerate(lines):
    if l[0] == "start" and i + 1 < len(lines):
        assert lines[i + 1][:2] == ["end", l[1]], (i, lines)
toks = [int(l[2]) for l in starts]
assert toks == sorted(toks) and len(set(toks)) == len(toks), toks
ids = [l[1] for l in starts]
first_y = ids.index("Y")
after = ids[first_y:]
assert all(a != b for a, b in zip(after, after[1:])), ids
assert ids.count("X") >= 2 and ids.count("Y") >= 2, ids
PY
ok $? "one command at a time, X and Y alternate once both are in, tokens grow"

[ "$(children "$root/rq")" = 0 ]
ok $? "no node left behind"

# --- --requeue backs off after short terms; a command that cannot run ends it ---
timeout -k 5 30 "$ze" --requeue "$root/bo" -- /nonexistent/zkr-cmd >"$tmp/bo1.out" 2>&1
st=$?
[ $st -eq 127 ] && [ "$(grep -c 'cannot run' "$tmp/bo1.out")" -eq 1 ]
ok $? "--requeue with a command that cannot run: exit 127, one message (got $st, $(grep -c 'cannot run' "$tmp/bo1.out") messages)"
"$ze" --requeue --stats --json "$root/bo" -- false 2>"$tmp/bo2.err" &
b=$!; pids+=($b)
# the first term begins at once; the back-offs are at least 1 s and 2 s,
# so 3.5 s see at most three terms (before the back-off: hundreds)
sleep 3.5
kill -TERM $b; wait $b; st=$?
"$py" -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); assert d["terms"] <= 3, d; assert d["outcome"] == "interrupted", d' "$tmp/bo2.err"
ok $? "--requeue -- false: at most 3 terms in 3.5 s, a signal in the back-off ends it (exit $st: $(tail -1 "$tmp/bo2.err"))"
[ $st -eq 143 ] && [ "$(children "$root/bo")" -le 0 ]
ok $? "SIGTERM in the back-off: exit 143, nothing left in the election (got $st)"

# --- the leader paused past its session timeout ---
"$ze" --session-timeout 2000 --kill-after 5 --id P "$root/p" -- sh -c \
  "trap 'echo term P >>\"$tmp/p.log\"; exit 9' TERM; echo start P >>'$tmp/p.log'; while :; do sleep 0.05; done" \
  2>"$tmp/p.err" &
p=$!; pids+=($p)
wait_for 30 grep -qs "start P" "$tmp/p.log"
ok $? "P leads and runs its command"
"$ze" --id Q "$root/p" -- sh -c "echo start Q >>'$tmp/p.log'; $(gate Q)" &
q=$!; pids+=($q)
wait_for 30 has_participants "$root/p" 2
kill -STOP $p
wait_for 60 grep -qs "start Q" "$tmp/p.log"
ok $? "while P is stopped its session expires and Q leads"
"$ze" --leader "$root/p" | grep -q "^id=Q "
ok $? "--leader names Q"
kill -CONT $p
wait $p; st=$?
[ $st -eq 75 ] && grep -q "term P" "$tmp/p.log" && grep -q "lost" "$tmp/p.err"
ok $? "resumed, P's command gets SIGTERM and zkr-elect exits 75 (got $st)"
[ $st -eq 75 ] || sed 's/^/# p.err: /' "$tmp/p.err"
"$ze" --leader "$root/p" | grep -q "^id=Q "
ok $? "Q still leads"
touch "$tmp/go-Q"
wait $q
ok $? "Q's command ends, Q exits 0"

# --- --observe: one line per change of leader ---
"$ze" --observe "$root/o" >"$tmp/o.txt" 2>"$tmp/o.err" &
o1=$!; pids+=($o1)
"$ze" --observe --json "$root/o" >"$tmp/o.json" 2>&1 &
o2=$!; pids+=($o2)
wait_for 30 grep -qs "^none$" "$tmp/o.txt"
ok $? "--observe prints none while nobody leads"
wait_for 30 grep -qs "null" "$tmp/o.json"
"$ze" --id O1 "$root/o" -- sh -c "$(gate O1)" &
r1=$!; pids+=($r1)
wait_for 30 grep -qs "^id=O1 " "$tmp/o.txt"
ok $? "change 1: O1 leads"
"$ze" --id O2 "$root/o" -- sh -c "$(gate O2)" &
r2=$!; pids+=($r2)
wait_for 30 has_participants "$root/o" 2
touch "$tmp/go-O1"
wait $r1
wait_for 30 grep -qs "^id=O2 " "$tmp/o.txt"
ok $? "change 2: O2 leads"
touch "$tmp/go-O2"
wait $r2
wait_for 30 sh -c "[ \$(grep -c '^none\$' '$tmp/o.txt') -ge 2 ]"
ok $? "change 3: nobody leads"
wait_for 30 sh -c "[ \$(wc -l <'$tmp/o.json') -ge 4 ]"
kill -TERM $o1 $o2
wait $o1; st=$?
wait $o2
ok $((st == 143 ? 0 : 1)) "SIGTERM ends --observe as SIGTERM (got $st)"
"$py" - "$tmp/o.txt" "$tmp/o.json" <<'PY'
import json, sys
text = [l.split()[0] for l in open(sys.argv[1])]
assert text == ["none", "id=O1", "id=O2", "none"], text
objs = [json.loads(l) for l in open(sys.argv[2])]
ids = [o["leader"]["id"] if o["leader"] else None for o in objs]
assert ids == [None, "O1", "O2", None], ids
PY
ok $? "one line per change, in order, text and JSON (none, O1, O2, none)"

# --- zkr-ls: latch and selector nodes in one election, also with -r ---
"$ze" --id L "$root/mix/e" -- sh -c "echo up >'$tmp/mix.up'; $(gate mix)" &
m=$!; pids+=($m)
wait_for 30 test -s "$tmp/mix.up"
"$py" - "$hosts" "$root/mix" "$zls" <<'PY'
import json, subprocess, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
path = sys.argv[2] + "/e"
# a selector (Curator LeaderSelector layout) queued behind the latch
zk.create(path + "/_c_0b1c2d3e-0000-4000-8000-000000000000-lock-", b"10.0.0.7",
          ephemeral=True, sequence=True)
d = json.loads(subprocess.check_output([sys.argv[3], "--json", path]))
assert d["type"] == "election", d
q = d["contenders"]
assert [c["kind"] for c in q] == ["latch", "selector"], q
assert [c["role"] for c in q] == ["holder", "waiter"], q
assert q[0]["id"] == "L", q
r = json.loads(subprocess.check_output([sys.argv[3], "-r", "--json", sys.argv[2]]))
assert [(x["path"], x.get("type")) for x in r["locks"]] == [(path, "election")], r
zk.stop()
PY
ok $? "zkr-ls: a latch and a selector node, kinds latch and selector, leader first; -r finds the election"
touch "$tmp/go-mix"
wait $m
ok $? "the latch's command ends, zkr-elect exits 0"

# --- a cut connection, through test/zkproxy: --keep-on-suspend or not ---
# the command: its pid in F.pid, "TERM" in F.log when it gets SIGTERM
cmd_sh='echo $$ >"$0.pid"; trap "echo TERM >>\"\$0.log\"; exit 143" TERM; while :; do sleep 0.05; done'
for mode in keep keep-outage drop; do
  px=$tmp/px-$mode f=$tmp/cmd-$mode
  px_start "$px"
  args=()
  [ "$mode" = drop ] || args=(--keep-on-suspend)
  "$ze" "${args[@]}" -s "127.0.0.1:$(cat "$px/port")" --session-timeout 4000 \
    --kill-after 5 "$root/cut-$mode" -- sh -c "$cmd_sh" "$f" 2>"$tmp/ze-$mode.err" &
  e=$!; pids+=($e)
  wait_for 20 test -s "$f.pid"
  cpid=$(cat "$f.pid")
  case $mode in
  keep)
    px_cmd "$px" cut-all
    # the client reconnects at once, to the same session; then give a loss
    # the time to show, had there been one
    conns() { [ "$(grep -c '^conn [0-9]* open' "$px/events")" -ge 2 ]; }
    wait_for 20 conns
    sleep 2
    kill -0 $e 2>/dev/null && kill -0 "$cpid" 2>/dev/null && [ ! -e "$f.log" ] &&
      [ "$(grep -c '^conn [0-9]* open' "$px/events")" -ge 2 ]
    ok $? "--keep-on-suspend: after a cut connection (it reconnected) COMMAND runs on, never signalled"
    kill -TERM $e; wait $e 2>/dev/null
    ;;
  keep-outage)
    px_cmd "$px" blackhole
    # a bound, so that a zkr-elect that missed the loss fails the check
    # instead of hanging the suite (its COMMAND never ends by itself)
    wait_for 120 pid_gone $e || { diag "zkr-elect still runs 120 s into the outage: ending it"; kill -TERM $e; }
    wait $e; st=$?
    [ $st -eq 75 ] && grep -q '^TERM' "$f.log"
    ok $? "--keep-on-suspend: an outage past the session timeout: COMMAND gets SIGTERM, exit 75 (got $st)"
    px_cmd "$px" flow
    ;;
  drop)
    px_cmd "$px" cut-all
    wait_for 60 pid_gone $e || { diag "zkr-elect still runs 60 s after the cut: ending it"; kill -TERM $e; }
    wait $e; st=$?
    [ $st -eq 75 ] && grep -q '^TERM' "$f.log"
    ok $? "without --keep-on-suspend a cut connection ends the leadership: COMMAND gets SIGTERM, exit 75 (got $st)"
    ;;
  esac
done
