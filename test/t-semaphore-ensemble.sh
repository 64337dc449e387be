#!/usr/bin/env bash
# The counting semaphore on a three-server ensemble while the leader is
# killed (and restarted) in the middle of the run: P lockworker processes
# x K acquisitions of one lease each, limit N, all announcing themselves
# in one shared resource (lockworker --recipe semaphore --resource). Never
# more than N inside, by the workers' own count and by the log's ACQ/REL
# intervals; N inside at once is reached; every process finishes or
# reports an error; no node is left under leases/ or locks/. Runs under
# test/with-zk. (Not t-mutex-ensemble.sh with RECIPE=semaphore: its
# checks are the read-write lock's, and it kills a follower as well.)
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zkt_start --servers 3
echo "1..8"
P=6 K=20 N=3
path="/zkr-test/t-semaphore-ensemble-$$/sem"
log=$tmp/sem.log
: >"$log"
acqs() { grep -c '^ACQ' "$log"; }
ps=()
for i in $(seq 1 $P); do
  "$worker" --servers "$hosts" --path "$path" --recipe semaphore --permits $N \
    --iterations $K --hold-ms 30 --session-ms 8000 --timeout-ms 20000 \
    --log "$log" --resource "$tmp/sem.res" >"$tmp/w$i.out" 2>>"$tmp/err" &
  ps+=($!); pids+=($!)
done
# the leader dies once about a third of the acquisitions are done
third() { [ "$(acqs)" -ge $((P * K / 3)) ]; }
wait_for 60 third
before=$(acqs)
L=$("$ZKR_SANDBOX" leader)
"$ZKR_SANDBOX" kill "$L" >/dev/null
diag "killed leader $L after $before acquisitions"
sleep 3 # the outage, not a wait for anything
"$ZKR_SANDBOX" start-server "$L" >/dev/null
fail=0 overlap=0 errs=0 codes=
for p in "${ps[@]}"; do
  wait "$p"; st=$?
  codes="$codes $st"
  case $st in
    0) ;;
    1 | 75) errs=$((errs + 1)) ;; # an error or a lost lease, reported
    3) overlap=1 ;;
    *) fail=1 ;;
  esac
done
total=$(acqs)
diag "lease state changes told: $(awk '$1 == "STATE" { n[$3]++ } END { for (s in n) printf "%s %d ", s, n[s] }' "$log")"
[ $fail -eq 0 ] && [ $overlap -eq 0 ]
ok $? "every process finished its $K acquisitions or reported an error (exits:$codes)"
if [ $errs -gt 0 ]; then sed 's/^/# /' "$tmp/err" | sort | uniq -c | head -5; fi
[ "$total" -gt "$before" ] && { [ $errs -gt 0 ] || [ "$total" = $((P * K)) ]; }
ok $? "$total acquisitions, $((total - before)) of them after the leader was killed"
# the workers' own count: no ACQ saw more than N inside, and the most any
# of them saw (its MAX line) is N
maxacq=$(awk '$1 == "ACQ" && $7 > m { m = $7 } END { print m + 0 }' "$log")
maxrep=$(awk '$1 == "MAX" && $3 > m { m = $3 } END { print m + 0 }' "$log")
[ "$maxacq" = $N ] && [ "$maxrep" = $N ] && [ "$(grep -c '^MAX' "$log")" = $P ]
ok $? "the shared count of holders inside reached $N and never more (ACQ lines: $maxacq; the workers' MAX: $maxrep)"
# the log's view: each holder is inside from its ACQ line to its REL line
# (both written while it holds), so these intervals never overlap more
# than N deep
deep=$(awk '$1 == "ACQ" { if (h[$2]) { bad = 1 } h[$2] = 1; n++; if (n > m) m = n }
            $1 == "REL" { if (!h[$2]) bad = 1; delete h[$2]; n-- }
            END { print (bad ? "bad" : m + 0) }' "$log")
[ "$deep" != bad ] && [ "$deep" -le $N ] && [ "$deep" -ge 1 ]
ok $? "by the log's ACQ/REL lines at most $N hold at once ($deep)"
"$ZKR_SANDBOX" wait-ready >/dev/null 2>&1
ok $? "the ensemble serves again"
left=$(children "$path/leases" "$path/locks")
[ "$left" = 0 ]
ok $? "no node left under leases/ or locks/ ($left)"
"$worker" --servers "$hosts" --path "$path" --recipe semaphore --permits $N \
  --timeout-ms 20000 >/dev/null 2>>"$tmp/err"
ok $? "the semaphore is usable afterwards"
st=$("$ZKR_SANDBOX" status | grep -c running)
[ "$st" = 3 ]
ok $? "all three servers running at the end"
