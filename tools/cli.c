/*
 * What every tool shares (see cli.h): its messages ("prog: MESSAGE"),
 * its usage errors and the naming of a bad option, where the connection
 * string comes from, the check of what was written to stdout, and the
 * options of the tools that run a COMMAND (run_opt()).
 *
 * Owns: the message format and the exit status 64 of a usage error. Must
 * not touch: the session (cli-session.c), the signals (cli-signal.c).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int verbose;

/* "prog: MESSAGE" on stderr, whole (a message quoting a long argument
 * was once cut at a fixed size, even inside a UTF-8 character). */
static void vmsg(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf) {
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    fprintf(stderr, "%s: %s\n", prog, buf);
    free(buf);
  } else {
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
}

void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s --help' for more information.\n", prog);
  exit(EX_USAGE);
}

/* The long option that @arg ("--name" or "--name=value") names: an exact
 * name, else the only one it abbreviates; NULL if none. */
static const struct option *long_named(const char *arg,
                                       const struct option *longopts) {
  const char *name = arg + 2;
  size_t n = strcspn(name, "=");
  const struct option *found = NULL;
  int count = 0;
  for (const struct option *o = longopts; o && o->name; o++) {
    if (strncmp(o->name, name, n) != 0)
      continue;
    if (strlen(o->name) == n)
      return o;
    found = o;
    count++;
  }
  return count == 1 ? found : NULL;
}

void option_error(int c, char *const argv[], const struct option *longopts) {
  /* getopt_long leaves optind on the next argument once it has finished
   * one, so argv[optind - 1] is the option it complained about only when
   * that option ended its argument; inside a cluster ("-vx") it is the
   * previous one (or the program). optopt tells: 0 for an unknown long
   * option, else the character or the long option's value. */
  const char *last = optind > 0 ? argv[optind - 1] : "";
  const struct option *lo = NULL;
  if (strncmp(last, "--", 2) == 0 && last[2] != '\0')
    lo = long_named(last, longopts);
  if (c == ':') {
    if (lo && lo->val == optopt)
      usage_error("option '--%s' needs an argument", lo->name);
    if (optopt > ' ' && optopt < 0x7f)
      usage_error("option '-%c' needs an argument", optopt);
    usage_error("option '%s' needs an argument", esc(last));
  }
  if (optopt == 0) {
    /* the name as written, up to its '=' (esc() adds none) */
    const char *e = esc(last);
    usage_error("unknown option '%.*s'", (int)strcspn(e, "="), e);
  }
  if (lo && lo->val == optopt && lo->has_arg == no_argument &&
      strchr(last, '='))
    usage_error("option '--%s' takes no argument", lo->name);
  if (optopt > ' ' && optopt < 0x7f)
    usage_error("unknown option '-%c'", optopt);
  usage_error("unknown option '-\\x%02x'", (unsigned)(optopt & 0xff));
}

const char *default_servers(void) {
  const char *s = getenv("ZKR_SERVERS");
  return s && *s ? s : "127.0.0.1:2181";
}

int stdout_failed(void) {
  /* an earlier write may have failed (ferror) with its data dropped, so
   * that the flush succeeds: then the reason is not known any more */
  int failed = ferror(stdout);
  int e = 0;
  if (fflush(stdout) != 0) {
    failed = 1;
    e = errno;
  }
  if (!failed)
    return 0;
  if (e)
    fprintf(stderr, "%s: write error: %s\n", prog, strerror(e));
  else
    fprintf(stderr, "%s: write error\n", prog);
  return 1;
}

void msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

int id_valid(const char *id) {
  size_t n = strlen(id);
  if (n < 1 || n > 256)
    return 0;
  for (const char *p = id; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return 0;
  return 1;
}

void seconds_opt(const char *name, const char *arg, int zero_ok, int64_t *ms) {
  int64_t v;
  if (parse_seconds(arg, &v) != 0 || (v == 0 && !zero_ok))
    usage_error("invalid %s '%s': seconds as a plain decimal, %s0.001 "
                "(1 ms), at most " SECONDS_MAX_TEXT,
                name, esc(arg), zero_ok ? "0 or at least " : "at least ");
  *ms = v;
}

void run_opts_init(struct run_opts *o) {
  o->servers = default_servers();
  o->session_ms = 10000;
  o->connect_ms = 10000;
  o->id = NULL;
  o->kill_after_ms = 10000;
  o->acl_creator = 0;
  o->auth = NULL;
}

int run_opt(struct run_opts *o, int c, const char *arg) {
  switch (c) {
  case 's':
    o->servers = arg;
    return 1;
  case OPT_SESSION:
    if (parse_long(arg, ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX,
                   &o->session_ms) != 0)
      usage_error("invalid session timeout '%s': milliseconds, %d to %d",
                  esc(arg), ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX);
    return 1;
  case OPT_CONNECT:
    if (parse_long(arg, 1, INT_MAX, &o->connect_ms) != 0)
      usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                  esc(arg), INT_MAX);
    return 1;
  case OPT_ID:
    o->id = arg;
    return 1;
  case OPT_KILL_AFTER:
    if (parse_seconds(arg, &o->kill_after_ms) != 0)
      usage_error("invalid --kill-after '%s': seconds as a plain decimal, "
                  "0 or at least 0.001 (1 ms), at most " SECONDS_MAX_TEXT,
                  esc(arg));
    return 1;
  case OPT_ACL:
    if (strcmp(arg, "open") != 0 && strcmp(arg, "creator") != 0)
      usage_error("invalid --acl '%s': open or creator", esc(arg));
    o->acl_creator = strcmp(arg, "creator") == 0;
    return 1;
  case OPT_AUTH: {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg)
      usage_error("invalid --auth '%s': USER:PASSWORD (the digest scheme)",
                  esc(arg));
    o->auth = arg;
    return 1;
  }
  case 'v':
    verbose++;
    return 1;
  case 'V':
    printf("%s (zkr) %s\n", prog, zkr_version());
    exit(0);
  default:
    return 0;
  }
}
