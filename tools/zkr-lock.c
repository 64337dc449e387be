/*
 * zkr-lock - run a command while holding a zkr mutex: flock(1) across
 * machines. With --read (--shared) or --write (--exclusive), the read or
 * the write side of the read-write lock at PATH instead; with --permits N,
 * one of the N leases of the counting semaphore at PATH.
 *
 *   zkr-lock [options] PATH [--] COMMAND [ARG...]
 *
 * The main thread blocks the signals it handles before any library thread
 * exists (so every thread inherits the mask) and takes them from a
 * signalfd; the library's callbacks (acquisition result, lock state) write
 * one byte to a pipe. One poll() loop serves both, first while waiting for
 * the lock, then while COMMAND runs. Signals ignored when zkr-lock starts
 * (nohup's SIGHUP, a background job's SIGINT) are not taken: they stay
 * ignored, in zkr-lock and in COMMAND.
 *
 * COMMAND runs in a process group of its own, under a small guard process:
 *
 *   zkr-lock --fork--> guard --fork--> COMMAND (process group leader)
 *            life pipe:  the guard reads EOF when zkr-lock dies, however
 *                        it dies (SIGKILL too), and SIGKILLs the group
 *            status pipe: the guard tells COMMAND's pid, then its status
 *
 * so that on a lock loss zkr-lock signals the whole group (COMMAND's
 * background children too), and on zkr-lock's death the guard does. When
 * zkr-lock is in the foreground of its terminal, COMMAND's group is made
 * the terminal's foreground group (so ^C reaches it) and zkr-lock's is
 * made the foreground again when COMMAND ends.
 *
 * Exit status: COMMAND's (128+N if a signal N ended it); 1, or the
 * -E value, when the lock was not acquired in time; 64 usage; 69 no server
 * reachable; 70 internal error; 75 the lock was lost (while waiting: the
 * session ended; while COMMAND ran: COMMAND was terminated); 126/127
 * COMMAND could not be run. A signal that ends the wait ends zkr-lock with
 * that signal after it left the queue.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
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

#include <zkr/zkr.h>

#include "cli.h"

#define EX_CONFLICT_DEFAULT 1
#define EX_SOFTWARE 70
#define EX_TEMPFAIL 75

extern char **environ;

const char *prog = "zkr-lock";
static int verbose;

/* The signals zkr-lock takes over. */
static const int handled[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                              SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};

static int wake_pipe[2] = {-1, -1};

/* Which handled signals were ignored when zkr-lock started. */
static int ignored_at_start[sizeof handled / sizeof handled[0]];

