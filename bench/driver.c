/*
 * driver.c - one benchmark worker process: the scenarios of scripts/bench,
 * over the lock back end of bench.h (zkr, or the raw libzookeeper floor).
 *
 *   zkr-bench|zkr-loop-bench|raw-bench MODE --servers HOSTS --path PATH
 *       [options]
 *
 * (zkr-loop-bench: the same, with zkr's callbacks run by an epoll loop;
 * its S1 and S2 cycles are driven from that loop, through b_cycles.)
 *
 * Modes (bench/CuratorBench.java and bench/kazoo_bench.py take the same):
 *   s1      acquire+release --cycles N times on PATH, one session; output
 *           "sample NS" per cycle
 *   s2      acquire+release PATH in a loop from the start time T0 (the
 *           go file) until T0 + --duration-ms; output "acq T_REQ T_ACQ"
 *           per acquisition (monotonic ns: asked, got it), and "cpu_us
 *           N": the CPU the process (all its threads, user and system)
 *           used from T0 to the end of its loop
 *   hold    acquire PATH and hold it until the go file appears, then
 *           release; output "release T"
 *   herd    --sessions K sessions, one waiter each on PATH, each acquiring
 *           once and releasing at once; output "acq T_ACQ" per waiter
 *   s4held  one session holding locks on PATH/l0, PATH/l1, ...; output
 *           "rss_base KB", then "rss N KB" after each count of --locks
 *           (a comma list, e.g. 1000,10000)
 *   s4wait  one session: hold PATH, then --waiters W more contenders on
 *           PATH (asynchronous acquisitions if the back end has them, else
 *           a thread each); output "rss_base KB" and "rss_waiters W KB"
 *   s5      the read-write lock (back ends that have one): from T0 until
 *           T0 + --duration-ms, each operation a read with probability
 *           --read-permille/1000 (default 900), else a write, held for
 *           --hold-us (default 0); output "op R|W T_REQ T_ACQ T_REL"
 *   s6      the counting semaphore (back ends that have one), --limit
 *           leases (default 2): from T0 until T0 + --duration-ms, take one
 *           lease, hold it --hold-us (default 0), give it back; output
 *           "acq T_REQ T_ACQ T_REL" per acquisition
 *   s7      the leader election (back ends that have one): from T0 until
 *           T0 + --duration-ms, lead (join, wait to be elected), stay
 *           leader --hold-us (default 0), resign (leave); output "acq
 *           T_REQ T_ACQ T_REL" per term (T_REL: just before resigning)
 *   s8      several locks at once: from T0 until T0 + --duration-ms, each
 *           operation takes --set N (default 2) distinct locks drawn at
 *           random from the --keys K (default 8) paths PATH/k00 ..
 *           PATH/k(K-1), all of them, holds them --hold-us (default 0) and
 *           releases them; --take multi (default): the set as one
 *           multi-lock (back ends that have one); --take sorted: one mutex
 *           per path, acquired in sorted path order, released in reverse.
 *           --warmup operations first on private paths (PATH-wID/k..).
 *           Output "set T_REQ T_ACQ T_REL MASK" per operation (T_ACQ: every
 *           lock held; MASK: the bit mask of the key indices), and
 *           "cpu_us N" as in s2
 *   lead    the election: lead once; output "elected T" (flushed) and
 *           write DIR/elected.ID when elected, then stay leader until
 *           DIR/end (scripts/bench SIGKILLs the leader)
 *   count   print the number of children of PATH
 *   now     print the monotonic clock in ns
 *
 * Synchronisation with scripts/bench, through files in --sync DIR:
 *   DIR/ready.ID  written when connected, warmed up and set up
 *   DIR/go        waited for (it holds the start time T0 in monotonic ns)
 *   DIR/done.ID   written when the measured part is over
 *   DIR/end       waited for before closing the sessions, so the server's
 *                 counters can be read with nothing but our work in them
 * Other options: --out FILE (the output; default stdout), --id ID,
 * --warmup N (cycles before ready, on PATH for s1, on PATH-wID for s2;
 * default 0), --session-ms MS (default 10000), --recipe lock|election (the
 * contender objects of hold and herd: a mutex, or a participant of the
 * leader election whose acquire is "be elected" and release "leave"; s7
 * and lead always use the election).
 * Exit status 0, 1 on a failure (the reason on stderr), 64 on bad usage.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const char *o_servers, *o_path, *o_out, *o_sync, *o_locks;
static int o_election; /* --recipe election */
static const char *o_id = "0";
static long o_read_permille = 900, o_hold_us = 0, o_limit = 2;
static long o_keys = 8, o_set = 2;
static int o_sorted; /* --take sorted */
static long o_cycles = 2000, o_duration_ms = 10000, o_warmup, o_sessions = 1,
            o_waiters = 1000, o_session_ms = 10000;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s-bench: ", b_impl);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void usage(void) {
  fprintf(stderr,
          "usage: %s-bench s1|s2|s5|s6|s7|s8|lead|hold|herd|s4held|s4wait|"
          "count|now "
          "--servers HOSTS --path PATH [--out FILE] [--sync DIR] [--id ID]\n"
          "  [--cycles N] [--duration-ms MS] [--warmup N] [--sessions K]\n"
          "  [--locks N,N...] [--waiters W] [--session-ms MS]\n"
          "  [--read-permille N] [--hold-us US] [--limit N]\n"
          "  [--recipe lock|election]   (modes also: s7, lead)\n"
          "  [--keys K] [--set N] [--take multi|sorted]   (mode s8)\n",
          b_impl);
  exit(64);
}

