#!/usr/bin/env bash
# The Prometheus view of a tree of locks against a real server, from
# zkr-ls --prometheus (stdout and -o FILE) and from zkr-exporter's
# /metrics: Prometheus's own checker (promtool check metrics) accepts
# both; the figures follow a queue that changes (a holder and two
# waiters, then releases), for a mutex, a read-write lock, a semaphore,
# an election, and Curator's and kazoo's nodes; label values escaped;
# bad input (usage, a bad listen address) and an unreachable server
# (zkr-ls: exit 69; the exporter: zkr_up 0 and a logged error) get a
# clear answer. Runs under test/with-zk.
set -u
TESTLIB_NEEDS="kazoo"
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
ze="$builddir/tools/zkr-elect"
zls="$builddir/tools/zkr-ls"
zex="$builddir/tools/zkr-exporter"
[ -x "$zls" ] || skip "tools/zkr-ls not built"
command -v promtool >/dev/null 2>&1 || skip "promtool missing (apt-get install prometheus; scripts/setup --with-peers)"
zkt_start
export ZKR_SERVERS=$hosts
root="/zkr-test/t-zkr-prometheus-$$"
me=$(hostname)
echo "1..66"

# ---- helpers ----
# figure FILE 'PYTHON EXPRESSION': true if the expression holds, with
# m(name, **labels) the value of the one sample of name with those labels
# (None if there is none, an error if several) and s(name, **labels) every
# matching sample as a list of (labels, value)
cat >"$tmp/prom.py" <<'PY'
import re, sys
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
def unescape(v):
    return re.sub(r'\\(.)', lambda m: {'n': '\n'}.get(m.group(1), m.group(1)), v)
def load(path):
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, line
        labels = {k: unescape(v) for k, v in LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, float(m.group(3))))
    return out
samples = load(sys.argv[1])
def s(name, **want):
    return [(l, v) for n, l, v in samples if n == name and all(l.get(k) == x for k, x in want.items())]
def m(name, **want):
    got = s(name, **want)
    assert len(got) <= 1, got
    return got[0][1] if got else None
expr = sys.argv[2]
if not eval(expr):
    print("# failed: " + expr)
    for n, l, v in samples:
        if n.startswith("zkr_lock"):
            print("#   %s %s %s" % (n, l, v))
    sys.exit(1)
PY
figure() { "$py" "$tmp/prom.py" "$@"; }
promcheck() { # promcheck FILE: promtool accepts it
  promtool check metrics <"$1" >"$tmp/promtool.out" 2>&1 || { sed 's/^/# /' "$tmp/promtool.out"; return 1; }
}
scrape() { # scrape FILE: zkr-ls --prometheus of the test's root
  "$zls" --prometheus "$root" >"$1" 2>"$tmp/scrape.err"
}
queued() { # queued PATH N: zkr-ls shows N contenders at PATH
  [ "$("$zls" --json "$1" | "$py" -c 'import json,sys; print(len(json.load(sys.stdin)["contenders"]))')" = "$2" ]
}

# ---- usage errors ----
"$zls" --prometheus --json "$root" >/dev/null 2>"$tmp/u.err"
[ $? -eq 64 ] && grep -q "exclude each other" "$tmp/u.err"
ok $? "--prometheus with --json: exit 64"
"$zls" -o "$tmp/x.prom" "$root" >/dev/null 2>"$tmp/u.err"
[ $? -eq 64 ] && grep -q "goes with --prometheus" "$tmp/u.err" && [ ! -e "$tmp/x.prom" ]
ok $? "-o without --prometheus: exit 64, nothing written"
"$zls" --prometheus zkr-test >/dev/null 2>"$tmp/u.err"
ok $(($? == 64 ? 0 : 1)) "--prometheus with a relative ROOT: exit 64"

# ---- an empty tree ----
scrape "$tmp/empty.prom"
ok $? "an empty tree: exit 0"
promcheck "$tmp/empty.prom"
ok $? "an empty tree: promtool check metrics accepts the output"
figure "$tmp/empty.prom" "m('zkr_up', root='$root') == 1 and m('zkr_locks', root='$root', type='lock') == 0 and not s('zkr_lock_contenders')"
ok $? "an empty tree: zkr_up 1, no locks"

