#!/usr/bin/env bash
# The examples users copy from (docs/guide.md quotes them), against a real
# server, three instances of each at once and one of them killed (SIGKILL)
# while it holds: examples/worker (every job done once by the survivors,
# each under a fencing token of its own), examples/scheduler and
# examples/selector (steps from one leader at a time, the tokens growing
# from one leader to the next, the survivors done), examples/ratelimit
# (never more than 3 calls in flight, the killed process's counted until
# it was killed), examples/prices (two readers and a writer: no read
# while the writer writes). Runs under test/with-zk.
# No timing assertions: every step waits for a condition.
set -u
TESTLIB_NEEDS=""
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
ex="$builddir/examples"
for p in worker scheduler ratelimit prices selector; do
  [ -x "$ex/$p" ] || skip "examples/$p not built"
done
zkt_start
root="/zkr-test/t-examples-$$"
echo "1..21"
now_ms() { date +%s%3N; }

# --- each example is short, and docs/guide.md quotes it whole ---
src="${abs_top_srcdir:-$here/..}"
"$py" - "$src" <<'PY'
import re, sys
top = sys.argv[1]
bad = []
for n in ("worker", "scheduler", "ratelimit", "prices", "selector"):
    code = 0
    for line in open("%s/examples/%s.c" % (top, n)):
        s = line.strip()
        if s and not re.match(r"^(/\*|\*|//)", s):
            code += 1
    if code > 60:
        bad.append("%s: %d code lines" % (n, code))
print("# " + (", ".join(bad) if bad else "each at most 60 code lines"))
sys.exit(1 if bad else 0)
PY
ok $? "examples/worker.c, scheduler.c, ratelimit.c, prices.c, selector.c: at most 60 lines of code each"
"$py" - "$src" <<'PY'
import sys
top = sys.argv[1]
guide = open(top + "/docs/guide.md").read()
missing = [n for n in ("worker", "scheduler", "ratelimit", "prices", "selector")
           if open("%s/examples/%s.c" % (top, n)).read().rstrip("\n") not in guide]
print("# not quoted whole: %s" % (missing or "none"))
sys.exit(1 if missing else 0)
PY
ok $? "docs/guide.md quotes each of them whole"

# start3 NAME PATH ARG: three instances; sets pid1..pid3, out files $tmp/NAME.1..3
start3() {
  local i
  for i in 1 2 3; do
    "$ex/$1" "$hosts" "$2" "$3" >"$tmp/$1.$i" 2>&1 &
    eval "pid$i=$!"
    pids+=($!)
  done
}
# first_with NAME PATTERN: the instance (1-3) whose output first has PATTERN
first_with() {
  local i
  for i in 1 2 3; do grep -q "$2" "$tmp/$1.$i" && { echo "$i"; return 0; }; done
  return 1
}
# wait_exit PID: adds its exit status to $st once it ends (within 120 s;
# 124 if not)
wait_exit() {
  if wait_for 120 pid_gone "$1"; then wait "$1"; st="$st $?"; else st="$st 124"; fi
}
# in_flight: calls started and not ended, over every ratelimit instance
in_flight() {
  [ $(($(cat "$tmp"/ratelimit.* | grep -c "^call start") - $(cat "$tmp"/ratelimit.* | grep -c "^call end"))) -ge "$1" ]
}

# --- worker: 3 jobs each; the first to start a job is killed during it ---
start3 worker "$root/worker" 3
wait_for 30 first_with worker "started" >/dev/null
k=$(first_with worker "started")
kill -9 "$(eval echo \$pid$k)"
ok $? "a worker is killed during its first job"
st=""; done_n=0
for i in 1 2 3; do
  [ "$i" = "$k" ] && continue
  wait_exit "$(eval echo \$pid$i)"
  done_n=$((done_n + $(grep -c "^job [0-9]* done" "$tmp/worker.$i")))
done
[ "$st" = " 0 0" ] && [ "$done_n" -eq 6 ]
ok $? "the other two finish every job (exit:$st, jobs done: $done_n of 6)"
tokens=$(cat "$tmp"/worker.* | sed -n 's/.* token \([0-9]*\)$/\1/p')
[ -n "$tokens" ] && [ "$(echo "$tokens" | sort | uniq -d)" = "" ]
ok $? "every job ran under a fencing token of its own"
! grep -q "^job [0-9]* done" "$tmp/worker.$k"
ok $? "the killed worker finished no job"

