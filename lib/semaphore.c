/*
 * The counting semaphore: Curator's InterProcessSemaphoreV2 layout over
 * the queue engine. An admission mutex at PATH/locks (the mutex policy)
 * and, while admitted, lease nodes at PATH/leases (a policy that counts
 * every child of leases/ and holds while they number at most the limit,
 * waiting on a children watch).
 *
 * Owns: the acquisition of n leases (admission, one lease after another,
 * leaving the admission mutex), the lease objects and the API;
 * semaphore-prep.c checks that PATH does not hold kazoo's layout and
 * follows the limit in a shared count node; semaphore-list.c lists the
 * participants and copies the figures (semaphore-int.h joins the three).
 * Must not touch: the engine's internals (queue.h only), the
 * session's internals.
 *
 * Every acquisition is a small state machine driven on the session's
 * event thread: by the engine's results (admission, each lease), the
 * state of the admission node and the leases got so far (a loss starts
 * over), posted jobs (start, cancel, the end of the preparation, a changed
 * limit) and a retry timer. The semaphore's recursive mutex serialises
 * them with the API calls of other threads; the engine never calls back
 * with its own lock held, so the order is always semaphore, then queue.
 * The lock, the references, the jobs and the deferred callbacks are the
 * object base's (object.c): an asynchronous acquisition's callback runs
 * at the outermost unlock, without the lock, so a callback that blocks
 * holds up nothing but its own thread. Jobs name their acquisition by id,
 * since it may have ended (and been freed) before the job runs.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "semaphore-int.h"

/* Under the lock, event thread: start (or go on with) an acquisition; end
 * it; let every waiting contender count again (the limit changed). */
static void acq_kick(zkr_semaphore *sem, struct acq *a);
static void acq_finish(zkr_semaphore *sem, struct acq *a, int rc);
static void reevaluate_all(zkr_semaphore *sem);

/* ---- small helpers ---- */

static void acq_free(struct acq *a);

/* Under the lock: the acquisition @id if it is still under way (and the
 * semaphore is not being freed). */
static struct acq *acq_find(zkr_semaphore *sem, void *id) {
  for (struct acq *a = sem->acqs; a && !sem->obj.freed; a = a->next)
    if (a->id == (uint64_t)(uintptr_t)id)
      return a;
  return NULL;
}

/* Under the lock: run @fn(sem, @a) on the event thread, if @a is still
 * under way then. */
static int post_job(zkr_semaphore *sem, struct acq *a,
                    void (*fn)(zkr__obj *, void *)) {
  return zkr__obj_post(&sem->obj, fn, (void *)(uintptr_t)a->id);
}

static void sem_destroy(zkr__obj *o) {
  zkr_semaphore *sem = (zkr_semaphore *)o;
  free(sem->path);
  free(sem->locks);
  free(sem->leases);
  free(sem->count_path);
  zkr__figs_clear(&sem->st);
  free(sem);
}

/* ---- the policies ---- */

/* A lease holds when the lease nodes, its own included, number at most
 * the limit (Curator: children.size() <= maxLeases). */
static int lease_holds(int others, void *ctx) {
  zkr_semaphore *sem = ctx;
  return others + 1 <= atomic_load(&sem->limit);
}

/* ---- acquisitions ---- */

/* The time left: -1 without deadline, 0 to try once, ETIMEDOUT (< -1)
 * if it passed. */
static int64_t remaining(const struct acq *a) {
  if (a->try_once)
    return 0;
  if (a->deadline < 0)
    return -1;
  int64_t left = a->deadline - zkr__now_ms();
  return left > 0 ? left : ZKR_ETIMEDOUT;
}

static void acq_free(struct acq *a) {
  if (!a)
    return;
  zkr__queue_free(a->adm);
  for (int i = 0; a->tmp && i < a->n; i++)
    if (a->tmp[i]) {
      zkr__queue_free(a->tmp[i]->q);
      free(a->tmp[i]);
    }
  free(a->tmp);
  free(a);
}

