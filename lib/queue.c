/*
 * The queue engine: a queue of ephemeral-sequential nodes plus a rule for
 * whom to wait on. Every recipe is a policy over it (queue.h). This file
 * holds the object, its callbacks, the session hook, the deadline and the
 * API; queue-steps.c the requests of an acquisition, queue-attr.c the
 * settings and read-only views, queue-stats.c the monitoring,
 * queue-control.c the maximum hold (queue-int.h joins them).
 *
 * Owns: one contender's node and its one watch, from the create to the
 * delete; the hold decision; the deadline; the contender's state and the
 * delivery of its callbacks, exactly once each. Must not touch: the
 * session's internals (only the zkr__session_* and zkr__watch_* calls),
 * public types, anything recipe-specific (naming beyond the policy's name,
 * reentrancy, fencing, guarded writes: recipe.c).
 *
 * One zkr__queue is one contender. An acquisition runs as a chain of
 * asynchronous ZooKeeper requests driven by their completions (on the
 * ZooKeeper completion thread), the session's state hooks, watch events
 * and a deadline timer; blocking callers wait on a condition variable and
 * asynchronous callers get a callback on the session's event thread.
 *
 *   create  EPHEMERAL|SEQUENTIAL "<parent>/_c_<uuid>-<name><seq>"
 *           (ZNONODE: create the missing ancestors as containers, each
 *            with its error kept, and the node again; a real error of an
 *            ancestor (not authorized, an ephemeral parent, a path the
 *            server refuses) ends the attempt with that error)
 *           (lost reply: after reconnecting, look for "_c_<uuid>-" among
 *            the children and adopt it if its owner is our session)
 *   list    the children, sent right behind the create without waiting
 *           for its reply (one round trip for both; the server handles a
 *           session's requests in order, so the listing shows our node);
 *           the blockers before us by the policy are the
 *           only nodes that can ever block us (later nodes get later
 *           numbers). Kept of the list: how many blockers there were and
 *           the names of the nearest two, so a waiter's memory does not
 *           grow with the queue. The policy's hold rule decides on the
 *           count (default: none before us).
 *   watch   NEAREST: the nearest blocker with exists+watch, O(1) bytes.
 *           CHILDREN: the listing itself sets a children watch on the
 *           parent, and every change lists again. The first wait of an
 *           acquisition is posted to the recipe's wait_fn, if it set one
 *           (the semaphore's lease waiter: it then watches its admission
 *           node).
 *   wake    (NEAREST) the watched blocker went away: the other blockers of
 *           the list may or may not still exist. None: held, without a
 *           request (with watch_held, after the exists that sets our
 *           node's watch and shows it is still there and ours: a third
 *           party may have deleted it).
 *           One: watch it (one exists, O(1) bytes; gone already: held).
 *           Several: list the children again (one read) and carry on from
 *           the new list. It changed instead: watch it again.
 *           No watch event is taken on trust: a third party's setData on a
 *           lock node (Curator's revocation writes one) or the deletion of
 *           a waiting node cannot make a waiter hold while an earlier node
 *           is still there. (An earlier version checked several remaining
 *           blockers with one multi-op of creates that always failed;
 *           bench/probe-cost showed that write costs more than the re-list,
 *           up to 12x: see docs/performance.md.)
 *   loss    the session went, or our node was deleted: LOST, then idle or
 *           (ZKR__QLOSS_REQUEUE) queued again at the back with a new node.
 *
 * Every asynchronous callback holds a reference on the queue object and
 * carries the attempt number it belongs to; a callback of an abandoned
 * attempt (timed out, cancelled, lost) is ignored, so a cancelled waiter
 * can never be woken into ownership and nothing touches freed memory.
 *
 * Callbacks exactly once: what an acquisition's result needs to reach the
 * event thread is allocated when the acquisition starts (a start that
 * cannot allocate it fails, and nothing was sent); state changes go
 * through one event node and a small ring allocated with the object. Once
 * the session is closed and its event thread gone, both run on the thread
 * that ended the acquisition, right after it lets go of the object's lock
 * (q_unlock).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue-int.h"

static void q_ref_locked(zkr__queue *q) {
  q->refs++;
}

static void post_free(struct post *p) {
  if (p) {
    zkr__event_free(p->ev);
    free(p);
  }
}

static struct post *post_new(zkr__queue *q) {
  struct post *p = calloc(1, sizeof *p);
  if (p && !(p->ev = zkr__event_new())) {
    free(p);
    p = NULL;
  }
  if (p)
    p->q = q;
  return p;
}

static void q_destroy(zkr__queue *q) {
  zkr__session_held(q->s, &q->held, 0);
  free(q->node_path);
  free(q->pred1);
  free(q->pred2);
  free(q->watch_path);
  post_free(q->dpost);
  zkr__figs_clear(&q->st);
  if (q->cv) {
    pthread_cond_destroy(q->cv);
    free(q->cv);
  }
  pthread_mutex_destroy(&q->mu);
  zkr__session_unref(q->s);
  free(q);
}

static void q_unref(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int last = --q->refs == 0;
  pthread_mutex_unlock(&q->mu);
  if (last)
    q_destroy(q);
}

static void post_done(void *arg);
static void deliver_states(void *arg);

/* Let go of q->mu, then deliver what could not go to the event thread
 * (the session is closed): the user's callbacks never run under mu. */