static void sleep_ns(int64_t ns) {
  if (ns <= 0)
    return;
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
    ;
}

/* ---------------------------------------------------------------- cycles */

/* A growing table of records of @w values each. */
typedef struct rec {
  int64_t *v;
  size_t n, cap;
  int w;
} rec;

static void rec_init(rec *r, int w) {
  r->w = w;
  r->n = 0;
  r->cap = 4096;
  if (!(r->v = malloc(r->cap * (size_t)w * sizeof *r->v)))
    die("out of memory");
}

/* The next record's @w slots. */
static int64_t *rec_next(rec *r) {
  if (r->n == r->cap) {
    r->cap *= 2;
    if (!(r->v = realloc(r->v, r->cap * (size_t)r->w * sizeof *r->v)))
      die("out of memory");
  }
  return r->v + r->w * r->n++;
}

/* One cycle of @l while the window lasts: acquire, hold for @hold_ns,
 * release; @ts gets the times asked, acquired and released. 0 (and
 * nothing done) once the window, ending at @end, has passed. */
static int cycle(block *l, int64_t end, int64_t hold_ns, int64_t ts[3]) {
  ts[0] = b_now_ns();
  if (ts[0] >= end)
    return 0;
  int rc = b_acquire(l);
  if (rc)
    die("acquire: %s", b_strerror(rc));
  ts[1] = b_now_ns();
  sleep_ns(hold_ns);
  ts[2] = b_now_ns();
  if ((rc = b_release(l)) != 0)
    die("release: %s", b_strerror(rc));
  return 1;
}

/* ---------------------------------------------------------------- sync */

static void sync_touch(const char *what) {
  if (!o_sync)
    return;
  char p[4096], tmp[4200];
  snprintf(p, sizeof p, "%s/%s.%s", o_sync, what, o_id);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
  FILE *f = fopen(tmp, "w");
  if (!f || fclose(f) != 0 || rename(tmp, p) != 0)
    die("cannot write %s: %s", p, strerror(errno));
}

/* Wait for DIR/NAME; returns the number in it (0 if none). */
static int64_t sync_wait(const char *name) {
  if (!o_sync)
    return b_now_ns();
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", o_sync, name);
  for (;;) {
    FILE *f = fopen(p, "r");
    if (f) {
      long long v = 0;
      if (fscanf(f, "%lld", &v) != 1)
        v = 0;
      fclose(f);
      return v;
    }
    sleep_ns(5000000);
  }
}

/* ---------------------------------------------------------------- output */

