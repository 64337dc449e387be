#!/bin/sh
# The section 3 pages made from the header comments (scripts/hdr2man): every
# exported function has one and it is installed, they are up to date with
# the headers, man renders them without a warning, and their references
# lead to pages that exist. zkr(7), the overview written by hand: its
# sections, every public header and tool, and the pages and guides it
# names. The guides (docs/*.md) are all installed, and an install into a
# temporary DESTDIR puts them in $(docdir) and zkr.7 where `man zkr`
# finds it.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
builddir=${abs_top_builddir:-.}
py=${PYTHON3:-$(command -v python3)}
if [ -z "$HDR2MAN_FLAGS" ]; then # run by hand: the flags Makefile.am uses
  version=$(sed -n 's/^AC_INIT(\[zkr\], \[\([^]]*\)\].*/\1/p' "$srcdir/configure.ac")
  HDR2MAN_FLAGS="--version $version --news $srcdir/NEWS"
fi
if [ -z "${ZKR_MAN3+set}" ]; then # the pages Makefile.am installs
  ZKR_MAN3=$(sed -n 's/^[[:space:]]*\(docs\/man\/zkr_[a-z0-9_]*\.3\).*/\1/p' "$srcdir/Makefile.am")
fi
no_skip=${ZKR_TEST_NO_SKIP:-0}
if [ -z "$py" ]; then
  echo "1..0 # SKIP python3 is not installed"
  exit 0
fi
echo "1..10"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { # ok STATUS DESCRIPTION
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
skip() { # skip REASON DESCRIPTION
  n=$((n + 1))
  if [ "$no_skip" = 1 ]; then
    echo "not ok $n - $2 (would skip, but ZKR_TEST_NO_SKIP=1: $1)"
  else
    echo "ok $n - $2 # SKIP $1"
  fi
}
diag() { sed 's/^/# /' "$@"; }
# page NAME.N: the built page (the build tree's, else a tarball's in srcdir)
page() {
  for d in "$builddir/docs/man" "$srcdir/docs/man"; do
    if [ -f "$d/$1" ]; then
      echo "$d/$1"
      return 0
    fi
  done
  return 1
}

# shellcheck disable=SC2086 # HDR2MAN_FLAGS holds several words
"$py" "$srcdir/scripts/hdr2man" $HDR2MAN_FLAGS --outdir "$tmp/gen" \
  "$srcdir/include/zkr" 2>"$tmp/gen.err"
gen_status=$?
ls "$tmp/gen" 2>/dev/null | sed -n 's/\.3$//p' | sort > "$tmp/pages"

# 1. every exported function has a page, made from its comment
lib=$(ls "$builddir"/lib/.libs/libzkr.so.* 2>/dev/null | head -n 1)
if [ -z "$lib" ]; then
  skip "no shared library built (--disable-shared?)" "every exported function has a page"
else
  nm=${NM:-nm}
  case "$nm" in *" "*) nm=nm ;; esac # libtool's NM may carry flags
  "$nm" -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
    sed 's/@.*//' | sort -u > "$tmp/exports"
  : > "$tmp/missing"
  while read -r sym; do
    grep -qx "$sym" "$tmp/pages" && page "$sym.3" >/dev/null ||
      echo "$sym" >> "$tmp/missing"
  done < "$tmp/exports"
  if [ -s "$tmp/missing" ]; then
    ok 1 "every exported function has a page"
    echo "# no page (write a doc comment above the declaration, see docs/architecture.md):"
    diag "$tmp/missing"
    diag "$tmp/gen.err"
  else
    ok 0 "every exported function has a page ($(wc -l < "$tmp/exports") functions)"
  fi
fi

# 2. hdr2man found a well-formed comment for every ZKR_EXTERN function
if [ "$gen_status" -eq 0 ] && [ ! -s "$tmp/gen.err" ]; then
  ok 0 "every public function has a well-formed doc comment"
else
  ok 1 "every public function has a well-formed doc comment"
  diag "$tmp/gen.err"
fi

# 3. the pages installed (ZKR_MAN3 in Makefile.am) are the pages made
for p in $ZKR_MAN3; do basename "$p" .3; done | sort > "$tmp/installed"
if diff -u "$tmp/pages" "$tmp/installed" > "$tmp/inst.diff"; then
  ok 0 "ZKR_MAN3 lists every page"
else
  ok 1 "ZKR_MAN3 in Makefile.am lists every page, and no other (- add, + remove)"
  diag "$tmp/inst.diff"
fi

