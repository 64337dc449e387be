/*
 * zkr-lock's lock, whatever its kind (see lock-kind.h): the options, the
 * object, the acquisition, the hold and the release of a mutex, a side of
 * a read-write lock or one lease of a semaphore, behind one set of calls.
 *
 * Owns: the lock object and its options. Must not touch: the command, the
 * signals, the output (zkr-lock.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "cli.h"
#include "lock-kind.h"

struct lock_kind lk;

static void (*acquired)(int rc); /* the caller's, from lock_opts_set() */

static void on_mutex_acquired(zkr_mutex *m, int rc, void *ud) {
  (void)m;
  (void)ud;
  acquired(rc);
}

static void on_sem_acquired(zkr_semaphore *sem, int rc, zkr_lease **leases,
                            int n, void *ud) {
  (void)sem;
  (void)leases;
  (void)n;
  (void)ud;
  acquired(rc);
}

int lock_opts_set(const char *id, void (*done)(int rc),
                  zkr_lock_state_fn on_state) {
  if (!id_valid(id))
    return ZKR_EINVAL;
  acquired = done;
  lk.mo = (zkr_mutex_options){.id = id, .state_fn = on_state, .watch_node = 1};
  lk.so =
      (zkr_semaphore_options){.id = id, .state_fn = on_state, .watch_node = 1};
  lk.mlo = (zkr_multilock_options){.id = id, .state_fn = on_state};
  return ZKR_OK;
}

/* The lock object, with the options. */
int lock_new(zkr_session *s, const char *path) {
  int rc;
  if (lk.nand) {
    zkr_multilock_member m[ZKR_MULTILOCK_MAX];
    zkr_multilock_kind kind = lk.side == 'r'   ? ZKR_MULTILOCK_READ
                              : lk.side == 'w' ? ZKR_MULTILOCK_WRITE
                                               : ZKR_MULTILOCK_MUTEX;
    m[0] = (zkr_multilock_member){path, kind};
    for (int i = 0; i < lk.nand; i++)
      m[i + 1] = (zkr_multilock_member){lk.and_paths[i], kind};
    rc = zkr_multilock_new(&lk.ml, s, m, lk.nand + 1, &lk.mlo);
  } else if (lk.permits) {
    rc = zkr_semaphore_new(&lk.sem, s, path, (int)lk.permits, &lk.so);
  } else if (lk.side) {
    rc = zkr_rwlock_new(&lk.rw, s, path, &lk.mo);
    if (rc == ZKR_OK)
      lk.m = lk.side == 'r' ? zkr_rwlock_read_lock(lk.rw)
                            : zkr_rwlock_write_lock(lk.rw);
  } else {
    rc = zkr_mutex_new(&lk.m, s, path, &lk.mo);
  }
  return rc;
}

/* A multi-lock's acquisition blocks: it runs on a thread of its own, and
 * tells its result as the others' callbacks do. */
static pthread_t ml_thread;
static int ml_thread_on;
static int64_t ml_timeout;

static void *ml_acquire(void *arg) {
  (void)arg;
  acquired(zkr_multilock_acquire(lk.ml, ml_timeout));
  return NULL;
}

int lock_acquire_async(int64_t timeout_ms) {
  if (lk.ml) {
    ml_timeout = timeout_ms;
    if (pthread_create(&ml_thread, NULL, ml_acquire, NULL) != 0)
      return ZKR_ESYS;
    ml_thread_on = 1;
    return ZKR_OK;
  }
  if (lk.sem)
    return zkr_semaphore_acquire_async(lk.sem, 1, timeout_ms, lk.lease,
                                       on_sem_acquired, NULL);
  return zkr_mutex_acquire_async(lk.m, timeout_ms, on_mutex_acquired, NULL);
}

void lock_cancel(void) {
  if (lk.ml)
    zkr_multilock_cancel(lk.ml);
  else if (lk.sem)
    zkr_semaphore_cancel(lk.sem);
  else
    zkr_mutex_cancel(lk.m);
}

/* What -v says while waiting, into @buf; NULL when there is nothing new
 * to tell. The mutex's count of contenders ahead costs no request; the
 * semaphore has no such count (a waiter waits for the admission mutex or,
 * once admitted, for any lease to go). */
const char *lock_waiting(char *buf, size_t len) {
  if (lk.ml) {
    snprintf(buf, len, "a lock of the %d is taken", lk.nand + 1);
    return buf;
  }
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

/* The hold taken: its token, node and state (NULL: none). */
zkr_hold *lock_hold(void) {
  if (lk.ml)
    return zkr_multilock_hold(lk.ml);
  return lk.sem ? zkr_lease_hold(lk.lease[0]) : zkr_mutex_hold(lk.m);
}

int lock_release(void) {
  if (lk.ml)
    return zkr_multilock_release(lk.ml);
  if (!lk.sem)
    return zkr_mutex_release(lk.m);
  int rc = zkr_lease_release(lk.lease[0]);
  zkr_lease_free(lk.lease[0]);
  lk.lease[0] = NULL;
  return rc;
}

/* Free the lock object; a node still held or queued is deleted. */
void lock_free(void) {
  if (lk.ml) {
    zkr_multilock_cancel(lk.ml);
    if (ml_thread_on)
      pthread_join(ml_thread, NULL);
    ml_thread_on = 0;
    zkr_multilock_free(lk.ml);
    lk.ml = NULL;
  } else if (lk.sem)
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
const char *lock_noun(void) {
  return lk.permits ? "lease" : "lock";
}