static FILE *out;

static void open_out(void) {
  out = stdout;
  if (o_out && !(out = fopen(o_out, "w")))
    die("cannot open %s: %s", o_out, strerror(errno));
}

static void close_out(void) {
  if (fflush(out) != 0 || (out != stdout && fclose(out) != 0))
    die("cannot write the output: %s", strerror(errno));
}

/* The CPU this process used so far, user and system, all threads. */
static int64_t cpu_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
         ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

/* ---------------------------------------------------------------- helpers */

static bsess *connect_or_die(void) {
  bsess *s;
  int rc = b_connect(o_servers, (int)o_session_ms, &s);
  if (rc)
    die("connect %s: %s", o_servers, b_strerror(rc));
  return s;
}

static block *lock_or_die(bsess *s, const char *path) {
  block *l;
  if (o_election && !b_election_new)
    die("no leader election in this back end");
  int rc = o_election ? b_election_new(s, path, &l) : b_lock_new(s, path, &l);
  if (rc)
    die("lock %s: %s", path, b_strerror(rc));
  return l;
}

static void cycle_or_die(block *l) {
  int rc = b_acquire(l);
  if (rc)
    die("acquire: %s", b_strerror(rc));
  rc = b_release(l);
  if (rc)
    die("release: %s", b_strerror(rc));
}

static void warm(bsess *s, const char *path) {
  block *l = lock_or_die(s, path);
  for (long i = 0; i < o_warmup; i++)
    cycle_or_die(l);
  b_lock_free(l);
}

/* ---------------------------------------------------------------- s1 */

/* S1 driven by the back end's loop (b_cycles): the same timing as the
 * loop of run_s1, from before the acquisition to after the release. */
struct s1_loop {
  long i, n;
  int64_t t0, *t;
};

static int s1_step(void *ud, int phase) {
  struct s1_loop *st = ud;
  if (phase == B_START) {
    if (st->i == st->n)
      return 0;
    st->t0 = b_now_ns();
  } else if (phase == B_RELEASED)
    st->t[st->i++] = b_now_ns() - st->t0;
  return 1;
}

static int run_s1(void) {
  bsess *s = connect_or_die();
  block *l = lock_or_die(s, o_path);
  for (long i = 0; i < o_warmup; i++) /* the same object: the parent exists */
    cycle_or_die(l);
  int64_t *t = calloc((size_t)o_cycles, sizeof *t);
  if (!t)
    die("out of memory");
  sync_touch("ready");
  sync_wait("go");
  if (b_cycles) {
    struct s1_loop st = {0, o_cycles, 0, t};
    int rc = b_cycles(l, s1_step, &st);
    if (rc)
      die("cycles: %s", b_strerror(rc));
  } else
    for (long i = 0; i < o_cycles; i++) {
      int64_t t0 = b_now_ns();
      cycle_or_die(l);
      t[i] = b_now_ns() - t0;
    }
  sync_touch("done");
  for (long i = 0; i < o_cycles; i++)
    fprintf(out, "sample %" PRId64 "\n", t[i]);
  sync_wait("end");
  b_lock_free(l);
  b_close(s);
  free(t);
  return 0;
}

/* ---------------------------------------------------------------- s2 */

/* The timed scenarios' start: ready, wait for the go time T0, sleep until
 * it; returns the end of the window, T0 + --duration-ms. */
static int64_t window(void) {
  sync_touch("ready");
  int64_t t0 = sync_wait("go");
  sleep_ns(t0 - b_now_ns());
  return t0 + o_duration_ms * 1000000;
}

/* S2 driven by the back end's loop (b_cycles): the times cycle() takes
 * (asked, then acquired), the window checked before each acquisition. */
struct s2_loop {
  rec *r;
  int64_t end, treq;
};

static int s2_step(void *ud, int phase) {
  struct s2_loop *st = ud;
  if (phase == B_START) {
    st->treq = b_now_ns();
    return st->treq < st->end;
  }
  if (phase == B_HELD) {
    int64_t tacq = b_now_ns(), *t = rec_next(st->r);
    t[0] = st->treq;
    t[1] = tacq;
  }
  return 1;
}

