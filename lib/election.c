/*
 * Leader election over the queue engine: the latch (Curator LeaderLatch's
 * "latch-" nodes; a loss queues again at the back) and the selector
 * (Curator LeaderSelector's "lock-" nodes; a user function runs on a
 * thread of its own while leading), both with the engine's owner check
 * before leading and a watch on the leader's own node; and, for anyone,
 * the leader, the participants and an observer of every change of leader.
 *
 * Owns: what "leader" means to the user (the listener, told once per
 * change on the event thread; is_leader and await from the engine's
 * state), the selector's thread, the observer's watch. Must not touch:
 * the engine's internals (queue.h only), the session's internals.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "follow.h"
#include "recipe.h"

enum { STYLE_NONE, STYLE_LATCH, STYLE_SELECTOR };

struct zkr_election {
  zkr__obj obj; /* its lock and the wait for a change (object.c) */
  char *path;
  char data[600];
  int datalen;
  zkr_election_fn fn;
  void *ud;
  int keep; /* ZKR_ELECTION_SUSPEND_KEEP */
  int style;
  zkr__queue *q;
  int reported;       /* what the listener was told last (event thread) */
  uint64_t changes;   /* changes told so far (under the lock) */
  uint64_t told;      /* of them, passed to the listener (under the lock) */
  zkr__obj_call tell; /* passes them on (queued: tell.link linked) */
  int telling;        /* tell is deferred */
  zkr__list terms;    /* the holds of its terms, the latest first */
  int err;            /* why joining ended (ZKR_OK while in) */
  /* the selector */
  pthread_t th;
  int th_started;
  zkr_leader_fn lfn;
  void *lud;
  int requeue;
  atomic_int stop; /* being freed: the function must return */
  int done;
};

/* The latch: lowest number leads; a loss queues again at the back; lead
 * only on a node whose owner is our current session. */
static const zkr__qpolicy latch_policy = {
    .name = ZKR__MARK_LATCH, .label = "latch", .on_loss = ZKR__QLOSS_REQUEUE};
/* The selector: a mutex whose holder leads; its thread queues again. */
static const zkr__qpolicy selector_policy = {.name = ZKR__MARK_LOCK};
/* Listing: every child with a number is a participant, lowest leads. */
static const zkr__qpolicy any_policy = {.name = ZKR__MARK_LATCH};

/* ---- leading ---- */

/* Does the engine's state mean leading? */
static int leads(const zkr_election *e, zkr__qstate st) {
  return st == ZKR__Q_HELD || (st == ZKR__Q_SUSPECT && e->keep);
}

/* Pass the changes on to the listener, in order, without the lock (as
 * the lock is let go on the event thread, or in dispatch mode in
 * zkr_session_dispatch()). Changes alternate, starting with "leading":
 * the k-th is leading when k is odd. */
static void tell_call(zkr__obj *o, zkr__obj_call *c, int call) {
  zkr_election *e = (zkr_election *)o;
  (void)c;
  zkr__obj_lock(o);
  e->telling = 0;
  while (e->told < e->changes) {
    uint64_t k = ++e->told;
    if (!call || o->freed)
      continue;
    zkr__obj_unlock(o);
    e->fn(e, (int)(k & 1), e->ud);
    zkr__obj_lock(o);
  }
  zkr__obj_unlock(o);
}

/* Event thread: tell the listener @v if it was told otherwise last. */
static void report(zkr_election *e, int v) {
  zkr__obj_lock(&e->obj);
  int tell = e->reported != v;
  e->reported = v;
  e->changes += tell;
  if (tell && e->fn && !e->telling) {
    e->telling = 1;
    e->tell.fn = tell_call;
    zkr__obj_defer(&e->obj, &e->tell);
  }
  zkr__obj_broadcast(&e->obj);
  zkr__obj_unlock(&e->obj);
}

static void on_state(zkr__queue *q, zkr__qstate st, void *ud) {
  (void)q;
  report(ud, leads(ud, st));
}

/* Event thread: leadership given up (resign, the selector's function
 * returned): not leading, unless the engine already leads again. */
static void report_left(zkr__queue *q, int rc, void *ud) {
  (void)rc;
  report(ud, leads(ud, zkr__queue_state(q)));
}

static void start_done(zkr__queue *q, int rc, void *ud) {
  zkr_election *e = ud;
  (void)q;
  zkr__obj_lock(&e->obj);
  if (rc != ZKR_OK && rc != ZKR_ECANCELED)
    e->err = rc; /* (closed, lost for good, not allowed) */
  zkr__obj_broadcast(&e->obj);
  zkr__obj_unlock(&e->obj);
}

/* ---- the object ---- */

/* The hold of one term, in e->terms. */
struct term {
  zkr_hold h;
  zkr__list link;
};

