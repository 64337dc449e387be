#!/bin/sh
# The library's files depend on each other one way: the link-level
# dependencies of its objects (scripts/check-layers: nm of each object,
# every undefined symbol joined to the object that defines it) form no
# loop, but inside the queue engine's four files; and neither the engine
# nor the figures
# include the recipe layer's header.
srcdir=${abs_top_srcdir:-${top_srcdir:-$(dirname "$0")/..}}
builddir=${abs_top_builddir:-.}
py=${PYTHON3:-$(command -v python3)}
if [ -z "$py" ] || ! command -v nm >/dev/null 2>&1; then
  echo "1..0 # SKIP python3 or nm is not installed"
  exit 0
fi
objs=$(ls "$builddir"/lib/.libs/libzkr_internal_la-*.o 2>/dev/null)
[ -n "$objs" ] || objs=$(ls "$builddir"/lib/libzkr_internal_la-*.o 2>/dev/null)
echo "1..2"
if [ -z "$objs" ]; then
  echo "not ok 1 - the library's objects are in $builddir/lib"
else
  # shellcheck disable=SC2086
  out=$("$py" "$srcdir/scripts/check-layers" \
    --allow "queue queue-attr queue-stats queue-steps queue-control" $objs 2>&1)
  st=$?
  echo "$out" | sed 's/^/# /'
  if [ $st -eq 0 ]; then
    echo "ok 1 - no loop between the library's files but inside the engine"
  else
    echo "not ok 1 - no loop between the library's files but inside the engine"
  fi
fi
bad=$(cd "$srcdir" && grep -l 'recipe\.h' lib/queue*.c lib/stats.c 2>/dev/null)
if [ -z "$bad" ]; then
  echo "ok 2 - the engine and the figures do not include recipe.h"
else
  echo "not ok 2 - the engine and the figures do not include recipe.h: $bad"
fi
