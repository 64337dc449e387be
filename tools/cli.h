/* Shared by the command-line tools: usage errors, option errors, numbers,
 * the default connection string, and the escaping of untrusted text for
 * messages and JSON; and, for the tools that run a COMMAND (zkr-lock,
 * zkr-elect), their common options, the session, the signals, and COMMAND
 * run in a process group of its own under a guard process. */
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

/* The program's name in messages; set by main(). */
extern const char *prog;

/* "prog: MESSAGE", a hint to --help, and exit 64. */
void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* The usage error for what getopt_long() returned as @c (':' a missing
 * argument, '?' anything else), naming the option the user wrote: "-x"
 * (also inside a cluster such as "-vx") or "--name". Exits 64. */
void option_error(int c, char *const argv[], const struct option *longopts)
    __attribute__((noreturn));
/* A plain decimal integer (digits only, no sign, space or base prefix) in
 * [lo, hi] into *out; 0, or -1 if @s is not one. */
int parse_long(const char *s, long lo, long hi, long *out);
/* The largest number of seconds parse_seconds() takes (about 31.7
 * years), for messages: "at most " SECONDS_MAX_TEXT. */
#define SECONDS_MAX 1000000000
#define SECONDS_MAX_TEXT "1000000000"
/* Seconds as a plain decimal ("2", "0.5": digits with an optional
 * fraction, at most SECONDS_MAX) into milliseconds, rounded to the
 * nearest. Returns 0; -1 if @s is not such a number (also when it is
 * over SECONDS_MAX); -2 if it is positive but rounds to 0 ms. */
int parse_seconds(const char *s, int64_t *ms);
/* $ZKR_SERVERS if set and not empty, else 127.0.0.1:2181. */
const char *default_servers(void);

/* At the end of a tool whose output is on stdout: flush it and check
 * that all of it was written (a full disk, a closed descriptor), as
 * coreutils do. 0; or 1 after saying "prog: write error: REASON". */
int stdout_failed(void);

/* The chroot of the connection string @servers ("/app" of
 * "zk1:2181,zk2:2181/app"), or NULL if it has none. */
const char *chroot_of(const char *servers);
/* After an operation of @s, connected with @servers (NULL: the session
 * of run_session()), failed with ZKR_ENONODE: 1 if @servers has a chroot
 * whose node does not exist (the server asked, within @timeout_ms), else
 * 0. Below a missing chroot every operation fails so, which reads as if
 * the path were at fault. */
int chroot_missing(zkr_session *s, const char *servers, int64_t timeout_ms);
/* "the chroot /app of the connection string does not exist", for
 * @servers (NULL: run_session()'s), escaped; it lives as esc()'s results
 * do. */
const char *chroot_missing_text(const char *servers);

/* The length of the valid UTF-8 sequence at @p (1 for ASCII), or 0 if the
 * byte at @p does not start one (overlong forms, surrogates and code
 * points above U+10FFFF are invalid); *cp receives the code point. */
int utf8_seq(const unsigned char *p, uint32_t *cp);
/* @s made safe to print in a message: control characters (C0, DEL, C1),
 * invalid UTF-8 bytes and the backslash become \n, \t, \r, \\ or \xNN;
 * valid printable UTF-8 stays as is. The result lives until four more
 * calls in the same thread; NULL gives "(null)". */
const char *esc(const char *s);
/* @s as a JSON string literal on @f: valid UTF-8 as is; '"', '\\' and
 * control characters (U+0000-001F, U+007F-009F) escaped as JSON requires;
 * each byte that is not part of valid UTF-8 as \u00XX, XX its value (so
 * invalid bytes read as the Latin-1 characters of the same value). */
void json_string(FILE *f, const char *s);

/* Fields of zkr's node data "host=H pid=P id=I" (id last: it may hold
 * spaces). */
struct owner {
  char host[256];
  long pid;
  char id[512];
};
/* @data's fields into *@o; 0 if @data is not in that form. An id longer
 * than the field is cut between two UTF-8 characters. */
int parse_owner(const char *data, struct owner *o);
/* ,"host":H,"pid":P,"id":I on @f: the members of a JSON object. */
void json_owner(FILE *f, const struct owner *o);

/* ---- the tools that run a COMMAND: zkr-lock, zkr-elect ---- */

