/*
 * impl-zkr.c - the zkr back end of the benchmark worker: zkr's public API
 * only (<zkr/zkr.h>), with default options except the session timeout.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "bench.h"

const char *const b_impl = "zkr";

struct bsess {
  zkr_session *s;
  char *hosts;
  int session_ms;
};

struct block {
  zkr_mutex *m;
  zkr_multilock *ml;  /* set in a multi-lock's block (m is then NULL) */
  zkr_semaphore *sem; /* set in a semaphore's block (m is then NULL) */
  zkr_lease *lease;   /* the semaphore's lease while held */
  zkr_rwlock *rw;     /* set in the write half of a read-write lock */
  int half;           /* a half: m belongs to a zkr_rwlock */
  int elect;          /* a participant of the election on path */
  zkr_election *e;    /* while joined (NULL after a release) */
  zkr_session *s;
  char *path;
  b_done_fn fn;
  void *ud;
};

/* ZKR_BENCH_MONITOR=1 (scripts/bench's zkr-mon): monitoring fully on, a
 * lock hook that counts and both alert thresholds armed (one hour: they
 * never fire), to measure its overhead against zkr's defaults. "hook" or
 * "alerts" turns on only that half (to tell their costs apart by hand). */
static atomic_ulong hook_events;
static void bench_hook(const zkr_lock_event *ev, void *ud) {
  (void)ev;
  (void)ud;
  atomic_fetch_add_explicit(&hook_events, 1, memory_order_relaxed);
}
static void bench_alert(const zkr_alert *a, void *ud) {
  (void)a;
  (void)ud;
}
static int monitor_on(const char *half) {
  const char *e = getenv("ZKR_BENCH_MONITOR");
  return e && (strcmp(e, "1") == 0 || strcmp(e, half) == 0);
}

int b_connect(const char *hosts, int session_ms, bsess **out) {
  bsess *b = calloc(1, sizeof *b);
  if (!b || !(b->hosts = strdup(hosts))) {
    free(b);
    return ZKR_ENOMEM;
  }
  b->session_ms = session_ms;
  int alerts = monitor_on("alerts");
  int rc =
      zkr_session_new(&b->s, hosts,
                      &(zkr_session_options){
                          .session_timeout_ms = session_ms,
                          .connect_timeout_ms = 30000,
                          .lock_hook = monitor_on("hook") ? bench_hook : NULL,
                          .alert_wait_ms = alerts ? 3600000 : 0,
                          .alert_hold_ms = alerts ? 3600000 : 0,
                          .alert_fn = alerts ? bench_alert : NULL});
  if (rc != ZKR_OK) {
    free(b->hosts);
    free(b);
    return rc;
  }
  *out = b;
  return 0;
}

void b_close(bsess *b) {
  zkr_session_close(b->s);
  free(b->hosts);
  free(b);
}

