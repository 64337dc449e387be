/*
 * What a semaphore's acquisition needs before it queues (see semaphore.c):
 * the check, once per object, that the path does not hold kazoo's
 * semaphore layout (a number in its data, children other than locks and
 * leases), read by a one-shot follower; and the limit from a shared count
 * node (Curator's SharedCount, 4 bytes big-endian), followed by a node
 * follower (follow.c: re-read on change, after reconnecting, on a new
 * session), whose every change makes the waiting contender count again.
 *
 * Owns: the two followers, what the preparation knows.
 * Must not touch: the acquisitions (it tells the semaphore through
 * sem->on_prep and sem->on_limit, which semaphore.c sets), the engine.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore-int.h"

int zkr__sem_count_decode(const char *v, int len, int32_t *out) {
  if (!v || len != 4)
    return 0;
  const unsigned char *u = (const unsigned char *)v;
  uint32_t x = ((uint32_t)u[0] << 24) | ((uint32_t)u[1] << 16) |
               ((uint32_t)u[2] << 8) | (uint32_t)u[3];
  *out = (int32_t)x;
  return 1;
}

int zkr__sem_count_limit(int32_t v) {
  return v < 0 ? 0 : (v > ZKR_SEMAPHORE_MAX ? ZKR_SEMAPHORE_MAX : (int)v);
}

int zkr__sem_is_number(const char *v, int len) {
  if (!v || len <= 0)
    return 0;
  int i = v[0] == '-' ? 1 : 0;
  if (i >= len)
    return 0;
  for (; i < len; i++)
    if (!isdigit((unsigned char)v[i]))
      return 0;
  return 1;
}

/* The error a failed read leaves: the connection's (retried) or its own. */
static int read_error(const zkr__snapshot *v) {
  return zkr__transient(v->zrc) ? ZKR_ECONNLOSS : v->rc;
}

/* A follower's result, on the event thread: take the semaphore's lock
 * (the follower's is not held) and see what the preparation can do. */
static void layout_read(zkr__follow *f, const zkr__snapshot *v, void *ud) {
  zkr_semaphore *sem = ud;
  (void)f;
  zkr__obj_enter(&sem->obj);
  if (!sem->obj.freed && sem->layout == P_READING &&
      v->seq >= sem->layout_want) {
    int foreign = 0;
    for (int i = 0; v->rc == ZKR_OK && i < v->names->count; i++)
      foreign |= !zkr__semaphore_child(v->names->data[i], NULL);
    if (v->rc == ZKR_OK &&
        (foreign || zkr__sem_is_number(v->data, v->datalen))) {
      sem->layout = P_FAILED;
      sem->layout_err = ZKR_EFOREIGN; /* kazoo's lease nodes or count */
    } else if (v->rc == ZKR_OK || v->rc == ZKR_ENONODE) {
      sem->layout = P_OK;
    } else {
      sem->layout = P_FAILED;
      sem->layout_err = read_error(v);
    }
    zkr__sem_prep_step(sem);
  }
  zkr__obj_leave(&sem->obj);
}

static void count_read(zkr__follow *f, const zkr__snapshot *v, void *ud) {
  zkr_semaphore *sem = ud;
  (void)f;
  zkr__obj_enter(&sem->obj);
  if (!sem->obj.freed) {
    int was_known = sem->count == P_OK;
    /* a read started before the preparation asked is not its answer: a
     * valid count still counts as a change, a failure is left to the
     * answer to come */
    int answer = sem->count != P_READING || v->seq >= sem->count_want;
    int32_t c = 0;
    if (v->rc == ZKR_OK && zkr__sem_count_decode(v->data, v->datalen, &c)) {
      atomic_store(&sem->limit, zkr__sem_count_limit(c));
      if (answer)
        sem->count = P_OK;
    } else if (answer) {
      /* a failure answers the preparation that asked; one that comes by
       * itself (a change, a reconnection) leaves the count unknown, to be
       * read again by the next acquisition */
      sem->count = sem->count == P_READING ? P_FAILED : P_NONE;
      sem->count_err = v->rc == ZKR_OK ? ZKR_EBADCOUNT : read_error(v);
    }
    zkr__sem_prep_step(sem);
    if (was_known || sem->count == P_OK)
      sem->on_limit(sem); /* the limit may have changed */
  }
  zkr__obj_leave(&sem->obj);
}

/* Under the lock: start a read of @f (made on first need) for @state. */
static int prep_read(zkr_semaphore *sem, zkr__follow **f, const char *path,
                     int what, zkr__follow_fn fn, int *state, uint64_t *want) {
  *state = P_READING;
  if (*f) {
    *want = zkr__follow_refresh(*f);
    return ZKR_OK;
  }
  *want = 1; /* a new follower's first read */
  int rc = zkr__follow_new(f, sem->obj.s, path, what, NULL, fn, sem);
  if (rc != ZKR_OK)
    *state = P_NONE;
  return rc;
}

void zkr__sem_prep_step(zkr_semaphore *sem) {
  int need = 0;
  for (struct acq *a = sem->acqs; a; a = a->next)
    need |= a->phase == A_PREP;
  if (!need)
    return;
  int rc = ZKR_OK;
  if (sem->layout == P_NONE)
    rc = prep_read(sem, &sem->layout_f, sem->path,
                   ZKR__FOLLOW_ONCE | ZKR__FOLLOW_DATA | ZKR__FOLLOW_CHILDREN,
                   layout_read, &sem->layout, &sem->layout_want);
  if (rc == ZKR_OK && sem->count_path && sem->count == P_NONE)
    rc = prep_read(sem, &sem->count_f, sem->count_path, ZKR__FOLLOW_DATA,
                   count_read, &sem->count, &sem->count_want);
  if (rc == ZKR_OK && (sem->layout == P_READING || sem->count == P_READING))
    return; /* answers still to come */
  if (rc == ZKR_OK && sem->layout == P_FAILED)
    rc = sem->layout_err;
  else if (rc == ZKR_OK && sem->count_path && sem->count != P_OK)
    rc = sem->count_err;
  /* a failure is read again by the next step (the count's follower reads
   * it again by itself once connected) */
  if (sem->layout == P_FAILED)
    sem->layout = P_NONE;
  if (sem->count == P_FAILED)
    sem->count = P_NONE;
  if (sem->layout == P_OK && sem->layout_f) {
    zkr__follow_free(sem->layout_f); /* checked once */
    sem->layout_f = NULL;
  }
  sem->on_prep(sem, rc);
}

void zkr__sem_prep_stop(zkr_semaphore *sem) {
  zkr__follow_free(sem->layout_f);
  zkr__follow_free(sem->count_f);
  sem->layout_f = sem->count_f = NULL;
}
