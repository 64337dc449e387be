/*
 * What a semaphore's acquisition needs before it queues (see semaphore.c):
 * the check, once per object, that the path does not hold kazoo's
 * semaphore layout (a number in its data, children other than locks and
 * leases); and the limit from a shared count node (Curator's SharedCount,
 * 4 bytes big-endian), read with a data watch and followed live: a change
 * makes the waiting contender count again, a lost read is read again once
 * connected, a new session reads it again (it has none of our watches).
 *
 * Owns: the preparation's requests and its retry timer, the count's
 * watch. Must not touch: the acquisitions' states (it settles them
 * through zkr__sem_acq_kick / zkr__sem_acq_finish), the engine.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore-int.h"

/* ---- the count follower ---- */

static int count_send(zkr_semaphore *sem);

static void count_watch_cb(zkr_session *s, int type, const char *path,
                           void *ctx) {
  zkr_semaphore *sem = ctx;
  (void)s;
  (void)type;
  (void)path;
  zkr__sem_sem_lock(sem);
  sem->count_watch = 0;
  if (!sem->freeing && sem->count_state == 2)
    (void)count_send(sem); /* read it again, with a new watch */
  zkr__sem_sem_unlock(sem);
  zkr__sem_sem_unref(sem);
}

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

static void count_cb(int rc, const char *value, int len,
                     const struct Stat *stat, const void *data) {
  zkr_semaphore *sem = (zkr_semaphore *)data;
  (void)stat;
  zkr__sem_sem_lock(sem);
  int was_known = sem->count_state == 2;
  int32_t v = 0;
  if (rc == ZOK && zkr__sem_count_decode(value, len, &v)) {
    atomic_store(&sem->limit, zkr__sem_count_limit(v));
    sem->count_state = 2;
    sem->count_err = ZKR_OK;
    sem->count_reread = 0;
  } else {
    sem->count_state = 0;
    sem->count_err = rc == ZOK ? ZKR_EBADCOUNT : zkr__from_zk(rc);
    /* lost with the connection (its watch too): read it again when the
     * connection is back, else a waiter admitted now would never see a
     * change (the preparation's own read is retried by the preparation) */
    if (zkr__transient(rc) && !sem->count_in_prep)
      sem->count_reread = 1;
    if (sem->count_watch && zkr__watch_unlink(sem->s, sem->count_watch)) {
      sem->count_watch = 0;
      sem->refs--; /* the watch's reference (mu held; ours remains) */
    }
  }
  if (sem->count_in_prep) {
    sem->count_in_prep = 0;
    if (--sem->prep_out == 0 && !sem->freeing)
      zkr__sem_post_job(sem, NULL, zkr__sem_prep_step);
  } else if (!sem->freeing) {
    if (was_known || sem->count_state == 2) {
      zkr__sem_post_job(
          sem, NULL, zkr__sem_reevaluate_all); /* the limit may have changed */
    }
  }
  zkr__sem_sem_unlock(sem);
  zkr__sem_sem_unref(sem);
}

/* Under mu: read the count node with a data watch. Returns 1 if the
 * read was sent (count_cb will run). */
static int count_send(zkr_semaphore *sem) {
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(sem->s, &zh, &gen) != ZKR_OK) {
    sem->count_state = 0; /* read again when connected (count_hook) */
    sem->count_err = ZKR_ECONNLOSS;
    sem->count_reread = 1;
    return 0;
  }
  if (!sem->count_watch) {
    uint64_t id = 0;
    if (zkr__watch_add(sem->s, sem->count_path, ZKR__WATCH_DATA, count_watch_cb,
                       sem, &id) == ZKR_OK) {
      sem->count_watch = id;
      zkr__sem_sem_ref(sem);
    }
  }
  if (sem->count_state != 2)
    sem->count_state = 1;
  zkr__sem_sem_ref(sem);
  int zrc = zoo_aget(zh, sem->count_path, 1, count_cb, sem);
  zkr__session_put_zh(sem->s);
  if (zrc != ZOK) {
    sem->refs--;
    sem->count_state = 0;
    sem->count_err = ZKR_ECONNLOSS;
    sem->count_reread = 1;
    return 0;
  }
  return 1;
}