# 4. the built pages are up to date: the headers in srcdir give the same bytes
: > "$tmp/stale"
while read -r name; do
  if ! built=$(page "$name.3"); then
    echo "$name.3: not built" >> "$tmp/stale"
  elif ! cmp -s "$built" "$tmp/gen/$name.3"; then
    echo "$built: differs from what the headers give" >> "$tmp/stale"
    diff -u "$built" "$tmp/gen/$name.3" | head -n 20 >> "$tmp/stale"
  fi
done < "$tmp/pages"
if [ -s "$tmp/pages" ] && [ ! -s "$tmp/stale" ]; then
  ok 0 "the built pages are up to date with the headers"
else
  ok 1 "the built pages are up to date with the headers (run make)"
  diag "$tmp/stale"
fi

# 5. man renders every page (these, the tools' and zkr.7) without a warning
man1=$(ls "$srcdir"/docs/man/*.1 "$srcdir"/docs/man/*.7 2>/dev/null)
if ! command -v man >/dev/null 2>&1 || ! command -v groff >/dev/null 2>&1; then
  skip "man is not installed (apt-get install man-db)" "every page renders without warnings"
else
  : > "$tmp/warn"
  for p in "$tmp"/gen/*.3 $man1; do
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null)
    [ -z "$w" ] || printf '%s:\n%s\n' "$(basename "$p")" "$w" >> "$tmp/warn"
  done
  if [ -s "$tmp/warn" ]; then
    ok 1 "every page renders without warnings"
    diag "$tmp/warn"
  else
    ok 0 "every page renders without warnings"
  fi
fi

# 6. every reference "zkr... (N)" of a .BR or .RB line names a page we have
# (references to the system's pages, such as strcmp(3), are not checked)
: > "$tmp/refs"
for p in "$tmp"/gen/*.3 $man1; do
  sed -n 's/^\.[BR][RB] //p' "$p" | sed 's/\\-/-/g' |
    grep -o '\bzkr[A-Za-z0-9_.-]* ([0-9])' |
    sed "s|^\\(.*\\) (\\([0-9]\\))\$|$(basename "$p") \\1.\\2|" >> "$tmp/refs"
done
: > "$tmp/dangling"
while read -r from to; do
  [ -f "$tmp/gen/$to" ] || [ -f "$srcdir/docs/man/$to" ] ||
    echo "$from refers to $to, which does not exist" >> "$tmp/dangling"
done < "$tmp/refs"
if [ -s "$tmp/refs" ] && [ ! -s "$tmp/dangling" ]; then
  ok 0 "every cross-reference leads to a page ($(wc -l < "$tmp/refs") references)"
else
  ok 1 "every cross-reference leads to a page"
  diag "$tmp/dangling"
fi

# 7. every page has the sections a reader looks for
: > "$tmp/sections"
for p in "$tmp"/gen/*.3; do
  for s in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" "THREAD SAFETY" AVAILABILITY "SEE ALSO"; do
    grep -qx "\\.SH $s" "$p" || echo "$(basename "$p"): no $s" >> "$tmp/sections"
  done
done
if [ -s "$tmp/pages" ] && [ ! -s "$tmp/sections" ]; then
  ok 0 "every page has NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, THREAD SAFETY, AVAILABILITY and SEE ALSO"
else
  ok 1 "every page has NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, THREAD SAFETY, AVAILABILITY and SEE ALSO (Returns:, Thread safety:, Since:, See also:)"
  diag "$tmp/sections"
fi

# 8. zkr(7), the overview: its sections; every public header and every
# tool named; every zkr page and every guide it names exists
z7=$srcdir/docs/man/zkr.7
: > "$tmp/z7"
if [ ! -f "$z7" ]; then
  echo "docs/man/zkr.7 is missing" >> "$tmp/z7"
else
  for s in NAME SYNOPSIS DESCRIPTION RECIPES TOOLS ERRORS FILES "SEE ALSO"; do
    grep -qx "\\.SH $s" "$z7" || echo "no section $s" >> "$tmp/z7"
  done
  for h in "$srcdir"/include/zkr/*.h "$srcdir"/include/zkr/*.h.in; do
    h=$(basename "$h" .in)
    grep -qF "<zkr/$h>" "$z7" || echo "does not name <zkr/$h>" >> "$tmp/z7"
  done
  for t in "$srcdir"/docs/man/*.1; do
    t=$(basename "$t" .1)
    sed 's/\\-/-/g' "$z7" | grep -q "^\\.BR $t (1)" ||
      echo "does not name the tool $t(1) (a .BR line)" >> "$tmp/z7"
  done
  # the source with \- as - and no font escapes: "name (N)" or "name(N)"
  sed 's/\\-/-/g; s/\\f[BIRP]//g' "$z7" |
    grep -o 'zkr[A-Za-z0-9_.-]* *([0-9])' | tr -d ' ' | sort -u |
    sed 's/^\(.*\)(\([0-9]\))$/\1.\2/' > "$tmp/z7.refs"
  while read -r to; do
    [ -f "$tmp/gen/$to" ] || [ -f "$srcdir/docs/man/$to" ] ||
      echo "names $to, which does not exist" >> "$tmp/z7"
  done < "$tmp/z7.refs"
  grep -o '[A-Za-z0-9_-]*\.md' "$z7" | sort -u > "$tmp/z7.docs"
  while read -r d; do
    [ -f "$srcdir/docs/$d" ] || echo "names $d, which is not in docs/" >> "$tmp/z7"
  done < "$tmp/z7.docs"
  [ -s "$tmp/z7.refs" ] || echo "names no zkr page" >> "$tmp/z7"
fi
if [ -s "$tmp/z7" ]; then
  ok 1 "zkr(7) has its sections, names every header and tool, and what it names exists"
  diag "$tmp/z7"
else
  ok 0 "zkr(7) has its sections, names every header and tool, and what it names exists ($(wc -l < "$tmp/z7.refs") pages, $(wc -l < "$tmp/z7.docs") guides)"
fi

# 9. every guide (docs/*.md) is installed: ZKR_DOCS in Makefile.am lists
# each, and no other
sed -n '/^ZKR_DOCS = /,/[^\\]$/p' "$srcdir/Makefile.am" |
  grep -o 'docs/[A-Za-z0-9_.-]*\.md' | sort > "$tmp/docs.listed"
(cd "$srcdir" && ls docs/*.md) | sort > "$tmp/docs.tree"
if [ -s "$tmp/docs.tree" ] && diff -u "$tmp/docs.tree" "$tmp/docs.listed" > "$tmp/docs.diff"; then
  ok 0 "ZKR_DOCS lists every docs/*.md ($(wc -l < "$tmp/docs.tree") guides)"
else
  ok 1 "ZKR_DOCS in Makefile.am lists every docs/*.md, and no other (- add, + remove)"
  diag "$tmp/docs.diff"
fi

# 10. the data part of `make install` (install-data: headers, pkg-config,
# man pages, guides; not the programs, so nothing is relinked) into a
# temporary DESTDIR: the guides are in $(docdir), zkr.7 in man7, and
# `man zkr` there shows the overview
if [ ! -f "$builddir/Makefile" ] || ! command -v make >/dev/null 2>&1; then
  skip "no configured build tree (run by make check)" "make install puts the guides in \$(docdir) and man zkr works"
else
  dest=$tmp/destdir
  # shellcheck disable=SC2016 # $(docdir) is make's, not the shell's
  printf 'zkr-t-man-dirs:\n\t@echo "$(docdir)"; echo "$(mandir)"\n' > "$tmp/dirs.mk"
  mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$builddir" "$@"; }
  : > "$tmp/inst.err"
  if ! dirs=$(mk -f Makefile -f "$tmp/dirs.mk" zkr-t-man-dirs 2>>"$tmp/inst.err") ||
    ! mk install-data DESTDIR="$dest" >/dev/null 2>>"$tmp/inst.err"; then
    ok 1 "make install puts the guides in \$(docdir) and man zkr works (make failed)"
    diag "$tmp/inst.err"
  else
    docdir=$dest$(echo "$dirs" | sed -n 1p)
    mandir=$dest$(echo "$dirs" | sed -n 2p)
    : > "$tmp/inst"
    for d in $(cat "$tmp/docs.tree") docs/performance-s2.png; do
      cmp -s "$srcdir/$d" "$docdir/$(basename "$d")" ||
        echo "$docdir/$(basename "$d"): not installed" >> "$tmp/inst"
    done
    cmp -s "$z7" "$mandir/man7/zkr.7" || echo "$mandir/man7/zkr.7: not installed" >> "$tmp/inst"
    if command -v man >/dev/null 2>&1; then
      found=$(man -M "$mandir" -w zkr 2>&1)
      [ "$found" = "$mandir/man7/zkr.7" ] ||
        echo "man -M $mandir -w zkr: '$found', not $mandir/man7/zkr.7" >> "$tmp/inst"
      LC_ALL=C.UTF-8 MANWIDTH=80 man -M "$mandir" zkr 2>&1 | grep -q '^RECIPES' ||
        echo "man -M $mandir zkr does not show the overview" >> "$tmp/inst"
    fi
    if [ -s "$tmp/inst" ]; then
      ok 1 "make install puts the guides in \$(docdir) and man zkr works"
      diag "$tmp/inst"
    else
      ok 0 "make install puts the guides in \$(docdir) and man zkr works ($(ls "$docdir" | wc -l) files in \$(docdir))"
    fi
  fi
fi
