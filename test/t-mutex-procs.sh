#!/usr/bin/env bash
# Twenty contending processes on one lock: mutual exclusion (a shared
# resource that detects overlap, and the log's strict ACQ/REL alternation)
# and FIFO (acquisitions in the order of node creation: increasing
# sequence numbers). Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start
N=20 ITER=5
path="/zkr-test/t-mutex-procs-$$/lock"
echo "1..8"
for i in $(seq 1 $N); do
  "$worker" --servers "$hosts" --path "$path" --iterations $ITER --hold-ms 3 \
    --log "$tmp/log" --resource "$tmp/resource" --id "w$i" \
    2>>"$tmp/err" &
  pids+=($!)
done
fail=0 overlap=0
for p in "${pids[@]}"; do
  wait "$p"; st=$?
  [ $st -eq 3 ] && overlap=1
  [ $st -ne 0 ] && fail=1
done
pids=()
[ $fail -eq 0 ] && echo "ok 1 - $N processes x $ITER acquisitions completed" ||
  { echo "not ok 1 - some workers failed"; sed 's/^/# /' "$tmp/err"; }
[ $overlap -eq 0 ] && echo "ok 2 - the resource never saw two holders" ||
  echo "not ok 2 - two holders at once"
acq=$(grep -c '^ACQ' "$tmp/log")
[ "$acq" -eq $((N * ITER)) ] && echo "ok 3 - $acq acquisitions logged" ||
  echo "not ok 3 - $acq acquisitions logged, want $((N * ITER))"
# Strict alternation: ACQ by p, REL by p, ACQ by q, ...
if awk 'BEGIN{want="ACQ"} {if ($1!=want) {print "line " NR ": " $0; bad=1; exit 1}
        if ($1=="ACQ") {pid=$2; want="REL"} else {if ($2!=pid) {bad=1; exit 1}; want="ACQ"}}
        END{exit bad}' "$tmp/log"; then
  echo "ok 4 - acquisitions and releases strictly alternate"
else
  echo "not ok 4 - ACQ/REL interleaved"
fi
# FIFO: every acquisition has a larger sequence number than the one before
if awk '$1=="ACQ" {if (NR>1 && $3<=last) {print "# seq " $3 " after " last; bad=1}; last=$3} END{exit bad}' "$tmp/log"; then
  echo "ok 5 - granted in the order the nodes were created (FIFO)"
else
  echo "not ok 5 - not FIFO"
fi
left=$(children "$path")
[ "$left" = 0 ] && echo "ok 6 - no node left under the lock" ||
  echo "not ok 6 - nodes left: '$left'"
# the worker's recipe switch: mutex, the default; anything else refused
"$worker" --servers "$hosts" --path "$path-r" --recipe mutex --iterations 1 2>>"$tmp/err"
[ $? -eq 0 ] && echo "ok 7 - lockworker --recipe mutex works" ||
  echo "not ok 7 - lockworker --recipe mutex"
"$worker" --servers "$hosts" --path "$path-r" --recipe bogus 2>"$tmp/rerr"
st=$?
[ $st -eq 64 ] && grep -q "unknown recipe 'bogus'" "$tmp/rerr" &&
  echo "ok 8 - lockworker --recipe bogus: exit 64 with a message" ||
  echo "not ok 8 - lockworker --recipe bogus (got $st)"
