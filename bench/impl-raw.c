/*
 * impl-raw.c - the raw floor: the ZooKeeper operations a lock needs and
 * nothing else, with libzookeeper_mt's asynchronous calls chained in their
 * completions, so that a blocking acquisition wakes its caller once (with
 * the synchronous calls every request is a hand-off between threads, which
 * made the floor slower than zkr in trials: not a floor).
 *
 *   acquire: create PARENT/lock- EPHEMERAL|SEQUENTIAL; then loop: list the
 *            children; none with a lower sequence number: held; else
 *            exists+watch on the nearest lower one and wait until the
 *            watch fires (or list again at once if it is already gone)
 *   release: delete our node, without waiting for the reply
 *
 * The semaphore (scenario S6) is Curator's InterProcessSemaphoreV2 protocol
 * on the same chain, with limit N:
 *
 *   acquire: the lock above on PATH/locks (the admission mutex: create,
 *            list, and exists+watch while queued); create
 *            PATH/leases/lease- EPHEMERAL|SEQUENTIAL; then loop: list
 *            PATH/leases with a watch (as Curator, on every listing); at
 *            most N children, ours counted: held; else wait until the
 *            watch fires and list again; then delete the admission node
 *            (not waited for)
 *   release: delete the lease node, without waiting for the reply
 *
 * The parent is created once per lock object (persistent; NODEEXISTS is
 * fine). No retries, no reconnection handling, no wrap-around of sequence
 * numbers: a floor to measure against, not a lock to use.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "bench.h"

const char *const b_impl = "raw";

struct bsess {
  zhandle_t *zh;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state;
  long deletes; /* sent, not answered yet */
};

struct block {
  bsess *s;
  char *parent;
  char node[1100]; /* our node, once created */
  char pred[1100]; /* the node we watch */
  long seq;
  int parent_ok;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int waiting; /* a watch on pred is set and has not fired */
  int done;    /* the acquisition has ended, with rc */
  int rc;
  b_done_fn fn; /* an asynchronous acquisition's callback */
  void *ud;
  /* a semaphore's block: parent is PATH/leases, node our lease node */
  int limit;    /* > 0 in a semaphore's block */
  block *adm;   /* its admission mutex, a lock on PATH/locks */
  int lwaiting; /* a watch on PATH/leases is awaited */
};

#define E_TIMEOUT 1 /* our own code: no connection in time */

static void global_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  bsess *s = ctx;
  (void)zh;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&s->mu);
  s->state = state;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

int b_connect(const char *hosts, int session_ms, bsess **out) {
  bsess *s = calloc(1, sizeof *s);
  if (!s)
    return ZSYSTEMERROR;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  s->zh = zookeeper_init(hosts, global_watcher, session_ms, NULL, s, 0);
  if (!s->zh) {
    free(s);
    return ZSYSTEMERROR;
  }
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += 30;
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  while (s->state != ZOO_CONNECTED_STATE && rc == 0)
    rc = pthread_cond_timedwait(&s->cv, &s->mu, &dl);
  pthread_mutex_unlock(&s->mu);
  if (s->state != ZOO_CONNECTED_STATE) {
    zookeeper_close(s->zh);
    free(s);
    return E_TIMEOUT;
  }
  *out = s;
  return 0;
}

void b_close(bsess *s) {
  pthread_mutex_lock(&s->mu);
  while (s->deletes > 0)
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  zookeeper_close(s->zh);
  free(s);
}

int b_lock_new(bsess *s, const char *path, block **out) {
  block *l = calloc(1, sizeof *l);
  if (!l || !(l->parent = strdup(path))) {
    free(l);
    return ZSYSTEMERROR;
  }
  l->s = s;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  *out = l;
  return 0;
}

void b_lock_free(block *l) {
  if (l->adm)
    b_lock_free(l->adm);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  free(l->parent);
  free(l);
}

