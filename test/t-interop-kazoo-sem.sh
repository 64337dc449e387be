#!/usr/bin/env bash
# zkr's semaphore (Curator's InterProcessSemaphoreV2 layout) beside kazoo
# 2.8's Semaphore (Debian's python3-kazoo), against a real standalone
# server. kazoo keeps its leases right under PATH (uuid-hex names, no
# sequence), its limit in PATH's data and its mutex at the sibling
# PATH-__lock__; the two layouts cannot share a path. So zkr, on a path
# that holds kazoo's semaphore, refuses with ZKR_EFOREIGN and changes
# nothing: no node created, kazoo's leases and data intact. Also measured,
# the other way round: kazoo, on a path that holds zkr's layout under a
# PATH with empty data (as Curator makes it), counts zkr's locks/ and
# leases/ containers as two leases of its own and never sees zkr's lease
# nodes, so the two exclude each other only by accident. zkr makes its
# parents as Curator does, with empty data (with null data, as zkr once
# did, kazoo 2.8's acquire raised AttributeError: it decodes the data
# without checking for None), so on a PATH that zkr made kazoo behaves as
# on Curator's: it takes a lease beside zkr's.
# Runs under test/with-zk.
set -u
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
semworker="$builddir/test/semworker"
[ -x "$semworker" ] || skip "test/semworker not built"
zkt_start
root="/zkr-test/t-interop-kazoo-sem-$$"
echo "1..13"

# ks MAX PATH TIMEOUT [HOLD-FILE]: take a lease of kazoo's Semaphore
# (max_leases MAX) within TIMEOUT seconds; print "HELD <lease node>", keep
# it until HOLD-FILE exists (or release at once), exit 0; exit 1 if it
# timed out (kazoo raises LockTimeout: "RAISED LockTimeout", exit 2).
# ks mkpath PATH: make PATH as kazoo does (ensure_path: empty data).
# An exception in acquire: print "RAISED <type>" and exit 2.
# ks snap PATH: PATH's data, its children, and those of PATH-__lock__,
# PATH/locks and PATH/leases (one line each; "-" for a missing node).
cat >"$tmp/ks.py" <<'EOF'
import logging, os, sys, time
logging.disable(logging.CRITICAL)
from kazoo.client import KazooClient
hosts, what, path = sys.argv[1:4]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=10)
if what == "snap":
    def kids(p):
        return ",".join(sorted(zk.get_children(p))) if zk.exists(p) else "-"
    print("data=" + ((zk.get(path)[0] or b"").decode() if zk.exists(path) else "-"))
    print("children=" + kids(path))
    print("lock=" + kids(path + "-__lock__"))
    print("locks=" + kids(path + "/locks"))
    print("leases=" + kids(path + "/leases"))
    zk.stop()
    sys.exit(0)
if what == "mkpath":
    zk.ensure_path(path)
    zk.stop()
    sys.exit(0)
max_leases, timeout = int(what), float(sys.argv[4])
hold = sys.argv[5] if len(sys.argv) > 5 else None
sem = zk.Semaphore(path, "kazoo-holder", max_leases=max_leases)
try:
    got = sem.acquire(timeout=timeout)
except Exception as e:
    print("RAISED", type(e).__name__, flush=True)
    zk.stop()
    sys.exit(2)
if not got:
    zk.stop()
    sys.exit(1)
print("HELD", sem.create_path, flush=True)
while hold and not os.path.exists(hold):
    time.sleep(0.02)
sem.release()
zk.stop()
sys.exit(0)
EOF
ks() { "$py" "$tmp/ks.py" "$hosts" "$@"; }
sw() { "$semworker" "$hosts" "$@"; }