static void q_unlock(zkr__queue *q) {
  struct post *p = q->orphan;
  int states = q->state_orphan;
  q->orphan = NULL;
  q->state_orphan = 0;
  pthread_mutex_unlock(&q->mu);
  if (states)
    deliver_states(q);
  if (p)
    post_done(p);
}

void zkr__q_unlock(zkr__queue *q) {
  q_unlock(q);
}

void zkr__q_lock_checked(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  /* A held node whose ZooKeeper session is gone, or that the session clock
   * gives up as of now (a pause the manager thread has not acted on yet),
   * is lost right here: the caller reports it, and the LOST callback is
   * posted before the caller returns. The session's hook, when it runs,
   * finds the node lost already. */
  if (q->phase == Q_HELD && !zkr__session_alive(q->s, q->gen))
    zkr__q_lose(q, ZKR_LOST_SESSION);
}

struct qctx *zkr__q_ctx_new(zkr__queue *q) {
  struct qctx *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->q = q;
  c->acq = q->acq;
  c->attempt = q->attempt;
  c->gen = q->gen;
  q_ref_locked(q);
  return c;
}

/* Under mu: forget a context whose callback will never run. Never the
 * last reference (the caller has one). */
void zkr__q_ctx_forget(zkr__queue *q, struct qctx *c) {
  if (c) {
    q->refs--;
    free(c);
  }
}

/* Release a context from a callback (q->mu not held). */
static void ctx_done(struct qctx *c) {
  zkr__queue *q = c->q;
  free(c);
  q_unref(q);
}

void zkr__q_ctx_done(struct qctx *c) {
  ctx_done(c);
}

/* Start of every request and watch callback: marks the thread as a
 * callback thread and takes mu. Returns 1 if @c belongs to the current
 * attempt and the object is in @phase. */
int zkr__q_callback_enter(struct qctx *c, qphase phase) {
  zkr__queue *q = c->q;
  zkr__tls_in_callback++;
  pthread_mutex_lock(&q->mu);
  return c->attempt == q->attempt && q->phase == phase;
}

/* End of every request and watch callback: under mu on entry. */
void zkr__q_callback_exit(struct qctx *c) {
  zkr__queue *q = c->q;
  q_unlock(q);
  ctx_done(c);
  zkr__tls_in_callback--;
}

/* ------------------------------------------------------------------ */
/* small helpers */

void zkr__q_clear_preds(zkr__queue *q) {
  free(q->pred1);
  free(q->pred2);
  q->pred1 = q->pred2 = NULL;
  q->npreds = 0;
}

void zkr__q_clear_node(zkr__queue *q) {
  free(q->node_path);
  q->node = NULL;
  q->node_path = NULL;
  q->czxid = 0;
}

/* Under mu: take @name (a child of the parent) as our node. */
int zkr__q_set_node(zkr__queue *q, const char *name) {
  zkr__q_clear_node(q);
  if (q->wait_open)
    zkr__alarm_set_node(q->alarm, name);
  q->node_path = zkr__path_join(q->parent, name);
  if (!q->node_path)
    return ZKR_ENOMEM;
  q->node = strrchr(q->node_path, '/') + 1;
  return zkr__seq_parse(q->node, &q->seq) ? ZKR_OK : ZKR_EZK;
}