static int run_s2(void) {
  bsess *s = connect_or_die();
  char wpath[2048];
  snprintf(wpath, sizeof wpath, "%s-w%s", o_path, o_id);
  warm(s, wpath);
  block *l = lock_or_die(s, o_path);
  rec r;
  rec_init(&r, 2);
  int64_t end = window(), ts[3];
  int64_t cpu0 = cpu_us();
  if (b_cycles) {
    struct s2_loop st = {&r, end, 0};
    int rc = b_cycles(l, s2_step, &st);
    if (rc)
      die("cycles: %s", b_strerror(rc));
  } else
    while (cycle(l, end, 0, ts)) {
      int64_t *t = rec_next(&r);
      t[0] = ts[0];
      t[1] = ts[1];
    }
  int64_t cpu = cpu_us() - cpu0;
  sync_touch("done");
  for (size_t i = 0; i < r.n; i++)
    fprintf(out, "acq %" PRId64 " %" PRId64 "\n", r.v[2 * i], r.v[2 * i + 1]);
  fprintf(out, "cpu_us %" PRId64 "\n", cpu);
  sync_wait("end");
  b_lock_free(l);
  b_close(s);
  free(r.v);
  return 0;
}

/* ---------------------------------------------------------------- hold */

static int run_hold(void) {
  bsess *s = connect_or_die();
  block *l = lock_or_die(s, o_path);
  int rc = b_acquire(l);
  if (rc)
    die("acquire: %s", b_strerror(rc));
  sync_touch("ready");
  sync_wait("go");
  int64_t t = b_now_ns();
  rc = b_release(l);
  if (rc)
    die("release: %s", b_strerror(rc));
  sync_touch("done");
  fprintf(out, "release %" PRId64 "\n", t);
  sync_wait("end");
  b_lock_free(l);
  b_close(s);
  return 0;
}

/* ---------------------------------------------------------------- herd */

struct waiter {
  pthread_t th;
  bsess *s;
  block *l;
  int64_t tacq;
  int rc;
};

static pthread_mutex_t herd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t herd_cv = PTHREAD_COND_INITIALIZER;
static long herd_started, herd_finished;

static void *herd_thread(void *arg) {
  struct waiter *w = arg;
  pthread_mutex_lock(&herd_mu);
  herd_started++;
  pthread_cond_broadcast(&herd_cv);
  pthread_mutex_unlock(&herd_mu);
  w->rc = b_acquire(w->l);
  w->tacq = b_now_ns();
  if (w->rc == 0)
    w->rc = b_release(w->l);
  pthread_mutex_lock(&herd_mu);
  herd_finished++;
  pthread_cond_broadcast(&herd_cv);
  pthread_mutex_unlock(&herd_mu);
  return NULL;
}

static int run_herd(void) {
  long k = o_sessions;
  struct waiter *w = calloc((size_t)k, sizeof *w);
  if (!w)
    die("out of memory");
  for (long i = 0; i < k; i++) {
    w[i].s = connect_or_die();
    w[i].l = lock_or_die(w[i].s, o_path);
  }
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 256 * 1024);
  for (long i = 0; i < k; i++)
    if (pthread_create(&w[i].th, &a, herd_thread, &w[i]) != 0)
      die("pthread_create failed");
  pthread_mutex_lock(&herd_mu);
  while (herd_started < k)
    pthread_cond_wait(&herd_cv, &herd_mu);
  pthread_mutex_unlock(&herd_mu);
  sync_touch("ready");
  pthread_mutex_lock(&herd_mu);
  while (herd_finished < k)
    pthread_cond_wait(&herd_cv, &herd_mu);
  pthread_mutex_unlock(&herd_mu);
  sync_touch("done");
  int failed = 0;
  for (long i = 0; i < k; i++) {
    pthread_join(w[i].th, NULL);
    if (w[i].rc) {
      fprintf(stderr, "%s-bench: waiter %ld: %s\n", b_impl, i,
              b_strerror(w[i].rc));
      failed = 1;
    } else
      fprintf(out, "acq %" PRId64 "\n", w[i].tacq);
  }
  sync_wait("end");
  for (long i = 0; i < k; i++) {
    b_lock_free(w[i].l);
    b_close(w[i].s);
  }
  free(w);
  return failed;
}

