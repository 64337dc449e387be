/* Shared by the command-line tools: usage errors, option errors, the
 * default connection string, the check of stdout at exit, and the options
 * of the tools that run a COMMAND (zkr-lock, zkr-elect), all in cli.c;
 * and, through the headers included below, the numbers (cli-num.h), the
 * escaping of untrusted text (cli-text.h), the session (cli-session.h),
 * the signals (cli-signal.h) and COMMAND run under a guard process
 * (cli-run.h). A tool includes this header alone. */
#ifndef ZKR_TOOLS_CLI_H
#define ZKR_TOOLS_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <zkr/zkr.h>

#define EX_USAGE 64
#define EX_UNAVAILABLE 69
#define EX_SOFTWARE 70
#define EX_TEMPFAIL 75

/* The program's name in messages; defined by each tool. */
extern const char *prog;

/* "prog: MESSAGE", a hint to --help, and exit 64. */
void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* The usage error for what getopt_long() returned as @c (':' a missing
 * argument, '?' anything else), naming the option the user wrote: "-x"
 * (also inside a cluster such as "-vx") or "--name". Exits 64. */
void option_error(int c, char *const argv[], const struct option *longopts)
    __attribute__((noreturn));
/* A duration option's value (--max-hold, --grace): seconds by -t's rule
 * (parse_seconds()), 0 only with @zero_ok, into *@ms; a bad value is the
 * usage error "invalid @name 'ARG': ..." (exit 64, *@ms unchanged). */
void seconds_opt(const char *name, const char *arg, int zero_ok, int64_t *ms);
/* $ZKR_SERVERS if set and not empty, else 127.0.0.1:2181. */
const char *default_servers(void);

/* At the end of a tool whose output is on stdout: flush it and check
 * that all of it was written (a full disk, a closed descriptor), as
 * coreutils do. 0; or 1 after saying "prog: write error: REASON". */
int stdout_failed(void);

/* -v given this many times. */
extern int verbose;
/* "prog: MESSAGE" on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last component of @p ("sh" for "/bin/sh"). */
const char *base_name(const char *p);
/* Is @id a contender id the recipes' options take (1 to 256 bytes, no
 * control characters)? Checked before connecting, so that a bad --id is
 * a usage error rather than a failure of zkr_*_new() once connected. */
int id_valid(const char *id);

/* ---- the tools that run a COMMAND: zkr-lock, zkr-elect ---- */

/* The options zkr-lock and zkr-elect share; CLI_RUN_LONGOPTS in their
 * struct option arrays, "s:vV" in their short options. */
enum {
  OPT_SESSION = 256,
  OPT_CONNECT,
  OPT_ID,
  OPT_KILL_AFTER,
  OPT_ACL,
  OPT_AUTH,
  OPT_NEXT
};
#define CLI_RUN_LONGOPTS                                                       \
  {"servers", required_argument, NULL, 's'},                                   \
      {"session-timeout", required_argument, NULL, OPT_SESSION},               \
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},               \
      {"id", required_argument, NULL, OPT_ID},                                 \
      {"kill-after", required_argument, NULL, OPT_KILL_AFTER},                 \
      {"acl", required_argument, NULL, OPT_ACL},                               \
      {"auth", required_argument, NULL, OPT_AUTH},                             \
      {"verbose", no_argument, NULL, 'v'}, {                                   \
    "version", no_argument, NULL, 'V'                                          \
  }
struct run_opts {
  const char *servers;   /* -s: default_servers() */
  long session_ms;       /* --session-timeout: 10000 */
  long connect_ms;       /* --connect-timeout: 10000 */
  const char *id;        /* --id: NULL */
  int64_t kill_after_ms; /* --kill-after: 10000 */
  int acl_creator;       /* --acl creator (open: 0) */
  const char *auth;      /* --auth USER:PASSWORD (digest): NULL */
};
void run_opts_init(struct run_opts *o);
/* Takes the shared option @c with @arg: 1 if it was one (a bad value is a
 * usage error; -V prints the version and exits 0), else 0. */
int run_opt(struct run_opts *o, int c, const char *arg);

#include "cli-num.h"
#include "cli-run.h"
#include "cli-session.h"
#include "cli-signal.h"
#include "cli-text.h"

#endif