static void election_destroy(zkr__obj *o) {
  zkr_election *e = (zkr_election *)o;
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &e->terms) {
    zkr__list_remove(n);
    free(zkr__list_entry(n, struct term, link));
  }
  free(e->path);
  free(e);
}

int zkr_election_new(zkr_election **out, zkr_session *s, const char *path,
                     const zkr_election_options *opts) {
  static const zkr_election_options none;
  if (!opts)
    opts = &none;
  if (!out || !s)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  rc = zkr__options_check("zkr_election_options", opts->id, 0, opts->reserved_,
                          sizeof opts->reserved_);
  if (rc != ZKR_OK)
    return rc;
  if (opts->suspend != ZKR_ELECTION_SUSPEND_DROP &&
      opts->suspend != ZKR_ELECTION_SUSPEND_KEEP) {
    zkr__log(ZKR_LOG_ERROR, "zkr_election_options: suspend is not a "
                            "zkr_election_suspend");
    return ZKR_EINVAL;
  }
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_election *e = calloc(1, sizeof *e);
  if (!e || !(e->path = zkr__strdup(path))) {
    free(e);
    return ZKR_ENOMEM;
  }
  zkr__obj_init(&e->obj, s, election_destroy);
  zkr__obj_set_user(&e->obj);
  zkr__list_init(&e->terms);
  e->datalen = zkr__contender_data(opts->id, e->data, sizeof e->data);
  e->fn = opts->listener;
  e->ud = opts->listener_user_data;
  e->keep = opts->suspend == ZKR_ELECTION_SUSPEND_KEEP;
  *out = e;
  return ZKR_OK;
}