/* Under mu: forget our one watch. The registry entry is unlinked without
 * waiting for a callback in progress: that callback finds its watch id
 * stale and only drops its reference. With @server, the server-side watch
 * is removed too, so an abandoned waiter leaves no stale watch. */
void zkr__q_drop_watch(zkr__queue *q, int server) {
  if (q->watch_id) {
    if (zkr__watch_unlink(q->s, q->watch_id))
      zkr__q_ctx_forget(q, q->watch_ctx); /* its callback will never run */
    q->watch_ctx = NULL;                  /* else its callback frees it */
    q->watch_id = 0;
    if (server && q->watch_path)
      zkr__session_unwatch(q->s, q->watch_path, q->watch_kind);
  }
  free(q->watch_path);
  q->watch_path = NULL;
}

/* Under mu, in a watch callback: the registry consumed our watch. */
void zkr__q_watch_consumed(zkr__queue *q) {
  q->watch_id = 0;
  q->watch_ctx = NULL;
  free(q->watch_path);
  q->watch_path = NULL;
}

void zkr__q_cancel_timer(zkr__queue *q) {
  if (q->timer_id) {
    if (zkr__timer_cancel(q->s, q->timer_id))
      zkr__q_ctx_forget(q, q->timer_ctx); /* the timer will never run */
    q->timer_ctx = NULL;                  /* else it runs and frees it */
    q->timer_id = 0;
  }
}

/* ------------------------------------------------------------------ */
/* the user's callbacks */

/* Under mu: the condition variable that zkr__queue_wait() and
 * zkr__queue_free() sleep on exists only while someone sleeps (most
 * objects never have a thread waiting for them). */
static void q_wake(zkr__queue *q) {
  if (q->cv)
    pthread_cond_broadcast(q->cv);
}

/* Under mu: sleep until q_wake() (or a while, out of memory). */
static void q_sleep(zkr__queue *q) {
  if (!q->cv && (q->cv = malloc(sizeof *q->cv)) != NULL)
    zkr__cond_init(q->cv);
  if (!q->cv) {
    pthread_mutex_unlock(&q->mu);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&q->mu);
    return;
  }
  q->sleepers++;
  pthread_cond_wait(q->cv, &q->mu);
  q->sleepers--;
}

/* Under mu: done sleeping; the last sleeper frees the variable. */
static void q_slept(zkr__queue *q) {
  if (q->cv && q->sleepers == 0) {
    pthread_cond_destroy(q->cv);
    free(q->cv);
    q->cv = NULL;
  }
}

/* Run a user callback unless the object was freed; zkr__queue_free()
 * waits for one in progress. */
static int cb_enter(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int ok = !q->freed;
  if (ok)
    q->cb_running = 1;
  pthread_mutex_unlock(&q->mu);
  return ok;
}

static void cb_leave(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  q->cb_running = 0;
  q_wake(q);
  pthread_mutex_unlock(&q->mu);
}

static void post_done(void *arg) {
  struct post *p = arg;
  zkr__queue *q = p->q;
  if (cb_enter(q)) {
    p->fn(q, p->rc, p->ud);
    cb_leave(q);
  }
  post_free(p);
  q_unref(q);
}

/* A user result not delivered: the dispatch-mode session closed. */
static void post_drop(void *arg) {
  struct post *p = arg;
  zkr__queue *q = p->q;
  post_free(p);
  q_unref(q);
}

/* Under mu: hand @p (its fn, ud and rc set) to the event thread (or, for
 * a user callback in dispatch mode, to zkr_session_dispatch()), or to
 * q_unlock() once there is none. */
static void send_post(zkr__queue *q, struct post *p) {
  q_ref_locked(q);
  int rc = q->user
               ? zkr__session_post_user(q->s, p->ev, post_done, post_drop, p)
               : zkr__session_post_event(q->s, p->ev, post_done, p);
  if (rc == ZKR_OK)
    return;
  if (q->user && zkr__session_dispatching(q->s)) {
    q->refs--; /* closed: dropped (the caller holds a reference) */
    post_free(p);
  } else {
    q->orphan = p; /* the session is closed: delivered by q_unlock() */
  }
}

/* Deliver the pending state changes, oldest first (event thread, or after
 * close the thread that made them). Holds a reference taken when it was
 * queued. */