static int make_parent(block *l) {
  char p[1100];
  snprintf(p, sizeof p, "%s", l->parent);
  for (char *c = p + 1;; c++) {
    if (*c == '/' || *c == '\0') {
      char save = *c;
      *c = '\0';
      int rc =
          zoo_create(l->s->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
      if (rc != ZOK && rc != ZNODEEXISTS)
        return rc;
      *c = save;
      if (save == '\0')
        return ZOK;
    }
  }
}

static long seq_of(const char *name) {
  size_t n = strlen(name);
  return n >= 10 ? strtol(name + n - 10, NULL, 10) : -1;
}

/* The acquisition runs as a chain of asynchronous requests, each issued
 * from the completion of the one before (on the client's completion
 * thread); the caller sleeps once, until the chain ends. */
static void finish(block *l, int rc) {
  pthread_mutex_lock(&l->mu);
  b_done_fn fn = l->fn;
  l->done = 1;
  l->rc = rc;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
  if (fn)
    fn(l->ud, rc);
}

static void list(block *l);

static void lock_watcher(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  block *l = ctx;
  (void)zh;
  (void)type;
  (void)state;
  pthread_mutex_lock(&l->mu);
  int go = l->waiting && path && strcmp(path, l->pred) == 0;
  if (go)
    l->waiting = 0;
  pthread_mutex_unlock(&l->mu);
  if (go)
    list(l);
}

static void exists_cb(int rc, const struct Stat *st, const void *data) {
  block *l = (block *)data;
  (void)st;
  if (rc == ZOK)
    return; /* the watch is set; lock_watcher goes on */
  pthread_mutex_lock(&l->mu);
  l->waiting = 0;
  pthread_mutex_unlock(&l->mu);
  if (rc == ZNONODE)
    list(l); /* gone already: list again */
  else
    finish(l, rc);
}

static void children_cb(int rc, const struct String_vector *v,
                        const void *data) {
  block *l = (block *)data;
  if (rc != ZOK) {
    finish(l, rc);
    return;
  }
  long best = -1;
  const char *pred = NULL;
  for (int i = 0; i < v->count; i++) {
    long s = seq_of(v->data[i]);
    if (s < l->seq && s > best) {
      best = s;
      pred = v->data[i];
    }
  }
  if (!pred) {
    finish(l, ZOK);
    return;
  }
  pthread_mutex_lock(&l->mu);
  snprintf(l->pred, sizeof l->pred, "%s/%s", l->parent, pred);
  l->waiting = 1;
  pthread_mutex_unlock(&l->mu);
  rc = zoo_awexists(l->s->zh, l->pred, lock_watcher, l, exists_cb, l);
  if (rc != ZOK)
    finish(l, rc);
}

static void list(block *l) {
  int rc = zoo_aget_children(l->s->zh, l->parent, 0, children_cb, l);
  if (rc != ZOK)
    finish(l, rc);
}

static void create_cb(int rc, const char *value, const void *data) {
  block *l = (block *)data;
  if (rc != ZOK) {
    finish(l, rc);
    return;
  }
  snprintf(l->node, sizeof l->node, "%s", value);
  l->seq = seq_of(l->node);
  list(l);
}

static int start(block *l, b_done_fn fn, void *ud) {
  int rc;
  if (!l->parent_ok) {
    if ((rc = make_parent(l)) != ZOK)
      return rc;
    l->parent_ok = 1;
  }
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/lock-", l->parent);
  l->done = 0;
  l->fn = fn;
  l->ud = ud;
  return zoo_acreate(l->s->zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_EPHEMERAL | ZOO_SEQUENCE, create_cb, l);
}

static int sem_start(block *l);

int b_acquire(block *l) {
  int rc = l->limit ? sem_start(l) : start(l, NULL, NULL);
  if (rc != ZOK)
    return rc;
  pthread_mutex_lock(&l->mu);
  while (!l->done)
    pthread_cond_wait(&l->cv, &l->mu);
  rc = l->rc;
  pthread_mutex_unlock(&l->mu);
  return rc;
}

static int acquire_async(block *l, b_done_fn fn, void *ud) {
  return start(l, fn, ud);
}

int (*const b_acquire_async)(block *, b_done_fn, void *) = acquire_async;

/* The driver runs the cycles itself (bench/impl-zkr-loop.c has its own). */
int (*const b_cycles)(block *, b_cycle_fn, void *) = NULL;

int (*const b_rwlock_new)(bsess *, const char *, block **, block **) = NULL;
int (*const b_election_new)(bsess *, const char *, block **) = NULL;
int (*const b_multilock_new)(bsess *, const char *const *, int,
                             block **) = NULL;

static void delete_cb(int rc, const void *data) {
  bsess *s = (bsess *)data;
  if (rc != ZOK)
    fprintf(stderr, "raw-bench: delete: %s\n", zerror(rc));
  pthread_mutex_lock(&s->mu);
  s->deletes--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* Sent, not waited for: the session's requests are handled in order, so a
 * later create of ours comes after it anyway (zkr's release does the same).
 */
int b_release(block *l) {
  bsess *s = l->s;
  pthread_mutex_lock(&s->mu);
  s->deletes++;
  pthread_mutex_unlock(&s->mu);
  int rc = zoo_adelete(s->zh, l->node, -1, delete_cb, s);
  if (rc != ZOK) {
    pthread_mutex_lock(&s->mu);
    s->deletes--;
    pthread_mutex_unlock(&s->mu);
  }
  return rc;
}

/* ---------------------------------------------------------------- S6 */

static void lease_list(block *l);

static void lease_watcher(zhandle_t *zh, int type, int state, const char *path,
                          void *ctx) {
  block *l = ctx;
  (void)zh;
  (void)type;
  (void)state;
  (void)path;
  pthread_mutex_lock(&l->mu);
  int go = l->lwaiting;
  l->lwaiting = 0;
  pthread_mutex_unlock(&l->mu);
  if (go) /* else a watch left by an earlier listing that was enough */
    lease_list(l);
}

static void lease_children_cb(int rc, const struct String_vector *v,
                              const void *data) {
  block *l = (block *)data;
  if (rc != ZOK) {
    finish(l, rc);
    return;
  }
  if (v->count > l->limit) {
    pthread_mutex_lock(&l->mu);
    l->lwaiting = 1;
    pthread_mutex_unlock(&l->mu);
    return; /* lease_watcher lists again */
  }
  rc = b_release(l->adm); /* leave the admission mutex */
  finish(l, rc);
}

static void lease_list(block *l) {
  int rc = zoo_awget_children(l->s->zh, l->parent, lease_watcher, l,
                              lease_children_cb, l);
  if (rc != ZOK)
    finish(l, rc);
}

static void lease_created(int rc, const char *value, const void *data) {
  block *l = (block *)data;
  if (rc != ZOK) {
    b_release(l->adm);
    finish(l, rc);
    return;
  }
  snprintf(l->node, sizeof l->node, "%s", value);
  lease_list(l);
}

static void admitted(void *ud, int rc) {
  block *l = ud;
  char prefix[1100];
  if (rc == ZOK) {
    snprintf(prefix, sizeof prefix, "%s/lease-", l->parent);
    rc = zoo_acreate(l->s->zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_EPHEMERAL | ZOO_SEQUENCE, lease_created, l);
    if (rc != ZOK)
      b_release(l->adm);
  }
  if (rc != ZOK)
    finish(l, rc);
}

static int sem_start(block *l) {
  int rc;
  if (!l->parent_ok) {
    if ((rc = make_parent(l)) != ZOK)
      return rc;
    l->parent_ok = 1;
  }
  l->done = 0;
  l->fn = NULL;
  l->lwaiting = 0;
  return start(l->adm, admitted, l);
}

static int semaphore_new(bsess *s, const char *path, int limit, block **out) {
  char p[1100];
  block *l, *adm;
  snprintf(p, sizeof p, "%s/leases", path);
  int rc = b_lock_new(s, p, &l);
  if (rc != ZOK)
    return rc;
  snprintf(p, sizeof p, "%s/locks", path);
  if ((rc = b_lock_new(s, p, &adm)) != ZOK) {
    b_lock_free(l);
    return rc;
  }
  l->limit = limit;
  l->adm = adm;
  *out = l;
  return 0;
}

int (*const b_semaphore_new)(bsess *, const char *, int,
                             block **) = semaphore_new;

const char *b_strerror(int rc) {
  return rc == E_TIMEOUT ? "no connection within 30 s" : zerror(rc);
}

int b_count_children(bsess *s, const char *path) {
  return b_count_with(s->zh, path);
}