/* A new ZooKeeper session has none of our watches: read the count again.
 * So after a reconnection (same session) if a read was lost with the
 * connection. */
void zkr__sem_count_hook(zkr_session *s, zkr_session_event ev, int64_t sid,
                         void *ctx) {
  zkr_semaphore *sem = ctx;
  (void)s;
  (void)sid;
  if (ev != ZKR_EV_CONNECTED && ev != ZKR_EV_RECONNECTED)
    return;
  zkr__sem_sem_lock(sem);
  if (!sem->freeing && !sem->prep_busy &&
      (sem->count_reread ||
       (ev == ZKR_EV_CONNECTED && sem->count_state == 2))) {
    if (ev == ZKR_EV_CONNECTED && sem->count_watch &&
        zkr__watch_unlink(sem->s, sem->count_watch)) {
      sem->count_watch = 0;
      sem->refs--;
    }
    sem->count_reread = 0;
    (void)count_send(sem);
  }
  zkr__sem_sem_unlock(sem);
}

/* ---- the preparation: kazoo's layout, the first count read ---- */

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

static void layout_data_cb(int rc, const char *value, int len,
                           const struct Stat *stat, const void *data) {
  zkr_semaphore *sem = (zkr_semaphore *)data;
  (void)stat;
  zkr__sem_sem_lock(sem);
  sem->prep_zrc_data = rc;
  if (rc == ZOK && zkr__sem_is_number(value, len))
    sem->prep_foreign = 1;
  if (--sem->prep_out == 0 && !sem->freeing)
    zkr__sem_post_job(sem, NULL, zkr__sem_prep_step);
  zkr__sem_sem_unlock(sem);
  zkr__sem_sem_unref(sem);
}

static void layout_kids_cb(int rc, const struct String_vector *names,
                           const void *data) {
  zkr_semaphore *sem = (zkr_semaphore *)data;
  zkr__sem_sem_lock(sem);
  sem->prep_zrc_kids = rc;
  for (int i = 0; rc == ZOK && names && i < names->count; i++)
    if (strcmp(names->data[i], "locks") != 0 &&
        strcmp(names->data[i], "leases") != 0)
      sem->prep_foreign = 1; /* kazoo's lease nodes sit right under PATH */
  if (--sem->prep_out == 0 && !sem->freeing)
    zkr__sem_post_job(sem, NULL, zkr__sem_prep_step);
  zkr__sem_sem_unlock(sem);
  zkr__sem_sem_unref(sem);
}

static void retry_fired(void *arg) {
  zkr_semaphore *sem = arg;
  zkr__sem_sem_lock(sem);
  sem->retry_timer = 0;
  if (!sem->freeing)
    zkr__sem_prep_step(sem, NULL);
  zkr__sem_sem_unlock(sem);
  zkr__sem_sem_unref(sem);
}

/* Under mu: the acquisitions waiting for the preparation end with @rc
 * (ZKR_OK: they go on), or, for a transient @rc, those whose deadline
 * passed end and the others wait for a retry. */
