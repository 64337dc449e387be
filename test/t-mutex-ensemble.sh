#!/usr/bin/env bash
# On a three-server ensemble, 10 processes contend for one lock while the
# leader is killed, and later a follower: no two holders ever, every
# acquisition completes or reports an error, no node left at the end.
# With RECIPE=mixed (t-rwlock-ensemble.sh), the same with the read-write
# lock, each operation a read with probability 0.8: readers may share, a
# writer never overlaps anyone. Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start --servers 3
echo "1..8"
RECIPE=${RECIPE:-mutex}
path="/zkr-test/t-$RECIPE-ensemble-$$/lock"
N=10 ITER=60
run_round() { # run_round NAME FAULT-COMMAND
  local name=$1; shift
  : > "$tmp/$name.log"
  local ps=()
  for i in $(seq 1 $N); do
    "$worker" --servers "$hosts" --path "$path" --iterations $ITER --hold-ms 10 \
      --session-ms 8000 --timeout-ms 20000 --log "$tmp/$name.log" --recipe "$RECIPE" \
      --resource "$tmp/$name.res" 2>>"$tmp/$name.err" &
    ps+=($!); pids+=($!)
  done
  sleep 1.5
  local before
  before=$(grep -c '^ACQ' "$tmp/$name.log")
  "$@"
  local fail=0 overlap=0 errs=0
  for p in "${ps[@]}"; do
    wait "$p"; st=$?
    [ $st -eq 3 ] && overlap=1
    [ $st -ne 0 ] && [ $st -ne 1 ] && [ $st -ne 3 ] && fail=1
    [ $st -eq 1 ] && errs=$((errs + 1))
  done
  local acq
  acq=$(grep -c '^ACQ' "$tmp/$name.log")
  [ $overlap -eq 0 ] &&
    awk '$1 == "ACQ" { if (w != "" || ($6 != "R" && nr > 0)) bad = 1
                       if ($6 == "R") { nr++; r[$2] = 1 } else w = $2 }
         $1 == "REL" { if ($6 == "R") { if (!r[$2]) bad = 1; delete r[$2]; nr-- }
                       else { if (w != $2) bad = 1; w = "" } }
         END { exit bad }' "$tmp/$name.log"
  ok $? "$name: never a writer beside another holder ($acq acquisitions, $before of them before the fault; at most $(awk '$1 == "ACQ" && $7 > m {m = $7} END {print m + 0}' "$tmp/$name.log") readers at once)"
  [ $fail -eq 0 ]
  ok $? "$name: every process finished its acquisitions or reported an error ($errs reported one)"
  if [ $errs -gt 0 ]; then sed 's/^/# /' "$tmp/$name.err" | sort | uniq -c | head -5; fi
}
kill_leader() {
  L=$("$ZKR_SANDBOX" leader)
  "$ZKR_SANDBOX" kill "$L" >/dev/null
  echo "# killed leader $L"
  sleep 3
  "$ZKR_SANDBOX" start-server "$L" >/dev/null
}
kill_follower() {
  L=$("$ZKR_SANDBOX" leader)
  F=1; [ "$L" = 1 ] && F=2
  "$ZKR_SANDBOX" kill "$F" >/dev/null
  echo "# killed follower $F"
  sleep 3
  "$ZKR_SANDBOX" start-server "$F" >/dev/null
}
run_round leader kill_leader
run_round follower kill_follower
"$ZKR_SANDBOX" wait-ready >/dev/null 2>&1
ok $? "the ensemble serves again"
left=$(children "$path")
[ "$left" = 0 ]
ok $? "no node left under the lock ($left)"
/usr/bin/python3 - "$hosts" "$path" <<'PY' >/dev/null 2>&1
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
zk.create(sys.argv[2] + "/probe-x", b"")
zk.delete(sys.argv[2] + "/probe-x")
zk.stop()
PY
ok $? "the lock path is usable afterwards"
st=$("$ZKR_SANDBOX" status | grep -c running)
[ "$st" = 3 ]
ok $? "all three servers running at the end"
