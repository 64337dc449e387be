#!/usr/bin/python3
"""kazoo_bench: the kazoo worker of the zkr benchmark.

Same command line, modes, synchronisation files and output as
bench/driver.c (read its header comment), with kazoo's Lock recipe (s5:
its ReadLock/WriteLock, s6: its Semaphore; s7, lead and --recipe election:
its Election, whose run() holds the Election's own Lock while the leader's
function runs: acquire is that lock's acquire, release its release):

    /usr/bin/python3 kazoo_bench.py MODE --servers HOSTS --path PATH [...]

Run it with Debian's /usr/bin/python3 and python3-kazoo (2.8). Every
contender is a kazoo Lock on a KazooClient with the default options except
the session timeout. kazoo has no asynchronous lock acquisition, so s4wait
runs a thread per waiter.
"""

import gc
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

OPTS = {
    "servers": None, "path": None, "out": None, "sync": None, "id": "0",
    "locks": "1000,10000", "cycles": 2000, "duration-ms": 10000,
    "warmup": 0, "sessions": 1, "waiters": 1000, "session-ms": 10000,
    "read-permille": 900, "hold-us": 0, "limit": 2, "recipe": "lock",
}
NUMERIC = ("cycles", "duration-ms", "warmup", "sessions", "waiters",
           "session-ms", "read-permille", "hold-us", "limit")
# s5: kazoo 2.8's ReadLock can wait for a writer queued after it, which
# waits for the reader (python-zk/kazoo #649): every acquisition is bounded
# by this, and one that times out is written as "op K T_REQ -1 -1"
S5_ACQUIRE_TIMEOUT_S = 2.0


def die(msg):
    sys.stderr.write("kazoo-bench: %s\n" % msg)
    sys.stderr.flush()
    os._exit(1)


def connect():
    c = KazooClient(hosts=OPTS["servers"],
                    timeout=OPTS["session-ms"] / 1000.0)
    c.start(timeout=30)
    return c


def touch(what):
    if OPTS["sync"] is None:
        return
    p = os.path.join(OPTS["sync"], "%s.%s" % (what, OPTS["id"]))
    with open(p + ".tmp", "w"):
        pass
    os.rename(p + ".tmp", p)


def wait_for(name):
    if OPTS["sync"] is None:
        return time.monotonic_ns()
    p = os.path.join(OPTS["sync"], name)
    while not os.path.exists(p):
        time.sleep(0.005)
    with open(p) as f:
        s = f.read().strip()
    return int(s) if s else 0


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def count_children(c, path):
    try:
        return len(c.get_children(path))
    except NoNodeError:
        return 0


def window():
    """The timed modes' start: ready, wait for the go time T0, sleep until
    it; returns the end of the window, T0 + --duration-ms."""
    touch("ready")
    t0 = wait_for("go")
    d = t0 - time.monotonic_ns()
    if d > 0:
        time.sleep(d / 1e9)
    return t0 + OPTS["duration-ms"] * 1000000


def cycle(lock):
    lock.acquire()
    lock.release()


def s1(out):
    c = connect()
    lock = c.Lock(OPTS["path"])
    for _ in range(OPTS["warmup"]):
        cycle(lock)
    t = []
    touch("ready")
    wait_for("go")
    for _ in range(OPTS["cycles"]):
        t0 = time.monotonic_ns()
        cycle(lock)
        t.append(time.monotonic_ns() - t0)
    touch("done")
    for v in t:
        out.write("sample %d\n" % v)
    wait_for("end")
    c.stop()
    c.close()


