/*
 * zkr-lock's lock, whatever its kind (see lock-kind.h): the options, the
 * object, the acquisition, the hold and the release of a mutex, a side of
 * a read-write lock or one lease of a semaphore, behind one set of calls.
 *
 * Owns: the lock object and its options. Must not touch: the command, the
 * signals, the output (zkr-lock.c).
 */
#include "config.h"

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
  return ZKR_OK;
}

/* The lock object, with the options. */
int lock_new(zkr_session *s, const char *path) {
  int rc;
  if (lk.permits) {
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

int lock_acquire_async(int64_t timeout_ms) {
  if (lk.sem)
    return zkr_semaphore_acquire_async(lk.sem, 1, timeout_ms, lk.lease,
                                       on_sem_acquired, NULL);
  return zkr_mutex_acquire_async(lk.m, timeout_ms, on_mutex_acquired, NULL);
}

void lock_cancel(void) {
  if (lk.sem)
    zkr_semaphore_cancel(lk.sem);
  else
    zkr_mutex_cancel(lk.m);
}

/* What -v says while waiting, into @buf; NULL when there is nothing new
 * to tell. The mutex's count of contenders ahead costs no request; the
 * semaphore has no such count (a waiter waits for the admission mutex or,
 * once admitted, for any lease to go). */
const char *lock_waiting(char *buf, size_t len) {
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
  return lk.sem ? zkr_lease_hold(lk.lease[0]) : zkr_mutex_hold(lk.m);
}

int lock_release(void) {
  if (!lk.sem)
    return zkr_mutex_release(lk.m);
  int rc = zkr_lease_release(lk.lease[0]);
  zkr_lease_free(lk.lease[0]);
  lk.lease[0] = NULL;
  return rc;
}

/* Free the lock object; a node still held or queued is deleted. */
void lock_free(void) {
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
const char *lock_noun(void) {
  return lk.permits ? "lease" : "lock";
}
