#!/bin/sh
# Calls the tree does without: atoi (no error report), sprintf and strcpy
# (no bound). Every .c and .h file of the tree is searched.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
cd "$srcdir" || exit 1
echo "1..1"
hits=$(find . -path ./build -prune -o -path './build-*' -prune -o \
  -path './_build' -prune -o \( -name '*.c' -o -name '*.h' \) -print |
  xargs grep -nE '\b(atoi|sprintf|strcpy)[[:space:]]*\(' 2>/dev/null)
if [ -z "$hits" ]; then
  echo "ok 1 - no atoi, sprintf or strcpy in any .c or .h file"
else
  echo "$hits" | sed 's/^/# /'
  echo "not ok 1 - no atoi, sprintf or strcpy in any .c or .h file"
fi
