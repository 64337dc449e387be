/*
 * chaosworker: one client process of scripts/chaos, the fault campaign.
 *
 *   chaosworker --servers HOSTS --recipe R --path PATH --id ID
 *               --store SOCKET --log FILE --status FILE
 *               [--session-ms MS] [--timeout-ms MS] [--permits N]
 *               [--no-lock 1]
 *
 * Through the library only, in a loop until SIGTERM (then it ends what it
 * does, releases, and exits 0):
 *   mutex    acquire; read the counter of PATH from the fenced store,
 *            pause, write it + 1 with the lock's fencing token; release
 *   write    the same with the write half of the read-write lock at PATH
 *   read     the read half: read the counter, pause, read it again; says
 *            whether its lock was still HELD after the second read
 *   semaphore one lease of a semaphore of --permits at PATH: tells the
 *            store it is inside (with its token), pauses, says whether the
 *            lease was still HELD, and leaves
 *   election a latch participant: while it leads, writes ticks (the
 *            counter + 1, fenced by the leader's token) every 20 ms; after
 *            a few it resigns (the next leader takes over)
 *
 * The store (test/fencestore.py) refuses a write whose token is below the
 * highest it accepted for that counter, and logs every request; the log
 * written here (--log) has one line per event with the CLOCK_MONOTONIC
 * time in ms first:
 *   T wait
 *   T acquired TOKEN WAIT_MS           | T failed ERRNAME WAIT_MS
 *   T write VALUE ok|stale TOKEN       | T read V1 V2 held|not-held
 *   T inside N TOKEN                   | T leave held|not-held
 *   T releasing held|not-held          (the state, just before the release)
 *   T released held|not-held ERRNAME
 *   T lead TOKEN | T unlead held|not-held
 *   T rss KB
 * --no-lock 1 (mutex only) skips the lock: the critical sections overlap,
 * which scripts/chaos --broken uses to show that its checker sees it.
 * --status gets one byte, rewritten at each change: W waiting, H holding
 * (leading), I neither: scripts/chaos picks its victims by it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static const char *servers, *recipe = "mutex", *path, *id = "w", *store_path,
                            *log_path, *status_path;
static int session_ms = 4000, timeout_ms = 20000, permits = 2;
static int no_lock; /* --no-lock 1: the checker's own check (mutex only) */
static int logfd = -1, statusfd = -1, storefd = -1;
static atomic_int stopping;
static unsigned seed;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "chaosworker %s: ", id);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void logf_(const char *fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "%lld ", (long long)now_ms());
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(logfd, buf, (size_t)n) != n)
    die("log: %s", strerror(errno));
}

static void status(char c) {
  if (pwrite(statusfd, &c, 1, 0) != 1)
    die("status: %s", strerror(errno));
}

static void rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f && fscanf(f, "%ld %ld", &pages, &res) == 2)
    logf_("rss %ld", res * (sysconf(_SC_PAGESIZE) / 1024));
  if (f)
    fclose(f);
}