static void deliver_states(void *arg) {
  zkr__queue *q = arg;
  pthread_mutex_lock(&q->mu);
  while (q->ring_len > 0) {
    zkr__qstate st = (zkr__qstate)q->ring[q->ring_head];
    q->ring_head = (q->ring_head + 1) % STATE_RING;
    q->ring_len--;
    zkr__queue_state_fn fn = q->state_fn;
    void *ud = q->state_ud;
    if (!fn || q->freed)
      continue;
    q->cb_running = 1;
    pthread_mutex_unlock(&q->mu);
    fn(q, st, ud);
    pthread_mutex_lock(&q->mu);
    q->cb_running = 0;
    q_wake(q);
  }
  q->sev_queued = 0;
  pthread_mutex_unlock(&q->mu);
  q_unref(q);
}

/* State changes not delivered: the dispatch-mode session closed. */
static void drop_states(void *arg) {
  zkr__queue *q = arg;
  pthread_mutex_lock(&q->mu);
  q->ring_len = 0;
  q->sev_queued = 0;
  pthread_mutex_unlock(&q->mu);
  q_unref(q);
}

/* Under mu: the contender's state changed; tell the user (on the event
 * thread) if it is a change of a held node (HELD, SUSPECT, LOST). */
void zkr__q_set_lstate(zkr__queue *q, zkr__qstate st) {
  if (q->lstate == st)
    return;
  q->lstate = st;
  if (st == ZKR__Q_LOST)
    zkr__q_hold_end(q, q->lost_cause ? q->lost_cause : ZKR_LOST_SESSION);
  else if (q->token && (st == ZKR__Q_HELD || st == ZKR__Q_SUSPECT))
    atomic_store(q->token, q->czxid);
  q_wake(q);
  if (!q->state_fn || q->freed ||
      !(st == ZKR__Q_HELD || st == ZKR__Q_SUSPECT || st == ZKR__Q_LOST))
    return;
  if (q->ring_len == STATE_RING) {
    /* merge the oldest change that is not a loss into the next one */
    int i = 0;
    while (i < STATE_RING - 1 &&
           q->ring[(q->ring_head + i) % STATE_RING] == ZKR__Q_LOST)
      i++;
    for (; i > 0; i--)
      q->ring[(q->ring_head + i) % STATE_RING] =
          q->ring[(q->ring_head + i - 1) % STATE_RING];
    q->ring_head = (q->ring_head + 1) % STATE_RING;
    q->ring_len--;
    zkr__log(ZKR_LOG_WARN,
             "%s: state callbacks are %d changes behind; two "
             "merged",
             q->parent, STATE_RING);
  }
  q->ring[(q->ring_head + q->ring_len) % STATE_RING] = (unsigned char)st;
  q->ring_len++;
  if (q->sev_queued)
    return;
  q->sev_queued = 1;
  q_ref_locked(q);
  int rc = q->user ? zkr__session_post_user(q->s, &q->sev, deliver_states,
                                            drop_states, q)
                   : zkr__session_post_event(q->s, &q->sev, deliver_states, q);
  if (rc == ZKR_OK)
    return;
  if (q->user && zkr__session_dispatching(q->s)) {
    q->refs--; /* closed: dropped (the caller holds a reference) */
    q->ring_len = 0;
    q->sev_queued = 0;
  } else {
    q->state_orphan = 1; /* the session is closed: by q_unlock() */
  }
}

/* ------------------------------------------------------------------ */
/* completion of an attempt */

/* Under mu: abandon whatever the attempt left on the server. */
static void abandon(zkr__queue *q) {
  zkr__q_drop_watch(q, 1);
  if (q->node_path)
    zkr__session_bg_delete(q->s, q->node_path, q->gen);
  else if (q->create_unknown && q->create_gen_valid) {
    char prefix[ZKR__QPREFIX_LEN];
    zkr__q_prefix(q, prefix);
    zkr__session_bg_cleanup(q->s, q->parent, prefix, q->gen);
  }
  zkr__q_clear_node(q);
  zkr__q_clear_preds(q);
  q->create_unknown = 0;
}

