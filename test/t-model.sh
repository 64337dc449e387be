#!/bin/bash
# t-model.sh - check model/queue.pml (the queue engine's Promela model)
# with spin: for each configuration (mutex, rwlock, semaphore, election)
# an exhaustive safety search (assertions: mutual exclusion by the
# policy, guarded writes, no grant after a cancel) and the liveness
# search (a waiter whose blockers are gone stops waiting, under weak
# fairness); then the semaphore's lease side with the admission left out
# (the reduction its two-fault search uses); then the mutants that take
# a watch event as the grant and that let one lease too many hold, which
# must each give a counterexample, and the one whose lease waiter does
# not watch its admission node, which must fail the liveness search,
# also in a search split with -DSYM12 (contenders 1 and 2 left to
# symmetry) and with its delete split by slot; the wake-up mutant's
# expiry split by the slot of the expired session's last node (one part
# must find it, one must not), and the liveness claim split in two
# (-DLIVE_PART: likewise); the multi-lock's sets of two paths (safety
# and, by a watchdog at quiescence, no deadlock), whose mutant making the
# two nodes with two creates must deadlock; and the model must refuse its split switches
# where they do not hold; last, that hash compaction as model/pan-hc
# builds it (the by-hand searches) stores every state of a small
# exhaustive search, and that its compact store (-DCSTORE) finds an
# exhaustive liveness search's states and a mutant's trail and stops a
# search when full, and that its canonical form (-DCANON) stores exactly
# the forms of a plain search's states and still finds the mutants.
# model/README.md says what is modelled and the bounds.
#
# Environment: ZKR_MODEL_FAULTS_MUTEX (default 1; 0 when
# ZKR_TEST_TIMEOUT_MULTIPLIER > 1; also the election's run without a
# resign) and ZKR_MODEL_FAULTS (default 0, the rwlock and semaphore runs
# and the election's with a resign, and the multi-lock's with 3
# contenders) and ZKR_MODEL_FAULTS_MULTILOCK (default 2, 1 when
# ZKR_TEST_TIMEOUT_MULTIPLIER > 1: the multi-lock's with 2) set the fault
# budget MAXF; larger
# budgets take much longer (see model/README.md).
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
model=$srcdir/model/queue.pml