static void acq_unlink(zkr_semaphore *sem, struct acq *a) {
  for (struct acq **p = &sem->acqs; *p; p = &(*p)->next)
    if (*p == a) {
      *p = a->next;
      break;
    }
}

static void lease_unlink(zkr_semaphore *sem, zkr_lease *l) {
  if (l->prev)
    l->prev->next = l->next;
  else if (sem->handed == l)
    sem->handed = l->next;
  if (l->next)
    l->next->prev = l->prev;
  l->prev = l->next = NULL;
}

/* ---- monitoring (under the lock) ---- */

/* The name of @l's node, into @buf ("" if none). */
static const char *lease_name(zkr_lease *l, char *buf, size_t len) {
  buf[0] = '\0';
  zkr__queue_info(l->q, NULL, buf, len);
  const char *slash = strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

/* Why @l was lost (a zkr_lost_cause). */
static int lease_lost_cause(zkr_lease *l) {
  zkr_lost_cause c = zkr__queue_lost_cause(l->q, atomic_load(&l->hold.czxid));
  return c != ZKR_LOST_NONE ? (int)c : (int)ZKR_LOST_SESSION;
}

/* @lost: 0 (released), or the zkr_lost_cause. */
static void lease_hold_end(zkr_semaphore *sem, zkr_lease *l, int lost) {
  if (!l->hold_open)
    return;
  l->hold_open = 0;
  zkr__alarm_disarm(l->hold_alarm);
  l->hold_alarm = NULL;
  char buf[ZKR__PATH_MAX + 64];
  zkr__stats_hold_end(sem->obj.s, &sem->st, "lease", sem->leases,
                      lost ? NULL : lease_name(l, buf, sizeof buf), lost,
                      zkr__now_us() - l->hold_t0);
}

static void acq_stats_end(zkr_semaphore *sem, struct acq *a, int rc) {
  zkr__alarm_disarm(a->alarm);
  a->alarm = NULL;
  int64_t now = zkr__now_us();
  zkr__qinfo qi;
  zkr__queue_info(a->adm, &qi, NULL, 0);
  int handoff = qi.waited;
  for (int i = 0; i < a->n && !handoff; i++)
    if (a->tmp[i]) {
      zkr__queue_info(a->tmp[i]->q, &qi, NULL, 0);
      handoff = qi.waited;
    }
  zkr__stats_wait_end(sem->obj.s, &sem->st, "lease", sem->leases, NULL, rc,
                      now - a->t0, handoff, rc == ZKR_OK ? a->n : 0);
  if (rc != ZKR_OK)
    return;
  char buf[ZKR__PATH_MAX + 64];
  for (int i = 0; i < a->n; i++) {
    zkr_lease *l = a->tmp[i];
    l->hold_open = 1;
    l->hold_t0 = now;
    l->hold_alarm =
        zkr__alarm_arm(sem->obj.s, ZKR_ALERT_HOLD, "lease", sem->leases,
                       lease_name(l, buf, sizeof buf), NULL);
  }
}

/* A finished asynchronous acquisition's callback (without the lock). */
static void acq_call(zkr__obj *o, zkr__obj_call *c, int call) {
  struct acq *a = (struct acq *)c;
  if (call)
    a->fn((zkr_semaphore *)o, a->rc, a->out, a->n, a->ud);
  acq_free(a);
}

/* Under the lock, event thread: the acquisition ends with @rc. On failure every
 * lease node it got is deleted, then the admission node; on success the
 * admission node is deleted (not waited for) and the leases handed out. */
static void acq_finish(zkr_semaphore *sem, struct acq *a, int rc) {
  if (a->phase == A_END)
    return;
  int was = a->phase;
  a->phase = A_END;
  acq_stats_end(sem, a, rc);
  if (rc != ZKR_OK)
    for (int i = 0; i < a->got; i++)
      zkr__queue_release(a->tmp[i]->q);
  if (was == A_LEASE)
    zkr__queue_release(a->adm);
  acq_unlink(sem, a);
  if (rc == ZKR_OK) {
    for (int i = 0; i < a->n; i++) {
      zkr_lease *l = a->tmp[i];
      l->acq = NULL;
      zkr__hold_take(&l->hold, l->q);
      zkr__queue_retell_revoke(l->q); /* a request seen before this */
      l->next = sem->handed;
      if (sem->handed)
        sem->handed->prev = l;
      sem->handed = l;
      a->out[i] = l;
      a->tmp[i] = NULL;
    }
  }
  if (a->blocking) {
    a->done = 1;
    a->rc = rc;
    zkr__obj_broadcast(&sem->obj);
    return; /* the waiter frees it */
  }
  if (a->fn && !sem->obj.freed) {
    a->rc = rc; /* its callback runs once the lock is let go */
    a->call.fn = acq_call;
    zkr__obj_defer(&sem->obj, &a->call);
    return;
  }
  acq_free(a);
}

static void lease_done(zkr__queue *q, int rc, void *ud);

/* Under the lock, event thread: take the next lease, or end when all are got.
 * A cancel asked meanwhile ends it (the cancel could not stop a lease
 * whose grant was already on its way). */
static void next_lease(zkr_semaphore *sem, struct acq *a) {
  if (a->cancel) {
    acq_finish(sem, a, ZKR_ECANCELED);
    return;
  }
  if (a->got == a->n) {
    acq_finish(sem, a, ZKR_OK);
    return;
  }
  int64_t left = remaining(a);
  if (left < -1) {
    acq_finish(sem, a, ZKR_ETIMEDOUT);
    return;
  }
  int rc = zkr__queue_start(a->tmp[a->got]->q, left, lease_done, a);
  if (rc != ZKR_OK)
    acq_finish(sem, a, rc);
}

/* Under the lock, event thread: the admission node or a lease got so far was
 * lost while acquiring: end the current lease's wait and start over. */
static void acq_restart(zkr_semaphore *sem, struct acq *a) {
  (void)sem;
  if (a->phase != A_LEASE || a->restarting)
    return;
  a->restarting = 1;
  zkr__queue_cancel(a->tmp[a->got]->q); /* lease_done runs with ECANCELED */
}

static void lease_done(zkr__queue *q, int rc, void *ud) {
  struct acq *a = ud;
  zkr_semaphore *sem = a->sem;
  (void)q;
  zkr__obj_enter(&sem->obj);
  if (a->phase == A_LEASE) {
    if (a->restarting && !a->cancel &&
        (rc == ZKR_OK || rc == ZKR_ECANCELED || rc == ZKR_ELOCKLOST)) {
      /* (a lease got just before the cancel took is given back too) */
      a->restarting = 0;
      for (int i = 0; i <= a->got && i < a->n; i++)
        zkr__queue_release(a->tmp[i]->q);
      zkr__queue_release(a->adm);
      a->got = 0;
      a->phase = A_ADMIT;
      acq_kick(sem, a);
    } else if (rc == ZKR_OK) {
      a->got++;
      next_lease(sem, a);
    } else {
      acq_finish(sem, a, rc);
    }
  }
  zkr__obj_leave(&sem->obj);
}

static void adm_done(zkr__queue *q, int rc, void *ud) {
  struct acq *a = ud;
  zkr_semaphore *sem = a->sem;
  zkr__obj_enter(&sem->obj);
  if (a->phase == A_ADMIT) {
    if (rc != ZKR_OK) {
      acq_finish(sem, a, rc);
    } else if (a->cancel) {
      a->phase = A_LEASE; /* so that the admission node is released */
      acq_finish(sem, a, ZKR_ECANCELED);
    } else if (zkr__queue_state(q) == ZKR__Q_LOST) {
      /* admitted, but the node went with its session before we heard
       * (its LOST came while we were not yet admitted): queue again, or
       * the leases would be waited for outside the admission mutex */
      zkr__queue_release(q);
      acq_kick(sem, a);
    } else {
      a->phase = A_LEASE;
      next_lease(sem, a);
    }
  }
  zkr__obj_leave(&sem->obj);
}

/* The admission node's state, while admitted: a loss starts over. */
static void adm_state(zkr__queue *q, zkr__qstate st, void *ud) {
  struct acq *a = ud;
  zkr_semaphore *sem = a->sem;
  (void)q;
  if (st != ZKR__Q_LOST)
    return;
  zkr__obj_enter(&sem->obj);
  acq_restart(sem, a);
  zkr__obj_leave(&sem->obj);
}

/* Dispatch mode: a handed-out lease's state change reaches the user
 * through zkr_session_dispatch() (the lease's queue keeps the lease
 * alive meanwhile, and drops the call once the lease is freed). */
static void lease_tell(zkr__queue *q, int st, void *ud) {
  zkr_lease *l = ud;
  (void)q;
  zkr__obj_lock(&l->sem->obj);
  zkr_lock_state_fn fn = l->sem->state_fn;
  void *fud = l->sem->state_ud;
  zkr__obj_unlock(&l->sem->obj);
  if (fn)
    fn(&l->hold, zkr__lock_state_of((zkr__qstate)st), fud);
}

static void lease_state(zkr__queue *q, zkr__qstate st, void *ud) {
  zkr_lease *l = ud;
  zkr_semaphore *sem = l->sem;
  (void)q;
  zkr__obj_enter(&sem->obj);
  if (l->acq) {
    if (st == ZKR__Q_LOST)
      acq_restart(sem, l->acq); /* a lease got so far is gone */
    zkr__obj_leave(&sem->obj);
    return;
  }
  if (st == ZKR__Q_LOST)
    lease_hold_end(sem, l, lease_lost_cause(l));
  zkr_lock_state_fn fn = sem->state_fn;
  void *fud = sem->state_ud;
  zkr__obj_leave(&sem->obj);
  if (fn && zkr__session_dispatching(sem->obj.s))
    zkr__queue_post_user(q, lease_tell, l, (int)st); /* (not once freed) */
  else if (fn)
    fn(&l->hold, zkr__lock_state_of(st), fud);
}

/* A revocation request of a lease: told once it is handed out (one seen
 * before finds no hold yet, and is told again at the handing out). */
static void lease_revoked(zkr__queue *q, int rc, void *ud) {
  zkr_lease *l = ud;
  zkr_semaphore *sem = l->sem;
  (void)rc;
  int64_t t = zkr__queue_revoke_time(q, atomic_load(&l->hold.czxid));
  if (!t)
    return;
  zkr__obj_lock(&sem->obj);
  zkr__stats_revocation(sem->obj.s, &sem->st);
  zkr__obj_unlock(&sem->obj);
  sem->revoke_fn(&l->hold, t, sem->revoke_ud);
}

/* A lease waiter has to wait (the leases are all taken): from now on watch
 * the admission node. Deleted by someone else, it would let the next
 * contender in while this one still waits, and enough such waiters can
 * take every lease node with none of them holding, each waiting for ever.
 * Its loss (adm_state) gives the leases got so far back and queues for
 * admission again. A lease got without waiting needs no watch: the
 * admission is left at once. */
static void lease_waits(zkr__queue *q, int rc, void *ud) {
  zkr_lease *l = ud;
  zkr_semaphore *sem = l->sem;
  (void)q;
  (void)rc;
  zkr__obj_enter(&sem->obj);
  struct acq *a = l->acq;
  if (a && a->phase == A_LEASE && !a->restarting)
    zkr__queue_watch_held(a->adm, 1);
  zkr__obj_leave(&sem->obj);
}

/* Under the lock, event thread: start (or start over) an acquisition. */
static void acq_kick(zkr_semaphore *sem, struct acq *a) {
  if (a->phase == A_END)
    return;
  if (a->cancel) {
    acq_finish(sem, a, ZKR_ECANCELED);
    return;
  }
  if (sem->layout != P_OK || (sem->count_path && sem->count != P_OK)) {
    a->phase = A_PREP;
    zkr__sem_prep_step(sem);
    return;
  }
  if (a->n > atomic_load(&sem->limit) && atomic_load(&sem->limit) > 0 &&
      sem->count_path) {
    acq_finish(sem, a, ZKR_EINVAL); /* more than the shared count allows */
    return;
  }
  int64_t left = remaining(a);
  if (left < -1) {
    acq_finish(sem, a, ZKR_ETIMEDOUT);
    return;
  }
  a->phase = A_ADMIT;
  zkr__queue_watch_held(a->adm, 0); /* until a lease has to wait */
  int rc = zkr__queue_start(a->adm, left, adm_done, a);
  if (rc != ZKR_OK)
    acq_finish(sem, a, rc);
}

/* The posted start of an acquisition, which only this job takes out of
 * A_NEW: it starts it once. */
static void job_kick(zkr__obj *o, void *id) {
  zkr_semaphore *sem = (zkr_semaphore *)o;
  struct acq *a = acq_find(sem, id);
  if (a && a->phase == A_NEW)
    acq_kick(sem, a);
}

static void job_cancel(zkr__obj *o, void *id) {
  zkr_semaphore *sem = (zkr_semaphore *)o;
  struct acq *a = acq_find(sem, id);
  if (!a)
    return;
  a->cancel = 1;
  if (a->phase == A_NEW || a->phase == A_PREP)
    acq_finish(sem, a, ZKR_ECANCELED);
  else if (a->phase == A_ADMIT)
    zkr__queue_cancel(a->adm);
  else if (a->phase == A_LEASE)
    zkr__queue_cancel(a->tmp[a->got]->q); /* (if the lease was granted
                                             already, next_lease() ends it) */
}

static void retry_fired(void *arg) {
  zkr_semaphore *sem = arg;
  zkr__obj_lock(&sem->obj);
  sem->retry_timer = 0;
  if (!sem->obj.freed)
    zkr__sem_prep_step(sem);
  zkr__obj_unlock(&sem->obj);
  zkr__obj_unref(&sem->obj);
}

/* Under the lock: the acquisitions waiting for the preparation end with
 * @rc (ZKR_OK: they go on), or, for a connection's @rc, those whose
 * deadline passed end and the others wait for a retry. */
static void prep_settle(zkr_semaphore *sem, int rc) {
  zkr_session_state st = zkr_session_state_get(sem->obj.s);
  if (rc != ZKR_OK && st == ZKR_STATE_CLOSED)
    rc = ZKR_ECLOSED; /* (a request failed with ZCLOSING) */
  else if ((rc == ZKR_ECONNLOSS || rc == ZKR_ESESSIONLOST) &&
           st == ZKR_STATE_LOST && !zkr__session_renews(sem->obj.s))
    rc = ZKR_ESESSIONLOST; /* no session will come to retry in */
  else if (rc == ZKR_ESESSIONLOST)
    rc = ZKR_ECONNLOSS; /* (a new session comes) */
  int retry = 0;
  for (struct acq *a = sem->acqs, *next; a; a = next) {
    next = a->next;
    if (a->phase != A_PREP)
      continue;
    if (rc == ZKR_OK)
      acq_kick(sem, a);
    else if (rc != ZKR_ECONNLOSS)
      acq_finish(sem, a, rc);
    else if (a->try_once)
      acq_finish(sem, a, ZKR_ECONNLOSS);
    else if (remaining(a) < -1)
      acq_finish(sem, a, ZKR_ETIMEDOUT);
    else
      retry = 1;
  }
  if (retry && !sem->retry_timer) {
    uint64_t id = 0;
    zkr__obj_ref(&sem->obj);
    if (zkr__timer_add(sem->obj.s, zkr__now_ms() + 200, retry_fired, sem,
                       &id) == ZKR_OK) {
      sem->retry_timer = id;
    } else {
      zkr__obj_unref_locked(&sem->obj);
      /* nothing would drive them: end them now */
      prep_settle(sem, st == ZKR_STATE_CLOSED ? ZKR_ECLOSED : ZKR_ENOMEM);
    }
  }
}

static void reevaluate_all(zkr_semaphore *sem) {
  for (struct acq *a = sem->acqs; a; a = a->next)
    if (a->phase == A_LEASE && !a->restarting)
      zkr__queue_reevaluate(a->tmp[a->got]->q);
}

/* ---- the object ---- */

int zkr_semaphore_new(zkr_semaphore **out, zkr_session *s, const char *path,
                      int limit, const zkr_semaphore_options *opts) {
  static const zkr_semaphore_options none;
  if (!opts)
    opts = &none;
  if (!out || !s)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (strlen(path) > ZKR_SEMAPHORE_PATH_MAX)
    return ZKR_EINVAL; /* PATH/leases would be over the path limit */
  rc = zkr__options_check("zkr_semaphore_options", opts->id, opts->max_hold_ms,
                          opts->reserved_, sizeof opts->reserved_);
  if (rc != ZKR_OK)
    return rc;
  const char *cpath = opts->count_path;
  if (cpath && zkr__path_check(cpath) != ZKR_OK) {
    zkr__log(ZKR_LOG_ERROR, "zkr_semaphore_options: count_path is not a valid "
                            "znode path");
    return ZKR_EBADPATH;
  }
  if (cpath ? limit != 0 : (limit < 1 || limit > ZKR_SEMAPHORE_MAX))
    return ZKR_EINVAL;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_semaphore *sem = calloc(1, sizeof *sem);
  if (!sem)
    return ZKR_ENOMEM;
  zkr__obj_init(&sem->obj, s, sem_destroy);
  zkr__obj_set_user(&sem->obj); /* (its deferred calls: acquisition results) */
  sem->path = zkr__strdup(path);
  sem->locks = zkr__path_join(path, ZKR__SEM_ADMISSION);
  sem->leases = zkr__path_join(path, ZKR__SEM_LEASES);
  sem->count_path = cpath ? zkr__strdup(cpath) : NULL;
  if (!sem->path || !sem->locks || !sem->leases || (cpath && !sem->count_path))
    goto nomem;
  sem->datalen = zkr__contender_data(opts->id, sem->data, sizeof sem->data);
  sem->fixed_limit = limit;
  atomic_store(&sem->limit, limit);
  sem->adm_pol.name = ZKR__MARK_LOCK;
  sem->lease_pol.name = ZKR__MARK_LEASE;
  sem->lease_pol.label = "lease";
  sem->lease_pol.wait = ZKR__QWAIT_CHILDREN;
  sem->lease_pol.count_all = 1;
  sem->on_prep = prep_settle;
  sem->on_limit = reevaluate_all;
  sem->lease_pol.holds = lease_holds;
  sem->lease_pol.ctx = sem;
  sem->state_fn = opts->state_fn;
  sem->state_ud = opts->state_user_data;
  sem->watch_node = opts->watch_node != 0;
  sem->max_hold_ms = opts->max_hold_ms;
  sem->revoke_fn = opts->revoke_fn;
  sem->revoke_ud = opts->revoke_user_data;
  *out = sem;
  return ZKR_OK;
nomem:
  zkr__obj_unref(&sem->obj);
  return ZKR_ENOMEM;
}

static struct acq *acq_new(zkr_semaphore *sem, int n, int64_t timeout_ms,
                           zkr_lease **out, int *rc) {
  struct acq *a = calloc(1, sizeof *a);
  *rc = ZKR_ENOMEM;
  if (!a)
    return NULL;
  a->sem = sem;
  a->n = n;
  a->out = out;
  a->try_once = timeout_ms == 0;
  a->deadline = timeout_ms < 0 ? -1 : zkr__now_ms() + timeout_ms;
  a->tmp = calloc((size_t)n, sizeof *a->tmp);
  if (!a->tmp)
    goto fail;
  /* (the own root: PATH and PATH/locks, PATH/leases are the semaphore's) */
  zkr__qopts ao = {
      .state_fn = adm_state, .state_ud = a, .own_root = sem->path, .quiet = 1};
  *rc = zkr__queue_new(&a->adm, sem->obj.s, sem->locks, &sem->adm_pol,
                       sem->data, sem->datalen, &ao);
  if (*rc != ZKR_OK)
    goto fail;
  for (int i = 0; i < n; i++) {
    zkr_lease *l = calloc(1, sizeof *l);
    if (!l) {
      *rc = ZKR_ENOMEM;
      goto fail;
    }
    l->sem = sem;
    l->acq = a;
    a->tmp[i] = l;
    zkr__qopts lo = {.state_fn = lease_state,
                     .state_ud = l,
                     .wait_fn = lease_waits,
                     .wait_ud = l,
                     .own_root = sem->path,
                     .watch_held = sem->watch_node,
                     .max_hold_ms = sem->max_hold_ms,
                     .revoke_fn = sem->revoke_fn ? lease_revoked : NULL,
                     .revoke_ud = l,
                     .quiet = 1};
    *rc = zkr__queue_new(&l->q, sem->obj.s, sem->leases, &sem->lease_pol,
                         sem->data, sem->datalen, &lo);
    if (*rc != ZKR_OK)
      goto fail;
    l->hold.q = l->q;
  }
  *rc = ZKR_OK;
  return a;
fail:
  acq_free(a);
  return NULL;
}

/* Check the arguments, make the acquisition and post its start. */
static int acq_start(zkr_semaphore *sem, int n, int64_t timeout_ms,
                     zkr_lease **leases, zkr_semaphore_acquire_fn fn, void *ud,
                     int blocking, struct acq **out) {
  if (!sem || !leases || n < 1 || n > ZKR_SEMAPHORE_MAX)
    return ZKR_EINVAL;
  if (!sem->count_path && n > sem->fixed_limit)
    return ZKR_EINVAL;
  if (zkr_session_state_get(sem->obj.s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  int rc;
  struct acq *a = acq_new(sem, n, timeout_ms, leases, &rc);
  if (!a)
    return rc;
  a->fn = fn;
  a->ud = ud;
  a->blocking = blocking;
  a->phase = A_NEW; /* not A_PREP: the preparation must not start it */
  zkr__obj_enter(&sem->obj);
  a->id = ++sem->next_acq_id;
  a->next = sem->acqs;
  sem->acqs = a;
  a->t0 = zkr__now_us();
  zkr__stats_wait_begin(sem->obj.s, &sem->st);
  a->alarm = zkr__alarm_arm(sem->obj.s, ZKR_ALERT_WAIT, "lease", sem->leases,
                            NULL, zkr__zk_first_contender);
  rc = post_job(sem, a, job_kick);
  if (rc != ZKR_OK) {
    if (a->phase != A_END)
      acq_stats_end(sem, a, rc);
    acq_unlink(sem, a);
    zkr__obj_leave(&sem->obj);
    acq_free(a);
    return rc;
  }
  *out = a;
  zkr__obj_leave(&sem->obj);
  return ZKR_OK;
}

int zkr_semaphore_acquire(zkr_semaphore *sem, int n, int64_t timeout_ms,
                          zkr_lease **leases) {
  if (sem && leases && zkr__tls_in_callback)
    return ZKR_EDEADLK;
  struct acq *a = NULL;
  int rc = acq_start(sem, n, timeout_ms, leases, NULL, NULL, 1, &a);
  if (rc != ZKR_OK)
    return rc;
  zkr__obj_lock(&sem->obj);
  while (!a->done)
    zkr__obj_wait(&sem->obj, -1);
  rc = a->rc;
  zkr__obj_unlock(&sem->obj);
  acq_free(a);
  return rc;
}

int zkr_semaphore_acquire_async(zkr_semaphore *sem, int n, int64_t timeout_ms,
                                zkr_lease **leases, zkr_semaphore_acquire_fn fn,
                                void *user_data) {
  if (!fn)
    return ZKR_EINVAL;
  struct acq *a = NULL;
  return acq_start(sem, n, timeout_ms, leases, fn, user_data, 0, &a);
}

int zkr_semaphore_cancel(zkr_semaphore *sem) {
  if (!sem)
    return ZKR_EINVAL;
  int rc = ZKR_ENOTHELD;
  zkr__obj_enter(&sem->obj);
  for (struct acq *a = sem->acqs, *next; a; a = next) {
    next = a->next; /* (a job run inline, the session closed, may end a) */
    if (a->phase != A_END && !a->cancel) {
      a->cancel = 1;
      if (post_job(sem, a, job_cancel) == ZKR_OK)
        rc = ZKR_OK;
    }
  }
  zkr__obj_leave(&sem->obj);
  return rc;
}

int zkr_semaphore_limit(const zkr_semaphore *sem) {
  return sem ? atomic_load(&((zkr_semaphore *)sem)->limit) : -1;
}

/* Event thread (or inline once it stopped): end everything of @sem. */
static void job_teardown(zkr__obj *o, void *unused) {
  zkr_semaphore *sem = (zkr_semaphore *)o;
  (void)unused;
  while (sem->acqs) {
    struct acq *a = sem->acqs;
    a->cancel = 1;
    acq_finish(sem, a, ZKR_ECANCELED); /* no callback: freed */
  }
  while (sem->handed) {
    zkr_lease *l = sem->handed;
    lease_hold_end(sem, l, 0);
    lease_unlink(sem, l);
    zkr__queue_free(l->q);
    free(l);
  }
  zkr__sem_prep_stop(sem);
  if (sem->retry_timer && zkr__timer_cancel(sem->obj.s, sem->retry_timer)) {
    sem->retry_timer = 0;
    zkr__obj_unref_locked(&sem->obj);
  }
  sem->torn = 1;
  zkr__obj_broadcast(&sem->obj);
}

void zkr_semaphore_free(zkr_semaphore *sem) {
  if (!sem)
    return;
  zkr__obj_lock(&sem->obj);
  sem->obj.freed = 1; /* no job, no callback from now on */
  if (zkr__tls_in_callback ||
      zkr__obj_post(&sem->obj, job_teardown, NULL) != ZKR_OK)
    job_teardown(&sem->obj, NULL);
  while (!sem->torn)
    zkr__obj_wait(&sem->obj, -1);
  zkr__obj_retire_locked(&sem->obj); /* a callback on another thread */
  zkr__obj_unlock(&sem->obj);
  zkr__obj_unref(&sem->obj);
}

/* ---- leases ---- */

/* A released lease stays with its semaphore (sem->handed) until
 * zkr_lease_free() or zkr_semaphore_free(): release never frees. */
int zkr_lease_release(zkr_lease *l) {
  if (!l)
    return ZKR_EINVAL;
  zkr_semaphore *sem = l->sem;
  zkr__obj_lock(&sem->obj);
  int was = !l->released;
  l->released = 1;
  lease_hold_end(
      sem, l, zkr__queue_state(l->q) == ZKR__Q_LOST ? lease_lost_cause(l) : 0);
  zkr__hold_end(&l->hold);
  zkr__obj_unlock(&sem->obj);
  int rc = zkr__queue_release(l->q);
  if (!was)
    return ZKR_ENOTHELD;
  return rc == ZKR_ELOCKLOST ? ZKR_ELOCKLOST : ZKR_OK;
}

void zkr_lease_free(zkr_lease *l) {
  if (!l)
    return;
  zkr_semaphore *sem = l->sem;
  zkr__obj_lock(&sem->obj);
  lease_hold_end(sem, l, 0);
  zkr__hold_end(&l->hold);
  lease_unlink(sem, l);
  zkr__obj_unlock(&sem->obj);
  zkr__queue_free(l->q); /* (deletes a node still held) */
  free(l);
}

zkr_lock_state zkr_lease_state_get(const zkr_lease *l) {
  return l ? zkr__lock_state_of(zkr__queue_state(l->q)) : ZKR_LOCK_UNLOCKED;
}

zkr_hold *zkr_lease_hold(zkr_lease *l) {
  return l ? &l->hold : NULL;
}