# leaders NAME WORD KILLED DONE: three instances of the election example
# NAME, 3 WORDs (its output lines "WORD MS pid PID token T") each; the first
# leader is killed after its first one. Four checks: the kill (KILLED),
# the survivors' exits (DONE), one leader at a time with tokens growing,
# nothing of the killed leader after its kill.
leaders() {
  local name=$1 word=$2 i
  start3 "$name" "$root/$name" 3
  wait_for 30 first_with "$name" "^$word" >/dev/null
  k=$(first_with "$name" "^$word")
  kill_at=$(now_ms)
  kill -9 "$(eval echo \$pid$k)"
  ok $? "$3"
  st=""
  for i in 1 2 3; do
    [ "$i" = "$k" ] && continue
    wait_exit "$(eval echo \$pid$i)"
  done
  [ "$st" = " 0 0" ]
  ok $? "$4 (exit:$st)"
  cat "$tmp/$name".* | grep "^$word" | sort -n -k2 >"$tmp/$word.s"
  "$py" - "$tmp/$word.s" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
# in time order: one leader at a time (a pid's lines are not interleaved
# with another's), three leaders, tokens never going down
seen, last, ok = [], None, True
for r in rows:
    if r[3] != last:
        ok &= r[3] not in seen
        seen.append(r[3])
        last = r[3]
toks = [int(r[5]) for r in rows]
sys.exit(0 if ok and toks == sorted(toks) and len(seen) == 3 else 1)
PY
  ok $? "${word}s came from one leader at a time, tokens growing ($(wc -l <"$tmp/$word.s") ${word}s)"
  late=$(awk -v p="$(eval echo \$pid$k)" -v t="$kill_at" '$4 == p && $2 > t' "$tmp/$word.s" | wc -l)
  [ "$late" -eq 0 ]
  ok $? "no $word of the killed leader after its kill"
}

# --- scheduler: 3 ticks each; the first leader is killed after a tick ---
leaders scheduler tick "the first leader is killed after its first tick" \
  "the other two lead in turn and finish their ticks"

# --- ratelimit: 3 calls per thread, 2 threads per process, 3 processes ---
start3 ratelimit "$root/ratelimit" 3
wait_for 30 in_flight 3
used=$?
k=$(first_with ratelimit "^call start")
kill_at=$(now_ms)
kill -9 "$(eval echo \$pid$k)"
ok $? "a process is killed during a call"
st=""; ends=0
for i in 1 2 3; do
  [ "$i" = "$k" ] && continue
  wait_exit "$(eval echo \$pid$i)"
  ends=$((ends + $(grep -c "^call end" "$tmp/ratelimit.$i")))
done
[ "$st" = " 0 0" ] && [ "$ends" -eq 12 ]
ok $? "the other two make all their calls (exit:$st, calls: $ends of 12)"
cat "$tmp"/ratelimit.* | grep "^call" >"$tmp/calls"
"$py" - "$tmp/calls" "$(eval echo \$pid$k)" "$kill_at" <<'PY'
import sys
killed, kill_at = sys.argv[2], int(sys.argv[3])
ev, open_k = [], 0
for l in open(sys.argv[1]):
    _, kind, ms, _, pid = l.split()
    ev.append((int(ms), 0 if kind == "end" else 1, pid))
    if pid == killed:
        open_k += 1 if kind == "start" else -1
# the killed process's calls in flight end when it is killed (its leases
# outlive it until its session expires, which only lowers the count)
ev += [(kill_at, 0, killed)] * open_k
most = cur = 0
for ms, start, pid in sorted(ev):
    cur += 1 if start else -1
    most = max(most, cur)
print("# most calls in flight at once: %d" % most)
sys.exit(0 if 1 <= most <= 3 else 1)
PY
ok $? "never more than 3 calls in flight"
ok $used "and 3 were in flight at once (before the kill): the limit is used"

# --- selector: 3 steps each; the first leader is killed after a step ---
leaders selector step "the selector's first leader is killed after its first step" \
  "the other two lead in turn and do their steps"

# --- prices: two readers and a writer; a reader is killed while reading ---
path="$root/prices"
for i in 1 2; do
  "$ex/prices" "$hosts" "$path" read 3 >"$tmp/prices.$i" 2>&1 &
  eval "pid$i=$!"
  pids+=($!)
done
"$ex/prices" "$hosts" "$path" write 3 >"$tmp/prices.3" 2>&1 &
pid3=$!
pids+=($!)
wait_for 30 first_with prices "^read start" >/dev/null
k=$(first_with prices "^read start")
kill_at=$(now_ms)
kill -9 "$(eval echo \$pid$k)"
ok $? "a reader is killed while it reads"
st=""
for i in 1 2 3; do
  [ "$i" = "$k" ] && continue
  wait_exit "$(eval echo \$pid$i)"
done
[ "$st" = " 0 0" ] && [ "$(grep -c '^write end' "$tmp/prices.3")" -eq 3 ]
ok $? "the other reader and the writer finish (exit:$st)"
cat "$tmp"/prices.* | grep -E "^(read|write) (start|end)" >"$tmp/rw"
"$py" - "$tmp/rw" "$(eval echo \$pid$k)" "$kill_at" <<'PY'
import sys
killed, kill_at = sys.argv[2], int(sys.argv[3])
spans, open_ = [], {}
for l in open(sys.argv[1]):
    kind, edge, ms, _, pid = l.split()
    if edge == "start":
        open_[pid] = (kind, int(ms))
    else:
        k, t0 = open_.pop(pid)
        spans.append((k, t0, int(ms), pid))
for pid, (k, t0) in open_.items():  # the killed reader's read ends with it
    spans.append((k, t0, kill_at if pid == killed else 10**15, pid))
writes = [s for s in spans if s[0] == "write"]
reads = [s for s in spans if s[0] == "read"]
bad = [(w, r) for w in writes for r in reads if r[1] < w[2] and w[1] < r[2]]
print("# %d writes, %d reads, %d overlaps" % (len(writes), len(reads), len(bad)))
sys.exit(0 if writes and not bad else 1)
PY
ok $? "no read while the writer writes"