skip() {
  if [ "${ZKR_TEST_NO_SKIP:-0}" = 1 ]; then
    echo "Bail out! would skip, but ZKR_TEST_NO_SKIP=1: $*"
    exit 1
  fi
  echo "1..0 # SKIP $*"
  exit 0
}
command -v spin >/dev/null 2>&1 || skip "spin is not installed (apt-get install spin)"
cc=${CC_FOR_PAN:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc) to compile spin's pan"
[ -r "$model" ] || { echo "Bail out! $model missing"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkr-model.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# The model does not depend on the build: the sanitizer runs of
# scripts/test (which set ZKR_TEST_TIMEOUT_MULTIPLIER) repeat only the
# quick searches (the mutex without faults, the mutant) instead of
# spending two more minutes each on the same result.
fm_default=1
[ "${ZKR_TEST_TIMEOUT_MULTIPLIER:-1}" -gt 1 ] 2>/dev/null && fm_default=0
fm=${ZKR_MODEL_FAULTS_MUTEX:-$fm_default}
fo=${ZKR_MODEL_FAULTS:-0}
# the multi-lock's two-contender search: 2 faults (1 in the sanitizer runs)
ml_f=${ZKR_MODEL_FAULTS_MULTILOCK:-$((fm_default + 1))}
# each search is bounded in time; a search cut short fails the test
limit=${ZKR_MODEL_TIME_LIMIT:-600}

echo "1..25"
n=0

# pan_run NAME "SPIN -D FLAGS" "CC FLAGS" "PAN ARGS": compile and run
# one search in its own directory; leaves its output in $tmp/NAME/out
pan_run() {
  local name=$1 sflags=$2 cflags=$3 pargs=$4 d=$tmp/$1
  mkdir -p "$d" && cp "$model" "$d/queue.pml" || return 99
  # shellcheck disable=SC2086
  (cd "$d" && spin -a $sflags queue.pml >spin.log 2>&1 &&
    $cc -O0 -w $cflags -o pan pan.c >cc.log 2>&1 &&
    timeout "$limit" ./pan $pargs >out 2>&1)
  local rc=$?
  echo "# $name: spin -a $sflags; pan $pargs: exit $rc, $(grep -hE 'states, stored' "$d/out" 2>/dev/null | head -n 1 | sed 's/^ *//'), $(grep -h 'elapsed time' "$d/out" 2>/dev/null | sed 's/^pan: //')"
  return $rc
}

# a search passed: it ran to its end with no error
clean() {
  local out=$tmp/$1/out
  [ -s "$out" ] && grep -q 'errors: 0$' "$out" &&
    ! grep -q 'max search depth too small' "$out" &&
    ! grep -q 'pan: out of memory' "$out"
}

fail_diag() {
  local d=$tmp/$1
  cat "$d/spin.log" "$d/cc.log" 2>/dev/null | head -n 10 | sed 's/^/# /'
  grep -E 'pan:|error|violated|depth' "$d/out" 2>/dev/null | head -n 10 | sed 's/^/# /'
}

# verdict NAME DESCRIPTION: the TAP line of a finished search, numbered
verdict() {
  n=$((n + 1))
  if clean "$1"; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    fail_diag "$1"
  fi
}

safety="-DSAFETY -DCOLLAPSE"
live="-DCOLLAPSE -DNFAIR=3"
sargs="-m200000 -w24"
largs="-a -f -m200000 -w24"

# The searches, NAME|DESCRIPTION|SPIN FLAGS|CC FLAGS|PAN ARGS, in two
# lanes of about the same length (one core each); the verdicts are printed
# in this order once both lanes are done.
searches=(
  "mutex-safety|mutex: safety, exhaustive (3 contenders, $fm fault(s))|-DMAXF=$fm|$safety|$sargs"
  "mutex-live|mutex: liveness under weak fairness (3 contenders, $fm fault(s))|-DMAXF=$fm -DLIVE|$live|$largs"
  "rwlock-safety|rwlock: safety, exhaustive (3 contenders, $fo fault(s))|-DRWLOCK -DMAXF=$fo|$safety|$sargs"
  "rwlock-live|rwlock: liveness under weak fairness (3 contenders, $fo fault(s))|-DRWLOCK -DMAXF=$fo -DLIVE|$live|$largs"
  "semaphore-safety|semaphore (2 permits): safety, exhaustive (3 contenders, $fo fault(s))|-DSEMAPHORE -DMAXF=$fo|$safety|$sargs"
  "semaphore-live|semaphore (2 permits): liveness under weak fairness (3 contenders, $fo fault(s))|-DSEMAPHORE -DMAXF=$fo -DLIVE|$live|$largs"
  # the election's latch: one contender may resign (leave, join again at
  # the back), or, with the mutex's fault budget, none
  "election-safety|election: safety, exhaustive (3 contenders, one may resign, $fo fault(s))|-DELECTION -DRESIGN=1 -DMAXF=$fo|$safety|$sargs"
  "election-safety-f|election: safety, exhaustive (3 contenders, $fm fault(s))|-DELECTION -DRESIGN=0 -DMAXF=$fm|$safety|$sargs"
  "election-live|election: liveness under weak fairness (3 contenders, one may resign, $fo fault(s))|-DELECTION -DRESIGN=1 -DMAXF=$fo -DLIVE|$live|$largs"
  # the lease side alone, admitted at any moment (a superset of its
  # behaviours: the reduction of the semaphore's two-fault search)
  "semaphore-free|semaphore (2 permits), admission left out: safety, exhaustive (3 contenders, $fo fault(s))|-DSEMAPHORE -DFREE_ADMISSION -DMAXF=$fo|$safety|$sargs"
  # the multi-lock: sets of two mutexes made in one transaction; the
  # watchdog asserts that every contender finishes (no deadlock)
  "multilock-safety|multi-lock (sets of 2 paths): safety and no deadlock, exhaustive (3 contenders, $fo fault(s))|-DMULTILOCK -DNC=3 -DMAXF=$fo|$safety|$sargs"
  "multilock-safety-f|multi-lock (sets of 2 paths): safety and no deadlock, exhaustive (2 contenders, $ml_f faults)|-DMULTILOCK -DNC=2 -DMAXF=$ml_f|$safety|$sargs"
)
lane() { # lane INDEX...: run those searches in turn
  local i name desc sf cf pa
  for i in "$@"; do
    IFS='|' read -r name desc sf cf pa <<<"${searches[i]}"
    pan_run "$name" "$sf" "$cf" "$pa" >"$tmp/$name.diag"
  done
}
lane 1 7 11 >/dev/null &   # the three longest (with faults)
lane_pid=$!
lane 0 2 3 4 5 6 8 9 10
wait "$lane_pid"
for i in "${!searches[@]}"; do
  IFS='|' read -r name desc sf cf pa <<<"${searches[i]}"
  cat "$tmp/$name.diag"
  verdict "$name" "$desc"
done

# caught NAME: the search found an assertion violation (a mutant's verdict)
caught() {
  grep -q 'assertion violated' "$tmp/$1/out" && grep -q 'errors: [1-9]' "$tmp/$1/out"
}

# The checker can fail: without the wake-up check (a watch event taken as
# the grant) a third party's setData on the holder's node, or a waiter
# leaving, lets the next waiter hold while an earlier node exists.
n=$((n + 1))
pan_run mutant "-DMAXF=1 -DMUTANT_NO_WAKE_CHECK" "$safety" "$sargs"
if caught mutant && [ -s "$tmp/mutant/queue.pml.trail" ]; then
  echo "ok $n - mutant without the wake-up check gives a counterexample"
  (cd "$tmp/mutant" && spin -DMAXF=1 -DMUTANT_NO_WAKE_CHECK -t queue.pml 2>&1) |
    grep -E 'MSC:|assertion violated' | head -n 20 | sed 's/^ */# /'
else
  echo "not ok $n - mutant without the wake-up check gives no counterexample"
  fail_diag mutant
fi

# ... and for the multi-lock: a set whose two nodes are made by two
# creates (another set's may come between, as when locks are taken one by
# one) deadlocks: the watchdog's assertion must fail
n=$((n + 1))
pan_run mutant-seq "-DMULTILOCK -DMUTANT_SEQ_CREATE -DNC=2 -DMAXF=0" "$safety" "$sargs"
if caught mutant-seq; then
  echo "ok $n - multi-lock mutant with one create per node deadlocks (counterexample)"
else
  echo "not ok $n - multi-lock mutant with one create per node gives no counterexample"
  fail_diag mutant-seq
fi

# ... and for the semaphore's count: a lease that holds with LIMIT other
# lease nodes (one too many) must be caught, in the full model and in the
# reduced one the two-fault search uses (neither check is vacuous)
for v in "" "-DFREE_ADMISSION"; do
  n=$((n + 1))
  name=mutant-lease${v:+-free}
  pan_run "$name" "-DSEMAPHORE $v -DMUTANT_LEASE_COUNT -DMAXF=0" "$safety" "$sargs"
  if caught "$name"; then
    echo "ok $n - semaphore mutant with one lease too many gives a counterexample${v:+ (admission left out)}"
  else
    echo "not ok $n - semaphore mutant with one lease too many gives no counterexample${v:+ (admission left out)}"
    fail_diag "$name"
  fi
done

# ... and for the semaphore's progress: a lease waiter that does not watch
# its admission node (zkr before 2026-11-27) waits for ever once a third
# party deletes that node (with one permit, one delete is enough): the
# liveness search must find the cycle, whole, split by symmetry
# (-DSYM12: every fault contender 0's, contender 1's first node made
# before contender 2's), and in a part of its delete split by slot that
# leaves out the first node made (-DFIRST_DLO=1 -DFIRST_DHI=13)
adm="-DSEMAPHORE -DLIMIT=1 -DMAXF=1 -DLIVE -DFIRST_CLASS=3 -DMUTANT_NO_ADM_WATCH"
for t in "mutant-adm||semaphore mutant without the admission watch" \
  "mutant-adm-sym|-DFIRST_WHO=0 -DSYM12|the same mutant, split with -DSYM12," \
  "mutant-adm-slot|-DFIRST_WHO=0 -DSYM12 -DFIRST_DLO=1 -DFIRST_DHI=13|the same mutant, its delete split by slot (1 to 13),"; do
  IFS='|' read -r name extra what <<<"$t"
  n=$((n + 1))
  pan_run "$name" "$adm $extra" "$live" "$largs"
  if grep -q 'acceptance cycle' "$tmp/$name/out" && grep -q 'errors: [1-9]' "$tmp/$name/out"; then
    echo "ok $n - $what gives a liveness counterexample"
  else
    echo "not ok $n - $what gives no liveness counterexample"
    fail_diag "$name"
  fi
done

# ... and the claim split in two (-DLIVE_PART): the mutant's lease
# waiter waits for ever, which fails the claim's second conjunct (the
# lease waiter's) and not its first (the admission waiter's), so part 2
# must find the cycle and part 1 must search to its end without one
n=$((n + 1))
pan_run mutant-adm-lp2 "$adm -DLIVE_PART=2" "$live" "$largs"
pan_run mutant-adm-lp1 "$adm -DLIVE_PART=1" "$live" "$largs"
if grep -q 'acceptance cycle' "$tmp/mutant-adm-lp2/out" && grep -q 'errors: [1-9]' "$tmp/mutant-adm-lp2/out" &&
  clean mutant-adm-lp1; then
  echo "ok $n - the same mutant, the claim split in two: part 2 gives a liveness counterexample, part 1 none"
else
  echo "not ok $n - the same mutant, the claim split in two: part 2 gives no liveness counterexample, or part 1 one"
  fail_diag mutant-adm-lp2
  fail_diag mutant-adm-lp1
fi

# ... and the expiry's split by the slot of the expired session's last
# node (-DFIRST_ELO/-DFIRST_EHI) keeps and drops what it says: without
# the wake-up check, the expiry of a waiter whose node (slot 1) is the
# predecessor of another's, while node 0's holder still holds, lets that
# other hold too; the part with slots 1 to 8 must find it, and the part
# with slot 0 alone (only the holder's own expiry, which frees the lock)
# must search to its end without an error
ex="-DMAXF=1 -DMUTANT_NO_WAKE_CHECK -DFIRST_CLASS=1 -DFIRST_MADE=1"
n=$((n + 1))
pan_run mutant-eslot "$ex -DFIRST_ELO=1 -DFIRST_EHI=8" "$safety" "$sargs"
pan_run mutant-eslot0 "$ex -DFIRST_ELO=0 -DFIRST_EHI=0" "$safety" "$sargs"
if caught mutant-eslot && clean mutant-eslot0; then
  echo "ok $n - the mutant's expiry split by slot: the part with slots 1 to 8 gives a counterexample, slot 0 alone none"
else
  echo "not ok $n - the mutant's expiry split by slot does not give a counterexample in slots 1 to 8 and none in slot 0 alone"
  fail_diag mutant-eslot
  fail_diag mutant-eslot0
fi

# the split switches are refused where they do not hold: -DSYM12 where
# contenders 1 and 2 are not alike (a fault of contender 1's or 2's, the
# read-write lock's roles, the election's resign), -DFIRST_MADE and
# -DSECOND_MADE on a fault that is not an expiry, -DFIRST_DLO and
# -DSECOND_DLO on one that is not a delete, or without its -D..._DHI,
# an empty slot range or one past the model's slots, a node count other
# than 0, 1 or 2, -DFIRST_ELO and -DSECOND_ELO on a fault that is not an
# expiry, without its -D..._EHI or its node count, or with a count of 0
# (each would give a part with no run: "no error" for nothing), and
# -DLIVE_PART without the liveness claim, on a policy whose claim has one
# conjunct, or other than 1 or 2
n=$((n + 1))
bad=""
sym='SYM12 needs contenders 1 and 2 alike'
made='splits an expiry'
dslot='split a delete'
drange='must be a slot range that is not empty'
mrange='is a node count: 0, 1 or 2'
eslot='split an expiry by its last node'
erange='of a session that made a node'
lpart='LIVE_PART picks one of the two conjuncts'
for t in "-DSEMAPHORE -DMAXF=1 -DFIRST_WHO=1 -DSYM12|$sym" "-DSEMAPHORE -DMAXF=1 -DSYM12|$sym" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_WHO=0 -DSECOND_WHO=2 -DSYM12|$sym" "-DRWLOCK -DMAXF=0 -DSYM12|$sym" \
  "-DELECTION -DMAXF=0 -DSYM12|$sym" "-DSEMAPHORE -DMAXF=1 -DFIRST_MADE=1|$made" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=3 -DFIRST_MADE=1|$made" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=3 -DSECOND_MADE=0|$made" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_DLO=0 -DFIRST_DHI=3|$dslot" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=3 -DSECOND_CLASS=1 -DSECOND_DLO=0 -DSECOND_DHI=3|$dslot" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=3 -DSECOND_DLO=0|$dslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=3 -DFIRST_DHI=3|$dslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=3 -DFIRST_DLO=5 -DFIRST_DHI=3|$drange" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=3 -DFIRST_DLO=-1 -DFIRST_DHI=3|$drange" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=3 -DSECOND_DLO=4 -DSECOND_DHI=14|$drange" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=1 -DSECOND_MADE=3|$mrange" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_MADE=-1|$mrange" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=3 -DFIRST_MADE=1 -DFIRST_ELO=0 -DFIRST_EHI=3|$eslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_MADE=1 -DFIRST_ELO=0|$eslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_MADE=1 -DFIRST_EHI=3|$eslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_ELO=0 -DFIRST_EHI=3|$eslot" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=1 -DSECOND_ELO=0 -DSECOND_EHI=3|$eslot" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=4 -DSECOND_MADE=1 -DSECOND_ELO=0 -DSECOND_EHI=3|$eslot" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_MADE=0 -DFIRST_ELO=0 -DFIRST_EHI=3|$erange" \
  "-DSEMAPHORE -DMAXF=1 -DFIRST_CLASS=1 -DFIRST_MADE=2 -DFIRST_ELO=4 -DFIRST_EHI=3|$erange" \
  "-DSEMAPHORE -DMAXF=2 -DFIRST_CLASS=1 -DSECOND_CLASS=1 -DSECOND_MADE=1 -DSECOND_ELO=1 -DSECOND_EHI=14|$erange" \
  "-DSEMAPHORE -DMAXF=0 -DLIVE_PART=1|$lpart" "-DLIVE -DMAXF=0 -DLIVE_PART=1|$lpart" \
  "-DRWLOCK -DLIVE -DMAXF=0 -DLIVE_PART=2|$lpart" "-DSEMAPHORE -DLIVE -DMAXF=0 -DLIVE_PART=3|$lpart" \
  "-DELECTION -DLIVE -DMAXF=0 -DLIVE_PART=0|$lpart"; do
  f=${t%%|*} msg=${t#*|}
  d=$tmp/split-refused && rm -rf "$d" && mkdir -p "$d" && cp "$model" "$d/queue.pml" || exit 99
  # shellcheck disable=SC2086
  if (cd "$d" && spin -a $f queue.pml >spin.log 2>&1) || ! grep -q "$msg" "$d/spin.log"; then
    bad="$bad [$f]"
  fi
done
if [ -z "$bad" ]; then
  echo "ok $n - the model refuses -DSYM12, -DFIRST_MADE, -DSECOND_MADE, the slot splits of a delete and of an expiry and -DLIVE_PART where they do not hold, and empty or out-of-range parts"
else
  echo "not ok $n - the model accepts a split switch where it does not hold:$bad"
fi

# Hash compaction, as the searches too large for this suite run it
# (model/pan-hc): a safety search of about 0.9 M states must store exactly
# as many states as the exhaustive one. spin's own pan (6.5.2) signs a
# state with a 32-bit hash for tables up to -w32, so about N*N/2^33 of N
# states (here about 100) are skipped unseen: it must store fewer, which
# shows the comparison can fail (a pan.c that already signs with 64 bits
# is noted instead).
n=$((n + 1))
hcf="-DELECTION -DRESIGN=0 -DMAXF=1"
pan_run hc-exact "$hcf" "$safety" "$sargs"
pan_run hc-spin "$hcf" "-DSAFETY -DHC4 -DNO_RESIZE" "$sargs"
d=$tmp/hc-fixed
# shellcheck disable=SC2086
if CC=$cc PAN_OPT=-O0 "$srcdir/model/pan-hc" "$d" $hcf -- -DSAFETY >"$tmp/hc-build.log" 2>&1; then
  # shellcheck disable=SC2086
  (cd "$d" && timeout "$limit" ./pan $sargs >out 2>&1)
fi
stored() { grep -hE 'states, stored' "$tmp/$1/out" 2>/dev/null | awk '{print $1}' | head -n 1; }
ex=$(stored hc-exact) fx=$(stored hc-fixed) sp=$(stored hc-spin)
echo "# hash compaction: exhaustive $ex states, model/pan-hc $fx, spin's own $sp"
if grep -q 'hasher = d_sfh' "$tmp/hc-spin/pan.c" 2>/dev/null; then
  spin_short=0
  [ -n "$sp" ] && [ -n "$ex" ] && [ "$sp" -lt "$ex" ] && clean hc-spin && spin_short=1
else
  echo "# spin's own pan.c already signs with a 64-bit hash"
  spin_short=1
fi
if clean hc-exact && clean hc-fixed && [ -n "$ex" ] && [ "$fx" = "$ex" ] && [ $spin_short = 1 ]; then
  echo "ok $n - hash compaction as model/pan-hc builds it stores every state of an exhaustive search (spin's own 32-bit signature skips some)"
else
  echo "not ok $n - hash compaction: model/pan-hc's search stores $fx states, the exhaustive one $ex (spin's own: $sp)"
  sed 's/^/# /' "$tmp/hc-build.log" 2>/dev/null | head -n 10
  fail_diag hc-fixed
fi

# The compact store (model/pan-hc -DCSTORE=MB, model/cstore.c), which
# the largest liveness searches use: it must find the states the
# exhaustive search finds, in the same order (the mutex's liveness
# search: the same transitions, its "stored" the exhaustive search's
# "visited", which counts both nested searches' visits as the hash
# compaction's does), and the admission mutant's cycle with the same
# trail; and a store too small for the search must end it as "out of
# memory", not pass it.
n=$((n + 1))
cs_run() { # cs_run NAME MB "SPIN FLAGS": build with model/pan-hc and run
  local d=$tmp/$1
  # shellcheck disable=SC2086
  if CC=$cc PAN_OPT=-O0 "$srcdir/model/pan-hc" "$d" $3 -- -DNFAIR=3 -DCSTORE=$2 \
    >"$d.build" 2>&1; then
    # shellcheck disable=SC2086
    (cd "$d" && timeout "$limit" ./pan -a -f -m200000 -w10 >out 2>&1)
  fi
}
cs_run cs-live 64 "-DMAXF=$fm -DLIVE" &
cs_run cs-mutant 64 "$adm" &
cs_run cs-full 1 "$adm"
wait
num() { grep -hE "$2" "$tmp/$1/out" 2>/dev/null | awk '{print $1}' | head -n 1; }
ex_tr=$(num mutex-live 'transitions') cs_tr=$(num cs-live 'transitions')
ex_vis=$(grep -hoE '\(([0-9.e+]+) visited\)' "$tmp/mutex-live/out" 2>/dev/null | tr -d '()' | awk '{print $1}')
[ -n "$ex_vis" ] || ex_vis=$(stored mutex-live)
cs_st=$(stored cs-live)
echo "# compact store: mutex liveness $cs_st states, $cs_tr transitions (exhaustive: $ex_vis visited, $ex_tr transitions)"
ok_cs=1
{ clean cs-live && [ -n "$ex_tr" ] && [ "$cs_tr" = "$ex_tr" ] &&
  [ -n "$cs_st" ] && [ "$(printf '%g' "$cs_st")" = "$(printf '%g' "$ex_vis")" ]; } || ok_cs=0
{ grep -q 'acceptance cycle' "$tmp/cs-mutant/out" 2>/dev/null &&
  cmp -s "$tmp/cs-mutant/queue.pml.trail" "$tmp/mutant-adm/queue.pml.trail"; } || ok_cs=0
{ grep -q 'pan: out of memory (compact store full' "$tmp/cs-full/out" 2>/dev/null &&
  ! clean cs-full; } || ok_cs=0
if [ $ok_cs = 1 ]; then
  echo "ok $n - the compact store (model/pan-hc -DCSTORE) finds the exhaustive search's states and the mutant's cycle with the same trail, and ends as out of memory when full"
else
  echo "not ok $n - the compact store: $cs_st states, $cs_tr transitions against the exhaustive $ex_vis and $ex_tr, or the mutant's cycle or trail differs, or a full store did not stop the search"
  for x in cs-live cs-mutant cs-full; do sed 's/^/# /' "$tmp/$x.build" 2>/dev/null | head -n 5; fail_diag $x; done
fi

# The canonical form (model/pan-hc -DCANON, model/cstore.c), which the
# largest liveness searches use: a search that stores each state by its
# form (the slots nobody refers to taken out, the rest and the counters
# renumbered in their order) must store exactly as many states as a plain
# search of the same model has forms (-DCANON_COUNT counts them beside
# it), and fewer than that plain search stores, with no error in either;
# it must still find the admission mutant's cycle, and the wake-up
# mutant's broken assertion (a liveness search checks the asserts too).
n=$((n + 1))
cn_run() { # cn_run NAME "SPIN FLAGS" CC-FLAG: build with model/pan-hc and run
  local d=$tmp/$1
  # shellcheck disable=SC2086
  if CC=$cc PAN_OPT=-O0 "$srcdir/model/pan-hc" "$d" $2 -- -DNFAIR=3 -DCSTORE=64 $3 \
    >"$d.build" 2>&1; then
    (cd "$d" && timeout "$limit" ./pan -a -f -m200000 -w10 >out 2>&1)
  fi
}
cn_run cn-count "-DMAXF=$fm -DLIVE" -DCANON_COUNT=64 &
cn_run cn-live "-DMAXF=$fm -DLIVE" -DCANON
wait
cn_run cn-mutant "$adm" -DCANON &
cn_run cn-wake "-DMAXF=1 -DLIVE -DMUTANT_NO_WAKE_CHECK" -DCANON
wait
cn_plain=$(stored cn-count) cn_st=$(stored cn-live)
cn_forms=$(grep -hE 'pan: -DCANON_COUNT: [0-9]+ canonical forms' "$tmp/cn-count/out" 2>/dev/null | awk '{print $3}' | head -n 1)
echo "# canonical form: mutex liveness ($fm fault(s)) $cn_st states stored by their form; the plain search $cn_plain states, $cn_forms forms"
ok_cn=1
{ clean cn-count && clean cn-live && [ -n "$cn_st" ] && [ "$cn_st" = "$cn_forms" ] &&
  [ -n "$cn_plain" ] && [ "$cn_st" -lt "$cn_plain" ]; } || ok_cn=0
{ grep -q 'acceptance cycle' "$tmp/cn-mutant/out" 2>/dev/null &&
  grep -q 'errors: [1-9]' "$tmp/cn-mutant/out"; } || ok_cn=0
caught cn-wake || ok_cn=0
if [ $ok_cn = 1 ]; then
  echo "ok $n - the canonical form (model/pan-hc -DCANON) stores exactly the forms of the plain search's states, fewer than it stores, and finds the admission mutant's cycle and the wake-up mutant's broken assertion"
else
  echo "not ok $n - the canonical form: $cn_st states stored by their form against $cn_forms forms of the plain search's $cn_plain states, or a mutant not caught"
  for x in cn-count cn-live cn-mutant cn-wake; do sed 's/^/# /' "$tmp/$x.build" 2>/dev/null | head -n 5; fail_diag $x; done
fi