/* ---------------------------------------------------------------- s4 */

static int run_s4held(void) {
  long marks[16];
  int nm = 0;
  const char *p = o_locks ? o_locks : "1000,10000";
  while (*p && nm < 16) {
    char *e;
    marks[nm] = strtol(p, &e, 10);
    if (e == p || marks[nm] <= 0 || (nm > 0 && marks[nm] <= marks[nm - 1]))
      usage();
    nm++;
    p = *e == ',' ? e + 1 : e;
  }
  bsess *s = connect_or_die();
  char path[2048];
  snprintf(path, sizeof path, "%s/warm", o_path);
  warm(s, path);
  fprintf(out, "rss_base %ld\n", rss_kb());
  long n = 0;
  int64_t t0 = b_now_ns();
  for (int m = 0; m < nm; m++) {
    for (; n < marks[m]; n++) {
      snprintf(path, sizeof path, "%s/l%ld", o_path, n);
      block *l = lock_or_die(s, path);
      int rc = b_acquire(l);
      if (rc)
        die("acquire %s: %s", path, b_strerror(rc));
    }
    fprintf(out, "rss %ld %ld\n", n, rss_kb());
  }
  fprintf(out, "elapsed_ns %" PRId64 "\n", b_now_ns() - t0);
  close_out();
  /* The held locks go with the session; their objects with the process. */
  b_close(s);
  return 0;
}

static pthread_mutex_t s4_mu = PTHREAD_MUTEX_INITIALIZER;
static long s4_failed;

static void s4_done(void *ud, int rc) {
  (void)ud;
  if (rc) {
    pthread_mutex_lock(&s4_mu);
    s4_failed++;
    pthread_mutex_unlock(&s4_mu);
  }
}

static void *s4_thread(void *arg) {
  s4_done(NULL, b_acquire(arg));
  return NULL;
}

static int run_s4wait(void) {
  bsess *s = connect_or_die();
  char path[2048];
  snprintf(path, sizeof path, "%s-warm", o_path);
  warm(s, path);
  block *holder = lock_or_die(s, o_path);
  int rc = b_acquire(holder);
  if (rc)
    die("acquire: %s", b_strerror(rc));
  /* the first count may open a connection of its own: before the baseline */
  if (b_count_children(s, o_path) < 0)
    die("cannot list %s", o_path);
  fprintf(out, "rss_base %ld\n", rss_kb());
  for (long i = 0; i < o_waiters; i++) {
    block *l = lock_or_die(s, o_path);
    if (b_acquire_async) {
      rc = b_acquire_async(l, s4_done, NULL);
      if (rc)
        die("acquire_async: %s", b_strerror(rc));
    } else {
      pthread_t th;
      if (pthread_create(&th, NULL, s4_thread, l) != 0)
        die("pthread_create failed after %ld threads", i);
      pthread_detach(th);
    }
  }
  int64_t deadline = b_now_ns() + 120 * (int64_t)1000000000;
  int c;
  while ((c = b_count_children(s, o_path)) < o_waiters + 1) {
    if (b_now_ns() > deadline)
      die("only %d of %ld contenders queued after 120 s", c, o_waiters + 1);
    sleep_ns(100000000);
  }
  sleep_ns(1000000000); /* let the watches be set */
  pthread_mutex_lock(&s4_mu);
  long failed = s4_failed;
  pthread_mutex_unlock(&s4_mu);
  if (failed)
    die("%ld waiters failed", failed);
  fprintf(out, "rss_waiters %ld %ld\n", o_waiters, rss_kb());
  close_out();
  fflush(stderr);
  /* Waiters are still blocked; the server drops everything with the
   * session when the process ends. */
  _exit(0);
}

/* ---------------------------------------------------------------- s5 */

