#!/bin/sh
# Formatting is checked, not requested: every C file matches .clang-format.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
cf=${CLANG_FORMAT:-}
[ -n "$cf" ] || cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "1..0 # SKIP clang-format is not installed"
  exit 0
fi
cd "$srcdir" || exit 1
files=$(ls lib/*.c lib/*.h include/zkr/*.h test/*.c test/*.h examples/*.c \
  tools/*.c bench/*.c fuzz/*.c fuzz/*.h 2>/dev/null)
n=0
for f in $files; do n=$((n + 1)); done
echo "1..$n"
i=0
for f in $files; do
  i=$((i + 1))
  if out=$("$cf" --dry-run --Werror "$f" 2>&1); then
    echo "ok $i - $f is formatted"
  else
    echo "not ok $i - $f is not formatted (run: $cf -i $f)"
    echo "$out" | head -n 10 | sed 's/^/# /'
  fi
done