/* Under mu: the attempt ends with @rc. */
void zkr__q_finish(zkr__queue *q, int rc) {
  zkr__q_wait_end(q, rc);
  zkr__q_cancel_timer(q);
  q->waiting_conn = 0;
  if (rc == ZKR_OK) {
    /* a blocker's watch goes; one on our own node (set by hold_now's
     * owner check) is already the held node's */
    if (!(q->watch_held && q->watch_id && q->watch_kind == ZKR__WATCH_DATA &&
          q->watch_path && q->node_path &&
          strcmp(q->watch_path, q->node_path) == 0))
      zkr__q_drop_watch(q, q->watch_kind == ZKR__WATCH_CHILD);
    zkr__q_clear_preds(q);
    q->phase = Q_HELD;
    zkr__q_set_lstate(q, ZKR__Q_HELD);
    zkr__q_arm_held_watch(q);
    zkr__q_arm_max_hold(q);
  } else {
    abandon(q);
    q->phase = Q_IDLE;
    q->lstate = ZKR__Q_UNLOCKED;
    zkr__q_next_attempt(q); /* late callbacks of this attempt are ignored */
  }
  q->result = rc;
  q->finished = 1;
  q_wake(q);
  struct post *p = q->dpost;
  if (p && p->fn) {
    q->dpost = NULL;
    p->rc = rc;
    send_post(q, p);
  }
}

static int acquiring(zkr__queue *q) {
  return q->phase == Q_CREATING || q->phase == Q_LISTING ||
         q->phase == Q_WATCHING;
}

static void state_hook(zkr_session *s, zkr_session_event ev, int64_t sid,
                       void *ctx) {
  zkr__queue *q = ctx;
  (void)s;
  (void)sid;
  pthread_mutex_lock(&q->mu);
  switch (ev) {
  case ZKR_EV_SUSPENDED:
    if (q->phase == Q_HELD && q->lstate == ZKR__Q_HELD)
      zkr__q_set_lstate(q, ZKR__Q_SUSPECT);
    break;
  case ZKR_EV_RECONNECTED:
    if (q->phase == Q_HELD && q->lstate == ZKR__Q_SUSPECT)
      zkr__q_verify_held(q);
    else if (acquiring(q) && q->waiting_conn)
      zkr__q_resume(q);
    break;
  case ZKR_EV_LOST:
  case ZKR_EV_CLOSED:
    if (q->phase == Q_HELD) {
      zkr__q_lose(q, ZKR_LOST_SESSION); /* the node went with the session */
    } else if (acquiring(q)) {
      if (ev == ZKR_EV_CLOSED) {
        zkr__q_finish(q, ZKR_ECLOSED);
      } else if (q->fixed) {
        zkr__q_finish(q,
                      ZKR_ELOCKLOST); /* the write node went with the session */
      } else if (zkr_session_state_get(q->s) == ZKR_STATE_LOST &&
                 !zkr__session_renews(q->s)) {
        zkr__q_finish(q, ZKR_ESESSIONLOST);
      } else {
        /* Our node (if any) went with the session: start over on the
         * next one, if the deadline allows. */
        zkr__q_restart(q);
      }
    }
    break;
  case ZKR_EV_CONNECTED:
    if (acquiring(q) && q->fixed) {
      zkr__q_finish(q,
                    ZKR_ELOCKLOST); /* a new session: the write node is gone */
    } else if (acquiring(q) && q->waiting_conn) {
      q->create_unknown = 0; /* a new session: nothing of ours is there */
      q->phase = Q_CREATING;
      zkr__q_resume(q);
    }
    break;
  }
  q_unlock(q);
}

/* ------------------------------------------------------------------ */
/* the deadline */

static void deadline_fired(void *arg) {
  struct qctx *c = arg;
  zkr__queue *q = c->q;
  pthread_mutex_lock(&q->mu);
  if (c == q->timer_ctx) {
    q->timer_id = 0;
    q->timer_ctx = NULL;
  }
  if (c->acq == q->acq && acquiring(q))
    zkr__q_finish(q, ZKR_ETIMEDOUT);
  q_unlock(q);
  ctx_done(c);
}

/* ------------------------------------------------------------------ */
/* API */

/* Would a node that joins late (pol->late) block a contender of @pol? A
 * child's kind is its name after the prefix, so a name made of any
 * prefix and the late kind answers for all of them. */
