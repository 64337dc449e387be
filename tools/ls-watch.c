/*
 * zkr-ls --watch (see ls-watch.h): its interval taken from the word after
 * --watch, and the listing or the metrics shown again and again, in place
 * on a terminal, until SIGINT or SIGTERM.
 *
 * Owns: the blocks' layout (clear and home, or an empty line between
 * them; the heading "Every ..."). Must not touch: what a block holds
 * (ls-walk.c, prom.c).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ls-watch.h"
#include "prom-file.h"
#include "prom.h"

/* The argument vector with "--watch SECONDS" made "--watch=SECONDS":
 * getopt_long takes an optional argument only after '='. The word after
 * --watch (or an abbreviation of it) is its interval unless it is a PATH
 * (a leading '/') or another option (a '-' not followed by a digit or a
 * '.'); "--" ends the options. NULL when out of memory. */
char **ls_watch_args(int argc, char **argv) {
  static char **args;
  args = calloc((size_t)argc + 1, sizeof *args);
  if (!args)
    return NULL;
  int k = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    size_t al = strlen(a);
    int is_watch = i > 0 && al >= 3 && strncmp(a, "--watch", al) == 0;
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (is_watch && next && next[0] != '/' &&
        (next[0] != '-' || next[1] == '.' ||
         (next[1] >= '0' && next[1] <= '9'))) {
      size_t len = strlen(next) + 9;
      char *joined = malloc(len);
      if (!joined)
        return NULL;
      snprintf(joined, len, "--watch=%s", next);
      args[k++] = joined;
      i++;
      continue;
    }
    args[k++] = argv[i];
    if (i > 0 && strcmp(a, "--") == 0) {
      while (++i < argc)
        args[k++] = argv[i];
    }
  }
  args[k] = NULL;
  return args;
}

/* The line above each block of --watch: the interval, the command and
 * the local time, as watch(1) has it. */
static void watch_heading(int64_t interval_ms, const char *path,
                          int recursive) {
  char when[64];
  time_t t = time(NULL);
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
  printf("Every %.1fs: zkr-ls%s %s    %s\n\n", (double)interval_ms / 1000.0,
         recursive ? " -r" : "", esc(path), when);
}

/* --watch: the listing (or the metrics) again and again, every
 * @interval_ms, until SIGINT or SIGTERM, which end it with status 0. On
 * a terminal each block replaces the last (clear, home); otherwise the
 * blocks follow one another, each after an empty line (text: a heading
 * line "Every ..." first; JSON: one document a line). A failed read is
 * shown in its block and the next one tries again; a bad PATH (found by
 * the first) ends it with 64. @sigs are blocked. */
int ls_watch_loop(zkr_session *s, const char *path, int recursive,
                  int prometheus, const char *out, int64_t interval_ms,
                  const sigset_t *sigs) {
  int tty = isatty(STDOUT_FILENO);
  ls_quiet = 1;
  for (int first = 1;; first = 0) {
    int64_t t0 = now_ms();
    ls_msgs_len = 0;
    ls_msgs[0] = '\0';
    if (tty)
      fputs("\033[H\033[2J", stdout);
    else if (!first && !ls_json)
      putchar('\n');
    int status;
    FILE *said = stdout; /* where this block's messages go */
    const char *pre = "";
    if (prometheus) {
      struct prom_result sc;
      status = prom_scrape(s, path, &sc);
      if (!out)
        prom_write(stdout, &sc);
      else if (prom_write_file(out, &sc) != 0 && first)
        return 1;
      pre = "# "; /* a comment in the exposition format */
      if (out)
        said = stderr;
    } else {
      if (!ls_json)
        watch_heading(interval_ms, path, recursive);
      status = ls_listing(s, path, recursive);
      if (ls_json)
        said = stderr;
    }
    ls_put_msgs(said, pre);
    if (stdout_failed())
      return 1; /* (said) nothing can be shown any more */
    if (first && status == EX_USAGE) {
      if (said != stderr)
        ls_put_msgs(stderr, "");
      return EX_USAGE;
    }
    int64_t left = interval_ms - (now_ms() - t0);
    if (left < 0)
      left = 0;
    struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000};
    int sig;
    do
      sig = sigtimedwait(sigs, NULL, &ts);
    while (sig < 0 && errno == EINTR);
    if (sig > 0)
      return 0;
  }
}