/* One request to the store, one line back (without its newline). */
static void store(char *reply, size_t len, const char *fmt, ...) {
  char req[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(req, sizeof req - 1, fmt, ap);
  va_end(ap);
  req[n++] = '\n';
  if (write(storefd, req, (size_t)n) != n)
    die("store: %s", strerror(errno));
  size_t k = 0;
  for (;;) {
    char c;
    ssize_t r = read(storefd, &c, 1);
    if (r <= 0)
      die("store closed");
    if (c == '\n')
      break;
    if (k + 1 < len)
      reply[k++] = c;
  }
  reply[k] = '\0';
}

static long counter(void) {
  char r[128];
  store(r, sizeof r, "R %s", path);
  long v = 0;
  if (sscanf(r, "v %ld", &v) != 1)
    die("store: R: %s", r);
  return v;
}

static void pause_ms(int lo, int hi) {
  int ms = lo + (int)(rand_r(&seed) % (unsigned)(hi - lo + 1));
  usleep((useconds_t)ms * 1000);
}

/* ---- the signal thread: SIGTERM ends the loop and a wait in progress ---- */

static pthread_mutex_t cur_mu = PTHREAD_MUTEX_INITIALIZER;
static zkr_mutex *cur_m;
static zkr_semaphore *cur_sem;

static void *sig_main(void *arg) {
  sigset_t *set = arg;
  int sig;
  sigwait(set, &sig);
  atomic_store(&stopping, 1);
  pthread_mutex_lock(&cur_mu);
  if (cur_m)
    zkr_mutex_cancel(cur_m);
  if (cur_sem)
    zkr_semaphore_cancel(cur_sem);
  pthread_mutex_unlock(&cur_mu);
  return NULL;
}

/* ---- recipes ---- */

/* The start of an acquisition: memory now and then, the state, the log;
 * returns when it started. */
static int64_t wait_begin(long i, int rss_every) {
  if (i % rss_every == 0)
    rss();
  status('W');
  logf_("wait");
  return now_ms();
}

/* Its end: logs the failure (and pauses after one that is not a time-out
 * or a cancel) and returns 0, or logs the grant and returns 1. */
static int wait_end(int rc, int64_t t0, int64_t token) {
  if (rc != ZKR_OK) {
    status('I');
    logf_("failed %s %lld", zkr_err_name(rc), (long long)(now_ms() - t0));
    if (rc != ZKR_ETIMEDOUT && rc != ZKR_ECANCELED)
      usleep(200000);
    return 0;
  }
  status('H');
  logf_("acquired %lld %lld", (long long)token, (long long)(now_ms() - t0));
  return 1;
}

static const char *held_word(zkr_lock_state st) {
  return st == ZKR_LOCK_HELD ? "held" : "not-held";
}

static void mutex_loop(zkr_session *s, int rw, int reader) {
  zkr_mutex_options o = {0};
  o.id = id;
  zkr_mutex *m = NULL;
  zkr_rwlock *l = NULL;
  int rc;
  if (rw) {
    rc = zkr_rwlock_new(&l, s, path, &o);
    if (rc == ZKR_OK)
      m = reader ? zkr_rwlock_read_lock(l) : zkr_rwlock_write_lock(l);
  } else {
    rc = zkr_mutex_new(&m, s, path, &o);
  }
  if (rc != ZKR_OK)
    die("new: %s", zkr_err_name(rc));
  pthread_mutex_lock(&cur_mu);
  cur_m = m;
  pthread_mutex_unlock(&cur_mu);
  for (long i = 0; !atomic_load(&stopping); i++) {
    int64_t t0 = wait_begin(i, 50);
    rc = no_lock ? ZKR_OK : zkr_mutex_acquire(m, timeout_ms);
    int64_t token = rc == ZKR_OK ? zkr_hold_token(zkr_mutex_hold(m)) : 0;
    if (!wait_end(rc, t0, token))
      continue;
    if (reader) {
      long v1 = counter();
      pause_ms(5, 40);
      long v2 = counter();
      logf_("read %ld %ld %s", v1, v2, held_word(zkr_mutex_state_get(m)));
    } else {
      long v = counter();
      pause_ms(1, 20);
      char r[128];
      store(r, sizeof r, "W %s %lld %s %ld", path, (long long)token, id, v + 1);
      logf_("write %ld %s %lld", v + 1, strncmp(r, "ok", 2) ? "stale" : "ok",
            (long long)token);
    }
    zkr_lock_state st = no_lock ? ZKR_LOCK_HELD : zkr_mutex_state_get(m);
    /* the hold ends here, before the release lets the next one in */
    logf_("releasing %s", held_word(st));
    rc = no_lock ? ZKR_OK : zkr_mutex_release(m);
    status('I');
    logf_("released %s %s", held_word(st), zkr_err_name(rc));
    pause_ms(0, 30);
  }
  pthread_mutex_lock(&cur_mu);
  cur_m = NULL;
  pthread_mutex_unlock(&cur_mu);
  if (l)
    zkr_rwlock_free(l);
  else
    zkr_mutex_free(m);
}

static void semaphore_loop(zkr_session *s) {
  zkr_semaphore_options o = {0};
  o.id = id;
  zkr_semaphore *sem = NULL;
  int rc = zkr_semaphore_new(&sem, s, path, permits, &o);
  if (rc != ZKR_OK)
    die("new: %s", zkr_err_name(rc));
  pthread_mutex_lock(&cur_mu);
  cur_sem = sem;
  pthread_mutex_unlock(&cur_mu);
  for (long i = 0; !atomic_load(&stopping); i++) {
    int64_t t0 = wait_begin(i, 50);
    zkr_lease *lease = NULL;
    rc = zkr_semaphore_acquire(sem, 1, timeout_ms, &lease);
    int64_t token = rc == ZKR_OK ? zkr_hold_token(zkr_lease_hold(lease)) : 0;
    if (!wait_end(rc, t0, token))
      continue;
    char r[128];
    store(r, sizeof r, "E %s %s %lld", path, id, (long long)token);
    logf_("inside %s %lld", r, (long long)token);
    pause_ms(5, 40);
    zkr_lock_state st = zkr_lease_state_get(lease);
    store(r, sizeof r, "X %s %s %s", path, id, held_word(st));
    logf_("leave %s", held_word(st));
    logf_("releasing %s", held_word(st));
    rc = zkr_lease_release(lease);
    zkr_lease_free(lease);
    status('I');
    logf_("released %s %s", held_word(st), zkr_err_name(rc));
    pause_ms(0, 30);
  }
  pthread_mutex_lock(&cur_mu);
  cur_sem = NULL;
  pthread_mutex_unlock(&cur_mu);
  zkr_semaphore_free(sem);
}

static void election_loop(zkr_session *s) {
  zkr_election_options o = {0};
  o.id = id;
  zkr_election *e = NULL;
  int rc = zkr_election_new(&e, s, path, &o);
  if (rc != ZKR_OK)
    die("new: %s", zkr_err_name(rc));
  rc = zkr_election_start(e);
  if (rc != ZKR_OK)
    die("start: %s", zkr_err_name(rc));
  status('W');
  logf_("wait");
  int64_t t0 = now_ms();
  for (long i = 0; !atomic_load(&stopping); i++) {
    if (i % 200 == 0)
      rss();
    rc = zkr_election_await(e, 200);
    if (rc == ZKR_ETIMEDOUT)
      continue;
    if (rc != ZKR_OK) {
      logf_("failed %s %lld", zkr_err_name(rc), (long long)(now_ms() - t0));
      usleep(200000);
      continue;
    }
    int64_t token = zkr_hold_token(zkr_election_hold(e));
    status('H');
    logf_("acquired %lld %lld", (long long)token, (long long)(now_ms() - t0));
    logf_("lead %lld", (long long)token);
    int ticks = 5 + (int)(rand_r(&seed) % 20);
    for (int k = 0; k < ticks && !atomic_load(&stopping); k++) {
      if (!zkr_election_is_leader(e))
        break;
      long v = counter();
      char r[128];
      store(r, sizeof r, "W %s %lld %s %ld", path, (long long)token, id, v + 1);
      logf_("write %ld %s %lld", v + 1, strncmp(r, "ok", 2) ? "stale" : "ok",
            (long long)token);
      usleep(20000);
    }
    int still = zkr_election_is_leader(e);
    logf_("unlead %s", still ? "held" : "not-held");
    if (still)
      zkr_election_resign(e);
    status('W');
    logf_("released %s %s", still ? "held" : "not-held", "ZKR_OK");
    logf_("wait");
    t0 = now_ms();
  }
  zkr_election_free(e);
}

/* A decimal int option value, or die. */
static int num(const char *opt, const char *v) {
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < INT_MIN || n > INT_MAX)
    die("%s: not a number: %s", opt, v);
  return (int)n;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      die("%s needs a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--servers"))
      servers = v;
    else if (!strcmp(a, "--recipe"))
      recipe = v;
    else if (!strcmp(a, "--path"))
      path = v;
    else if (!strcmp(a, "--id"))
      id = v;
    else if (!strcmp(a, "--store"))
      store_path = v;
    else if (!strcmp(a, "--log"))
      log_path = v;
    else if (!strcmp(a, "--status"))
      status_path = v;
    else if (!strcmp(a, "--session-ms"))
      session_ms = num(a, v);
    else if (!strcmp(a, "--timeout-ms"))
      timeout_ms = num(a, v);
    else if (!strcmp(a, "--permits"))
      permits = num(a, v);
    else if (!strcmp(a, "--no-lock"))
      no_lock = num(a, v);
    else
      die("unknown option %s", a);
  }
  if (!servers || !path || !store_path || !log_path || !status_path)
    die("--servers, --path, --store, --log and --status are needed");
  seed = (unsigned)getpid() ^ (unsigned)now_ms();
  logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  statusfd = open(status_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (logfd < 0 || statusfd < 0)
    die("log/status: %s", strerror(errno));
  status('I');

  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", store_path);
  storefd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (storefd < 0 || connect(storefd, (struct sockaddr *)&sa, sizeof sa) != 0)
    die("store %s: %s", store_path, strerror(errno));
  char hello[128];
  store(hello, sizeof hello, "H %s %ld", id, (long)getpid());

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  pthread_t th;
  pthread_create(&th, NULL, sig_main, &set);

  zkr_session_options so = {0};
  so.session_timeout_ms = session_ms;
  so.connect_timeout_ms = 60000;
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, servers, &so);
  if (rc != ZKR_OK)
    die("session: %s", zkr_err_name(rc));
  logf_("start %s %ld", recipe, (long)getpid());

  if (!strcmp(recipe, "mutex"))
    mutex_loop(s, 0, 0);
  else if (!strcmp(recipe, "write"))
    mutex_loop(s, 1, 0);
  else if (!strcmp(recipe, "read"))
    mutex_loop(s, 1, 1);
  else if (!strcmp(recipe, "semaphore"))
    semaphore_loop(s);
  else if (!strcmp(recipe, "election"))
    election_loop(s);
  else
    die("unknown recipe %s", recipe);

  zkr_session_close(s);
  logf_("exit");
  status('I');
  return 0;
}