static void prep_settle(zkr_semaphore *sem, int rc) {
  zkr_session_state st = zkr_session_state_get(sem->s);
  if (rc != ZKR_OK && st == ZKR_STATE_CLOSED)
    rc = ZKR_ECLOSED; /* (a request failed with ZCLOSING) */
  else if (rc == ZKR_ECONNLOSS && st == ZKR_STATE_LOST &&
           !zkr__session_renews(sem->s))
    rc = ZKR_ESESSIONLOST; /* no session will come to retry in */
  int retry = 0;
  struct acq *a = sem->acqs;
  while (a) {
    struct acq *next = a->next;
    if (a->phase == A_PREP) {
      if (rc == ZKR_OK)
        zkr__sem_acq_kick(sem, a);
      else if (rc != ZKR_ECONNLOSS)
        zkr__sem_acq_finish(sem, a, rc);
      else if (a->try_once)
        zkr__sem_acq_finish(sem, a, ZKR_ECONNLOSS);
      else if (zkr__sem_remaining(a) < -1)
        zkr__sem_acq_finish(sem, a, ZKR_ETIMEDOUT);
      else
        retry = 1;
    }
    a = next;
  }
  if (retry && !sem->retry_timer) {
    uint64_t id = 0;
    zkr__sem_sem_ref(sem);
    if (zkr__timer_add(sem->s, zkr__now_ms() + 200, retry_fired, sem, &id) ==
        ZKR_OK) {
      sem->retry_timer = id;
    } else {
      sem->refs--;
      /* nothing would drive them: end them now */
      prep_settle(sem, zkr_session_state_get(sem->s) == ZKR_STATE_CLOSED
                           ? ZKR_ECLOSED
                           : ZKR_ENOMEM);
    }
  }
}

/* Under mu, event thread: send what the preparation still needs, or, when
 * its answers are in, settle the acquisitions waiting for it. */
void zkr__sem_prep_step(zkr_semaphore *sem, struct acq *unused) {
  (void)unused;
  if (sem->prep_busy && sem->prep_out > 0)
    return; /* answers still to come */
  if (sem->prep_busy) {
    /* the answers are in */
    sem->prep_busy = 0;
    int rc = ZKR_OK;
    if (!sem->layout_ok) {
      int zd = sem->prep_zrc_data, zk = sem->prep_zrc_kids;
      if (sem->prep_foreign)
        rc = ZKR_EFOREIGN;
      else if ((zd == ZOK || zd == ZNONODE) && (zk == ZOK || zk == ZNONODE))
        sem->layout_ok = 1;
      else
        rc = zkr__transient(zd) || zkr__transient(zk)
                 ? ZKR_ECONNLOSS
                 : zkr__from_zk(zd != ZOK && zd != ZNONODE ? zd : zk);
    }
    if (rc == ZKR_OK && sem->count_path && sem->count_state != 2)
      rc = sem->count_err == ZKR_ECONNLOSS || sem->count_err == ZKR_ETIMEDOUT
               ? ZKR_ECONNLOSS
               : (sem->count_err != ZKR_OK ? sem->count_err : ZKR_ECONNLOSS);
    prep_settle(sem, rc);
    return;
  }
  int need = 0;
  for (struct acq *a = sem->acqs; a; a = a->next)
    need |= a->phase == A_PREP;
  if (!need)
    return;
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(sem->s, &zh, &gen) != ZKR_OK) {
    prep_settle(sem, ZKR_ECONNLOSS); /* (ECLOSED once closed) */
    return;
  }
  sem->prep_busy = 1;
  sem->prep_out = 0;
  sem->prep_foreign = 0;
  if (!sem->layout_ok) {
    sem->prep_out += 2;
    zkr__sem_sem_ref(sem);
    if (zoo_aget(zh, sem->path, 0, layout_data_cb, sem) != ZOK) {
      sem->refs--;
      sem->prep_out--;
      sem->prep_zrc_data = ZCONNECTIONLOSS;
    }
    zkr__sem_sem_ref(sem);
    if (zoo_aget_children(zh, sem->path, 0, layout_kids_cb, sem) != ZOK) {
      sem->refs--;
      sem->prep_out--;
      sem->prep_zrc_kids = ZCONNECTIONLOSS;
    }
  }
  zkr__session_put_zh(sem->s);
  if (sem->count_path && sem->count_state != 2 && !sem->count_in_prep) {
    sem->prep_out++;
    sem->count_in_prep = 1;
    if (!count_send(sem)) {
      sem->count_in_prep = 0;
      sem->prep_out--;
    }
  }
  if (sem->prep_out == 0)
    zkr__sem_prep_step(sem, NULL);
}
