# scripts/demo-scheduler.sh - the scheduler demo, sourced by scripts/demo
# ("scripts/demo scheduler") once zkr is built and the three-server
# ensemble runs ($top, $work, $sandbox, $hosts, say, step come from there).
#
# Three scheduler instances run under `zkr-elect --requeue` on one
# election; the leader runs a once-a-second job that appends
# "tick N by instance I with token T" to a journal. The journal is the
# fenced resource: an append carrying a token lower than the highest one
# it has seen is refused, and a tick already in it is not run again.
# During the run the demo SIGKILLs the leading instance, SIGSTOPs the next
# leader past its session timeout and resumes it, and kills the ZooKeeper
# leader. It ends with a table: ticks due, ticks run, ticks run twice,
# the longest gap without a leader and what caused it, and whether every
# journal line's token is at least the one before it (larger at every
# change of leader).

ze=$top/build/tools/zkr-elect
J=$work/scheduler
mkdir -p "$J"
: >"$J/journal"
: >"$J/refused"
: >"$J/events"
echo 0 >"$J/maxtoken"
export J
epath=/demo/scheduler
sched_ms=4000 # each instance's session timeout
run_secs=${ZKR_DEMO_SECONDS:-42}

# tick_job INSTANCE: the leader's job (zkr-elect's COMMAND). Once a second
# it appends the second's tick to the journal, under the journal's lock,
# unless its token is lower than the highest token the journal has seen
# (a leader that lost its leadership and does not know it yet: refused)
# or the tick is in the journal already.
tick_job() {
  local inst=$1 tok=${ZKR_FENCING_TOKEN:?} last=0 now max
  while :; do
    now=$EPOCHSECONDS
    if [ "$now" != "$last" ]; then
      {
        flock 9
        read -r max <"$J/maxtoken"
        if [ "$tok" -lt "$max" ]; then
          printf 'refused tick %s by instance %s with token %s (journal at %s)\n' \
            "$now" "$inst" "$tok" "$max" >>"$J/refused"
        elif ! grep -q "^tick $now " "$J/journal"; then
          printf 'tick %s by instance %s with token %s\n' "$now" "$inst" "$tok" >>"$J/journal"
          echo "$tok" >"$J/maxtoken"
        fi
      } 9>"$J/lock"
      last=$now
    fi
    sleep 0.05
  done
}
export -f tick_job

# start_instance I: a scheduler instance in a session of its own (so that
# the whole instance, zkr-elect and its job, can be stopped or killed as a
# paused or crashed machine would be).
start_instance() {
  setsid "$ze" -s "$hosts" --session-timeout "$sched_ms" --requeue \
    --kill-after 2 --id "instance-$1" "$epath" -- bash -c 'tick_job "$0"' "$1" \
    >>"$J/instance-$1.log" 2>&1 &
  echo $! >"$J/instance-$1.pid"
  disown $! # (no "Killed" notice from the shell when the demo kills it)
}

event() { # event TEXT: a fault, with the time it was injected
  printf '%s %s\n' "$EPOCHREALTIME" "$*" >>"$J/events"
  say "t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')s  $*"
}

# leader_instance: the instance number that leads now (from the election)
leader_instance() {
  "$ze" -s "$hosts" --leader "$epath" 2>/dev/null | sed -n 's/.*id=instance-\([0-9]*\).*/\1/p'
}