/* -v given this many times. */
extern int verbose;
/* "prog: MESSAGE" on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The monotonic clock in milliseconds. */
int64_t now_ms(void);
/* The last component of @p ("sh" for "/bin/sh"). */
const char *base_name(const char *p);
/* The exit status for an error @rc of joining a queue: 75 for a lost
 * session or connection, 69 for what ZooKeeper refused, else 70. */
int exit_for(int rc);
/* Why an operation of @s, made by run_session(), failed with @rc, for a
 * message: zkr_strerror(@rc), or chroot_missing_text() for a ZKR_ENONODE
 * under a chroot that does not exist (asked of the server). */
const char *why_failed(zkr_session *s, int rc);
/* why_failed() for an acquisition at @path, told more where the server can
 * say it: for ZKR_ENOAUTH the node whose ACL refused (the deepest existing
 * of @path/@sub, when @sub is not NULL, @path and its ancestors), for
 * ZKR_EFOREIGN the layout found at @path. A static buffer. */
const char *why_acquire_failed(zkr_session *s, int rc, const char *path,
                               const char *sub);

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

/* Before any thread exists: block the signals the tool takes (those not
 * ignored at start; SIGTTOU too) and return a signalfd for them, with the
 * mask before in *@oldmask; also make the wake pipe. -1 (said) on
 * failure. */
int signals_setup(sigset_t *oldmask);
/* From a library callback: wake the poll() loop (one byte on the pipe). */
void wake(void);
/* The read end of the wake pipe. */
int wake_fd(void);
/* Read everything waiting on @fd. */
void drain(int fd);
/* Read the signalfd @sfd: the first signal that ends a wait (SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT), 0 if none came. */
int take_signal(int sfd);
/* End the process the way @sig would have; returns 128+@sig if it did
 * not. */
int die_by_signal(int sig);

/* zkr_session_new() on a thread of its own, while @wait_signal(@ud) is
 * called again and again (it waits a moment, say 50 ms, and returns a
 * signal that came, or 0): if one comes first, ZKR_ECANCELED with it in
 * *@sig, and the connection goes on on its own thread, so the caller
 * must end the process at once. So a signal ends a tool at once while no
 * server answers, rather than after the connect timeout. */
int session_new_interruptible(zkr_session **s, const char *servers,
                              zkr_session_opts *so, int (*wait_signal)(void *),
                              void *ud, int *sig);

/* Connect as @o says, renewing a lost session unless !@renew; with -v a
 * listener tells the session's events. A bad connection string is a usage
 * error. Returns 0 with *@out, or (said) 69 or 70; or, when a handled
 * signal came while connecting (after signals_setup()), 128 + that signal
 * with session_signal set (nothing is created yet: the caller ends as the
 * signal would, die_by_signal()). */
int run_session(const struct run_opts *o, int renew, zkr_session **out);
extern int session_signal;

/* Our environment without @node_var and ZKR_FENCING_TOKEN, plus the two
 * for @token and @node; NULL out of memory. Free with free_env(). */
char **child_env(const char *node_var, int64_t token, const char *node);
void free_env(char **env);

/* Called while COMMAND runs, each time the poll() loop wakes: return 1,
 * once, when what COMMAND runs under was lost (after saying why), to have
 * COMMAND's process group sent SIGTERM, and SIGKILL kill_after_ms later. */
typedef int (*lost_fn)(pid_t group, void *ud);
struct run_cmd {
  char **cmd;              /* COMMAND and its arguments */
  char **env;              /* its environment */
  const sigset_t *oldmask; /* the signal mask to restore in it */
  int sfd;                 /* signals_setup()'s signalfd */
  int64_t kill_after_ms;   /* --kill-after */
  const char *holding;     /* "holds the lock", "leads": for messages */
  lost_fn lost_fn;         /* asked after each wake-up */
  void *ud;                /* for lost_fn */
  int lost;                /* out: lost_fn said lost */
  int forwarded; /* out: the last SIGINT, SIGTERM, SIGHUP, SIGQUIT passed on */
};
/* Run COMMAND in a process group of its own under the guard process,
 * pass on the signals that come meanwhile, and wait for it. Returns its
 * exit status (128+N if signal N ended it, 126/127 if it could not be
 * run, 70 if it could not be started or the guard died). */
int run_command(struct run_cmd *rc);

#endif