static int late_blocks(const zkr__qpolicy *pol) {
  if (!pol->late)
    return 0;
  if (!pol->blocks)
    return 1;
  char name[ZKR__QPREFIX_LEN + 64];
  snprintf(name, sizeof name,
           "_c_00000000-0000-4000-8000-000000000000-%s0000000000", pol->late);
  return pol->blocks(name, pol->ctx) != 0;
}

int zkr__queue_new(zkr__queue **out, zkr_session *s, const char *parent,
                   const zkr__qpolicy *pol, const char *data, int datalen,
                   const zkr__qopts *opts) {
  if (!pol || !pol->name ||
      (pol->wait == ZKR__QWAIT_NEAREST &&
       (pol->holds != NULL || pol->count_all)))
    return ZKR_EINVAL; /* a nearest-blocker wait needs the default rule */
  /* one allocation: the object, its parent's path and its data */
  size_t plen = strlen(parent), dlen = datalen > 0 ? (size_t)datalen : 0;
  zkr__queue *q = calloc(1, sizeof *q + plen + 1 + dlen);
  if (!q)
    return ZKR_ENOMEM;
  q->parent = memcpy((char *)(q + 1), parent, plen + 1);
  zkr__list_init(&q->held.link);
  q->held.path = q->parent;
  q->data = q->parent + plen + 1;
  if (dlen > 0)
    memcpy(q->data, data, dlen);
  zkr__event_init(&q->sev);
  q->datalen = datalen;
  q->own_len = (uint32_t)plen;
  q->verify = late_blocks(pol);
  zkr__q_apply_opts(q, opts);
  q->pol = pol;
  q->s = s;
  q->refs = 1;
  pthread_mutex_init(&q->mu, NULL);
  zkr__session_ref(s);
  int rc = zkr__session_hook_add(s, state_hook, q, &q->hook);
  if (rc != ZKR_OK) {
    q_destroy(q);
    return rc;
  }
  *out = q;
  return ZKR_OK;
}

void zkr__queue_free(zkr__queue *q) {
  if (!q)
    return;
  /* After this no state hook runs (and none is running). */
  zkr__session_hook_remove(q->s, q->hook);
  pthread_mutex_lock(&q->mu);
  q->freed = 1;
  q->state_fn = NULL;
  if (q->dpost)
    q->dpost->fn = NULL; /* no result callback any more */
  if (acquiring(q))
    zkr__q_finish(q, ZKR_ECANCELED);
  if (q->phase == Q_HELD) {
    zkr__q_cancel_timer(q); /* the maximum hold's */
    zkr__q_hold_end(q, q->lstate == ZKR__Q_LOST ? q->lost_cause : 0);
    zkr__q_drop_watch(q, 0); /* our delete consumes the server's watch */
    if (q->node_path && q->lstate != ZKR__Q_LOST)
      zkr__session_bg_delete(q->s, q->node_path, q->gen);
    zkr__q_clear_node(q);
    q->phase = Q_IDLE;
  }
  zkr__q_next_attempt(q);
  /* Wait for a user callback in progress, unless we are inside it. */
  while (q->cb_running && !zkr__tls_in_callback)
    q_sleep(q);
  q_slept(q);
  q_unlock(q);
  q_unref(q);
}

