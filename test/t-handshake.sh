#!/usr/bin/env bash
# A server that is not ZooKeeper: an HTTP server that answers the
# connect with "HTTP/1.1 400 Bad Request" (a mistyped port, such as an
# AdminServer's). Its bytes parse as a handshake (session id " Bad Req",
# a timeout of days), but no request is ever answered, so the connection
# never counts as up: zkr-lock and zkr-elect exit 69 at --connect-timeout,
# whether the server then closes the connection or keeps it open. Before,
# they hung (closing) or waited for the lock (open). Every run is bounded
# by timeout(1); no timing assertion.
set -u
TESTLIB_NEEDS=
. "${abs_top_srcdir:-$(dirname "$0")/..}/test/testlib.sh"
zl="$builddir/tools/zkr-lock"
ze="$builddir/tools/zkr-elect"
[ -x "$zl" ] && [ -x "$ze" ] || skip "tools not built"
echo "1..4"

# fake MODE: start the fake server (MODE close or open); sets $port
fake() {
  "$py" - "$1" >"$tmp/port-$1" <<'PY' &
import socket, sys, threading
mode = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
def serve(c):
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html;"
                  b"charset=iso-8859-1\r\nContent-Length: 50\r\n"
                  b"Connection: close\r\n\r\n<h1>Bad Message 400</h1>"
                  b"<pre>reason: Bad Request</pre>")
        if mode == "close":
            c.close()
        else:
            while c.recv(4096):
                pass
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
  pids+=($!)
  wait_for 10 test -s "$tmp/port-$1"
  port=$(cat "$tmp/port-$1")
}

for mode in close open; do
  fake $mode
  timeout -k 5 40 "$zl" -s "127.0.0.1:$port" --connect-timeout 2000 -t 1 /zkr-test/x -- true >"$tmp/l.out" 2>&1
  st=$?
  [ $st -eq 69 ]
  ok $? "zkr-lock, server answers HTTP 400 and ${mode}s: exit 69 at --connect-timeout (got $st: $(tail -1 "$tmp/l.out"))"
  timeout -k 5 40 "$ze" -s "127.0.0.1:$port" --connect-timeout 2000 /zkr-test/x -- true >"$tmp/e.out" 2>&1
  st=$?
  [ $st -eq 69 ]
  ok $? "zkr-elect, server answers HTTP 400 and ${mode}s: exit 69 at --connect-timeout (got $st: $(tail -1 "$tmp/e.out"))"
done