def s2(out):
    c = connect()
    w = c.Lock("%s-w%s" % (OPTS["path"], OPTS["id"]))
    for _ in range(OPTS["warmup"]):
        cycle(w)
    lock = c.Lock(OPTS["path"])
    t = []
    end = window()
    cpu0 = time.process_time_ns()  # all threads of the process
    while True:
        treq = time.monotonic_ns()
        if treq >= end:
            break
        lock.acquire()
        tacq = time.monotonic_ns()
        lock.release()
        t.append((treq, tacq))
    cpu = time.process_time_ns() - cpu0
    touch("done")
    for treq, tacq in t:
        out.write("acq %d %d\n" % (treq, tacq))
    out.write("cpu_us %d\n" % (cpu // 1000))
    wait_for("end")
    c.stop()
    c.close()


def s5(out):
    import random
    from kazoo.exceptions import LockTimeout
    c = connect()
    rd, wr = c.ReadLock(OPTS["path"]), c.WriteLock(OPTS["path"])
    rnd = random.Random(int(OPTS["id"]) * 7919 + 1)
    t = []
    end = window()
    hold_s = OPTS["hold-us"] / 1e6
    while True:
        treq = time.monotonic_ns()
        if treq >= end:
            break
        reading = rnd.randrange(1000) < OPTS["read-permille"]
        lock = rd if reading else wr
        try:
            got = lock.acquire(timeout=S5_ACQUIRE_TIMEOUT_S)
        except LockTimeout:
            got = False
        if not got:
            t.append(("R" if reading else "W", treq, -1, -1))
            continue
        tacq = time.monotonic_ns()
        if hold_s:
            time.sleep(hold_s)
        trel = time.monotonic_ns()
        lock.release()
        t.append(("R" if reading else "W", treq, tacq, trel))
    touch("done")
    for k, treq, tacq, trel in t:
        out.write("op %s %d %d %d\n" % (k, treq, tacq, trel))
    wait_for("end")
    c.stop()
    c.close()


def cycles(out, c, lock):
    """s6 and s7: acquire, hold --hold-us, release, from T0 until T0 +
    --duration-ms; "acq T_REQ T_ACQ T_REL" per cycle."""
    t = []
    end = window()
    hold_s = OPTS["hold-us"] / 1e6
    while True:
        treq = time.monotonic_ns()
        if treq >= end:
            break
        if lock.acquire() is False:
            die("acquire returned False")
        tacq = time.monotonic_ns()
        if hold_s:
            time.sleep(hold_s)
        trel = time.monotonic_ns()
        lock.release()
        t.append((treq, tacq, trel))
    touch("done")
    for treq, tacq, trel in t:
        out.write("acq %d %d %d\n" % (treq, tacq, trel))
    wait_for("end")
    c.stop()
    c.close()


def s6(out):
    """The counting semaphore: kazoo's Semaphore with max_leases --limit,
    one lease per acquisition (its own layout: leases are the children of
    PATH, its mutex a Lock at PATH-__lock__)."""
    c = connect()
    cycles(out, c, c.Semaphore(OPTS["path"], max_leases=OPTS["limit"]))


def contender(c):
    """hold, herd, s7, lead: a Lock, or with --recipe election the Lock of
    an Election on PATH (what Election.run() takes and gives back)."""
    if OPTS["recipe"] == "election":
        return c.Election(OPTS["path"], OPTS["id"]).lock
    return c.Lock(OPTS["path"])


def s7(out):
    """Terms of kazoo's Election from T0 until T0 + --duration-ms."""
    OPTS["recipe"] = "election"
    c = connect()
    cycles(out, c, contender(c))


def lead(out):
    """Be elected once, say so, stay leader until the end file."""
    OPTS["recipe"] = "election"
    c = connect()
    lock = contender(c)
    touch("ready")
    lock.acquire()
    out.write("elected %d\n" % time.monotonic_ns())
    out.flush()
    touch("elected")
    wait_for("end")
    lock.release()
    c.stop()
    c.close()


def hold(out):
    c = connect()
    lock = contender(c)
    lock.acquire()
    touch("ready")
    wait_for("go")
    t = time.monotonic_ns()
    lock.release()
    touch("done")
    out.write("release %d\n" % t)
    wait_for("end")
    c.stop()
    c.close()


def herd(out):
    k = OPTS["sessions"]
    clients = [connect() for _ in range(k)]
    tacq = [0] * k
    failed = []
    started = threading.Semaphore(0)

    def waiter(j):
        started.release()
        try:
            lock = contender(clients[j])
            lock.acquire()
            tacq[j] = time.monotonic_ns()
            lock.release()
        except Exception as e:  # noqa: BLE001 - reported, then exit 1
            failed.append("waiter %d: %r" % (j, e))

    threads = [threading.Thread(target=waiter, args=(j,), daemon=True)
               for j in range(k)]
    for th in threads:
        th.start()
    for _ in range(k):
        started.acquire()
    touch("ready")
    for th in threads:
        th.join()
    touch("done")
    for v in tacq:
        if v:
            out.write("acq %d\n" % v)
    wait_for("end")
    for c in clients:
        c.stop()
        c.close()
    if failed:
        die("; ".join(failed[:5]))


def s4held(out):
    c = connect()
    cycle(c.Lock(OPTS["path"] + "/warm"))
    gc.collect()
    out.write("rss_base %d\n" % rss_kb())
    held = []
    t0 = time.monotonic_ns()
    n = 0
    for mark in OPTS["locks"].split(","):
        upto = int(mark)
        while n < upto:
            lock = c.Lock("%s/l%d" % (OPTS["path"], n))
            lock.acquire()
            held.append(lock)
            n += 1
        gc.collect()
        out.write("rss %d %d\n" % (n, rss_kb()))
    out.write("elapsed_ns %d\n" % (time.monotonic_ns() - t0))
    out.flush()
    c.stop()
    c.close()


def s4wait(out):
    c = connect()
    cycle(c.Lock(OPTS["path"] + "-warm"))
    holder = c.Lock(OPTS["path"])
    holder.acquire()
    count_children(c, OPTS["path"])
    gc.collect()
    out.write("rss_base %d\n" % rss_kb())
    failed = []

    def waiter(lock):
        try:
            lock.acquire()
        except Exception as e:  # noqa: BLE001 - counted below
            failed.append(e)

    for _ in range(OPTS["waiters"]):
        th = threading.Thread(target=waiter, args=(c.Lock(OPTS["path"]),),
                              daemon=True)
        th.start()
    deadline = time.monotonic() + 120
    while True:
        n = count_children(c, OPTS["path"])
        if n >= OPTS["waiters"] + 1:
            break
        if time.monotonic() > deadline:
            die("only %d contenders queued after 120 s" % n)
        time.sleep(0.1)
    time.sleep(1)
    if failed:
        die("%d waiters failed: %r" % (len(failed), failed[0]))
    gc.collect()
    out.write("rss_waiters %d %d\n" % (OPTS["waiters"], rss_kb()))
    out.flush()
    os._exit(0)


def main():
    if len(sys.argv) < 2:
        die("usage: kazoo_bench.py MODE --servers HOSTS --path PATH [...]")
    mode = sys.argv[1]
    args = sys.argv[2:]
    if len(args) % 2:
        die("options take one value each")
    for a, v in zip(args[::2], args[1::2]):
        key = a[2:]
        if not a.startswith("--") or key not in OPTS:
            die("unknown option " + a)
        OPTS[key] = int(v) if key in NUMERIC else v
    if OPTS["recipe"] not in ("lock", "election"):
        die("--recipe lock|election")
    if OPTS["servers"] is None or OPTS["path"] is None:
        die("--servers and --path are required")
    modes = {"s1": s1, "s2": s2, "s5": s5, "s6": s6, "s7": s7, "lead": lead,
             "hold": hold, "herd": herd, "s4held": s4held, "s4wait": s4wait}
    if mode not in modes:
        die("unknown mode " + mode)
    out = open(OPTS["out"], "w") if OPTS["out"] else sys.stdout
    try:
        modes[mode](out)
        out.flush()
        if out is not sys.stdout:
            out.close()
    except Exception as e:  # noqa: BLE001 - any failure fails the run
        die("%s: %r" % (mode, e))
    sys.exit(0)


if __name__ == "__main__":
    main()