static int start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                 void *ud, int fixed, int32_t fixed_seq, uint64_t fixed_gen,
                 const char *member) {
  pthread_mutex_lock(&q->mu);
  if (q->phase != Q_IDLE) {
    pthread_mutex_unlock(&q->mu);
    return ZKR_EBUSY;
  }
  zkr_session_state st = zkr_session_state_get(q->s);
  if (st == ZKR_STATE_CLOSED) {
    pthread_mutex_unlock(&q->mu);
    return ZKR_ECLOSED;
  }
  if (st == ZKR_STATE_LOST && !zkr__session_renews(q->s)) {
    pthread_mutex_unlock(&q->mu);
    return ZKR_ESESSIONLOST;
  }
  /* What the result needs to reach the user, before anything is sent. */
  if (fn && !q->dpost && !(q->dpost = post_new(q))) {
    pthread_mutex_unlock(&q->mu);
    return ZKR_ENOMEM;
  }
  if (q->dpost) {
    q->dpost->fn = fn;
    q->dpost->ud = ud;
  }
  /* "Try once" does not wait for other contenders, but may have to wait
   * for the connection: bound that by the session timeout. */
  int64_t bound = timeout_ms;
  if (timeout_ms == 0) {
    bound = zkr_session_timeout(q->s);
    if (bound <= 0)
      bound = 10000;
  }
  q->acq++;
  zkr__q_next_attempt(q);
  q->deadline = zkr__deadline(bound);
  if (bound > 0) {
    struct qctx *c = zkr__q_ctx_new(q);
    q->timer_ctx = c;
    if (!c || zkr__timer_add(q->s, q->deadline, deadline_fired, c,
                             &q->timer_id) != ZKR_OK) {
      q->timer_ctx = NULL;
      zkr__q_ctx_forget(q, c);
      if (q->dpost)
        q->dpost->fn = NULL;
      pthread_mutex_unlock(&q->mu);
      return ZKR_ENOMEM;
    }
  }
  q->phase = Q_CREATING;
  q->try_once = timeout_ms == 0;
  q->finished = 0;
  q->result = 0;
  q->parent_tries = 0;
  q->parent_err = ZOK;
  q->create_unknown = 0;
  q->create_gen_valid = 0;
  q->waiting_conn = 0;
  q->relist_after = 0;
  q->lstate = ZKR__Q_ACQUIRING;
  q->fixed = fixed;
  q->fixed_seq = fixed_seq;
  q->fixed_gen = fixed_gen;
  q->member = member != NULL;
  q->waited = 0;
  zkr__q_wait_begin(q);
  zkr__q_new_uuid(q);
  if ((fixed || member) && zkr__session_generation(q->s, NULL) != fixed_gen)
    zkr__q_finish(q, ZKR_ELOCKLOST); /* the node's session is gone already */
  else if (member && zkr__q_set_node(q, member) != ZKR_OK)
    zkr__q_finish(q, ZKR_ENOMEM);
  else if (member) {
    q->gen = fixed_gen;
    q->create_gen_valid = 1;   /* (a cleanup by prefix, in that session) */
    zkr__q_uuid_of(q, member); /* its prefix: found again by it */
    q->phase = Q_LISTING;
    zkr__q_step_adopt(q); /* its owner and czxid, then its place */
  } else
    zkr__q_step_create(q);
  /* If the create could not even be sent because the session is between
   * ZooKeeper sessions, the state hook resumes it. */
  q_unlock(q);
  return ZKR_OK;
}

int zkr__queue_start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                     void *ud) {
  return start(q, timeout_ms, fn, ud, 0, 0, 0, NULL);
}

int zkr__queue_start_member(zkr__queue *q, const char *name, uint64_t gen,
                            int64_t timeout_ms, zkr__queue_done_fn fn,
                            void *ud) {
  if (!name)
    return ZKR_EINVAL;
  return start(q, timeout_ms, fn, ud, 0, 0, gen, name);
}

int zkr__queue_join_at(zkr__queue *q, int32_t seq, uint64_t gen,
                       int64_t timeout_ms, zkr__queue_done_fn fn, void *ud) {
  if (!q->pol->late || strcmp(q->pol->late, q->pol->name) != 0)
    return ZKR_EINVAL; /* the layout does not let this kind join late */
  return start(q, timeout_ms, fn, ud, 1, seq, gen, NULL);
}