static int run_s5(void) {
  if (!b_rwlock_new)
    die("s5: no read-write lock in this back end");
  bsess *s = connect_or_die();
  block *rd, *wr;
  int rc = b_rwlock_new(s, o_path, &rd, &wr);
  if (rc)
    die("rwlock: %s", b_strerror(rc));
  unsigned seed = (unsigned)strtoul(o_id, NULL, 10) * 7919u + 1u;
  rec r;
  rec_init(&r, 4);
  int64_t end = window(), ts[3];
  for (;;) {
    int reading = (long)(rand_r(&seed) % 1000) < o_read_permille;
    if (!cycle(reading ? rd : wr, end, o_hold_us * 1000, ts))
      break;
    int64_t *t = rec_next(&r);
    t[0] = reading;
    memcpy(t + 1, ts, sizeof ts);
  }
  sync_touch("done");
  for (size_t i = 0; i < r.n; i++)
    fprintf(out, "op %c %" PRId64 " %" PRId64 " %" PRId64 "\n",
            r.v[4 * i] ? 'R' : 'W', r.v[4 * i + 1], r.v[4 * i + 2],
            r.v[4 * i + 3]);
  sync_wait("end");
  b_lock_free(rd);
  b_lock_free(wr);
  b_close(s);
  free(r.v);
  return 0;
}

/* ---------------------------------------------------------------- s6 */

/* s6 and s7: cycles of @l from T0 until T0 + --duration-ms, each held
 * --hold-us; "acq T_REQ T_ACQ T_REL" per cycle */
static int run_cycles(bsess *s, block *l) {
  rec r;
  rec_init(&r, 3);
  int64_t end = window(), ts[3];
  while (cycle(l, end, o_hold_us * 1000, ts))
    memcpy(rec_next(&r), ts, sizeof ts);
  sync_touch("done");
  for (size_t i = 0; i < r.n; i++)
    fprintf(out, "acq %" PRId64 " %" PRId64 " %" PRId64 "\n", r.v[3 * i],
            r.v[3 * i + 1], r.v[3 * i + 2]);
  sync_wait("end");
  b_lock_free(l);
  b_close(s);
  free(r.v);
  return 0;
}

static int run_s6(void) {
  if (!b_semaphore_new)
    die("s6: no semaphore in this back end");
  bsess *s = connect_or_die();
  block *l;
  int rc = b_semaphore_new(s, o_path, (int)o_limit, &l);
  if (rc)
    die("semaphore: %s", b_strerror(rc));
  return run_cycles(s, l);
}

/* ---------------------------------------------------------------- s7 */

static int run_s7(void) {
  o_election = 1;
  bsess *s = connect_or_die();
  return run_cycles(s, lock_or_die(s, o_path));
}

static int run_lead(void) {
  o_election = 1;
  bsess *s = connect_or_die();
  block *l = lock_or_die(s, o_path);
  sync_touch("ready");
  int rc = b_acquire(l);
  if (rc)
    die("lead: %s", b_strerror(rc));
  fprintf(out, "elected %" PRId64 "\n", b_now_ns());
  if (fflush(out) != 0)
    die("cannot write the output: %s", strerror(errno));
  sync_touch("elected");
  sync_wait("end");
  b_release(l);
  b_lock_free(l);
  b_close(s);
  return 0;
}

/* ---------------------------------------------------------------- s8 */

enum { S8_MAX_KEYS = 16 };

/* S8's contender objects on one session: the set of each bit mask of key
 * indices as one multi-lock block (made on first use), or (--take sorted)
 * one mutex block per key. */
struct s8 {
  bsess *s;
  const char *base; /* the keys' paths: BASE/k00 ... */
  block **sets;     /* [1 << o_keys] */
  block *keys[S8_MAX_KEYS];
};

static void s8_path(const struct s8 *st, int k, char *buf, size_t len) {
  snprintf(buf, len, "%s/k%02d", st->base, k);
}

