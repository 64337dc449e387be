/*
 * The mutex: Curator's InterProcessMutex naming ("_c_<uuid>-lock-<seq>")
 * and "every earlier contender blocks me" over the queue engine, plus its
 * public wrappers. Everything else is the engine's (queue.c) or a shared
 * recipe service's (recipe.c).
 *
 * The same object, made with another policy and a gate by
 * zkr__mutex_make(), is each half of a read-write lock (rwlock.c).
 */
#include "config.h"

#include <stdlib.h>

#include "recipe.h"

struct zkr_mutex {
  zkr__queue *q;
  zkr_hold hold; /* this acquisition's, until its release */
  zkr__owner owner;
  zkr_lock_state_fn state_fn;
  void *state_ud;
  zkr_revoke_fn revoke_fn;
  void *revoke_ud;
  zkr_acquire_fn async_fn; /* one acquisition at a time */
  void *async_ud;
  zkr__gate_fn gate; /* a half of a read-write lock: checked first */
  void *gate_ctx;
};

/* The policy: the engine's defaults (every earlier contender blocks; hold
 * with none before; wait on the nearest; idle after a loss). */
static const zkr__qpolicy mutex_policy = {.name = ZKR__MARK_LOCK,
                                          .foreign = zkr__semaphore_child};

static const zkr__qpolicy *mutex_policy_of(const char *name, void *ctx) {
  (void)name;
  (void)ctx;
  return &mutex_policy;
}

const zkr__qpolicy *zkr__mutex_policy(void) {
  return &mutex_policy;
}

/* ---- the object ---- */

/* Only with a state_fn: the engine keeps the hold's token itself
 * (zkr__qopts.token), so a mutex without one costs the event thread
 * nothing per acquisition. */
static void on_state(zkr__queue *q, zkr__qstate st, void *ud) {
  zkr_mutex *m = ud;
  (void)q;
  m->state_fn(&m->hold, zkr__lock_state_of(st), m->state_ud);
}

/* A revocation request of the term the hold has now: told to the user. */
static void on_revoke(zkr__queue *q, int rc, void *ud) {
  zkr_mutex *m = ud;
  (void)rc;
  int64_t t = zkr__queue_revoke_time(q, atomic_load(&m->hold.czxid));
  if (t)
    m->revoke_fn(&m->hold, t, m->revoke_ud);
}

int zkr__mutex_make(zkr_mutex **out, zkr_session *s, const char *path,
                    const zkr_mutex_options *opts, const zkr__qpolicy *pol,
                    zkr__gate_fn gate, void *gate_ctx) {
  static const zkr_mutex_options none;
  if (!opts)
    opts = &none;
  if (!out || !s)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  rc = zkr__options_check("zkr_mutex_options", opts->id, opts->max_hold_ms,
                          opts->reserved_, sizeof opts->reserved_);
  if (rc != ZKR_OK)
    return rc;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_mutex *m = calloc(1, sizeof *m);
  if (!m)
    return ZKR_ENOMEM;
  char data[600];
  int dlen = zkr__contender_data(opts->id, data, sizeof data);
  m->hold.q = NULL; /* (set with the queue) */
  zkr__qopts qo = {.state_fn = opts->state_fn ? on_state : NULL,
                   .state_ud = m,
                   .token = &m->hold.czxid,
                   .watch_held = opts->watch_node != 0,
                   .max_hold_ms = opts->max_hold_ms,
                   .revoke_fn = opts->revoke_fn ? on_revoke : NULL,
                   .revoke_ud = m,
                   .user = 1};
  rc = zkr__queue_new(&m->q, s, path, pol, data, dlen, &qo);
  if (rc != ZKR_OK) {
    free(m);
    return rc;
  }
  m->hold.q = m->q;
  m->owner.reentrant = opts->reentrant != 0;
  m->state_fn = opts->state_fn;
  m->state_ud = opts->state_user_data;
  m->revoke_fn = opts->revoke_fn;
  m->revoke_ud = opts->revoke_user_data;
  m->gate = gate;
  m->gate_ctx = gate_ctx;
  if (gate)
    m->owner.reentrant = 1; /* a read-write lock's halves always are */
  *out = m;
  return ZKR_OK;
}

int zkr_mutex_new(zkr_mutex **out, zkr_session *s, const char *path,
                  const zkr_mutex_options *opts) {
  return zkr__mutex_make(out, s, path, opts, &mutex_policy, NULL, NULL);
}

void zkr__mutex_destroy(zkr_mutex *m) {
  if (m) {
    zkr__queue_free(m->q);
    free(m);
  }
}