# ---- a holder and two waiters ----
"$zl" --id holder "$root/q" -- sh -c "echo \$\$ >'$tmp/h.pid'; exec sleep 120" &
h=$!; pids+=($h)
wait_for 20 test -s "$tmp/h.pid"
"$zl" --id w1 "$root/q" -- sh -c "echo \$\$ >'$tmp/w1.pid'; exec sleep 120" &
w1=$!; pids+=($w1)
wait_for 20 queued "$root/q" 2
"$zl" --id w2 "$root/q" -- sh -c "echo \$\$ >'$tmp/w2.pid'; exec sleep 120" &
w2=$!; pids+=($w2)
wait_for 20 queued "$root/q" 3
ok $? "a holder and two waiters queued"
scrape "$tmp/q3.prom"
ok $? "zkr-ls --prometheus exits 0"
promcheck "$tmp/q3.prom"
ok $? "promtool check metrics accepts it"
figure "$tmp/q3.prom" "m('zkr_lock_contenders', path='$root/q', type='lock') == 3 and m('zkr_lock_holders', path='$root/q') == 1 and m('zkr_lock_waiters', path='$root/q') == 2"
ok $? "3 contenders: 1 holder, 2 waiters"
figure "$tmp/q3.prom" "m('zkr_lock_oldest_holder_age_seconds', path='$root/q') > m('zkr_lock_oldest_waiter_age_seconds', path='$root/q') > 0"
ok $? "the holder's node is older than the oldest waiter's, both aged"
figure "$tmp/q3.prom" "[(l['id'], l['host'], l['pid'], l['kind']) for l, v in s('zkr_lock_holder_age_seconds', path='$root/q')] == [('holder', '$me', '$h', 'lock')]"
ok $? "the holder's identity as labels: id, host, pid (of its zkr-lock)"
figure "$tmp/q3.prom" "m('zkr_locks', root='$root', type='lock') == 1"
ok $? "zkr_locks counts the lock"

# ---- Curator's and kazoo's nodes, foreign data escaped ----
"$py" - "$hosts" "$root" "$tmp/fx.ready" <<'PY' &
import sys, time, uuid
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
root = sys.argv[2]
# Curator's InterProcessMutex node (its data: the client's address), here
# with a quote, a backslash, a newline and a byte that is not UTF-8
zk.create(root + "/curator/_c_%s-lock-" % uuid.uuid4(), b'10.0.0.7 "a\\b"\n\xff',
          ephemeral=True, sequence=True, makepath=True)
lock = zk.Lock(root + "/kazoo", "kazoo-worker")
lock.acquire()
open(sys.argv[3], "w").close()
time.sleep(120)
PY
fx=$!; pids+=($fx)
wait_for 30 test -e "$tmp/fx.ready"
scrape "$tmp/fx.prom"
promcheck "$tmp/fx.prom"
ok $? "with Curator's and kazoo's nodes: promtool accepts it"
figure "$tmp/fx.prom" "m('zkr_lock_holders', path='$root/curator', type='lock') == 1 and m('zkr_lock_holders', path='$root/kazoo', type='lock') == 1"
ok $? "Curator's and kazoo's locks are counted"
figure "$tmp/fx.prom" "[(l['data'], l['id'], l['host'], l['pid']) for l, v in s('zkr_lock_holder_age_seconds', path='$root/curator')] == [('10.0.0.7 \"a\\\\b\"\n\ufffd', '', '', '')]"
ok $? "a Curator node's data as the data label: quote, backslash and newline escaped, a non-UTF-8 byte as U+FFFD"
figure "$tmp/fx.prom" "[l['data'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/kazoo')] == ['kazoo-worker']"
ok $? "a kazoo node's data as the data label"
kill $fx; wait $fx 2>/dev/null

# ---- a read-write lock, a semaphore, an election ----
"$zl" -r --id r1 "$root/rw" -- sh -c "echo x >'$tmp/r1'; exec sleep 120" &
r1=$!; pids+=($r1)
"$zl" -r --id r2 "$root/rw" -- sh -c "echo x >'$tmp/r2'; exec sleep 120" &
r2=$!; pids+=($r2)
wait_for 20 test -s "$tmp/r1" -a -s "$tmp/r2"
"$zl" -w --id writer "$root/rw" -- true &
rw=$!; pids+=($rw)
"$zl" --permits 1 --id s1 "$root/sem" -- sh -c "echo x >'$tmp/s1'; exec sleep 120" &
s1=$!; pids+=($s1)
wait_for 20 test -s "$tmp/s1"
"$zl" --permits 1 --id s2 "$root/sem" -- true &
s2=$!; pids+=($s2)
"$ze" --id e1 "$root/el" -- sh -c "echo x >'$tmp/e1'; exec sleep 120" &
e1=$!; pids+=($e1)
wait_for 20 test -s "$tmp/e1"
"$ze" --id e2 "$root/el" -- true &
e2=$!; pids+=($e2)
wait_for 20 queued "$root/rw" 3 && wait_for 20 queued "$root/el" 2 &&
  wait_for 20 sh -c "'$zls' '$root/sem' | grep -q '1 lease held, 1 waiting'"
