#!/usr/bin/python3
"""fencestore: the fenced resource of scripts/chaos.

    fencestore.py SOCKET LOG

A tiny server on a Unix socket that keeps, per key (a lock's path), a
counter and the highest fencing token it accepted, and refuses a write
whose token is lower: how a user is meant to use zkr's fencing tokens.
It also counts who is inside a semaphore. One request per line, one reply
per line:

    H ID PID                  hello               -> ok
    R KEY                     read the counter    -> v VALUE MAXTOKEN
    W KEY TOKEN ID VALUE      write, fenced       -> ok | stale MAXTOKEN
    E KEY ID TOKEN            enter (semaphore)   -> COUNT inside now
    X KEY ID held|not-held    leave               -> COUNT

Every request is logged to LOG with the CLOCK_MONOTONIC time in ms (the
workers' clock), the accepted and the refused writes with the writer's id
and token. A connection that closes while its worker is inside a
semaphore (a killed worker) leaves it: "C KEY ID". The checker of
scripts/chaos reads this log and the workers' own.
"""
import os
import socketserver
import sys
import threading
import time

lock = threading.Lock()
value, maxtok, inside = {}, {}, {}
logf = None


def now_ms():
    return int(time.monotonic() * 1000)


def log(line):
    logf.write("%d %s\n" % (now_ms(), line))
    logf.flush()


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        mine = set()  # (key, id) this connection is inside
        try:
            for raw in self.rfile:
                f = raw.decode("utf-8", "replace").split()
                if not f:
                    continue
                with lock:
                    reply = self.one(f, mine)
                self.wfile.write((reply + "\n").encode())
        except (ConnectionError, OSError):
            pass
        finally:
            with lock:
                for key, wid in mine:
                    inside.get(key, set()).discard(wid)
                    log("C %s %s %d" % (key, wid, len(inside.get(key, ()))))

    def one(self, f, mine):
        op = f[0]
        if op == "H" and len(f) == 3:
            log("H %s %s" % (f[1], f[2]))
            return "ok"
        if op == "R" and len(f) == 2:
            return "v %d %d" % (value.get(f[1], 0), maxtok.get(f[1], 0))
        if op == "W" and len(f) == 5:
            key, tok, wid, v = f[1], int(f[2]), f[3], int(f[4])
            prev = value.get(key, 0)
            if tok < maxtok.get(key, 0):
                log("W %s %d %s %d stale %d" % (key, tok, wid, v, prev))
                return "stale %d" % maxtok[key]
            maxtok[key] = tok
            value[key] = v
            log("W %s %d %s %d ok %d" % (key, tok, wid, v, prev))
            return "ok"
        if op == "E" and len(f) == 4:
            key, wid = f[1], f[2]
            inside.setdefault(key, set()).add(wid)
            mine.add((key, wid))
            n = len(inside[key])
            log("E %s %s %s %d" % (key, wid, f[3], n))
            return "%d" % n
        if op == "X" and len(f) == 4:
            key, wid = f[1], f[2]
            inside.get(key, set()).discard(wid)
            mine.discard((key, wid))
            n = len(inside.get(key, ()))
            log("X %s %s %s %d" % (key, wid, f[3], n))
            return "%d" % n
        log("? %s" % " ".join(f))
        return "error bad request"


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    global logf
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        sys.exit(64)
    sock, logpath = sys.argv[1], sys.argv[2]
    if os.path.exists(sock):
        os.unlink(sock)
    logf = open(logpath, "a")
    srv = Server(sock, Handler)
    log("ready")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