/* Make the queue of @style; ZKR_EBUSY if already joined. */
static int join(zkr_election *e, int style) {
  if (e->style != STYLE_NONE)
    return ZKR_EBUSY;
  if (zkr_session_state_get(e->obj.s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr__qopts qo = {.state_fn = on_state, .state_ud = e, .watch_held = 1};
  int rc =
      zkr__queue_new(&e->q, e->obj.s, e->path,
                     style == STYLE_LATCH ? &latch_policy : &selector_policy,
                     e->data, e->datalen, &qo);
  if (rc != ZKR_OK)
    return rc;
  e->style = style;
  return ZKR_OK;
}

int zkr_election_start(zkr_election *e) {
  if (!e)
    return ZKR_EINVAL;
  zkr__obj_lock(&e->obj);
  int rc = join(e, STYLE_LATCH);
  zkr__obj_unlock(&e->obj);
  if (rc != ZKR_OK)
    return rc;
  rc = zkr__queue_start(e->q, -1, start_done, e);
  if (rc != ZKR_OK) {
    zkr__obj_lock(&e->obj);
    e->err = rc;
    zkr__obj_unlock(&e->obj);
  }
  return rc;
}

/* The selector's thread: queue, lead, run the function, give up, again. */
static void *selector_main(void *arg) {
  zkr_election *e = arg;
  for (;;) {
    if (atomic_load(&e->stop))
      break;
    int rc = zkr__queue_start(e->q, -1, NULL, NULL);
    if (rc == ZKR_OK)
      rc = zkr__queue_wait(e->q);
    if (rc != ZKR_OK) {
      zkr__obj_lock(&e->obj);
      if (rc != ZKR_ECANCELED && !atomic_load(&e->stop))
        e->err = rc;
      zkr__obj_unlock(&e->obj);
      break; /* closed, lost for good, freed */
    }
    e->lfn(e, e->lud);
    zkr__queue_release(e->q); /* (ZKR_ELOCKLOST if it was lost) */
    zkr__queue_post_result(e->q, report_left, e, ZKR_OK);
    if (!e->requeue || atomic_load(&e->stop))
      break;
  }
  zkr__obj_lock(&e->obj);
  e->done = 1;
  zkr__obj_broadcast(&e->obj);
  zkr__obj_unlock(&e->obj);
  return NULL;
}

int zkr_election_run(zkr_election *e, zkr_leader_fn fn, void *user_data,
                     int requeue) {
  if (!e || !fn)
    return ZKR_EINVAL;
  zkr__obj_lock(&e->obj);
  int rc = join(e, STYLE_SELECTOR);
  if (rc == ZKR_OK) {
    e->lfn = fn;
    e->lud = user_data;
    e->requeue = requeue != 0;
    if (pthread_create(&e->th, NULL, selector_main, e) != 0) {
      rc = ZKR_ESYS;
      e->done = 1;
    } else {
      e->th_started = 1;
    }
  }
  zkr__obj_unlock(&e->obj);
  return rc;
}

int zkr_election_is_leader(const zkr_election *e) {
  return e && e->q && !atomic_load(&((zkr_election *)e)->stop) &&
         leads(e, zkr__queue_state(e->q));
}

int zkr_election_await(zkr_election *e, int64_t timeout_ms) {
  if (!e)
    return ZKR_EINVAL;
  if (timeout_ms != 0 && zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t deadline = zkr__deadline(timeout_ms);
  int rc = ZKR_ETIMEDOUT;
  zkr__obj_lock(&e->obj);
  for (;;) {
    if (e->style == STYLE_NONE || (e->style == STYLE_SELECTOR && e->done)) {
      rc = e->err != ZKR_OK ? e->err : ZKR_ENOTHELD;
      break;
    }
    if (leads(e, zkr__queue_state(e->q))) {
      rc = ZKR_OK;
      break;
    }
    if (e->err != ZKR_OK ||
        zkr_session_state_get(e->obj.s) == ZKR_STATE_CLOSED) {
      rc = e->err != ZKR_OK ? e->err : ZKR_ECLOSED;
      break;
    }
    if (timeout_ms == 0 || zkr__obj_wait(&e->obj, deadline) != 0) {
      rc = leads(e, zkr__queue_state(e->q)) ? ZKR_OK : ZKR_ETIMEDOUT;
      break;
    }
  }
  zkr__obj_unlock(&e->obj);
  return rc;
}

int zkr_election_resign(zkr_election *e) {
  if (!e)
    return ZKR_EINVAL;
  zkr__obj_lock(&e->obj);
  int latch = e->style == STYLE_LATCH;
  zkr__obj_unlock(&e->obj);
  if (!latch)
    return ZKR_ENOTHELD;
  /* The engine may move on meanwhile (a grant, or a loss that queues the
   * participant again, on another thread): then the start finds it busy,
   * and the resign is made again on its new state. */
  int rc = ZKR_EBUSY;
  for (int i = 0; i < 100 && rc == ZKR_EBUSY; i++) {
    zkr__qstate st = zkr__queue_state(e->q);
    if (st == ZKR__Q_ACQUIRING)
      zkr__queue_cancel(e->q);
    else
      zkr__queue_release(e->q); /* (ZKR_ENOTHELD, ZKR_ELOCKLOST: idle now) */
    rc = zkr__queue_start(e->q, -1, NULL, NULL);
  }
  zkr__queue_post_result(e->q, report_left, e, ZKR_OK);
  return rc;
}

void zkr_election_free(zkr_election *e) {
  if (!e)
    return;
  atomic_store(&e->stop, 1);
  zkr__obj_lock(&e->obj);
  if (e->th_started) {
    /* end a wait (a running function polls is_leader); again until the
     * thread is done, in case it was about to queue */
    while (!e->done) {
      zkr__obj_unlock(&e->obj);
      zkr__queue_cancel(e->q);
      zkr__obj_lock(&e->obj);
      zkr__obj_wait(&e->obj, zkr__deadline(50));
    }
    zkr__obj_unlock(&e->obj);
    pthread_join(e->th, NULL);
    zkr__obj_lock(&e->obj);
  }
  zkr__obj_unlock(&e->obj);
  zkr__queue_free(e->q); /* no report after it returns */
  zkr__obj_lock(&e->obj);
  zkr__obj_retire_locked(&e->obj); /* no listener call after it */
  zkr__obj_unlock(&e->obj);
  zkr__obj_unref(&e->obj);
}

int zkr_election_await_change(zkr_election *e, int64_t timeout_ms) {
  if (!e)
    return ZKR_EINVAL;
  if (timeout_ms != 0 && zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t deadline = zkr__deadline(timeout_ms);
  int rc = ZKR_ETIMEDOUT;
  zkr__obj_lock(&e->obj);
  uint64_t c0 = e->changes;
  int was = zkr_election_is_leader(e);
  for (;;) {
    int now = zkr_election_is_leader(e);
    if (e->changes != c0 || now != was) {
      rc = ZKR_OK;
      break;
    }
    if (!now && zkr_session_state_get(e->obj.s) == ZKR_STATE_CLOSED) {
      rc = ZKR_ECLOSED; /* no change can come */
      break;
    }
    if (timeout_ms == 0 || zkr__obj_wait(&e->obj, deadline) != 0)
      break;
  }
  zkr__obj_unlock(&e->obj);
  return rc;
}

/* The engine's HELD covers SUSPECT too; whether SUSPECT leads is the
 * election's choice (leads()). Each term gets a hold of its own, kept
 * until the election is freed, so an earlier term's stays LOST. */
zkr_hold *zkr_election_hold(zkr_election *e) {
  if (!e || !e->q || !leads(e, zkr__queue_state(e->q)))
    return NULL;
  zkr_hold now = {.q = e->q};
  if (!zkr__hold_take(&now, e->q))
    return NULL;
  zkr__obj_lock(&e->obj);
  zkr__list *first = zkr__list_first(&e->terms);
  struct term *t = first ? zkr__list_entry(first, struct term, link) : NULL;
  if (!t || atomic_load(&t->h.czxid) != atomic_load(&now.czxid)) {
    t = calloc(1, sizeof *t);
    if (t) {
      t->h.q = e->q;
      atomic_store(&t->h.czxid, atomic_load(&now.czxid));
      zkr__list_push_front(&e->terms, &t->link);
    }
  }
  zkr__obj_unlock(&e->obj);
  return t ? &t->h : NULL;
}

/* ---- for anyone ---- */

static const zkr__qpolicy *any_of(const char *name, void *ctx) {
  (void)name;
  (void)ctx;
  return &any_policy;
}

int zkr_election_participants(zkr_session *s, const char *path,
                              int64_t timeout_ms, zkr_participant **out,
                              size_t *count) {
  return zkr__participants(s, path, any_of, NULL, ZKR__IN_ELECTION, NULL,
                           timeout_ms, out, count);
}

int zkr_election_leader(zkr_session *s, const char *path, int64_t timeout_ms,
                        zkr_participant *out) {
  if (!out)
    return ZKR_EINVAL;
  zkr_participant *all = NULL;
  size_t n = 0;
  int rc = zkr_election_participants(s, path, timeout_ms, &all, &n);
  if (rc != ZKR_OK)
    return rc;
  if (n == 0) {
    zkr_participants_free(all, n);
    return ZKR_ENONODE;
  }
  *out = all[0];
  all[0].node = NULL;
  all[0].data = NULL;
  zkr_participants_free(all, n);
  return ZKR_OK;
}

/* ---- the observer ----
 *
 * A follower of the path's children that reads the data of the lowest
 * numbered one with each listing (see follow.c: it re-reads on every
 * change, after a lost read once connected, and on a new session); each
 * result whose leader is another node than the one reported last is
 * reported, on the event thread. */

struct zkr_election_observer {
  zkr__follow *f;
  zkr_observe_fn fn;
  void *ud;
  int reported; /* something was reported (event thread) */
  char *last;   /* the node reported last (NULL: none) */
};

/* The lowest numbered child, or -1. */
static int obs_pick(const struct String_vector *names, void *ud) {
  (void)ud;
  int low = -1;
  int32_t lseq = 0;
  for (int i = 0; i < names->count; i++) {
    int32_t seq;
    if (zkr__seq_parse(names->data[i], &seq) &&
        (low < 0 || zkr__seq_cmp(seq, lseq) < 0)) {
      low = i;
      lseq = seq;
    }
  }
  return low;
}

static void obs_result(zkr__follow *f, const zkr__snapshot *v, void *ud) {
  zkr_election_observer *o = ud;
  (void)f;
  if (v->rc != ZKR_OK && v->rc != ZKR_ENONODE)
    return; /* (read again once connected) */
  const char *node = v->rc == ZKR_OK ? v->child : NULL;
  if (o->reported &&
      ((!node && !o->last) || (node && o->last && strcmp(node, o->last) == 0)))
    return;
  zkr_participant p = {0};
  char *keep = node ? zkr__strdup(node) : NULL;
  if (node && !keep)
    return; /* (out of memory: reported with the next change) */
  if (node) {
    p.node = (char *)node;
    zkr__seq_parse(node, &p.seq);
    p.role = zkr__role_of(node, ZKR__IN_ELECTION);
    p.is_holder = 1;
    p.session_id = v->child_stat->ephemeralOwner;
    p.czxid = v->child_stat->czxid;
    p.ctime_ms = v->child_stat->ctime;
    p.data = (char *)(v->child_data ? v->child_data : "");
  }
  o->reported = 1;
  free(o->last);
  o->last = keep;
  o->fn(o, node ? &p : NULL, o->ud);
}

int zkr_election_observe(zkr_session *s, const char *path, zkr_observe_fn fn,
                         void *user_data, zkr_election_observer **out) {
  if (!s || !fn || !out)
    return ZKR_EINVAL;
  int rc = zkr__path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_election_observer *o = calloc(1, sizeof *o);
  if (!o)
    return ZKR_ENOMEM;
  o->fn = fn;
  o->ud = user_data;
  *out = o;
  rc = zkr__follow_new(&o->f, s, path, ZKR__FOLLOW_CHILDREN | ZKR__FOLLOW_USER,
                       obs_pick, obs_result, o);
  if (rc != ZKR_OK) {
    free(o);
    *out = NULL;
  }
  return rc;
}

void zkr_election_observer_free(zkr_election_observer *o) {
  if (!o)
    return;
  zkr__follow_free(o->f); /* no call after it */
  free(o->last);
  free(o);
}

int zkr_election_stats(const zkr_election *e, zkr_stats *out, size_t size) {
  if (!e || !e->q)
    return ZKR_EINVAL;
  return zkr__queue_stats(e->q, out, size);
}