int zkr__queue_wait(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  while (!q->finished)
    q_sleep(q);
  q_slept(q);
  int rc = q->result;
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int zkr__queue_cancel(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int rc = ZKR_OK;
  if (acquiring(q))
    zkr__q_finish(q, ZKR_ECANCELED);
  else
    rc = ZKR_EINVAL;
  q_unlock(q);
  return rc;
}

/* The release; @take non-NULL: our node's path and ZooKeeper session go
 * to the caller, who deletes it, instead of a deletion here. */
static int release(zkr__queue *q, char **take, uint64_t *gen) {
  zkr__q_lock_checked(q);
  int rc = ZKR_OK;
  if (q->phase != Q_HELD) {
    rc = q->lstate == ZKR__Q_LOST ? ZKR_ELOCKLOST : ZKR_ENOTHELD;
    if (q->lstate == ZKR__Q_LOST)
      q->lstate = ZKR__Q_UNLOCKED; /* reported once */
  } else {
    zkr__q_cancel_timer(q); /* the maximum hold's */
    zkr__q_hold_end(q, q->lstate == ZKR__Q_LOST ? q->lost_cause : 0);
    zkr__q_drop_watch(q, 0); /* our delete consumes the server's watch */
    if (q->lstate == ZKR__Q_LOST)
      rc = ZKR_ELOCKLOST;
    else if (take && (*take = zkr__strdup(q->node_path)) != NULL)
      *gen = q->gen;
    else
      zkr__session_bg_delete(q->s, q->node_path, q->gen);
    zkr__q_clear_node(q);
    q->phase = Q_IDLE;
    zkr__q_next_attempt(q);
    q->lstate = ZKR__Q_UNLOCKED;
  }
  q_unlock(q);
  return rc;
}

int zkr__queue_release(zkr__queue *q) {
  return release(q, NULL, NULL);
}

int zkr__queue_release_take(zkr__queue *q, char **node_path, uint64_t *gen) {
  *node_path = NULL;
  return release(q, node_path, gen);
}

void zkr__q_post_revoke(zkr__queue *q) {
  struct post *p = post_new(q);
  if (!p) {
    zkr__log(ZKR_LOG_ERROR,
             "out of memory: a revocation request of %s was not told",
             q->node_path ? q->node_path : q->parent);
    return;
  }
  p->fn = q->revoke_fn;
  p->ud = q->revoke_ud;
  p->rc = ZKR_OK;
  q_ref_locked(q);
  if (zkr__session_post_user(q->s, p->ev, post_done, post_drop, p) != ZKR_OK) {
    q->refs--; /* the session is closed: not told */
    post_free(p);
  }
}

void zkr__queue_retell_revoke(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  if (q->revoke_fn && q->phase == Q_HELD && q->czxid != 0 &&
      q->revoke_czxid == q->czxid)
    zkr__q_post_revoke(q);
  q_unlock(q);
}

static int post_result(zkr__queue *q, zkr__queue_done_fn fn, void *ud, int rc,
                       int user) {
  struct post *p = post_new(q);
  if (!p)
    return ZKR_ENOMEM;
  p->fn = fn;
  p->ud = ud;
  p->rc = rc;
  pthread_mutex_lock(&q->mu);
  q_ref_locked(q);
  pthread_mutex_unlock(&q->mu);
  int prc = user ? zkr__session_post_user(q->s, p->ev, post_done, post_drop, p)
                 : zkr__session_post_event(q->s, p->ev, post_done, p);
  if (prc != ZKR_OK) {
    post_free(p);
    q_unref(q);
  }
  return prc;
}

void zkr__queue_ref(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  q_ref_locked(q);
  pthread_mutex_unlock(&q->mu);
}

void zkr__queue_unref(zkr__queue *q) {
  q_unref(q);
}

int zkr__queue_post_result(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                           int rc) {
  return post_result(q, fn, ud, rc, 0);
}

int zkr__queue_post_user(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                         int rc) {
  return post_result(q, fn, ud, rc, 1);
}

void zkr__queue_watch_held(zkr__queue *q, int on) {
  pthread_mutex_lock(&q->mu);
  q->watch_held = on != 0;
  if (on)
    zkr__q_arm_held_watch(q);
  q_unlock(q);
}

/* Under mu: an acquisition waits for the first time: post the wait_fn.
 * Returns ZKR_ENOMEM if it could not be told (the caller ends the
 * acquisition: its recipe counts on being told). */
int zkr__q_tell_waiting(zkr__queue *q) {
  if (!q->wait_fn)
    return ZKR_OK;
  struct post *p = post_new(q);
  if (!p)
    return ZKR_ENOMEM;
  p->fn = q->wait_fn;
  p->ud = q->wait_ud;
  p->rc = ZKR_OK;
  q_ref_locked(q);
  if (zkr__session_post_event(q->s, p->ev, post_done, p) != ZKR_OK) {
    q->refs--; /* the session is closed: the acquisition ends anyway */
    post_free(p);
  }
  return ZKR_OK;
}

void zkr__queue_reevaluate(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  if (q->phase == Q_WATCHING && q->pol->wait == ZKR__QWAIT_CHILDREN &&
      !q->waiting_conn)
    zkr__q_relist(q);
  else if (q->phase == Q_LISTING)
    q->relist_after = 1;
  q_unlock(q);
}
