#!/bin/sh
# Every error code a public function can return is listed in its header's
# "Returns:" (scripts/check-returns: one TAP line per public function; its
# header comment gives the rules and the exceptions).
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
py=${PYTHON3:-$(command -v python3)}
if [ -z "$py" ]; then
  echo "1..0 # SKIP python3 is not installed"
  exit 0
fi
exec "$py" "$srcdir/scripts/check-returns" --tap "$srcdir"
