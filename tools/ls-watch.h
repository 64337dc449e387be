/* zkr-ls --watch (ls-watch.c): its interval on the command line, and the
 * listing or the metrics shown again and again. */
#ifndef ZKR_TOOLS_LS_WATCH_H
#define ZKR_TOOLS_LS_WATCH_H

#include <signal.h>
#include <stdint.h>

#include "ls-walk.h"

/* The argument vector with "--watch SECONDS" made "--watch=SECONDS"
 * (getopt_long takes an optional argument only after '='), where the word
 * after --watch can be an interval; NULL-terminated, NULL when out of
 * memory. */
char **ls_watch_args(int argc, char **argv);
/* The listing at @path (the metrics with @prometheus, into @out if not
 * NULL) every @interval_ms until one of @sigs (blocked) comes: then 0. A
 * bad PATH found by the first read ends it with 64; a write error, with
 * 1. */
int ls_watch_loop(zkr_session *s, const char *path, int recursive,
                  int prometheus, const char *out, int64_t interval_ms,
                  const sigset_t *sigs);

#endif