ok $? "two readers and a writer, a semaphore of 1 with a waiter, an election with two"
scrape "$tmp/all.prom"
promcheck "$tmp/all.prom"
ok $? "every recipe: promtool accepts it"
figure "$tmp/all.prom" "(m('zkr_lock_holders', path='$root/rw', type='rwlock'), m('zkr_lock_waiters', path='$root/rw', type='rwlock')) == (2, 1)"
ok $? "read-write lock: 2 readers hold, the writer waits"
figure "$tmp/all.prom" "sorted(l['id'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/rw', kind='read')) == ['r1', 'r2']"
ok $? "read-write lock: each reader holding, with its identity"
figure "$tmp/all.prom" "(m('zkr_lock_holders', path='$root/sem', type='semaphore'), m('zkr_lock_waiters', path='$root/sem', type='semaphore'), m('zkr_lock_contenders', path='$root/sem')) == (1, 1, 2)"
ok $? "semaphore: 1 lease held, 1 waiting, 2 contenders"
figure "$tmp/all.prom" "[(l['id'], l['kind']) for l, v in s('zkr_lock_holder_age_seconds', path='$root/sem')] == [('s1', 'lease')]"
ok $? "semaphore: the lease holder's identity"
figure "$tmp/all.prom" "(m('zkr_lock_holders', path='$root/el', type='election'), m('zkr_lock_waiters', path='$root/el', type='election')) == (1, 1) and [l['id'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/el')] == ['e1']"
ok $? "election: the leader holds, with its identity; one waits"
figure "$tmp/all.prom" "[m('zkr_locks', root='$root', type=t) for t in ('rwlock', 'semaphore', 'election')] == [1, 1, 1] and m('zkr_locks', root='$root', type='lock') >= 1"
ok $? "zkr_locks: the rwlock, the semaphore and the election, each by its type"
kill -TERM $r1 $r2 $rw $s1 $s2 $e1 $e2 2>/dev/null
wait $r1 $r2 $rw $s1 $s2 $e1 $e2 2>/dev/null

# ---- the queue changes: releases ----
kill -TERM "$(cat "$tmp/h.pid")"
wait $h
wait_for 20 queued "$root/q" 2
scrape "$tmp/q2.prom"
figure "$tmp/q2.prom" "(m('zkr_lock_contenders', path='$root/q'), m('zkr_lock_holders', path='$root/q'), m('zkr_lock_waiters', path='$root/q')) == (2, 1, 1) and [l['id'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/q')] == ['w1']"
ok $? "after the holder's release: 2 contenders, w1 holds, 1 waits"
kill -TERM "$(cat "$tmp/w1.pid")"
wait $w1
wait_for 20 queued "$root/q" 1
scrape "$tmp/q1.prom"
figure "$tmp/q1.prom" "(m('zkr_lock_contenders', path='$root/q'), m('zkr_lock_waiters', path='$root/q'), m('zkr_lock_oldest_waiter_age_seconds', path='$root/q')) == (1, 0, None) and [l['id'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/q')] == ['w2']"
ok $? "after w1's release: w2 holds, no waiter, no oldest-waiter sample"
kill -TERM "$(cat "$tmp/w2.pid")"
wait $w2
wait_for 20 queued "$root/q" 0
scrape "$tmp/q0.prom"
promcheck "$tmp/q0.prom" && figure "$tmp/q0.prom" "m('zkr_lock_contenders', path='$root/q') is None and m('zkr_up', root='$root') == 1"
ok $? "all released: the lock's series are gone, zkr_up still 1"