static void s8_init(struct s8 *st, bsess *s, const char *base) {
  memset(st, 0, sizeof *st);
  st->s = s;
  st->base = base;
  if (!o_sorted) {
    if (!(st->sets = calloc((size_t)1 << o_keys, sizeof *st->sets)))
      die("out of memory");
    return;
  }
  for (int k = 0; k < o_keys; k++) {
    char p[2048];
    s8_path(st, k, p, sizeof p);
    st->keys[k] = lock_or_die(s, p);
  }
}

static void s8_free(struct s8 *st) {
  for (long m = 0; st->sets && m < (1L << o_keys); m++)
    if (st->sets[m])
      b_lock_free(st->sets[m]);
  free(st->sets);
  for (int k = 0; k < o_keys; k++)
    if (st->keys[k])
      b_lock_free(st->keys[k]);
}

/* The multi-lock of the keys of @mask, made on first use. */
static block *s8_set(struct s8 *st, unsigned mask) {
  if (st->sets[mask])
    return st->sets[mask];
  char buf[S8_MAX_KEYS][2048];
  const char *paths[S8_MAX_KEYS];
  int n = 0;
  for (int k = 0; k < o_keys; k++)
    if (mask & (1u << k)) {
      s8_path(st, k, buf[n], sizeof buf[n]);
      paths[n] = buf[n];
      n++;
    }
  int rc = b_multilock_new(st->s, paths, n, &st->sets[mask]);
  if (rc)
    die("multilock: %s", b_strerror(rc));
  return st->sets[mask];
}

/* --set distinct key indices drawn at random, as a bit mask. */
static unsigned s8_draw(unsigned *seed) {
  int idx[S8_MAX_KEYS];
  for (int k = 0; k < o_keys; k++)
    idx[k] = k;
  unsigned mask = 0;
  for (int i = 0; i < o_set; i++) {
    int j = i + (int)(rand_r(seed) % (unsigned)(o_keys - i));
    int t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
    mask |= 1u << idx[i];
  }
  return mask;
}

/* Acquire every lock of @mask: the multi-lock, or the mutexes in sorted
 * (ascending key) order. */
static void s8_acquire(struct s8 *st, unsigned mask) {
  int rc;
  if (!o_sorted) {
    if ((rc = b_acquire(s8_set(st, mask))) != 0)
      die("acquire the set: %s", b_strerror(rc));
    return;
  }
  for (int k = 0; k < o_keys; k++)
    if ((mask & (1u << k)) && (rc = b_acquire(st->keys[k])) != 0)
      die("acquire key %d: %s", k, b_strerror(rc));
}

/* Release every lock of @mask (the mutexes in reverse order). */
static void s8_release(struct s8 *st, unsigned mask) {
  int rc;
  if (!o_sorted) {
    if ((rc = b_release(s8_set(st, mask))) != 0)
      die("release the set: %s", b_strerror(rc));
    return;
  }
  for (int k = o_keys - 1; k >= 0; k--)
    if ((mask & (1u << k)) && (rc = b_release(st->keys[k])) != 0)
      die("release key %d: %s", k, b_strerror(rc));
}

