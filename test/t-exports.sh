#!/bin/sh
# The shared library exports exactly the zkr_ symbols in test/exports.txt.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
builddir=${abs_top_builddir:-.}
lib=$(ls "$builddir"/lib/.libs/libzkr.so.* 2>/dev/null | head -n 1)
nm=${NM:-nm}
case "$nm" in *" "*) nm=nm ;; esac  # libtool's NM may carry flags
if [ -z "$lib" ]; then
  echo "1..0 # SKIP no shared library built (--disable-shared?)"
  exit 0
fi
echo "1..3"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
  sed 's/@.*//' | sort -u > "$tmp/actual"
sort -u "$srcdir/test/exports.txt" > "$tmp/expected"
if diff -u "$tmp/expected" "$tmp/actual" > "$tmp/diff"; then
  echo "ok 1 - exported symbols match test/exports.txt ($(wc -l < "$tmp/actual") symbols)"
else
  echo "not ok 1 - exported symbols differ from test/exports.txt"
  sed 's/^/# /' "$tmp/diff"
fi
if grep -v '^zkr_[a-z]' "$tmp/actual" > "$tmp/bad"; then
  echo "not ok 2 - symbols outside the zkr_ prefix are exported"
  sed 's/^/# /' "$tmp/bad"
else
  echo "ok 2 - every exported symbol starts with zkr_"
fi
# every exported function is declared in a public header
missing=
for sym in $(cat "$tmp/actual"); do
  grep -q "\\b$sym(" "$srcdir"/include/zkr/*.h "$srcdir"/include/zkr/*.h.in ||
    missing="$missing $sym"
done
if [ -z "$missing" ]; then
  echo "ok 3 - every exported symbol is declared in include/zkr"
else
  echo "not ok 3 - exported but not declared:$missing"
fi
