/* Shared by the command-line tools (see cli.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

extern char **environ;

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

int parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || *s < '0' || *s > '9')
    return -1; /* no sign, space or empty string */
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int parse_seconds(const char *s, int64_t *ms) {
  if (!s || *s < '0' || *s > '9')
    return -1;
  int64_t whole = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    whole = whole * 10 + (*p - '0');
    if (whole > SECONDS_MAX)
      return -1;
  }
  int64_t frac = 0; /* milliseconds */
  int digits = 0, round_up = 0, nonzero = whole > 0;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return -1; /* "5." */
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
      if (*p != '0')
        nonzero = 1;
      if (digits < 3)
        frac = frac * 10 + (*p - '0');
      else if (digits == 3)
        round_up = *p >= '5';
    }
    for (; digits < 3; digits++)
      frac *= 10;
  }
  if (*p != '\0')
    return -1;
  int64_t v = whole * 1000 + frac + round_up;
  if (v > (int64_t)SECONDS_MAX * 1000)
    return -1;
  if (v == 0 && nonzero)
    return -2;
  *ms = v;
  return 0;
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

const char *chroot_of(const char *servers) {
  /* no '/' in the host list: IPv6 addresses hold ':' and brackets only */
  const char *c = servers ? strchr(servers, '/') : NULL;
  return c && c[1] ? c : NULL;
}

/* The connection string of run_session()'s session. */
static const char *session_servers;

int chroot_missing(zkr_session *s, const char *servers, int64_t timeout_ms) {
  if (!servers)
    servers = session_servers;
  if (!s || !chroot_of(servers))
    return 0;
  /* "/" of a session with a chroot is the chroot's node itself */
  char **kids = NULL;
  size_t n = 0;
  int rc = zkr_session_children(s, "/", timeout_ms, &kids, &n);
  if (rc == ZKR_OK)
    zkr_children_free(kids, n);
  return rc == ZKR_ENONODE;
}

const char *chroot_missing_text(const char *servers) {
  const char *c = chroot_of(servers ? servers : session_servers);
  static const char pre[] = "the chroot ",
                    post[] = " of the connection string does not exist";
  size_t len = sizeof pre + strlen(c ? c : "") + sizeof post;
  char *raw = malloc(len);
  if (!raw)
    return "the chroot of the connection string does not exist";
  snprintf(raw, len, "%s%s%s", pre, c ? c : "", post);
  const char *e = esc(raw); /* the chroot may hold anything printable */
  free(raw);
  return e;
}

int utf8_seq(const unsigned char *p, uint32_t *cp) {
  unsigned char c = p[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int n;
  uint32_t v, min;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0; /* a continuation byte, 0xc0/0xc1 or 0xf5-0xff */
  }
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0; /* also stops at the terminating NUL */
    v = (v << 6) | (p[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

/* esc()'s last four results, per thread (zkr-exporter escapes on its HTTP
 * threads and on main), freed when the thread ends. */
struct esc_slots {
  char *slot[4];
  unsigned next;
};
static pthread_key_t esc_key;
static pthread_once_t esc_once = PTHREAD_ONCE_INIT;
static void esc_slots_free(void *p) {
  struct esc_slots *e = p;
  for (int i = 0; i < 4; i++)
    free(e->slot[i]);
  free(e);
}
static void esc_key_make(void) {
  pthread_key_create(&esc_key, esc_slots_free);
}

const char *esc(const char *s) {
  if (!s)
    return "(null)";
  pthread_once(&esc_once, esc_key_make);
  struct esc_slots *e = pthread_getspecific(esc_key);
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e || pthread_setspecific(esc_key, e) != 0) {
      free(e);
      return "(out of memory)";
    }
  }
  size_t len = strlen(s);
  char *out = malloc(len * 4 + 1);
  if (!out)
    return "(out of memory)";
  size_t k = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n = utf8_seq(p, &cp);
    if (n > 0 && cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f) && cp != '\\') {
      memcpy(out + k, p, (size_t)n);
      k += (size_t)n;
      p += n;
      continue;
    }
    if (n == 0)
      n = 1; /* one invalid byte */
    for (int i = 0; i < n; i++, p++) {
      if (*p == '\n' || *p == '\t' || *p == '\r' || *p == '\\') {
        out[k++] = '\\';
        out[k++] = *p == '\n'   ? 'n'
                   : *p == '\t' ? 't'
                   : *p == '\r' ? 'r'
                                : '\\';
      } else {
        snprintf(out + k, 5, "\\x%02x", *p);
        k += 4;
      }
    }
  }
  out[k] = '\0';
  free(e->slot[e->next % 4]);
  e->slot[e->next++ % 4] = out;
  return out;
}