static int run_s8(void) {
  if (!o_sorted && !b_multilock_new)
    die("s8: no multi-lock in this back end (--take sorted)");
  if (o_keys < 2 || o_keys > S8_MAX_KEYS || o_set < 1 || o_set > o_keys)
    die("s8: --keys 2..%d and --set 1..K", S8_MAX_KEYS);
  bsess *s = connect_or_die();
  unsigned seed = (unsigned)strtoul(o_id, NULL, 10) * 7919u + 1u;
  char wbase[2048];
  snprintf(wbase, sizeof wbase, "%s-w%s", o_path, o_id);
  struct s8 warm_st, st;
  s8_init(&warm_st, s, wbase);
  for (long i = 0; i < o_warmup; i++) {
    unsigned mask = s8_draw(&seed);
    s8_acquire(&warm_st, mask);
    s8_release(&warm_st, mask);
  }
  s8_free(&warm_st);
  s8_init(&st, s, o_path);
  rec r;
  rec_init(&r, 4);
  int64_t end = window();
  int64_t cpu0 = cpu_us();
  for (;;) {
    unsigned mask = s8_draw(&seed);
    int64_t treq = b_now_ns();
    if (treq >= end)
      break;
    s8_acquire(&st, mask);
    int64_t tacq = b_now_ns();
    sleep_ns(o_hold_us * 1000);
    int64_t *t = rec_next(&r);
    t[0] = treq;
    t[1] = tacq;
    t[2] = b_now_ns();
    t[3] = mask;
    s8_release(&st, mask);
  }
  int64_t cpu = cpu_us() - cpu0;
  sync_touch("done");
  for (size_t i = 0; i < r.n; i++)
    fprintf(out, "set %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
            r.v[4 * i], r.v[4 * i + 1], r.v[4 * i + 2], r.v[4 * i + 3]);
  fprintf(out, "cpu_us %" PRId64 "\n", cpu);
  sync_wait("end");
  s8_free(&st);
  b_close(s);
  free(r.v);
  return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
  if (argc < 2)
    usage();
  const char *mode = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--servers"))
      o_servers = v;
    else if (!strcmp(a, "--path"))
      o_path = v;
    else if (!strcmp(a, "--out"))
      o_out = v;
    else if (!strcmp(a, "--sync"))
      o_sync = v;
    else if (!strcmp(a, "--id"))
      o_id = v;
    else if (!strcmp(a, "--locks"))
      o_locks = v;
    else if (!strcmp(a, "--take") &&
             (!strcmp(v, "multi") || !strcmp(v, "sorted")))
      o_sorted = !strcmp(v, "sorted");
    else if (!strcmp(a, "--recipe") &&
             (!strcmp(v, "lock") || !strcmp(v, "election")))
      o_election = !strcmp(v, "election");
    else {
      char *e;
      long n = strtol(v, &e, 10);
      if (*v == '\0' || *e != '\0' || n < 0)
        usage();
      if (!strcmp(a, "--cycles"))
        o_cycles = n;
      else if (!strcmp(a, "--duration-ms"))
        o_duration_ms = n;
      else if (!strcmp(a, "--warmup"))
        o_warmup = n;
      else if (!strcmp(a, "--sessions"))
        o_sessions = n;
      else if (!strcmp(a, "--waiters"))
        o_waiters = n;
      else if (!strcmp(a, "--session-ms"))
        o_session_ms = n;
      else if (!strcmp(a, "--read-permille") && n <= 1000)
        o_read_permille = n;
      else if (!strcmp(a, "--hold-us"))
        o_hold_us = n;
      else if (!strcmp(a, "--limit") && n >= 1)
        o_limit = n;
      else if (!strcmp(a, "--keys"))
        o_keys = n;
      else if (!strcmp(a, "--set"))
        o_set = n;
      else
        usage();
    }
  }
  if (!strcmp(mode, "now")) {
    printf("%" PRId64 "\n", b_now_ns());
    return 0;
  }
  if (!o_servers || !o_path)
    usage();
  open_out();
  int rc;
  if (!strcmp(mode, "s1"))
    rc = run_s1();
  else if (!strcmp(mode, "s2"))
    rc = run_s2();
  else if (!strcmp(mode, "s5"))
    rc = run_s5();
  else if (!strcmp(mode, "s6"))
    rc = run_s6();
  else if (!strcmp(mode, "s7"))
    rc = run_s7();
  else if (!strcmp(mode, "s8"))
    rc = run_s8();
  else if (!strcmp(mode, "lead"))
    rc = run_lead();
  else if (!strcmp(mode, "hold"))
    rc = run_hold();
  else if (!strcmp(mode, "herd"))
    rc = run_herd();
  else if (!strcmp(mode, "s4held"))
    return run_s4held();
  else if (!strcmp(mode, "s4wait"))
    rc = run_s4wait();
  else if (!strcmp(mode, "count")) {
    bsess *s = connect_or_die();
    fprintf(out, "%d\n", b_count_children(s, o_path));
    b_close(s);
    rc = 0;
  } else
    usage();
  close_out();
  return rc;
}