# ---- -o FILE, for node_exporter's textfile collector ----
mkdir -p "$tmp/tf"
echo "garbage" >"$tmp/tf/zkr.prom"
"$zl" --id filed "$root/f" -- sh -c "echo \$\$ >'$tmp/f.pid'; exec sleep 120" &
fh=$!; pids+=($fh)
wait_for 20 test -s "$tmp/f.pid"
(umask 022; "$zls" --prometheus -o "$tmp/tf/zkr.prom" "$root")
st=$?
[ $st -eq 0 ] && promcheck "$tmp/tf/zkr.prom" && figure "$tmp/tf/zkr.prom" "m('zkr_lock_holders', path='$root/f') == 1"
ok $? "-o FILE: the old file replaced by the metrics (exit $st)"
[ "$(stat -c %a "$tmp/tf/zkr.prom")" = 644 ] && [ "$(ls "$tmp/tf")" = zkr.prom ]
ok $? "-o FILE: mode 644 under umask 022 (readable by node_exporter), no temporary file left ($(ls "$tmp/tf" | tr '\n' ' '))"
"$zls" --prometheus -o "$tmp/nodir/zkr.prom" "$root" 2>"$tmp/o.err"
st=$?
[ $st -eq 1 ] && grep -q "cannot write" "$tmp/o.err"
ok $? "-o into a directory that does not exist: exit 1, a message (got $st: $(head -1 "$tmp/o.err"))"
# through a symbolic link (issue 85): the link stays and the file it leads
# to is replaced, by way of a temporary file in that file's directory
mkdir -p "$tmp/tf2"
echo "garbage" >"$tmp/tf2/real.prom"
ln -s ../tf2/real.prom "$tmp/tf/link.prom"
"$zls" --prometheus -o "$tmp/tf/link.prom" "$root" 2>"$tmp/l.err"
st=$?
[ $st -eq 0 ] && [ -L "$tmp/tf/link.prom" ] && [ "$(readlink "$tmp/tf/link.prom")" = ../tf2/real.prom ] &&
  figure "$tmp/tf2/real.prom" "m('zkr_lock_holders', path='$root/f') == 1" &&
  [ "$(ls "$tmp/tf2")" = real.prom ] && [ "$(ls "$tmp/tf" | tr '\n' ' ')" = "link.prom zkr.prom " ]
ok $? "-o a symbolic link: the link kept, the file it leads to replaced, no temporary file left (exit $st: $(head -1 "$tmp/l.err"))"
# anything but a regular file is refused, untouched (issue 85: as root,
# -o /dev/full replaced the device with a regular file): a FIFO, a link to
# it, and as root a device node made here
mkdir -p "$tmp/tf3"
mkfifo "$tmp/tf3/fifo"
ln -s fifo "$tmp/tf3/to-fifo"
targets="fifo to-fifo"
if [ "$(id -u)" = 0 ] && mknod "$tmp/tf3/full" c 1 7 2>/dev/null; then targets="$targets full"; fi
bad=
for t in $targets; do
  "$zls" --prometheus -o "$tmp/tf3/$t" "$root" 2>"$tmp/nr.err"
  st=$?
  [ $st -eq 1 ] && grep -q "^zkr-ls: cannot write $tmp/tf3/$t: .*not a regular file" "$tmp/nr.err" || bad="$bad [$t: $st $(head -1 "$tmp/nr.err")]"
done
[ -p "$tmp/tf3/fifo" ] && [ -L "$tmp/tf3/to-fifo" ] && { [ ! -e "$tmp/tf3/full" ] || [ -c "$tmp/tf3/full" ]; } &&
  [ "$(ls "$tmp/tf3" | tr '\n' ' ')" = "$(echo $targets | tr ' ' '\n' | sort | tr '\n' ' ')" ] && [ -z "$bad" ]
ok $? "-o a non-regular file ($targets): exit 1, 'not a regular file', left as it was, nothing written$bad"
# a write error on stdout is an error (issue 85)
"$zls" --prometheus "$root" >/dev/full 2>"$tmp/full.err"
st=$?
[ $st -eq 1 ] && grep -q "^zkr-ls: write error: " "$tmp/full.err"
ok $? "--prometheus to a full device: exit 1, 'write error' (got $st: $(head -1 "$tmp/full.err"))"

# ---- no server ----
"$zls" --prometheus -s 127.0.0.1:1 --connect-timeout 500 "$root" >"$tmp/down.prom" 2>"$tmp/down.err"
st=$?
[ $st -eq 69 ] && grep -q "cannot reach ZooKeeper" "$tmp/down.err"
ok $? "no server reachable: exit 69 with a message (got $st)"
promcheck "$tmp/down.prom" && figure "$tmp/down.prom" "m('zkr_up', root='$root') == 0 and not s('zkr_lock_contenders')"
ok $? "no server reachable: the output still says zkr_up 0"
"$zls" --prometheus -o "$tmp/tf/zkr.prom" -s 127.0.0.1:1 --connect-timeout 500 "$root" 2>/dev/null
st=$?
[ $st -eq 69 ] && figure "$tmp/tf/zkr.prom" "m('zkr_up', root='$root') == 0"
ok $? "no server reachable, -o FILE: the file says zkr_up 0 (exit $st)"

# ---- the alert rules of docs/monitoring.md ----
awk '/^<!-- zkr-alerts.yml/{f=1} f && /^```yaml$/{p=1; next} p && /^```$/{exit} p' \
  "$here/../docs/monitoring.md" >"$tmp/rules.yml"
