#!/usr/bin/env bash
# The multi-lock on a three-server ensemble, through a leader kill: 12
# processes each take 2 or 3 of 5 paths as one set, drawn in random
# orders, 50 rounds each, and use every path's key of a fenced store
# (test/fencestore.py) while holding: every round completes (no deadlock,
# whatever the orders), never two holders of one path (the store counts
# who is inside each key), no lost update (each accepted write is the
# value read plus one), no node left. Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
mw="$builddir/test/multiworker"
[ -x "$mw" ] || skip "test/multiworker not built"
zkt_start --servers 3
echo "1..6"
root="/zkr-test/t-multilock-ensemble-$$"
N=12 ROUNDS=50
sock="$tmp/store.sock"
/usr/bin/python3 "$here/fencestore.py" "$sock" "$tmp/store.log" &
pids+=($!)
wait_for 10 test -S "$sock"
ok $? "the fenced store runs"
ps=()
for i in $(seq 1 $N); do
  "$mw" --servers "$hosts" --root "$root" --store "$sock" --id "w$i" \
    --paths 5 --rounds $ROUNDS --seed "$i$$" >>"$tmp/done" 2>>"$tmp/w.err" &
  ps+=($!); pids+=($!)
done
sleep 2
L=$("$ZKR_SANDBOX" leader)
"$ZKR_SANDBOX" kill "$L" >/dev/null
echo "# killed leader $L after 2 s ($(grep -c '^[0-9]* W .* ok' "$tmp/store.log") writes so far)"
sleep 3
"$ZKR_SANDBOX" start-server "$L" >/dev/null
bad=0
for p in "${ps[@]}"; do
  wait "$p" || bad=$((bad + 1))
done
[ $bad -eq 0 ] && [ "$(grep -c '^DONE .* '$ROUNDS' 0 ' "$tmp/done")" -eq $N ]
ok $? "$N processes, $ROUNDS rounds each: every round completed, no overlap seen ($bad failed; retries: $(awk '{s += $5} END {print s + 0}' "$tmp/done"))"
[ $bad -eq 0 ] || sed 's/^/# /' "$tmp/w.err" | sort | uniq -c | sort -rn | head -5
awk '$2 == "E" && $6 > 1 { bad = 1 } END { exit bad }' "$tmp/store.log"
ok $? "the store never had two holders inside one key"
awk '$2 == "W" && $7 == "ok" && $6 != $8 + 1 { bad = 1 } END { exit bad }' "$tmp/store.log"
ok $? "no lost update: every accepted write is the value read plus one ($(grep -c '^[0-9]* W .* ok' "$tmp/store.log") writes, $(grep -c '^[0-9]* W .* stale' "$tmp/store.log") refused as stale)"
"$ZKR_SANDBOX" wait-ready >/dev/null 2>&1
left=0
for i in 0 1 2 3 4; do
  left=$((left + $(children "$root/p$i")))
done
[ $left -eq 0 ]
ok $? "no node left under the five paths ($left)"
st=$("$ZKR_SANDBOX" status | grep -c running)
[ "$st" = 3 ]
ok $? "all three servers running at the end"