static void note_ignored(void) {
  for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
    struct sigaction sa;
    ignored_at_start[i] =
        sigaction(handled[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
  }
}

/* In COMMAND, before exec: the dispositions and mask zkr-lock started
 * with (ignored stays ignored, the rest default). */
static void restore_signals(const sigset_t *oldmask) {
  for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
    signal(handled[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
  sigprocmask(SIG_SETMASK, oldmask, NULL);
}

/* Written by library callbacks (event thread), read by the main thread
 * after a wake-up byte. */
static atomic_int acquire_done;
static atomic_int acquire_rc;
static atomic_int state_changed;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", prog, buf);
}

/* The lock zkr-lock takes, whatever its kind: the mutex at PATH, one
 * side of the read-write lock at PATH (--read, --write), or one lease of
 * the semaphore at PATH (--permits). The rest of zkr-lock sees only the
 * lock_* functions below. */
static struct {
  int side;     /* 'r', 'w', or 0 */
  long permits; /* --permits N: the semaphore; 0 otherwise */
  zkr_mutex_opts *mo;
  zkr_semaphore_opts *so;
  zkr_mutex *m; /* the mutex, or the side of rw taken */
  zkr_rwlock *rw;
  zkr_semaphore *sem;
  zkr_lease *lease[1]; /* filled by the semaphore's acquisition */
} lk;

static void on_acquired(void *lock, int rc, void *ud);
static void on_state(void *lock, zkr_lock_state st, void *ud);

static void on_sem_acquired(zkr_semaphore *sem, int rc, zkr_lease **leases,
                            int n, void *ud) {
  (void)leases;
  (void)n;
  on_acquired(sem, rc, ud);
}

/* The options: the contender id and the state callback. ZKR_EINVAL: the
 * id is not valid. */
static int lock_opts_new(const char *id) {
  int rc;
  if (lk.permits) {
    rc = zkr_semaphore_opts_new(&lk.so);
    if (rc == ZKR_OK)
      rc = zkr_semaphore_opts_set_id(lk.so, id);
    if (rc == ZKR_OK)
      rc = zkr_semaphore_opts_set_state_fn(lk.so, on_state, NULL);
    if (rc == ZKR_OK)
      rc = zkr_semaphore_opts_set_watch_node(lk.so, 1);
    return rc;
  }
  rc = zkr_mutex_opts_new(&lk.mo);
  if (rc == ZKR_OK)
    rc = zkr_mutex_opts_set_id(lk.mo, id);
  if (rc == ZKR_OK)
    rc = zkr_mutex_opts_set_state_fn(lk.mo, on_state, NULL);
  if (rc == ZKR_OK)
    rc = zkr_mutex_opts_set_watch_node(lk.mo, 1);
  return rc;
}

static void lock_opts_free(void) {
  zkr_mutex_opts_free(lk.mo);
  zkr_semaphore_opts_free(lk.so);
  lk.mo = NULL;
  lk.so = NULL;
}

/* The lock object, with the options (freed here). */
static int lock_new(zkr_session *s, const char *path) {
  int rc;
  if (lk.permits) {
    rc = zkr_semaphore_new(&lk.sem, s, path, (int)lk.permits, lk.so);
  } else if (lk.side) {
    rc = zkr_rwlock_new(&lk.rw, s, path, lk.mo);
    if (rc == ZKR_OK)
      lk.m = lk.side == 'r' ? zkr_rwlock_read_lock(lk.rw)
                            : zkr_rwlock_write_lock(lk.rw);
  } else {
    rc = zkr_mutex_new(&lk.m, s, path, lk.mo);
  }
  lock_opts_free();
  return rc;
}

static int lock_acquire_async(int64_t timeout_ms) {
  if (lk.sem)
    return zkr_semaphore_acquire_async(lk.sem, 1, timeout_ms, lk.lease,
                                       on_sem_acquired, NULL);
  return zkr_mutex_acquire_async(lk.m, timeout_ms, on_acquired, NULL);
}

static void lock_cancel(void) {
  if (lk.sem)
    zkr_semaphore_cancel(lk.sem);
  else
    zkr_mutex_cancel(lk.m);
}

/* What -v says while waiting, into @buf; NULL when there is nothing new
 * to tell. The mutex's count of contenders ahead costs no request; the
 * semaphore has no such count (a waiter waits for the admission mutex or,
 * once admitted, for any lease to go). */
static const char *lock_waiting(char *buf, size_t len) {
  if (lk.sem) {
    snprintf(buf, len, "no lease free of %ld", lk.permits);
    return buf;
  }
  int ahead = zkr_mutex_waiters_ahead(lk.m);
  if (ahead < 0)
    return NULL;
  snprintf(buf, len, "%d ahead", ahead);
  return buf;
}

static int64_t lock_token(void) {
  return lk.sem ? zkr_lease_fencing_token(lk.lease[0])
                : zkr_mutex_fencing_token(lk.m);
}

static int lock_node(char *buf, size_t len) {
  return lk.sem ? zkr_lease_node(lk.lease[0], buf, len)
                : zkr_mutex_node(lk.m, buf, len);
}

static zkr_lock_state lock_state(void) {
  return lk.sem ? zkr_lease_state_get(lk.lease[0]) : zkr_mutex_state_get(lk.m);
}

static int lock_release(void) {
  if (!lk.sem)
    return zkr_mutex_release(lk.m);
  int rc = zkr_lease_release(lk.lease[0]);
  lk.lease[0] = NULL;
  return rc;
}

/* Free the lock object; a node still held or queued is deleted. */
static void lock_free(void) {
  if (lk.sem)
    zkr_semaphore_free(lk.sem); /* with a lease not released */
  else if (lk.rw)
    zkr_rwlock_free(lk.rw);
  else
    zkr_mutex_free(lk.m);
  lk.sem = NULL;
  lk.rw = NULL;
  lk.m = NULL;
}

/* "lock" or "lease", for messages. */
static const char *lock_noun(void) {
  return lk.permits ? "lease" : "lock";
}

static void help(void) {
  printf(
      "Usage: %s [options] PATH [--] COMMAND [ARG...]\n"
      "Run COMMAND while holding the zkr mutex at the ZooKeeper path PATH;\n"
      "exit with COMMAND's exit status.\n"
      "\n"
      "  -r, --read, --shared       take the read side of the read-write lock\n"
      "                             at PATH: readers run together\n"
      "  -w, --write, --exclusive   take its write side: alone, after the\n"
      "                             readers and writers queued before\n"
      "      --permits N            take one of the N leases of the semaphore\n"
      "                             at PATH instead: up to N run at once\n"
      "                             (1 to %d; every user of PATH must give\n"
      "                             the same N)\n"
      "  -s, --servers HOSTS        ZooKeeper connection string (default:\n"
      "                             $ZKR_SERVERS, else 127.0.0.1:2181)\n"
      "  -t, --timeout SECONDS      wait at most SECONDS for the lock (0: try\n"
      "                             once); default: wait without limit\n"
      "  -E, --conflict-exit-code N exit status when the lock is not\n"
      "                             acquired in time (default 1)\n"
      "      --session-timeout MS   ZooKeeper session timeout, 100 to\n"
      "                             1073741823 (default 10000)\n"
      "      --connect-timeout MS   how long to try to reach a server\n"
      "                             (default 10000; then exit 69)\n"
      "      --id TEXT              contender id stored in the lock node\n"
      "                             (default: COMMAND's name)\n"
      "      --kill-after SECONDS   if the lock is lost, SIGKILL COMMAND this\n"
      "                             long after SIGTERM (default 10)\n"
      "  -v, --verbose              progress on stderr (contenders ahead,\n"
      "                             acquired, released); -vv adds the\n"
      "                             library's warnings, -vvv its log\n"
      "  -h, --help                 this help\n"
      "  -V, --version              print the zkr version\n"
      "\n"
      "COMMAND gets ZKR_FENCING_TOKEN and ZKR_LOCK_NODE (the lease node with\n"
      "--permits) in its environment.\n"
      "Exit status: COMMAND's (128+N if signal N ended it); 1 (or -E) lock\n"
      "not acquired in time; 64 usage; 69 no server reachable; 75 lock lost\n"
      "(COMMAND was terminated); 126/127 COMMAND could not be run.\n",
      prog, ZKR_SEMAPHORE_MAX);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(void) {
  char c = 1;
  ssize_t w = write(wake_pipe[1], &c, 1);
  (void)w; /* a full pipe already wakes the loop */
}

static void on_acquired(void *lock, int rc, void *ud) {
  (void)lock;
  (void)ud;
  acquire_rc = rc;
  acquire_done = 1;
  wake();
}

static void on_state(void *lock, zkr_lock_state st, void *ud) {
  (void)lock;
  (void)st;
  (void)ud;
  state_changed = 1;
  wake();
}

static void on_session(zkr_session *s, zkr_session_event ev, int64_t sid,
                       void *ud) {
  (void)s;
  (void)ud;
  if (ev != ZKR_EV_CLOSED)
    msg("ZooKeeper session 0x%llx: %s", (unsigned long long)sid,
        zkr_session_event_name(ev));
}

static void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0)
    ;
}

/* The environment for COMMAND: ours without any ZKR_FENCING_TOKEN or
 * ZKR_LOCK_NODE, plus the two for this acquisition. Built before fork. */
static char **child_env(int64_t token, const char *node) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(environ[i], "ZKR_FENCING_TOKEN=", 18) == 0 ||
        strncmp(environ[i], "ZKR_LOCK_NODE=", 14) == 0)
      continue;
    env[k++] = environ[i];
  }
  char *t = malloc(64);
  size_t nl = strlen(node) + sizeof "ZKR_LOCK_NODE=";
  char *p = malloc(nl);
  if (!t || !p) {
    free(t);
    free(p);
    free(env);
    return NULL;
  }
  snprintf(t, 64, "ZKR_FENCING_TOKEN=%lld", (long long)token);
  snprintf(p, nl, "ZKR_LOCK_NODE=%s", node);
  env[k++] = t;
  env[k++] = p;
  env[k] = NULL;
  return env;
}