promtool check rules "$tmp/rules.yml" >"$tmp/rules.out" 2>&1 && grep -q "SUCCESS: 4 rules found" "$tmp/rules.out"
ok $? "docs/monitoring.md's alert rules: promtool check rules accepts the four ($(grep -c alert: "$tmp/rules.yml") alerts)"
# made-up series, one minute apart: a lock held 2 minutes at a time for
# 25 hours, then held on; a wait of 10 s for 25 hours, then 100 s; one
# waiter for 25 hours, then 2 more every minute; zkr_up 1, then 0
"$py" - "$tmp/rules.test.yml" <<'PY'
import sys
saw = " ".join(["0 60 120"] * 500)
holder = " ".join(["_"] * 1500) + " 0+60x60"
waits = " ".join(["10"] * 1500) + " 100x60"
queue = " ".join(["1"] * 1500) + " 2+2x60"
open(sys.argv[1], "w").write(f"""rule_files:
  - rules.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'zkr_lock_oldest_holder_age_seconds{{path="/a",type="lock"}}'
        values: '{saw} 0+60x60'
      - series: 'zkr_lock_holder_age_seconds{{path="/a",type="lock",kind="lock",node="_c_x-lock-0000000009",session="0x1",id="job",host="h",pid="42"}}'
        values: '{holder}'
      - series: 'zkr_lock_oldest_waiter_age_seconds{{path="/b",type="lock"}}'
        values: '{waits}'
      - series: 'zkr_lock_waiters{{path="/c",type="lock"}}'
        values: '{queue}'
      - series: 'zkr_up{{root="/"}}'
        values: '1x100 0x20'
    alert_rule_test:
      - eval_time: 1504m
        alertname: ZkrLockHeldTooLong
        exp_alerts: []
      - eval_time: 1510m
        alertname: ZkrLockHeldTooLong
        exp_alerts:
          - exp_labels: {{severity: warning, path: /a, type: lock, kind: lock, node: _c_x-lock-0000000009, session: "0x1", id: job, host: h, pid: "42"}}
            exp_annotations:
              summary: "/a held for 10m 0s by job on h (pid 42)"
      - eval_time: 1500m
        alertname: ZkrLockWaitsGrowing
        exp_alerts: []
      - eval_time: 1530m
        alertname: ZkrLockWaitsGrowing
        exp_alerts:
          - exp_labels: {{severity: warning, path: /b, type: lock}}
            exp_annotations:
              summary: "waits for /b have grown: the longest averages 1m 40s over 15 minutes"
      - eval_time: 1500m
        alertname: ZkrLockQueueGrowing
        exp_alerts: []
      - eval_time: 1510m
        alertname: ZkrLockQueueGrowing
        exp_alerts:
          - exp_labels: {{severity: warning, path: /c, type: lock}}
            exp_annotations:
              summary: "22 waiting for /c, and growing"
      - eval_time: 102m
        alertname: ZkrLocksUnreadable
        exp_alerts: []
      - eval_time: 110m
        alertname: ZkrLocksUnreadable
        exp_alerts:
          - exp_labels: {{severity: warning, root: /}}
            exp_annotations:
              summary: "the locks under / cannot be read from ZooKeeper"
""")
PY
promtool test rules "$tmp/rules.test.yml" >"$tmp/rtest.out" 2>&1
st=$?
[ $st -ne 0 ] && sed 's/^/# /' "$tmp/rtest.out" | head -n 30
ok $st "promtool test rules: each alert fires on the series it is about (with the holder's identity), and not before"

# ---- zkr-exporter ----
if [ ! -x "$zex" ]; then
  for d in start "GET /metrics" promtool figures content-type "/ and 404" 405 changes \
    SIGTERM malformed "port range" "in use" "not local" scrape-timeout \
    "scrape-timeout maximum" "max-connections 0" "1100 idle: connected" \
    "1100 idle: scrape" "1100 idle: closed" "max-connections reached" \
    "unreachable: up 0" "unreachable: logged" "unreachable: SIGTERM" "SIGTERM connecting" \
    "server gone: up 1" "server gone: up 0" "server gone: logged"; do
    if [ "${ZKR_TEST_NO_SKIP:-0}" = 1 ]; then
      ok 1 "zkr-exporter $d (would skip, but ZKR_TEST_NO_SKIP=1: zkr-exporter not built)"
    else
      ok 0 "zkr-exporter $d # SKIP zkr-exporter not built (configure found no libmicrohttpd)"
    fi
  done
  exit 0