void json_string(FILE *f, const char *s) {
  fputc('"', f);
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    uint32_t cp;
    int n = utf8_seq(p, &cp);
    if (n == 0) {
      fprintf(f, "\\u%04x", *p++); /* not UTF-8: the byte, as Latin-1 */
    } else if (cp == '"' || cp == '\\') {
      fprintf(f, "\\%c", (int)cp);
      p++;
    } else if (cp == '\n' || cp == '\t' || cp == '\r' || cp == '\b' ||
               cp == '\f') {
      fprintf(f, "\\%c",
              cp == '\n'   ? 'n'
              : cp == '\t' ? 't'
              : cp == '\r' ? 'r'
              : cp == '\b' ? 'b'
                           : 'f');
      p++;
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      fprintf(f, "\\u%04x", (unsigned)cp);
      p += n;
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

int parse_owner(const char *data, struct owner *o) {
  memset(o, 0, sizeof *o);
  if (!data || strncmp(data, "host=", 5) != 0)
    return 0;
  const char *h = data + 5, *sp = strchr(h, ' ');
  if (!sp || (size_t)(sp - h) >= sizeof o->host)
    return 0;
  memcpy(o->host, h, (size_t)(sp - h));
  if (strncmp(sp + 1, "pid=", 4) != 0)
    return 0;
  char *end;
  errno = 0;
  o->pid = strtol(sp + 5, &end, 10);
  if (errno || end == sp + 5)
    return 0;
  if (*end == '\0')
    return 1;
  if (strncmp(end, " id=", 4) != 0)
    return 0;
  /* cut to fit between two UTF-8 characters, not inside one */
  const char *id = end + 4;
  size_t n = strlen(id);
  if (n >= sizeof o->id) {
    n = sizeof o->id - 1;
    while (n > 0 && ((unsigned char)id[n] & 0xc0) == 0x80)
      n--;
  }
  memcpy(o->id, id, n);
  o->id[n] = '\0';
  return 1;
}

void json_owner(FILE *f, const struct owner *o) {
  fprintf(f, ",\"host\":");
  json_string(f, o->host);
  fprintf(f, ",\"pid\":%ld,\"id\":", o->pid);
  json_string(f, o->id);
}

/* ---- the tools that run a COMMAND ---- */

int verbose;

void msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

const char *why_failed(zkr_session *s, int rc) {
  if (rc == ZKR_ENONODE && chroot_missing(s, NULL, 5000))
    return chroot_missing_text(NULL);
  return zkr_strerror(rc);
}

/* Does the node @p exist (its children can be listed, or reading them is
 * refused)? 1, 0, or -1 when that cannot be told. */
static int node_exists(zkr_session *s, const char *p) {
  char **kids = NULL;
  size_t n = 0;
  int rc = zkr_session_children(s, p, 5000, &kids, &n);
  if (rc == ZKR_OK)
    zkr_children_free(kids, n);
  return rc == ZKR_OK || rc == ZKR_ENOAUTH ? 1 : rc == ZKR_ENONODE ? 0 : -1;
}

/* The node whose ACL refused a create below @path (or below @path/@sub):
 * the deepest of them, and of @path's ancestors, that exists. Into @buf;
 * NULL if it cannot be told. */
static const char *refusing_node(zkr_session *s, const char *path,
                                 const char *sub, char *buf, size_t len) {
  if (sub) {
    snprintf(buf, len, "%s/%s", path, sub);
    int e = node_exists(s, buf);
    if (e != 0)
      return e > 0 ? buf : NULL;
  }
  snprintf(buf, len, "%s", path);
  for (;;) {
    int e = node_exists(s, buf);
    if (e != 0)
      return e > 0 ? buf : NULL;
    char *slash = strrchr(buf, '/');
    if (!slash)
      return NULL;
    if (slash == buf) {
      if (!buf[1])
        return NULL;
      buf[1] = '\0'; /* then "/" itself */
    } else {
      *slash = '\0';
    }
  }
}

/* Is @name a contender node whose recipe marker is @marker, right before
 * its 10-digit sequence number? */
static int marked(const char *name, const char *marker) {
  size_t n = strlen(name), m = strlen(marker);
  if (n < m + 10)
    return 0;
  for (size_t i = n - 10; i < n; i++)
    if (name[i] < '0' || name[i] > '9')
      return 0;
  return strncmp(name + n - 10 - m, marker, m) == 0;
}

/* 32 lower-case hex digits and nothing else? */
static int hex32(const char *name) {
  size_t i = 0;
  for (; name[i]; i++)
    if (!((name[i] >= '0' && name[i] <= '9') ||
          (name[i] >= 'a' && name[i] <= 'f')))
      return 0;
  return i == 32;
}

/* What the children of @path show it holds, for a ZKR_EFOREIGN message. */
static const char *layout_found(zkr_session *s, const char *path, char *buf,
                                size_t len) {
  char **kids = NULL;
  size_t n = 0;
  if (zkr_session_children(s, path, 5000, &kids, &n) != ZKR_OK)
    return NULL;
  int sem = 0, rw = 0, mutex = 0, lease = 0, latch = 0;
  const char *other = NULL;
  for (size_t i = 0; i < n; i++) {
    const char *k = kids[i];
    if (strcmp(k, "locks") == 0 || strcmp(k, "leases") == 0)
      sem = 1;
    else if (marked(k, "__READ__") || marked(k, "__WRIT__") ||
             marked(k, "__rlock__") || marked(k, "__lock__"))
      rw = 1;
    else if (marked(k, "-lock-"))
      mutex = 1;
    else if (marked(k, "-lease-") || hex32(k))
      lease = 1; /* (kazoo's lease nodes: a uuid's 32 hex digits) */
    else if (marked(k, "latch-"))
      latch = 1;
    else if (!other)
      other = k;
  }
  const char *what =
      sem      ? "a semaphore's (children locks and leases)"
      : lease  ? "kazoo's semaphore (lease nodes right under the path)"
      : rw     ? "a read-write lock's nodes"
      : mutex  ? "a mutex's nodes"
      : latch  ? "an election's nodes"
      : other  ? NULL
      : n == 0 ? "kazoo's semaphore (a number in the path's data)"
               : NULL;
  if (what)
    snprintf(buf, len, "found %s", what);
  else if (other)
    snprintf(buf, len, "found the node %s", esc(other));
  zkr_children_free(kids, n);
  return what || other ? buf : NULL;
}

const char *why_acquire_failed(zkr_session *s, int rc, const char *path,
                               const char *sub) {
  static char out[2600];
  char buf[1200];
  if (rc == ZKR_ENOAUTH) {
    const char *node = refusing_node(s, path, sub, buf, sizeof buf);
    if (node) {
      snprintf(out, sizeof out,
               "not authorized by the ACL of %s (it refused a node under it)",
               esc(node));
      return out;
    }
  } else if (rc == ZKR_EFOREIGN) {
    const char *found = layout_found(s, path, buf, sizeof buf);
    if (found) {
      snprintf(out, sizeof out, "%s: %s", zkr_strerror(rc), found);
      return out;
    }
  }
  return why_failed(s, rc);
}

int exit_for(int rc) {
  if (rc == ZKR_ESESSIONLOST || rc == ZKR_ECONNLOSS)
    return EX_TEMPFAIL;
  if (rc == ZKR_ENOAUTH || rc == ZKR_ENONODE || rc == ZKR_EZK ||
      rc == ZKR_EEPHEMERAL || rc == ZKR_EFOREIGN)
    return EX_UNAVAILABLE;
  return EX_SOFTWARE;
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

/* The signals the tools take over. */
static const int handled[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                              SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};
#define NHANDLED (sizeof handled / sizeof handled[0])

static int wake_pipe[2] = {-1, -1};
static int signal_fd = -1;

/* Which handled signals were ignored at start: they stay ignored, in the
 * tool and in COMMAND. */
static int ignored_at_start[NHANDLED];

int signals_setup(sigset_t *oldmask) {
  sigset_t mask;
  sigemptyset(&mask);
  for (size_t i = 0; i < NHANDLED; i++) {
    struct sigaction sa;
    ignored_at_start[i] =
        sigaction(handled[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    if (handled[i] == SIGCHLD && ignored_at_start[i])
      signal(SIGCHLD, SIG_DFL); /* else children are reaped unseen */
    else if (ignored_at_start[i])
      continue; /* ignored at start: stays ignored */
    sigaddset(&mask, handled[i]);
  }
  /* Also SIGTTOU (not taken): the tool may write its messages while
   * COMMAND's group has the terminal, even with tostop set. */
  sigset_t blocked = mask;
  sigaddset(&blocked, SIGTTOU);
  if (sigprocmask(SIG_BLOCK, &blocked, oldmask) != 0) {
    msg("sigprocmask: %s", strerror(errno));
    return -1;
  }
  signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0 || pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    msg("signalfd/pipe: %s", strerror(errno));
    return -1;
  }
  return signal_fd;
}

/* In COMMAND, before exec: the dispositions and mask the tool started
 * with (ignored stays ignored, the rest default). */
static void restore_signals(const sigset_t *oldmask) {
  for (size_t i = 0; i < NHANDLED; i++)
    signal(handled[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
  sigprocmask(SIG_SETMASK, oldmask, NULL);
}

void wake(void) {
  char c = 1;
  ssize_t w = write(wake_pipe[1], &c, 1);
  (void)w; /* a full pipe already wakes the loop */
}

int wake_fd(void) {
  return wake_pipe[0];
}

void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0)
    ;
}

int take_signal(int sfd) {
  struct signalfd_siginfo si;
  int got = 0;
  while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD || sig == SIGALRM || sig == SIGUSR1 || sig == SIGUSR2)
      continue; /* nothing to forward to yet */
    if (!got)
      got = sig;
  }
  return got;
}

int die_by_signal(int sig) {
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  raise(sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  return 128 + sig;
}

static void on_session(zkr_session *s, zkr_session_event ev, int64_t sid,
                       void *ud) {
  (void)s;
  (void)ud;
  if (ev != ZKR_EV_CLOSED)
    msg("ZooKeeper session 0x%llx: %s", (unsigned long long)sid,
        zkr_session_event_name(ev));
}

/* A connection being made on a thread of its own. */
struct connecting {
  zkr_session *s;
  const char *servers;
  zkr_session_opts *so;
  int rc;
  atomic_int done;
};

static void *connect_main(void *arg) {
  struct connecting *c = arg;
  c->rc = zkr_session_new(&c->s, c->servers, c->so);
  atomic_store(&c->done, 1);
  return NULL;
}

int session_new_interruptible(zkr_session **s, const char *servers,
                              zkr_session_opts *so, int (*wait_signal)(void *),
                              void *ud, int *sig) {
  static struct connecting c; /* outlives us if a signal comes first */
  c.s = NULL;
  c.servers = servers;
  c.so = so;
  c.rc = ZKR_ESYS;
  atomic_store(&c.done, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, connect_main, &c) != 0)
    return zkr_session_new(s, servers, so);
  while (!atomic_load(&c.done)) {
    int got = wait_signal(ud);
    if (got > 0) {
      *sig = got;
      pthread_detach(t);
      return ZKR_ECANCELED;
    }
  }
  pthread_join(t, NULL);
  *s = c.s;
  return c.rc;
}

int session_signal;

/* For session_new_interruptible(): a signal from signals_setup()'s
 * signalfd within 50 ms, or 0. */
static int signalfd_wait(void *ud) {
  (void)ud;
  struct pollfd pf = {signal_fd, POLLIN, 0};
  if (poll(&pf, 1, 50) > 0 && (pf.revents & POLLIN))
    return take_signal(signal_fd);
  return 0;
}

int run_session(const struct run_opts *o, int renew, zkr_session **out) {
  if (verbose > 1)
    zkr_set_log_hook(zkr_log_stderr, verbose > 2 ? ZKR_LOG_INFO : ZKR_LOG_WARN,
                     NULL);
  if (o->acl_creator && !o->auth)
    usage_error("--acl creator needs --auth USER:PASSWORD: the nodes get "
                "every right for those credentials only");
  zkr_session_opts *so = NULL;
  int rc = zkr_session_opts_new(&so);
  if (rc == ZKR_OK && o->auth)
    rc = zkr_session_opts_add_auth(so, "digest", o->auth);
  if (rc == ZKR_OK && o->acl_creator)
    rc = zkr_session_opts_set_acl(so, ZKR_ACL_CREATOR);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_session_timeout(so, (int)o->session_ms);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_connect_timeout(so, (int)o->connect_ms);
  if (rc == ZKR_OK && !renew)
    rc = zkr_session_opts_set_renew(so, 0);
  if (rc != ZKR_OK) {
    msg("%s", zkr_strerror(rc));
    zkr_session_opts_free(so);
    return EX_SOFTWARE;
  }
  *out = NULL;
  session_servers = o->servers;
  rc = signal_fd < 0
           ? zkr_session_new(out, o->servers, so)
           : session_new_interruptible(out, o->servers, so, signalfd_wait, NULL,
                                       &session_signal);
  if (rc == ZKR_ECANCELED)
    return 128 + session_signal; /* (so stays with the connecting thread) */
  zkr_session_opts_free(so);
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(o->servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    msg("cannot reach ZooKeeper at %s: %s", o->servers, zkr_strerror(rc));
    return rc == ZKR_ENOMEM ? EX_SOFTWARE : EX_UNAVAILABLE;
  }
  if (verbose)
    zkr_session_add_listener(*out, on_session, NULL, NULL);
  return 0;
}

/* Built before fork. */
char **child_env(const char *node_var, int64_t token, const char *node) {
  size_t n = 0, vl = strlen(node_var);
  while (environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(environ[i], "ZKR_FENCING_TOKEN=", 18) == 0 ||
        (strncmp(environ[i], node_var, vl) == 0 && environ[i][vl] == '='))
      continue;
    env[k++] = environ[i];
  }
  char *t = malloc(64);
  size_t nl = vl + strlen(node) + 2;
  char *p = malloc(nl);
  if (!t || !p) {
    free(t);
    free(p);
    free(env);
    return NULL;
  }
  snprintf(t, 64, "ZKR_FENCING_TOKEN=%lld", (long long)token);
  snprintf(p, nl, "%s=%s", node_var, node);
  env[k++] = t;
  env[k++] = p;
  env[k] = NULL;
  return env;
}

/* Frees what child_env() allocated: the array and its last two entries. */
void free_env(char **env) {
  size_t n = 0;
  while (env[n])
    n++;
  free(env[n - 1]);
  free(env[n - 2]);
  free(env);
}

/* ---- the guard process between the tool and COMMAND ---- */

enum { GUARD_PID = 1, GUARD_STATUS = 2 };
struct guard_msg {
  int32_t kind;
  int32_t value;
};

static int write_msg(int fd, int kind, int value) {
  struct guard_msg gm = {kind, value};
  return write(fd, &gm, sizeof gm) == (ssize_t)sizeof gm;
}

/* Blocking read of one message; 0 at EOF (the guard is gone). */
static int read_msg(int fd, struct guard_msg *gm) {
  size_t got = 0;
  while (got < sizeof *gm) {
    ssize_t r = read(fd, (char *)gm + got, sizeof *gm - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    got += (size_t)r;
  }
  return 1;
}

/* Signal COMMAND's whole process group. */
static void signal_group(pid_t leader, int sig) {
  if (leader > 0)
    kill(-leader, sig);
}

/* Make @pgrp the foreground process group of @tty, from a process that
 * may be in the background (SIGTTOU blocked meanwhile). */
static void set_foreground(int tty, pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  if (tcsetpgrp(tty, pgrp) != 0 && verbose)
    msg("cannot give the terminal to process group %ld: %s", (long)pgrp,
        strerror(errno));
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * The guard: starts COMMAND as the leader of a new process group, tells
 * the tool its pid, and waits for either COMMAND's end (then tells the
 * tool its status) or the tool's death (EOF on @life: then SIGKILLs
 * COMMAND's group). The handled signals stay blocked here, so neither a
 * signal meant for the tool nor one from the terminal ends the guard.
 * If the guard itself is SIGKILLed, COMMAND (its direct child, through
 * PR_SET_PDEATHSIG) dies with it and the tool kills the rest of the group.
 */
static void run_guard(const struct run_cmd *rc, int life, int stp) {
  char **cmd = rc->cmd;
  pid_t me = getpid();
  /* The terminal: hand it to COMMAND's group if ours has it. */
  int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  int handoff = tty >= 0 && tcgetpgrp(tty) == getpgrp();
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int cfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
    write_msg(stp, GUARD_PID, -1);
    write_msg(stp, GUARD_STATUS, EX_SOFTWARE << 8);
    _exit(0);
  }
  if (child == 0) {
    setpgid(0, 0);
    if (handoff)
      set_foreground(tty, getpid());
#ifdef __linux__
    /* If the guard dies (even by SIGKILL), COMMAND dies with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != me)
      _exit(EX_TEMPFAIL);
#endif
    if (tty >= 0)
      close(tty);
    restore_signals(rc->oldmask);
    environ = rc->env;
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", prog, cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  setpgid(child, child); /* as the child does: whichever runs first */
  write_msg(stp, GUARD_PID, child);
  int status = 0, done = 0;
  while (!done) {
    struct pollfd pf[2] = {{life, POLLIN, 0}, {cfd, POLLIN, 0}};
    if (poll(pf, 2, cfd < 0 ? 100 : -1) < 0 && errno != EINTR)
      break;
    if (pf[1].revents) {
      struct signalfd_siginfo si;
      while (read(cfd, &si, sizeof si) == (ssize_t)sizeof si)
        ;
    }
    pid_t w;
    while ((w = waitpid(child, &status, WNOHANG | WUNTRACED)) == child) {
      if (WIFSTOPPED(status)) {
        /* COMMAND must not be suspended (^Z) while it holds the lock or
         * leads: continue it. */
        fprintf(stderr, "%s: %s was stopped by %s while it %s; continuing it\n",
                prog, cmd[0], strsignal(WSTOPSIG(status)), rc->holding);
        signal_group(child, SIGCONT);
        continue;
      }
      done = 1;
      break;
    }
    if (!done && pf[0].revents) {
      /* The tool is gone: its lock or leadership goes with its session,
       * so COMMAND's group must not go on. */
      signal_group(child, SIGKILL);
      waitpid(child, &status, 0);
      done = 1;
    }
  }
  if (handoff)
    set_foreground(tty, getpgrp());
  write_msg(stp, GUARD_STATUS, status);
  _exit(0);
}

int run_command(struct run_cmd *rc) {
  char **cmd = rc->cmd;
  rc->lost = 0;
  rc->forwarded = 0;
  int life[2], stp[2];
  if (pipe2(life, O_CLOEXEC) != 0) {
    msg("pipe: %s", strerror(errno));
    return EX_SOFTWARE;
  }
  if (pipe2(stp, O_CLOEXEC) != 0) {
    msg("pipe: %s", strerror(errno));
    close(life[0]);
    close(life[1]);
    return EX_SOFTWARE;
  }
  fflush(NULL);
  pid_t guard = fork();
  if (guard < 0) {
    msg("fork: %s", strerror(errno));
    close(life[0]);
    close(life[1]);
    close(stp[0]);
    close(stp[1]);
    return EX_SOFTWARE;
  }
  if (guard == 0) {
    close(life[1]);
    close(stp[0]);
    close(rc->sfd);
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    run_guard(rc, life[0], stp[1]);
  }
  close(life[0]);
  close(stp[1]);
  struct guard_msg gm;
  pid_t child = -1; /* COMMAND, the leader of its process group */
  if (read_msg(stp[0], &gm) && gm.kind == GUARD_PID)
    child = (pid_t)gm.value;
  int status = 0, gstatus = 0, have_status = 0;
  int64_t kill_at = -1;
  for (;;) {
    pid_t w = waitpid(guard, &gstatus, WNOHANG);
    if (w == guard) {
      if (read_msg(stp[0], &gm) && gm.kind == GUARD_STATUS) {
        status = gm.value;
        have_status = 1;
      }
      break;
    }
    if (!rc->lost && rc->lost_fn(child, rc->ud)) {
      rc->lost = 1;
      signal_group(child, SIGTERM);
      kill_at = now_ms() + rc->kill_after_ms;
    }
    int wait = -1;
    if (kill_at >= 0) {
      int64_t d = kill_at - now_ms();
      if (d <= 0) {
        msg("%s did not exit %.1f s after SIGTERM: sending SIGKILL to its "
            "process group",
            cmd[0], (double)rc->kill_after_ms / 1000.0);
        signal_group(child, SIGKILL);
        kill_at = -1;
      } else {
        wait = (int)d;
      }
    }
    struct pollfd pf[2] = {{rc->sfd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
    int pr = poll(pf, 2, wait);
    if (pr < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      signal_group(child, SIGKILL);
    }
    if (pf[1].revents)
      drain(wake_pipe[0]);
    if (pf[0].revents) {
      struct signalfd_siginfo si;
      while (read(rc->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD || sig == SIGALRM)
          continue;
        /* The terminal's own signals (^C) reach COMMAND's group directly
         * when it is the foreground group; anything that reaches the
         * tool is passed on to the whole group. */
        if (verbose)
          msg("forwarding %s to %s", strsignal(sig), cmd[0]);
        signal_group(child, sig);
        if (sig != SIGUSR1 && sig != SIGUSR2)
          rc->forwarded = sig;
      }
    }
  }
  close(stp[0]);
  close(life[1]);
  if (!have_status) {
    /* The guard died without telling (it was killed): COMMAND's group
     * must not go on without a guard. */
    msg("the guard process of %s ended unexpectedly (%s %d): killing %s's "
        "process group",
        cmd[0], WIFSIGNALED(gstatus) ? "signal" : "status",
        WIFSIGNALED(gstatus) ? WTERMSIG(gstatus) : WEXITSTATUS(gstatus),
        cmd[0]);
    signal_group(child, SIGKILL);
    return EX_SOFTWARE;
  }
  return WIFEXITED(status)     ? WEXITSTATUS(status)
         : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                               : EX_SOFTWARE;
}
