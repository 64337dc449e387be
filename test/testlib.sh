# Shared by the bash tests that drive test/lockworker (sourced, not run).
# Sets: worker, hosts (after zkt_start), tmp (a private directory), pids
# (processes killed on exit). Provides: skip, ok, wait_for, children.
builddir=${abs_top_builddir:-.}
worker="$builddir/test/lockworker"
skip() {
  if [ "${ZKR_TEST_NO_SKIP:-0}" = 1 ]; then echo "Bail out! $*"; exit 1; fi
  echo "1..0 # SKIP $*"; exit 0
}
[ -x "$worker" ] || skip "test/lockworker not built"
[ -n "${ZKR_SANDBOX:-}" ] || skip "not run under test/with-zk"
[ -r /usr/share/java/zookeeper.jar ] || skip "Debian's zookeeper is not installed"
/usr/bin/python3 -c 'import kazoo' 2>/dev/null || skip "python3-kazoo is not installed"
tmp=$(mktemp -d)
pids=()
testlib_cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap testlib_cleanup EXIT
# zkt_start [--servers N]: start the sandbox, set $hosts
zkt_start() {
  hosts=$("$ZKR_SANDBOX" start "$@") || { echo "Bail out! sandbox did not start"; exit 1; }
}
n=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
wait_for() { # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.05; done
  return 1
}
# children PATH...: total number of children of the given paths, once none
# is left or after 20 s (nodes of sessions that died go at their expiry)
children() {
  /usr/bin/python3 - "$hosts" "$@" <<'PY' 2>/dev/null
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
deadline = time.time() + 20
while True:
    n = sum(len(zk.get_children(p)) for p in sys.argv[2:] if zk.exists(p))
    if n == 0 or time.time() > deadline:
        break
    time.sleep(0.2)
print(n); zk.stop()
PY
}