/* Frees what child_env() allocated: the array and its last two entries. */
static void free_env(char **env) {
  size_t n = 0;
  while (env[n])
    n++;
  free(env[n - 1]);
  free(env[n - 2]);
  free(env);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

/* ---- the guard process between zkr-lock and COMMAND ---- */

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
 * zkr-lock its pid, and waits for either COMMAND's end (then tells
 * zkr-lock its status) or zkr-lock's death (EOF on @life: then SIGKILLs
 * COMMAND's group). The handled signals stay blocked here, so neither a
 * signal meant for zkr-lock nor one from the terminal ends the guard.
 * If the guard itself is SIGKILLed, COMMAND (its direct child, through
 * PR_SET_PDEATHSIG) dies with it and zkr-lock kills the rest of the group.
 */
static void run_guard(char **cmd, char **env, const sigset_t *oldmask, int life,
                      int stp) {
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
    restore_signals(oldmask);
    environ = env;
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
        /* A holder must not be suspended (^Z): its lock would be held
         * by a stopped process. Continue it. */
        fprintf(stderr,
                "%s: %s was stopped by %s while it holds the lock; "
                "continuing it\n",
                prog, cmd[0], strsignal(WSTOPSIG(status)));
        signal_group(child, SIGCONT);
        continue;
      }
      done = 1;
      break;
    }
    if (!done && pf[0].revents) {
      /* zkr-lock is gone: its lock goes with its session, so COMMAND's
       * group must not go on. */
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

enum { OPT_SESSION = 256, OPT_CONNECT, OPT_ID, OPT_KILL_AFTER, OPT_PERMITS };

int main(int argc, char **argv) {
  const char *servers = default_servers();
  int64_t timeout_ms = -1, kill_after_ms = 10000;
  long conflict = EX_CONFLICT_DEFAULT, session_ms = 10000, connect_ms = 10000;
  const char *id = NULL;

  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"timeout", required_argument, NULL, 't'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"session-timeout", required_argument, NULL, OPT_SESSION},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"id", required_argument, NULL, OPT_ID},
      {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {"read", no_argument, NULL, 'r'},
      {"shared", no_argument, NULL, 'r'},
      {"write", no_argument, NULL, 'w'},
      {"exclusive", no_argument, NULL, 'w'},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int c;
  /* "+": stop at the first non-option, so COMMAND's options stay its own */
  while ((c = getopt_long(argc, argv, "+:s:t:E:rwvhV", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      servers = optarg;
      break;
    case 't':
      if (parse_seconds(optarg, &timeout_ms) != 0)
        usage_error("invalid timeout '%s': seconds as a plain decimal, 0 "
                    "(try once) or at least 0.001 (1 ms)",
                    esc(optarg));
      break;
    case 'E':
      if (parse_long(optarg, 0, 255, &conflict) != 0)
        usage_error("invalid conflict exit code '%s': 0 to 255", esc(optarg));
      break;
    case OPT_SESSION:
      if (parse_long(optarg, ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX,
                     &session_ms) != 0)
        usage_error("invalid session timeout '%s': milliseconds, %d to %d",
                    esc(optarg), ZKR_SESSION_TIMEOUT_MIN,
                    ZKR_SESSION_TIMEOUT_MAX);
      break;
    case OPT_CONNECT:
      if (parse_long(optarg, 1, INT_MAX, &connect_ms) != 0)
        usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                    esc(optarg), INT_MAX);
      break;
    case OPT_ID:
      id = optarg;
      break;
    case OPT_KILL_AFTER:
      if (parse_seconds(optarg, &kill_after_ms) != 0)
        usage_error("invalid --kill-after '%s': seconds as a plain decimal, "
                    "0 or at least 0.001 (1 ms)",
                    esc(optarg));
      break;
    case 'v':
      verbose++;
      break;
    case 'h':
      help();
      return 0;
    case 'V':
      printf("zkr-lock (zkr) %s\n", zkr_version());
      return 0;
    case 'r':
    case 'w':
      if (lk.side && lk.side != c)
        usage_error("--read (--shared) and --write (--exclusive) exclude "
                    "each other");
      lk.side = c;
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &lk.permits) != 0)
        usage_error("invalid --permits '%s': the number of leases of the "
                    "semaphore, a plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    default:
      option_error(c, argv, longopts);
    }
  }
  if (lk.permits && lk.side)
    usage_error("--permits (a lease of the semaphore) and --read/--write "
                "(a side of the read-write lock) exclude each other");
  if (optind >= argc)
    usage_error("missing PATH");
  const char *path = argv[optind++];
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  if (optind >= argc)
    usage_error("missing COMMAND");
  char **cmd = argv + optind;
  if (!id)
    id = base_name(cmd[0]);

  if (verbose > 1)
    zkr_set_log_hook(zkr_log_stderr, verbose > 2 ? ZKR_LOG_INFO : ZKR_LOG_WARN,
                     NULL);

  /* Block the signals we handle before any thread exists. */
  sigset_t mask, oldmask;
  sigemptyset(&mask);
  note_ignored();
  for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
    if (handled[i] == SIGCHLD && ignored_at_start[i])
      signal(SIGCHLD, SIG_DFL); /* else children are reaped unseen */
    else if (ignored_at_start[i])
      continue; /* ignored at start: stays ignored */
    sigaddset(&mask, handled[i]);
  }
  /* Also SIGTTOU (not taken): zkr-lock may write its messages while
   * COMMAND's group has the terminal, even with tostop set. */
  sigset_t blocked = mask;
  sigaddset(&blocked, SIGTTOU);
  if (sigprocmask(SIG_BLOCK, &blocked, &oldmask) != 0) {
    msg("sigprocmask: %s", strerror(errno));
    return EX_SOFTWARE;
  }
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0 || pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    msg("signalfd/pipe: %s", strerror(errno));
    return EX_SOFTWARE;
  }

  /* Options of the lock: bad input is a usage error, before connecting. */
  int rc = lock_opts_new(id);
  if (rc == ZKR_EINVAL)
    usage_error("invalid --id '%s': 1 to 256 bytes, no control characters",
                esc(id));
  if (rc != ZKR_OK) {
    msg("%s", zkr_strerror(rc));
    lock_opts_free();
    return EX_SOFTWARE;
  }

  zkr_session_opts *so = NULL;
  rc = zkr_session_opts_new(&so);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_session_timeout(so, (int)session_ms);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_connect_timeout(so, (int)connect_ms);
  if (rc != ZKR_OK) {
    msg("%s", zkr_strerror(rc));
    zkr_session_opts_free(so);
    lock_opts_free();
    return EX_SOFTWARE;
  }
  zkr_session *s = NULL;
  rc = zkr_session_new(&s, servers, so);
  zkr_session_opts_free(so);
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    msg("cannot reach ZooKeeper at %s: %s", servers, zkr_strerror(rc));
    lock_opts_free();
    return rc == ZKR_ENOMEM ? EX_SOFTWARE : EX_UNAVAILABLE;
  }
  if (verbose)
    zkr_session_add_listener(s, on_session, NULL, NULL);
  rc = lock_new(s, path);
  if (rc != ZKR_OK) {
    zkr_session_close(s);
    if (rc == ZKR_EBADPATH)
      usage_error("invalid lock path '%s': %s", esc(path), zkr_strerror(rc));
    msg("%s", zkr_strerror(rc));
    return EX_SOFTWARE;
  }

  /* ---- wait for the lock ---- */
  int64_t t0 = now_ms();
  rc = lock_acquire_async(timeout_ms);
  if (rc != ZKR_OK) {
    msg("cannot start acquiring %s: %s", path, zkr_strerror(rc));
    lock_free();
    zkr_session_close(s);
    return rc == ZKR_ESESSIONLOST ? EX_TEMPFAIL : EX_SOFTWARE;
  }
  int got_signal = 0;
  char last_said[128] = "";
  int64_t next_report = t0 + 200, last_report = t0;
  while (!acquire_done) {
    struct pollfd pf[2] = {{sfd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
    int wait = -1;
    if (verbose && !got_signal) {
      int64_t d = next_report - now_ms();
      wait = d < 0 ? 0 : (int)d;
    }
    int pr = poll(pf, 2, wait);
    if (pr < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      break;
    }
    if (pf[1].revents)
      drain(wake_pipe[0]);
    if (pf[0].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD || sig == SIGALRM || got_signal)
          continue;
        if (sig == SIGUSR1 || sig == SIGUSR2)
          continue; /* nothing to forward to yet */
        got_signal = sig;
        if (verbose)
          msg("%s while waiting: leaving the queue", strsignal(sig));
        lock_cancel();
      }
    }
    if (verbose && !got_signal && !acquire_done && now_ms() >= next_report) {
      /* What the library knows already: reading it sends nothing to
       * ZooKeeper. */
      char buf[128];
      const char *said = lock_waiting(buf, sizeof buf);
      int64_t waited = now_ms() - t0;
      if (said && strcmp(said, last_said) != 0) {
        msg("waiting for %s: %s (%.1f s)", path, said, (double)waited / 1000.0);
        snprintf(last_said, sizeof last_said, "%s", said);
        last_report = now_ms();
      } else if (said && now_ms() - last_report >= 10000) {
        msg("still waiting for %s: %s (%.0f s)", path, said,
            (double)waited / 1000.0);
        last_report = now_ms();
      }
      next_report = now_ms() + 250;
    }
  }
  int arc = acquire_rc;
  if (got_signal || arc != ZKR_OK) {
    lock_free(); /* leaves the queue: our node is deleted */
    zkr_session_close(s);
    if (got_signal) {
      /* end the way the signal would have ended us */
      signal(got_signal, SIG_DFL);
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, got_signal);
      raise(got_signal);
      sigprocmask(SIG_UNBLOCK, &one, NULL);
      return 128 + got_signal;
    }
    if (arc == ZKR_ETIMEDOUT || arc == ZKR_EWOULDBLOCK) {
      if (verbose && lk.permits)
        msg("no lease of %s is free (%ld permits); not "
            "acquired %s",
            path, lk.permits, timeout_ms == 0 ? "(tried once)" : "in time");
      else if (verbose)
        msg("%s is held by another; not acquired %s", path,
            timeout_ms == 0 ? "(tried once)" : "in time");
      return (int)conflict;
    }
    msg("cannot acquire %s: %s", path, zkr_strerror(arc));
    if (arc == ZKR_ESESSIONLOST || arc == ZKR_ECONNLOSS)
      return EX_TEMPFAIL;
    if (arc == ZKR_ENOAUTH || arc == ZKR_ENONODE || arc == ZKR_EZK ||
        arc == ZKR_EEPHEMERAL || arc == ZKR_EFOREIGN)
      return EX_UNAVAILABLE;
    return EX_SOFTWARE;
  }

  int64_t token = lock_token();
  char node[2048];
  lock_node(node, sizeof node);
  if (verbose)
    msg("acquired %s after %.3f s (token %lld, node %s)", path,
        (double)(now_ms() - t0) / 1000.0, (long long)token, node);

  /* ---- run COMMAND ---- */
  char **env = child_env(token, node);
  if (!env) {
    msg("out of memory");
    lock_free();
    zkr_session_close(s);
    return EX_SOFTWARE;
  }
  int life[2], stp[2];
  if (pipe2(life, O_CLOEXEC) != 0 || pipe2(stp, O_CLOEXEC) != 0) {
    msg("pipe: %s", strerror(errno));
    free_env(env);
    lock_free();
    zkr_session_close(s);
    return EX_SOFTWARE;
  }
  fflush(NULL);
  pid_t guard = fork();
  if (guard < 0) {
    msg("fork: %s", strerror(errno));
    free_env(env);
    lock_free();
    zkr_session_close(s);
    return EX_SOFTWARE;
  }
  if (guard == 0) {
    close(life[1]);
    close(stp[0]);
    close(sfd);
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    run_guard(cmd, env, &oldmask, life[0], stp[1]);
  }
  close(life[0]);
  close(stp[1]);
  struct guard_msg gm;
  pid_t child = -1; /* COMMAND, the leader of its process group */
  if (read_msg(stp[0], &gm) && gm.kind == GUARD_PID)
    child = (pid_t)gm.value;
  int64_t started = now_ms();
  int status = 0, lost = 0, suspect = 0, gstatus = 0, have_status = 0;
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
    if (state_changed) {
      state_changed = 0;
      zkr_lock_state st = lock_state();
      if (st == ZKR_LOCK_LOST && !lost) {
        lost = 1;
        msg("%s %s lost while %s ran (session expired or node deleted): "
            "sending SIGTERM to its process group %ld",
            lk.permits ? "lease of" : "lock", path, cmd[0], (long)child);
        signal_group(child, SIGTERM);
        kill_at = now_ms() + kill_after_ms;
      } else if (verbose && st == ZKR_LOCK_SUSPECT && !suspect) {
        msg("connection to ZooKeeper lost; the %s may be lost", lock_noun());
      } else if (verbose && st == ZKR_LOCK_HELD && suspect) {
        msg("reconnected; the %s is still held", lock_noun());
      }
      suspect = st == ZKR_LOCK_SUSPECT;
    }
    int wait = -1;
    if (kill_at >= 0) {
      int64_t d = kill_at - now_ms();
      if (d <= 0) {
        msg("%s did not exit %.1f s after SIGTERM: sending SIGKILL to its "
            "process group",
            cmd[0], (double)kill_after_ms / 1000.0);
        signal_group(child, SIGKILL);
        kill_at = -1;
      } else {
        wait = (int)d;
      }
    }
    struct pollfd pf[2] = {{sfd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
    int pr = poll(pf, 2, wait);
    if (pr < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      signal_group(child, SIGKILL);
    }
    if (pf[1].revents)
      drain(wake_pipe[0]);
    if (pf[0].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD || sig == SIGALRM)
          continue;
        /* The terminal's own signals (^C) reach COMMAND's group directly
         * when it is the foreground group; anything that reaches
         * zkr-lock is passed on to the whole group. */
        if (verbose)
          msg("forwarding %s to %s", strsignal(sig), cmd[0]);
        signal_group(child, sig);
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
    status = 0;
  }
  free_env(env);
  int code = !have_status          ? EX_SOFTWARE
             : WIFEXITED(status)   ? WEXITSTATUS(status)
             : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                   : EX_SOFTWARE;
  /* The connection is down: wait for the verdict (reconnected: still
   * held; or lost), so that the exit status says whether COMMAND may have
   * run without the lock, and so that the release below reaches the
   * server now rather than the lock staying blocked until our session
   * expires. At most one session timeout. */
  int64_t verdict_by = now_ms() + zkr_session_timeout(s);
  while (!lost && lock_state() == ZKR_LOCK_SUSPECT && now_ms() < verdict_by) {
    struct pollfd pf = {wake_pipe[0], POLLIN, 0};
    if (poll(&pf, 1, 100) > 0)
      drain(wake_pipe[0]);
  }
  if (!lost && lock_state() == ZKR_LOCK_LOST) {
    lost = 1;
    msg("%s %s was lost while %s ran (session expired or node deleted)",
        lk.permits ? "lease of" : "lock", path, cmd[0]);
  }
  int rrc = lock_release();
  if (verbose && rrc == ZKR_OK)
    msg("released %s after %.3f s", path,
        (double)(now_ms() - started) / 1000.0);
  lock_free();
  /* Closing a connected session makes the server delete our node at once;
   * a disconnected one leaves it until the session expires. */
  if (zkr_session_state_get(s) == ZKR_STATE_SUSPENDED)
    zkr_session_wait_connected(s, zkr_session_timeout(s));
  zkr_session_close(s);
  if (lost) {
    if (verbose)
      msg("%s ended with status %d after the %s was lost", cmd[0], code,
          lock_noun());
    return EX_TEMPFAIL;
  }
  return code;
}