int b_lock_new(bsess *b, const char *path, block **out) {
  block *l = calloc(1, sizeof *l);
  if (!l)
    return ZKR_ENOMEM;
  int rc = zkr_mutex_new(&l->m, b->s, path, NULL);
  if (rc != ZKR_OK) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int b_acquire(block *l) {
  if (l->elect) {
    int rc = ZKR_OK;
    if (!l->e) {
      rc = zkr_election_new(&l->e, l->s, l->path, NULL);
      if (rc == ZKR_OK && (rc = zkr_election_start(l->e)) != ZKR_OK) {
        zkr_election_free(l->e);
        l->e = NULL;
      }
    }
    return rc == ZKR_OK ? zkr_election_await(l->e, -1) : rc;
  }
  if (l->ml)
    return zkr_multilock_acquire(l->ml, -1);
  if (l->sem)
    return zkr_semaphore_acquire(l->sem, 1, -1, &l->lease);
  return zkr_mutex_acquire(l->m, -1);
}

int b_release(block *l) {
  if (l->elect) { /* leave: the node goes, the next one is elected */
    zkr_election_free(l->e);
    l->e = NULL;
    return 0;
  }
  if (l->ml)
    return zkr_multilock_release(l->ml);
  if (l->sem) {
    zkr_lease *lease = l->lease;
    l->lease = NULL;
    int rc = zkr_lease_release(lease);
    zkr_lease_free(lease);
    return rc;
  }
  return zkr_mutex_release(l->m);
}

void b_lock_free(block *l) {
  if (l->elect) {
    if (l->e)
      zkr_election_free(l->e);
    free(l->path);
  } else if (l->ml)
    zkr_multilock_free(l->ml);
  else if (l->sem)
    zkr_semaphore_free(l->sem);
  else if (l->rw)
    zkr_rwlock_free(l->rw);
  else if (!l->half)
    zkr_mutex_free(l->m);
  free(l);
}

static int rwlock_new(bsess *b, const char *path, block **rd, block **wr) {
  block *r = calloc(1, sizeof *r), *w = calloc(1, sizeof *w);
  int rc = r && w ? zkr_rwlock_new(&w->rw, b->s, path, NULL) : ZKR_ENOMEM;
  if (rc != ZKR_OK) {
    free(r);
    free(w);
    return rc;
  }
  r->half = w->half = 1;
  r->m = zkr_rwlock_read_lock(w->rw);
  w->m = zkr_rwlock_write_lock(w->rw);
  *rd = r;
  *wr = w;
  return 0;
}

int (*const b_rwlock_new)(bsess *, const char *, block **,
                          block **) = rwlock_new;

static int semaphore_new(bsess *b, const char *path, int limit, block **out) {
  block *l = calloc(1, sizeof *l);
  if (!l)
    return ZKR_ENOMEM;
  int rc = zkr_semaphore_new(&l->sem, b->s, path, limit, NULL);
  if (rc != ZKR_OK) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int (*const b_semaphore_new)(bsess *, const char *, int,
                             block **) = semaphore_new;

static int election_new(bsess *b, const char *path, block **out) {
  block *l = calloc(1, sizeof *l);
  if (!l || !(l->path = strdup(path))) {
    free(l);
    return ZKR_ENOMEM;
  }
  l->elect = 1;
  l->s = b->s;
  *out = l;
  return 0;
}

int (*const b_election_new)(bsess *, const char *, block **) = election_new;

static int multilock_new(bsess *b, const char *const *paths, int n,
                         block **out) {
  zkr_multilock_member mb[ZKR_MULTILOCK_MAX];
  if (n < 1 || n > ZKR_MULTILOCK_MAX)
    return ZKR_EINVAL;
  for (int i = 0; i < n; i++)
    mb[i] = (zkr_multilock_member){paths[i], ZKR_MULTILOCK_MUTEX};
  block *l = calloc(1, sizeof *l);
  if (!l)
    return ZKR_ENOMEM;
  int rc = zkr_multilock_new(&l->ml, b->s, mb, n, NULL);
  if (rc != ZKR_OK) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int (*const b_multilock_new)(bsess *, const char *const *, int,
                             block **) = multilock_new;

const char *b_strerror(int rc) {
  return zkr_strerror(rc);
}

static void async_done(zkr_mutex *m, int rc, void *ud) {
  block *l = ud;
  (void)m;
  l->fn(l->ud, rc);
}

static int acquire_async(block *l, b_done_fn fn, void *ud) {
  l->fn = fn;
  l->ud = ud;
  return zkr_mutex_acquire_async(l->m, -1, async_done, l);
}

int (*const b_acquire_async)(block *, b_done_fn, void *) = acquire_async;

/* The driver runs the cycles itself (bench/impl-zkr-loop.c has its own). */
int (*const b_cycles)(block *, b_cycle_fn, void *) = NULL;

int b_count_children(bsess *b, const char *path) {
  return b_count_at(b->hosts, b->session_ms, path);
}