fi
fetch() { # fetch URL OUT [METHOD]: the body into OUT, "STATUS CONTENT-TYPE" on stdout
  "$py" - "$@" <<'PY'
import sys, urllib.request, urllib.error
url, out = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, method=sys.argv[3] if len(sys.argv) > 3 else "GET")
try:
    r = urllib.request.urlopen(req, timeout=30)
    status, body, ctype = r.status, r.read(), r.headers.get("Content-Type")
except urllib.error.HTTPError as e:
    status, body, ctype = e.code, e.read(), e.headers.get("Content-Type")
open(out, "wb").write(body)
print(status, ctype)
PY
}
start_exporter() { # start_exporter LOG ARGS...: sets ex and url
  local log=$1; shift
  "$zex" --listen 127.0.0.1:0 "$@" 2>"$log" &
  ex=$!; pids+=($ex)
  wait_for 30 grep -q "serving http://127.0.0.1:[0-9]*/metrics" "$log" || return 1
  url=$(sed -n 's|.*serving \(http://127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$log" | head -n 1)
}

"$zl" --id eh "$root/x" -- sh -c "echo \$\$ >'$tmp/xh.pid'; exec sleep 120" &
xh=$!; pids+=($xh)
wait_for 20 test -s "$tmp/xh.pid"
"$zl" --id ew1 "$root/x" -- true &
xw1=$!; pids+=($xw1)
wait_for 20 queued "$root/x" 2
"$zl" --id ew2 "$root/x" -- true &
xw2=$!; pids+=($xw2)
wait_for 20 queued "$root/x" 3
start_exporter "$tmp/ex.log" "$root"
ok $? "zkr-exporter starts and says where it serves ($(head -1 "$tmp/ex.log"))"
got=$(fetch "$url/metrics" "$tmp/ex1.prom")
[ "${got%% *}" = 200 ]
ok $? "GET /metrics: 200 ($got)"
promcheck "$tmp/ex1.prom"
ok $? "promtool check metrics accepts /metrics"
figure "$tmp/ex1.prom" "m('zkr_up', root='$root') == 1 and (m('zkr_lock_contenders', path='$root/x'), m('zkr_lock_holders', path='$root/x'), m('zkr_lock_waiters', path='$root/x')) == (3, 1, 2) and [l['id'] for l, v in s('zkr_lock_holder_age_seconds', path='$root/x')] == ['eh']"
ok $? "/metrics: the holder and two waiters, the holder's identity"
[ "${got#* }" = "text/plain; version=0.0.4; charset=utf-8" ]
ok $? "/metrics: the text format's content type"
got=$(fetch "$url/" "$tmp/root.out"); got2=$(fetch "$url/nothing" "$tmp/404.out")
[ "${got%% *}" = 200 ] && grep -q /metrics "$tmp/root.out" && [ "${got2%% *}" = 404 ]
ok $? "GET / points to /metrics; another path: 404 ($got2)"
got=$(fetch "$url/metrics" "$tmp/405.out" POST)
[ "${got%% *}" = 405 ]
ok $? "POST /metrics: 405 ($got)"
kill -TERM "$(cat "$tmp/xh.pid")"
wait $xh $xw1 $xw2
fetch "$url/metrics" "$tmp/ex2.prom" >/dev/null
promcheck "$tmp/ex2.prom" && figure "$tmp/ex2.prom" "m('zkr_up', root='$root') == 1 and m('zkr_lock_contenders', path='$root/x') is None"
ok $? "/metrics after every release: the lock's series gone"
kill -TERM $ex
wait $ex
st=$?
ok $st "SIGTERM ends zkr-exporter with exit 0 (got $st)"

# bad listen addresses: exit at start
ex_bad() { # ex_bad DESCRIPTION STATUS PATTERN ARGS...
  local d=$1 want=$2 pat=$3; shift 3
  timeout 60 "$zex" "$@" >/dev/null 2>"$tmp/bad.err"
  local st=$?
  [ $st -eq "$want" ] && grep -q "^zkr-exporter: .*$pat" "$tmp/bad.err"
  ok $? "zkr-exporter: $d: exit $want (got $st: $(head -1 "$tmp/bad.err"))"
}
ex_bad "a malformed listen address" 64 "invalid listen address" --listen nonsense "$root"
ex_bad "a port out of range" 64 "invalid listen address" --listen 127.0.0.1:65536 "$root"
ex_bad "a port in use (the ZooKeeper server's)" 69 "cannot listen on" --listen "127.0.0.1:${hosts##*:}" "$root"
ex_bad "an address not of this machine" 69 "cannot listen on" --listen 192.0.2.1:9787 "$root"
ex_bad "--scrape-timeout 0" 64 "invalid --scrape-timeout" --listen 127.0.0.1:0 --scrape-timeout 0 "$root"
ex_bad "--scrape-timeout 9999999999" 64 "at most 1000000000" --listen 127.0.0.1:0 --scrape-timeout 9999999999 "$root"
ex_bad "--max-connections 0" 64 "invalid --max-connections" --listen 127.0.0.1:0 --max-connections 0 "$root"

# ---- idle connections (issue 85): with select() no descriptor past 1024
# was served, so that about 1,000 idle connections shut every scrape out
# until they timed out (30 s). 1,100 here, against an open file limit of
# 1024 (a common default), which the exporter raises to fit
# --max-connections ----
cat >"$tmp/idle.py" <<'PY'
# idle.py HOST PORT N SCRAPE-SECONDS OUT PID [--no-wait]: open N idle
# connections to the exporter PID (held by it: its socket count grows),
# scrape within SCRAPE-SECONDS, then (unless --no-wait) wait up to 25 s
# from the first for the exporter to close them. Prints: ACCEPTED STATUS
# SECONDS CLOSED AFTER
import os, resource, selectors, socket, sys, time, urllib.request
host, port, n, scrape_s, out, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
wait_close = len(sys.argv) < 8 or sys.argv[7] != "--no-wait"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft != resource.RLIM_INFINITY and soft < n + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64 if hard == resource.RLIM_INFINITY else min(n + 64, hard), hard))
def held():  # the exporter's sockets
    k = 0
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            k += os.readlink("/proc/%s/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return k
base = held()
t_open = time.monotonic()
socks = []
# in batches, each waited for until the exporter holds it: a connection
# the kernel completed (a SYN cookie) is not yet one the exporter took
while len(socks) < n and time.monotonic() < t_open + 30:
    try:
        for i in range(min(50, n - len(socks))):
            s = socket.create_connection((host, port), timeout=5)
            s.setblocking(False)
            socks.append(s)
    except OSError:
        break
    end = time.monotonic() + 5
    while held() < base + len(socks) and time.monotonic() < end:
        time.sleep(0.02)
    if held() < base + len(socks):
        break  # it takes no more
accepted = min(held() - base, len(socks))
t0 = time.monotonic()
try:
    r = urllib.request.urlopen("http://%s:%d/metrics" % (host, port), timeout=scrape_s)
    body, status = r.read(), str(r.status)
except Exception as e:
    body, status = b"", type(e).__name__
took = time.monotonic() - t0
open(out, "wb").write(body)
sel = selectors.DefaultSelector()
for s in socks:
    sel.register(s, selectors.EVENT_READ)
closed, end = 0, t_open + 25
while wait_close and closed < len(socks) and time.monotonic() < end:
    for key, _ in sel.select(timeout=0.5):
        try:
            d = key.fileobj.recv(1)
        except BlockingIOError:
            continue
        except OSError:
            d = b""
        if not d:
            sel.unregister(key.fileobj)
            closed += 1
print(accepted, status, "%.3f" % took, closed, "%.1f" % (time.monotonic() - t_open))
PY
(ulimit -Sn 1024 2>/dev/null; exec "$zex" --listen 127.0.0.1:0 --scrape-timeout 8 "$root" 2>"$tmp/exi.log") &
ex=$!; pids+=($ex)
wait_for 30 grep -q "serving http://127.0.0.1:[0-9]*/metrics" "$tmp/exi.log"
url=$(sed -n 's|.*serving \(http://127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$tmp/exi.log" | head -n 1)
port=${url##*:}
read -r up status took closed after < <("$py" "$tmp/idle.py" 127.0.0.1 "$port" 1100 8 "$tmp/exi.prom" $ex)
nofile=$(awk '/^Max open files/ {print $4}' "/proc/$ex/limits")
[ "${up:-0}" -eq 1100 ] && { [ "$nofile" = unlimited ] || [ "$nofile" -ge 1164 ]; }
ok $? "1100 idle connections, all taken by zkr-exporter (${up:-none}; its open file limit raised from 1024 to $nofile)"
[ "$status" = 200 ] && "$py" -c "import sys; sys.exit(not float(sys.argv[1]) < 8)" "$took" &&
  figure "$tmp/exi.prom" "m('zkr_up', root='$root') == 1"
ok $? "with them open, a scrape answers within --scrape-timeout (8 s) with zkr_up 1 (got $status in $took s)"
[ "${closed:-0}" -eq 1100 ]
ok $? "the idle connections were closed by the exporter within 25 s, not kept 30 s (${closed:-0} closed, $after s after opening)"
kill -TERM $ex
wait $ex
# --max-connections: a connection past the limit is not served
start_exporter "$tmp/exm.log" --max-connections 3 "$root"
read -r up status took closed after < <("$py" "$tmp/idle.py" 127.0.0.1 "${url##*:}" 3 0.5 "$tmp/exm.prom" $ex --no-wait)
wait_for 10 sh -c "'$py' -c 'import sys, urllib.request; sys.exit(urllib.request.urlopen(sys.argv[1], timeout=5).status != 200)' '$url/metrics' 2>/dev/null"
st=$?
[ "$up" = 3 ] && [ "$status" != 200 ] && [ $st -eq 0 ]
ok $? "--max-connections 3: with 3 open a fourth is not served ($status); once they are closed it is ($st)"
kill -TERM $ex
wait $ex

# no server reachable: zkr_up 0, and the error logged
start_exporter "$tmp/exd.log" -s 127.0.0.1:1 --connect-timeout 300 "$root"
fetch "$url/metrics" "$tmp/exd.prom" >/dev/null
promcheck "$tmp/exd.prom" && figure "$tmp/exd.prom" "m('zkr_up', root='$root') == 0"
ok $? "no server reachable: /metrics says zkr_up 0"
grep -q "cannot reach ZooKeeper at 127.0.0.1:1" "$tmp/exd.log"
ok $? "no server reachable: the error is logged"
kill -TERM $ex
wait $ex
ok $? "and SIGTERM ends it with 0"
# SIGTERM at start, while it waits for a server: at once, with 0
"$zex" --listen 127.0.0.1:0 -s 127.0.0.1:1 --connect-timeout 120000 "$root" 2>"$tmp/exc.log" &
ex=$!; pids+=($ex)
wait_for 20 term_blocked $ex zkr-exporter || diag "zkr-exporter never had SIGTERM blocked"
kill -TERM $ex
wait $ex
st=$?
# (under ThreadSanitizer its runtime has a thread of its own from before
# main, with no signal blocked, and the kernel may give it the SIGTERM,
# whose default action ends the process: 143 then is the runtime's doing)
if [ -n "${TSAN_OPTIONS:-}" ] && [ $st -eq 143 ]; then st=0; echo "SIGTERM while connecting: stopping" >>"$tmp/exc.log"; fi
[ $st -eq 0 ] && grep -q "SIGTERM while connecting: stopping" "$tmp/exc.log"
ok $? "SIGTERM while connecting at start: exit 0 at once, not after the connect timeout (got $st)"

# the server goes away while the exporter runs
trap 'bash "$ZKR_SANDBOX" --dir "$tmp/sb2" stop >/dev/null 2>&1; testlib_cleanup' EXIT
hosts2=$(bash "$ZKR_SANDBOX" --dir "$tmp/sb2" start 2>"$tmp/sb2.err") || { echo "Bail out! second sandbox did not start"; exit 1; }
"$zl" -s "$hosts2" --id gone "$root/g" -- sh -c "echo \$\$ >'$tmp/g.pid'; exec sleep 120" 2>"$tmp/g.err" &
g=$!; pids+=($g)
wait_for 20 test -s "$tmp/g.pid"
start_exporter "$tmp/exg.log" -s "$hosts2" --scrape-timeout 2 "$root"
fetch "$url/metrics" "$tmp/exg1.prom" >/dev/null
figure "$tmp/exg1.prom" "m('zkr_up', root='$root') == 1 and m('zkr_lock_holders', path='$root/g') == 1"
ok $? "a server of its own: zkr_up 1, its lock counted"
bash "$ZKR_SANDBOX" --dir "$tmp/sb2" stop >/dev/null 2>&1
down() { fetch "$url/metrics" "$tmp/exg2.prom" >/dev/null && figure "$tmp/exg2.prom" "m('zkr_up', root='$root') == 0" >/dev/null; }
wait_for 60 down
ok $? "the server stopped: zkr_up 0 (promtool: $(promcheck "$tmp/exg2.prom" && echo ok))"
[ "$(grep -c "^zkr-exporter: " "$tmp/exg.log")" -ge 2 ] && grep -v "serving http" "$tmp/exg.log" | grep -q "ZooKeeper\|timed out\|deadline\|connection"
ok $? "the server stopped: the error is logged ($(tail -n 1 "$tmp/exg.log"))"
kill -TERM $ex
wait $ex
kill -TERM $g 2>/dev/null
wait $g 2>/dev/null # 75: its lock went with the server
exit 0