# wait_leader: until some instance leads and has ticked
wait_tick_after() { # wait_tick_after SECONDS: a tick later than that second
  local i
  for i in $(seq 1 300); do
    [ "$(awk 'END{print $2+0}' "$J/journal")" -gt "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

sleep_until() { # sleep_until SECONDS-SINCE-START
  local left
  left=$(awk -v a="$t0" -v b="$EPOCHREALTIME" -v s="$1" 'BEGIN{printf "%.2f", s-(b-a)}')
  awk -v l="$left" 'BEGIN{exit !(l > 0)}' && sleep "$left"
  return 0
}

step "Scheduler: 3 instances under zkr-elect --requeue, a tick a second"
t0=$EPOCHREALTIME
first_second=$EPOCHSECONDS
for i in 1 2 3; do start_instance "$i"; done
wait_tick_after 0 || { say "no instance ticked within 30 s" >&2; exit 1; }
say "t=0.0s  started; instance $(leader_instance) leads"

# fault 1: SIGKILL the leading instance (zkr-elect and its job)
sleep_until 8
l1=$(leader_instance)
pkill -KILL -s "$(cat "$J/instance-$l1.pid")" 2>/dev/null || true
event "SIGKILLed the leading instance $l1"
wait_tick_after "$EPOCHSECONDS" || true
say "        instance $(leader_instance) leads and ticks (instance $l1's session expired)"
start_instance "$l1"
say "        instance $l1 started again"

# fault 2: SIGSTOP the next leader past its session timeout, then resume
sleep_until 18
l2=$(leader_instance)
sid2=$(cat "$J/instance-$l2.pid")
pkill -STOP -s "$sid2" 2>/dev/null || true
event "SIGSTOPped the leading instance $l2 for $((sched_ms * 2 / 1000)) s (session timeout $((sched_ms / 1000)) s)"
sleep $((sched_ms * 2 / 1000))
pkill -CONT -s "$sid2" 2>/dev/null || true
say "t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')s  resumed instance $l2; instance $(leader_instance) leads"

# fault 3: kill the ZooKeeper leader, restart it later
sleep_until 30
zl=$(scripts/zk-sandbox --dir "$sandbox" leader)
scripts/zk-sandbox --dir "$sandbox" kill "$zl" >/dev/null
event "SIGKILLed the ZooKeeper leader (server $zl)"
sleep_until 36
scripts/zk-sandbox --dir "$sandbox" start-server "$zl" >/dev/null 2>&1 || true
say "t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')s  server $zl started again"

sleep_until "$run_secs"
last_second=$((EPOCHSECONDS - 1))
for i in 1 2 3; do
  pkill -TERM -s "$(cat "$J/instance-$i.pid")" 2>/dev/null || true
done
for i in 1 2 3; do
  p=$(cat "$J/instance-$i.pid")
  for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
done
sleep 0.5

# ---------------------------------------------------------------- table
step "Result"
due=$((last_second - first_second))
awk -v f="$first_second" -v l="$last_second" '$2 > f && $2 <= l' "$J/journal" >"$J/window"
run=$(awk '{print $2}' "$J/window" | sort -u | wc -l)
twice=$(awk '{print $2}' "$J/journal" | sort | uniq -d | wc -l)
# tokens: never lower than the line before, higher at every change of leader
tokens_ok=$(awk '{t = $8 + 0; i = $5} # tick N by instance I with token T
  NR > 1 && (t < pt || (i != pi && t <= pt)) {bad = 1}
  {pt = t; pi = i} END {print bad ? "no" : "yes"}' "$J/journal")
# the longest run of seconds without a tick, and the fault before it
read -r gap gap_at < <(awk '{print $2}' "$J/window" | sort -n |
  awk -v f="$first_second" 'BEGIN {p = f} {g = $1 - p - 1; if (g > m) {m = g; at = p + 1} p = $1}
  END {print m + 0, at + 0}')
cause="-"
if [ "${gap:-0}" -gt 0 ]; then
  cause=$(awk -v at="$gap_at" '$1 <= at + 1 {c = $0} END {sub(/^[^ ]* /, "", c); print c}' "$J/events")
  [ -n "$cause" ] || cause="start-up"
fi
refused=$(wc -l <"$J/refused")
left=$("$ze" -s "$hosts" --leader "$epath" >/dev/null 2>&1 && echo yes || echo no)
leaders=$(awk '{print $5}' "$J/journal" | uniq | wc -l)

printf '  %-40s %s\n' "ticks due" "$due"
printf '  %-40s %s\n' "ticks run" "$run"
printf '  %-40s %s\n' "ticks run twice" "$twice"
printf '  %-40s %s\n' "longest gap without a leader (s)" "${gap:-0}"
printf '  %-40s %s\n' "  caused by" "$cause"
printf '  %-40s %s\n' "terms (changes of leader + 1)" "$leaders"
printf '  %-40s %s\n' "stale appends refused by the token" "$refused"
printf '  %-40s %s\n' "tokens larger at every change of leader" "$tokens_ok"
printf '  %-40s %s\n' "participants left in the election" "$left"
say ""
say "  The journal's tokens are the leaders' fencing tokens (the czxid of their"
say "  election node): a leader that was paused past its session is told it lost"
say "  leadership when it resumes, and an append it makes before its job is"
say "  stopped carries its old, lower token and is refused."
[ -s "$J/refused" ] && sed 's/^/    /' "$J/refused"
if [ "$twice" -eq 0 ] && [ "$tokens_ok" = yes ] && [ "$left" = no ]; then
  say "zkr-elect: one leader at a time, no tick run twice, nothing left behind."
  exit 0
fi
say "UNEXPECTED: a tick run twice, tokens out of order, or a participant left" >&2
exit 1
