#!/bin/sh
# The project's files speak of the project, not of who worked on it when:
# no "session" in the sense of a working session. ZooKeeper sessions stay.
#
# 1. Anywhere in the tree (git's files, or the source directory's when it
#    is not a git work tree, as in distcheck): "session by form" and "by
#    hand at the session's end" (or "a session's end").
# 2. In model/ and NEWS only, the broad patterns: an ordinal before
#    "session(s)" (first ... twenty-ninth, 1st, 2nd, 21st ...) and "next",
#    "previous", "earlier" or "later" before it. A line that means a
#    ZooKeeper session is let through by a fixed string in
#    test/session-words.allow that it contains.
#
# A phrase wrapped over two lines is found too: each line is read joined
# to the one before it.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
allow=$srcdir/test/session-words.allow
[ -r "$allow" ] || { echo "Bail out! $allow missing"; exit 1; }
cd "$srcdir" || exit 1
top=$(pwd -P)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkr-words.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# the files: git's (tracked, and new ones not ignored) when the source
# directory is the top of a git work tree; else every file under it but
# build directories and version control
if command -v git >/dev/null 2>&1 &&
  [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
  git ls-files -co --exclude-standard >"$tmp/all"
else
  find . \( -name .git -o -name autom4te.cache -o -name .deps -o \
    -name .libs -o -name '_build' -o -name '_inst' -o -name 'build*' \) \
    -prune -o -type f -print | sed 's|^\./||' >"$tmp/all"
fi
# not this test and its list (they name the patterns); text files only
grep -v -e '^test/t-words\.sh$' -e '^test/session-words\.allow$' "$tmp/all" |
  while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done >"$tmp/exist"
tr '\n' '\0' <"$tmp/exist" | xargs -0 grep -Il '' >"$tmp/files" 2>/dev/null
grep -E '^(model/|NEWS$)' "$tmp/files" >"$tmp/narrow"

# scan PATTERN LISTFILE: print FILE:LINE: TEXT of each line (joined to the
# line before it) that matches PATTERN, case-insensitive, and holds none
# of the allowed strings
scan() {
  [ -s "$2" ] || return 0
  tr '\n' '\0' <"$2" | xargs -0 awk -v pat="$1" '
    FNR == 1 {
      prev = ""
      if (!loaded) {
        while ((getline a < ALLOW) > 0)
          if (a != "" && a !~ /^#/) allowed[++na] = a
        loaded = 1
      }
    }
    {
      w = prev " " $0
      gsub(/[ \t]+/, " ", w)
      # a hit in this line, or one wrapped from the line before
      if (tolower($0) ~ pat || (tolower(w) ~ pat && tolower(prev) !~ pat)) {
        ok = 0
        for (i = 1; i <= na; i++) if (index(w, allowed[i])) { ok = 1; break }
        if (!ok) print FILENAME ":" FNR ": " $0
      }
      prev = $0
    }' ALLOW="$allow"
}

b='(^|[^a-z0-9-])'
e='([^a-z]|$)'
form="session by form|by hand at (a|the) session's end"
ord='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth'
ord="$ord|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth"
ord="$ord|seventeenth|eighteenth|nineteenth|twentieth"
ord="$ord|twenty-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)"
ord="$ord|[0-9]+(st|nd|rd|th)"
broad="$b($ord|next|previous|earlier|later) sessions?$e"

echo "1..2"
scan "$form" "$tmp/files" >"$tmp/hits1"
n=$(wc -l <"$tmp/files")
if [ -s "$tmp/hits1" ]; then
  echo "not ok 1 - \"session by form\" or \"by hand at the session's end\" in the tree:"
  head -n 20 "$tmp/hits1" | sed 's/^/# /'
else
  echo "ok 1 - no \"session by form\" nor \"by hand at the session's end\" in $n files"
fi
scan "$broad" "$tmp/narrow" >"$tmp/hits2"
if [ -s "$tmp/hits2" ]; then
  echo "not ok 2 - a working session named in model/ or NEWS (if it is a ZooKeeper session, add a fixed string of the line to test/session-words.allow):"
  head -n 20 "$tmp/hits2" | sed 's/^/# /'
else
  echo "ok 2 - no ordinal or next/previous/earlier/later session in model/ and NEWS (but test/session-words.allow's)"
fi
