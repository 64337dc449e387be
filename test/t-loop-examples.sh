#!/usr/bin/env bash
# The event-loop examples against a real server: examples/loop-epoll,
# loop-uv and loop-event (the last two only when configure found libuv and
# libevent; else their checks are skipped) run a session in dispatch mode
# from one loop thread, fed by zkr_session_fd() and zkr_session_dispatch():
# each makes its N acquisitions of PATH/lock one after the other, in order
# and with growing tokens, leads PATH/leader, and exits 0 (an example exits
# 1 if any callback runs off its loop thread). Then two loop-epoll at once
# on one path: both finish, their holds never overlap, and the tokens grow
# from one hold to the next whichever process holds. Runs under test/with-zk.
# No timing assertions: every step waits for a condition.
set -u
TESTLIB_NEEDS=""
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
ex="$builddir/examples"
[ -x "$ex/loop-epoll" ] || skip "examples/loop-epoll not built"
zkt_start
root="/zkr-test/t-loop-examples-$$"
echo "1..8"

# start NAME PATH N OUT: run examples/NAME in the background, its output in
# $tmp/OUT and $tmp/OUT.err; sets $last to its pid
start() {
  "$ex/$1" "$hosts" "$2" "$3" >"$tmp/$4" 2>"$tmp/$4.err" &
  last=$!
  pids+=($last)
}
# wait_exit PID: adds its exit status to $st once it ends (within 120 s;
# 124 if not)
wait_exit() {
  if wait_for 120 pid_gone "$1"; then wait "$1"; st="$st $?"; else st="$st 124"; fi
}
# holds N OUT...: each OUT is a run that made N acquisitions, each
# "acquired K token T at US" followed by its "releasing K at US", K = 1..N,
# a "leader yes" and the last line "done: N acquisitions, leader yes", and
# nothing on stderr; over all of them, taken in time order, no hold begins
# before the one before it ends and tokens grow. Prints the count of
# hand-overs (one process's hold followed by another's).
holds() {
  "$py" - "$@" <<'PY'
import re, sys
n, spans, bad = int(sys.argv[1]), [], []
for f in sys.argv[2:]:
    lines = open(f).read().splitlines()
    err = open(f + ".err").read()
    acq = [l for l in lines if l.startswith("acquired ")]
    rel = [l for l in lines if l.startswith("releasing ")]
    if err:
        bad.append("%s: stderr: %s" % (f, err.strip()))
    if not lines or lines[-1] != "done: %d acquisitions, leader yes" % n:
        bad.append("%s: no done line" % f)
    if "leader yes" not in lines:
        bad.append("%s: never told it leads" % f)
    if len(acq) != n or len(rel) != n:
        bad.append("%s: %d acquired, %d releasing" % (f, len(acq), len(rel)))
    for k, (a, r) in enumerate(zip(acq, rel), 1):
        ma = re.match(r"acquired (\d+) token (\d+) at (\d+)$", a)
        mr = re.match(r"releasing (\d+) at (\d+)$", r)
        if not ma or not mr or int(ma[1]) != k or int(mr[1]) != k:
            bad.append("%s: hold %d: %r %r" % (f, k, a, r))
            continue
        spans.append((int(ma[3]), int(mr[2]), int(ma[2]), f))
spans.sort()
for p, q in zip(spans, spans[1:]):
    if q[0] < p[1] or q[2] <= p[2]:
        bad.append("hold %s overlaps or follows %s" % (q, p))
print("# %d holds, %d hand-overs%s" % (len(spans),
      sum(p[3] != q[3] for p, q in zip(spans, spans[1:])),
      "".join("\n# " + b for b in bad)))
sys.exit(1 if bad else 0)
PY
}

# --- each example alone: 5 acquisitions and the leadership ---
for name in loop-epoll loop-uv loop-event; do
  if [ ! -x "$ex/$name" ]; then
    why="examples/$name not built (configure found no lib${name#loop-})"
    for d in "exits 0: acquisitions done, leading, callbacks on its thread" \
      "5 holds in order, each released before the next, tokens growing"; do
      if [ "${ZKR_TEST_NO_SKIP:-0}" = 1 ]; then
        ok 1 "$name: $d (would skip, but ZKR_TEST_NO_SKIP=1: $why)"
      else
        ok 0 "$name: $d" "SKIP $why"
      fi
    done
    continue
  fi
  start "$name" "$root/$name" 5 "$name"
  st=""
  wait_exit "$last"
  [ "$st" = " 0" ] && grep -qx "done: 5 acquisitions, leader yes" "$tmp/$name"
  ok $? "$name: exits 0: acquisitions done, leading, callbacks on its thread (exit:$st)"
  sed 's/^/# /' "$tmp/$name.err"
  holds 5 "$tmp/$name"
  ok $? "$name: 5 holds in order, each released before the next, tokens growing"
done

# --- two loop-epoll at once on one path ---
start loop-epoll "$root/two" 20 two.1
p1=$last
start loop-epoll "$root/two" 20 two.2
p2=$last
st=""
wait_exit "$p1"
wait_exit "$p2"
[ "$st" = " 0 0" ]
ok $? "two loop-epoll at once on one path both finish (exit:$st)"
cat "$tmp"/two.*.err | sed 's/^/# /'
holds 20 "$tmp/two.1" "$tmp/two.2"
ok $? "their 40 holds never overlap, and the tokens grow from one hold to the next"