# --- kazoo's Semaphore holds a lease of PATH: zkr refuses, changes nothing ---
P=$root/a
ks 2 "$P" 10 "$tmp/a.go" >"$tmp/a.out" 2>&1 &
a=$!; pids+=($a)
wait_for 20 grep -q '^HELD' "$tmp/a.out"
ok $? "kazoo's Semaphore (max_leases 2) holds a lease of $P"
lease=$(awk '/^HELD/ {print $2}' "$tmp/a.out")
ks snap "$P" >"$tmp/before"
diag "kazoo's layout:"
while read -r l; do diag "  $l"; done <"$tmp/before"
grep -qx 'data=2' "$tmp/before" && grep -qx "children=${lease##*/}" "$tmp/before"
ok $? "its limit is PATH's data and its lease is a child of PATH"
out=$(sw "$P" 2 1 5000 2>&1)
st=$?
[ $st -eq 1 ] && [ "$out" = "ERR ZKR_EFOREIGN" ]
ok $? "zkr's acquisition on the same path fails with ZKR_EFOREIGN (exit $st: $out)"
out=$(sw "$P" 2 1 0 2>&1)
[ "$out" = "ERR ZKR_EFOREIGN" ]
ok $? "so does a try-once ($out)"
ks snap "$P" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after"
ok $? "nothing changed: no locks/ or leases/ node, kazoo's data and lease intact"
ks 2 "$P" 5 >"$tmp/a2.out" 2>&1
ok $? "kazoo's second lease of 2 is still free to kazoo"
touch "$tmp/a.go"
wait $a
ok $? "kazoo releases its lease"
out=$(sw "$P" 2 1 0 2>&1)
[ "$out" = "ERR ZKR_EFOREIGN" ]
ok $? "with no kazoo lease left, the number in PATH's data still marks kazoo's layout ($out)"

# --- zkr holds both leases of 2 on PATH: kazoo does not see them ---
P=$root/b
ks mkpath "$P" # empty data, as Curator's container parents have
sw "$P" 2 2 5000 "$tmp/b.go" >"$tmp/b.out" 2>&1 &
b=$!; pids+=($b)
wait_for 20 grep -q '^HELD' "$tmp/b.out"
ok $? "zkr holds both leases of 2 of $P"
ks snap "$P" >"$tmp/b.snap"
diag "zkr's layout:"
while read -r l; do diag "  $l"; done <"$tmp/b.snap"
ks 1 "$P" 1 >"$tmp/k1.out" 2>&1
k1=$? # kazoo 2.8 raises LockTimeout rather than return False
ks 3 "$P" 5 >"$tmp/k3.out" 2>&1
k3=$?
grep -q '^RAISED LockTimeout' "$tmp/k1.out" && [ $k3 -eq 0 ]
ok $? "kazoo counts zkr's locks/ and leases/ as its own leases: max_leases 1 times out ($(cat "$tmp/k1.out")), max_leases 3 gets a 3rd lease beside zkr's 2 of 2 (exit $k3)"
touch "$tmp/b.go"
wait $b
ok $? "zkr releases"

# --- a PATH made by zkr (empty data, as Curator's): kazoo reads it ---
P=$root/c
sw "$P" 2 1 5000 "$tmp/c.go" >"$tmp/c.out" 2>&1 &
c=$!; pids+=($c)
wait_for 20 grep -q '^HELD' "$tmp/c.out"
ks 3 "$P" 5 >"$tmp/kc.out" 2>&1
kc=$?
[ $kc -eq 0 ] && ! grep -q '^RAISED' "$tmp/kc.out"
ok $? "kazoo's acquire on a path zkr made does not fail on its data: it takes a lease beside zkr's, counting locks/ and leases/ as two of its own (exit $kc: $(head -c 200 "$tmp/kc.out"))"
touch "$tmp/c.go"
wait $c
[ "$(children "$root/a" "$root/a-__lock__" "$root/b/leases" "$root/b/locks" "$root/b-__lock__" "$root/c/leases" "$root/c/locks" "$root/c-__lock__")" = 0 ]
ok $? "no lease or lock node left"