void zkr_mutex_free(zkr_mutex *m) {
  if (m && m->gate) {
    zkr__log(ZKR_LOG_ERROR,
             "zkr_mutex_free: %p is a half of a read-write "
             "lock, not freed (free the lock with "
             "zkr_rwlock_free())",
             (void *)m);
    return;
  }
  zkr__mutex_destroy(m);
}

int zkr__mutex_held_by_me(zkr_mutex *m) {
  return zkr__owner_mine(&m->owner, m->q);
}

zkr__queue *zkr__mutex_queue(zkr_mutex *m) {
  return m->q;
}

/* Start an acquisition as the gate says: queue, or take a fixed node. */
static int start(zkr_mutex *m, int64_t timeout_ms, zkr__queue_done_fn fn,
                 void *ud) {
  int32_t seq = 0;
  uint64_t gen = 0;
  int g = m->gate ? m->gate(m, m->gate_ctx, &seq, &gen) : ZKR_OK;
  if (g == ZKR__GATE_FIXED)
    return zkr__queue_join_at(m->q, seq, gen, timeout_ms, fn, ud);
  if (g != ZKR_OK)
    return g;
  return zkr__queue_start(m->q, timeout_ms, fn, ud);
}

int zkr_mutex_acquire(zkr_mutex *m, int64_t timeout_ms) {
  if (!m)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int rc;
  if (zkr__owner_enter(&m->owner, m->q, &rc))
    return rc;
  rc = start(m, timeout_ms, NULL, NULL);
  return rc == ZKR_OK ? zkr__queue_wait(m->q) : rc;
}

static void async_done(zkr__queue *q, int rc, void *ud) {
  zkr_mutex *m = ud;
  (void)q;
  m->async_fn(m, rc, m->async_ud);
}

int zkr_mutex_acquire_async(zkr_mutex *m, int64_t timeout_ms, zkr_acquire_fn fn,
                            void *user_data) {
  if (!m || !fn)
    return ZKR_EINVAL;
  if (zkr__queue_state(m->q) == ZKR__Q_ACQUIRING)
    return ZKR_EBUSY; /* and the pending callback stays as it was */
  int rc;
  if (zkr__owner_enter(&m->owner, m->q, &rc)) {
    if (rc != ZKR_OK)
      return rc;
    m->async_fn = fn;
    m->async_ud = user_data;
    rc = zkr__queue_post_result(m->q, async_done, m, ZKR_OK);
    if (rc != ZKR_OK)
      zkr__owner_undo(&m->owner);
    return rc;
  }
  m->async_fn = fn;
  m->async_ud = user_data;
  return start(m, timeout_ms, async_done, m);
}

int zkr_mutex_cancel(zkr_mutex *m) {
  return m ? zkr__queue_cancel(m->q) : ZKR_EINVAL;
}

int zkr_mutex_release(zkr_mutex *m) {
  if (!m)
    return ZKR_EINVAL;
  int rc = zkr__owner_release(&m->owner, m->q);
  if (zkr__queue_state(m->q) == ZKR__Q_UNLOCKED)
    zkr__hold_end(&m->hold); /* the last release */
  return rc;
}

zkr_hold *zkr_mutex_hold(zkr_mutex *m) {
  if (!m)
    return NULL;
  if (zkr__hold_take(&m->hold, m->q))
    return &m->hold;
  if (zkr__queue_state(m->q) == ZKR__Q_LOST && atomic_load(&m->hold.czxid))
    return &m->hold; /* lost, until released */
  return NULL;
}

zkr_lock_state zkr_mutex_state_get(const zkr_mutex *m) {
  return m ? zkr__lock_state_of(zkr__queue_state(m->q)) : ZKR_LOCK_UNLOCKED;
}

int zkr_mutex_is_held(const zkr_mutex *m) {
  return m && zkr__queue_state(m->q) == ZKR__Q_HELD;
}

int zkr_mutex_hold_count(const zkr_mutex *m) {
  return m ? zkr__owner_count(&m->owner, m->q) : 0;
}

int zkr_mutex_waiters_ahead(const zkr_mutex *m) {
  zkr__qinfo i = {.ahead = -1};
  if (m)
    zkr__queue_info(m->q, &i, NULL, 0);
  return i.ahead;
}

int zkr_mutex_participants(zkr_session *s, const char *path, int64_t timeout_ms,
                           zkr_participant **out, size_t *count) {
  return zkr__participants(s, path, mutex_policy_of, NULL, ZKR__IN_LOCK, NULL,
                           timeout_ms, out, count);
}

int zkr_mutex_stats(const zkr_mutex *m, zkr_stats *out, size_t size) {
  if (!m)
    return ZKR_EINVAL;
  return zkr__queue_stats(m->q, out, size);
}
