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

#include "recipe.h"

struct zkr_election_opts {
  char *id;
  zkr_election_fn fn;
  void *ud;
  zkr_election_suspend suspend;
};

enum { STYLE_NONE, STYLE_LATCH, STYLE_SELECTOR };

struct zkr_election {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  zkr_session *s;
  char *path;
  char data[600];
  int datalen;
  zkr_election_fn fn;
  void *ud;
  int keep; /* ZKR_ELECTION_SUSPEND_KEEP */
  int style;
  zkr__queue *q;
  int reported; /* what the listener was told last (event thread) */
  int err;      /* why joining ended (ZKR_OK while in) */
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
    .name = "latch-", .on_loss = ZKR__QLOSS_REQUEUE, .check_owner = 1};
/* The selector: a mutex whose holder leads; its thread queues again. */
static const zkr__qpolicy selector_policy = {.name = "lock-", .check_owner = 1};
/* Listing: every child with a number is a participant, lowest leads. */
static const zkr__qpolicy any_policy = {.name = "latch-"};

/* ---- options ---- */

int zkr_election_opts_new(zkr_election_opts **out) {
  if (!out)
    return ZKR_EINVAL;
  zkr_election_opts *o = calloc(1, sizeof *o);
  if (!o)
    return ZKR_ENOMEM;
  *out = o;
  return ZKR_OK;
}

void zkr_election_opts_free(zkr_election_opts *opts) {
  if (opts) {
    free(opts->id);
    free(opts);
  }
}

int zkr_election_opts_set_id(zkr_election_opts *opts, const char *id) {
  if (!opts)
    return ZKR_EINVAL;
  return zkr__id_replace(&opts->id, id);
}

int zkr_election_opts_set_listener(zkr_election_opts *opts, zkr_election_fn fn,
                                   void *user_data) {
  if (!opts)
    return ZKR_EINVAL;
  opts->fn = fn;
  opts->ud = user_data;
  return ZKR_OK;
}

int zkr_election_opts_set_suspend(zkr_election_opts *opts,
                                  zkr_election_suspend mode) {
  if (!opts ||
      (mode != ZKR_ELECTION_SUSPEND_DROP && mode != ZKR_ELECTION_SUSPEND_KEEP))
    return ZKR_EINVAL;
  opts->suspend = mode;
  return ZKR_OK;
}

/* ---- leading ---- */

/* Does the engine's state mean leading? */
static int leads(const zkr_election *e, zkr__qstate st) {
  return st == ZKR__Q_HELD || (st == ZKR__Q_SUSPECT && e->keep);
}

/* Event thread: tell the listener @v if it was told otherwise last. */
static void report(zkr_election *e, int v) {
  pthread_mutex_lock(&e->mu);
  int tell = e->reported != v;
  e->reported = v;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  if (tell && e->fn)
    e->fn(e, v, e->ud);
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
  pthread_mutex_lock(&e->mu);
  if (rc != ZKR_OK && rc != ZKR_ECANCELED)
    e->err = rc; /* (closed, lost for good, not allowed) */
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

/* ---- the object ---- */

int zkr_election_new(zkr_election **out, zkr_session *s, const char *path,
                     const zkr_election_opts *opts) {
  if (!out || !s)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_election *e = calloc(1, sizeof *e);
  if (!e || !(e->path = zkr__strdup(path))) {
    free(e);
    return ZKR_ENOMEM;
  }
  pthread_mutex_init(&e->mu, NULL);
  zkr__cond_init(&e->cv);
  e->s = s;
  e->datalen =
      zkr__contender_data(opts ? opts->id : NULL, e->data, sizeof e->data);
  if (opts) {
    e->fn = opts->fn;
    e->ud = opts->ud;
    e->keep = opts->suspend == ZKR_ELECTION_SUSPEND_KEEP;
  }
  *out = e;
  return ZKR_OK;
}

/* Make the queue of @style; ZKR_EBUSY if already joined. */
static int join(zkr_election *e, int style) {
  if (e->style != STYLE_NONE)
    return ZKR_EBUSY;
  if (zkr_session_state_get(e->s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  int rc =
      zkr__queue_new(&e->q, e->s, e->path,
                     style == STYLE_LATCH ? &latch_policy : &selector_policy,
                     e->data, e->datalen);
  if (rc != ZKR_OK)
    return rc;
  zkr__queue_set_state_fn(e->q, on_state, e);
  zkr__queue_set_watch_held(e->q, 1);
  e->style = style;
  return ZKR_OK;
}

int zkr_election_start(zkr_election *e) {
  if (!e)
    return ZKR_EINVAL;
  pthread_mutex_lock(&e->mu);
  int rc = join(e, STYLE_LATCH);
  pthread_mutex_unlock(&e->mu);
  if (rc != ZKR_OK)
    return rc;
  rc = zkr__queue_start(e->q, -1, start_done, e);
  if (rc != ZKR_OK) {
    pthread_mutex_lock(&e->mu);
    e->err = rc;
    pthread_mutex_unlock(&e->mu);
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
      pthread_mutex_lock(&e->mu);
      if (rc != ZKR_ECANCELED && !atomic_load(&e->stop))
        e->err = rc;
      pthread_mutex_unlock(&e->mu);
      break; /* closed, lost for good, freed */
    }
    e->lfn(e, e->lud);
    zkr__queue_release(e->q); /* (ZKR_ELOCKLOST if it was lost) */
    zkr__queue_post_result(e->q, report_left, e, ZKR_OK);
    if (!e->requeue || atomic_load(&e->stop))
      break;
  }
  pthread_mutex_lock(&e->mu);
  e->done = 1;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

int zkr_election_run(zkr_election *e, zkr_leader_fn fn, void *user_data,
                     int requeue) {
  if (!e || !fn)
    return ZKR_EINVAL;
  pthread_mutex_lock(&e->mu);
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
  pthread_mutex_unlock(&e->mu);
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
  pthread_mutex_lock(&e->mu);
  for (;;) {
    if (e->style == STYLE_NONE || (e->style == STYLE_SELECTOR && e->done)) {
      rc = e->err != ZKR_OK ? e->err : ZKR_ENOTHELD;
      break;
    }
    if (leads(e, zkr__queue_state(e->q))) {
      rc = ZKR_OK;
      break;
    }
    if (e->err != ZKR_OK || zkr_session_state_get(e->s) == ZKR_STATE_CLOSED) {
      rc = e->err != ZKR_OK ? e->err : ZKR_ECLOSED;
      break;
    }
    if (timeout_ms == 0 ||
        zkr__cond_wait_until(&e->cv, &e->mu, deadline) != 0) {
      rc = leads(e, zkr__queue_state(e->q)) ? ZKR_OK : ZKR_ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock(&e->mu);
  return rc;
}

int zkr_election_resign(zkr_election *e) {
  if (!e)
    return ZKR_EINVAL;
  pthread_mutex_lock(&e->mu);
  int latch = e->style == STYLE_LATCH;
  pthread_mutex_unlock(&e->mu);
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
  pthread_mutex_lock(&e->mu);
  if (e->th_started) {
    /* end a wait (a running function polls is_leader); again until the
     * thread is done, in case it was about to queue */
    while (!e->done) {
      pthread_mutex_unlock(&e->mu);
      zkr__queue_cancel(e->q);
      pthread_mutex_lock(&e->mu);
      zkr__cond_wait_until(&e->cv, &e->mu, zkr__deadline(50));
    }
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->th, NULL);
    pthread_mutex_lock(&e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  zkr__queue_free(e->q); /* no callback after it returns */
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
  free(e->path);
  free(e);
}

/* The engine's HELD covers SUSPECT too; whether SUSPECT leads is the
 * election's choice (leads()). */
int64_t zkr_election_fencing_token(const zkr_election *e) {
  int64_t t = 0;
  if (!e || !e->q || !leads(e, zkr__queue_state(e->q)))
    return 0;
  return zkr__queue_info(e->q, &t, NULL, 0, NULL) ? t : 0;
}

int zkr_election_node(const zkr_election *e, char *buf, size_t len) {
  if (!e || !buf || len == 0)
    return ZKR_EINVAL;
  buf[0] = '\0';
  if (!e->q || !leads(e, zkr__queue_state(e->q)))
    return ZKR_ENOTHELD;
  return zkr__queue_info(e->q, NULL, buf, len, NULL) ? ZKR_OK : ZKR_ENOTHELD;
}

int zkr_election_guarded_multi(zkr_election *e, int count,
                               const struct zoo_op *ops,
                               struct zoo_op_result *results,
                               int64_t timeout_ms) {
  if (!e)
    return ZKR_EINVAL;
  if (!e->q)
    return ZKR_ENOTHELD;
  return zkr__guarded_multi(e->q, count, ops, results, timeout_ms);
}

int zkr_election_guarded_set(zkr_election *e, const char *path,
                             const char *data, int datalen, int version,
                             int64_t timeout_ms) {
  if (!e)
    return path && zkr__path_check(path) != ZKR_OK ? ZKR_EBADPATH : ZKR_EINVAL;
  if (!e->q)
    return ZKR_ENOTHELD;
  return zkr__guarded_set(e->q, path, data, datalen, version, timeout_ms);
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
  return zkr__participants(s, path, any_of, NULL, timeout_ms, out, count);
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
 * A children watch on the path (an exists watch while the path does not
 * exist); each change lists the children, reads the data of the lowest
 * numbered one, and, if it is another node than the one reported last,
 * posts the new leader to the event thread. One refresh at a time (a
 * change during one makes it run again); a connection back or a new
 * session refreshes (a new session has none of our watches). */

struct zkr_election_observer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  int freed;
  int calling; /* the user's function runs (on another thread) */
  zkr_session *s;
  char *path;
  zkr_observe_fn fn;
  void *ud;
  zkr__hook *hook;
  uint64_t watch_id;
  zkr__watch_kind watch_kind;
  int busy, again;
  int reported; /* something was reported */
  char *last;   /* the node reported last (NULL: none) */
  char *cand;   /* the node being read */
};

struct obs_post {
  zkr_election_observer *o;
  int has;
  zkr_participant p;
};

static void obs_refresh(zkr_election_observer *o);

static void obs_unref(zkr_election_observer *o) {
  pthread_mutex_lock(&o->mu);
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (last) {
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o->path);
    free(o->last);
    free(o->cand);
    zkr__session_unref(o->s);
    free(o);
  }
}

/* Under mu: the refresh is over; run it again if asked meanwhile. */
static void obs_idle(zkr_election_observer *o) {
  o->busy = 0;
  free(o->cand);
  o->cand = NULL;
  if (o->again && !o->freed) {
    o->again = 0;
    obs_refresh(o);
  }
}

static void obs_deliver(void *arg) {
  struct obs_post *p = arg;
  zkr_election_observer *o = p->o;
  pthread_mutex_lock(&o->mu);
  int go = !o->freed;
  if (go)
    o->calling = 1;
  pthread_mutex_unlock(&o->mu);
  if (go)
    o->fn(o, p->has ? &p->p : NULL, o->ud);
  pthread_mutex_lock(&o->mu);
  o->calling = 0;
  pthread_cond_broadcast(&o->cv);
  pthread_mutex_unlock(&o->mu);
  free(p->p.node);
  free(p->p.data);
  free(p);
  obs_unref(o);
}

/* Under mu: report @p (NULL: no leader) if it differs from the last. */
static void obs_report(zkr_election_observer *o, const char *node, int32_t seq,
                       const struct Stat *st, const char *data, int len) {
  if (o->reported &&
      ((!node && !o->last) || (node && o->last && strcmp(node, o->last) == 0)))
    return;
  struct obs_post *p = calloc(1, sizeof *p);
  char *keep = node ? zkr__strdup(node) : NULL;
  if (!p || (node && !keep)) {
    free(p);
    free(keep);
    return; /* (out of memory: reported with the next change) */
  }
  p->o = o;
  if (node) {
    p->has = 1;
    p->p.node = zkr__strdup(node);
    p->p.seq = seq;
    p->p.is_holder = 1;
    p->p.session_id = st->ephemeralOwner;
    p->p.czxid = st->czxid;
    p->p.ctime_ms = st->ctime;
    p->p.data = malloc(len > 0 ? (size_t)len + 1 : 1);
    if (p->p.data) {
      if (len > 0)
        memcpy(p->p.data, data, (size_t)len);
      p->p.data[len > 0 ? len : 0] = '\0';
    }
  }
  o->refs++;
  if (zkr__session_post(o->s, obs_deliver, p) != ZKR_OK) {
    o->refs--;
    free(p->p.node);
    free(p->p.data);
    free(p);
    free(keep);
    return;
  }
  o->reported = 1;
  free(o->last);
  o->last = keep;
}

static void obs_watch_cb(zkr_session *s, int type, const char *path,
                         void *ctx) {
  zkr_election_observer *o = ctx;
  (void)s;
  (void)type;
  (void)path;
  pthread_mutex_lock(&o->mu);
  o->watch_id = 0;
  if (!o->freed) {
    if (o->busy)
      o->again = 1;
    else
      obs_refresh(o);
  }
  pthread_mutex_unlock(&o->mu);
  obs_unref(o);
}

static void obs_data_cb(int rc, const char *value, int len,
                        const struct Stat *stat, const void *data) {
  zkr_election_observer *o = (zkr_election_observer *)data;
  pthread_mutex_lock(&o->mu);
  if (!o->freed) {
    int32_t seq = 0;
    if (rc == ZOK && o->cand && zkr__seq_parse(o->cand, &seq))
      obs_report(o, o->cand, seq, stat, value, len);
    else if (rc == ZNONODE)
      o->again = 1; /* it left meanwhile: look again */
    /* (other errors: the connection hook refreshes) */
  }
  obs_idle(o);
  pthread_mutex_unlock(&o->mu);
  obs_unref(o);
}

static void obs_exists_cb(int rc, const struct Stat *stat, const void *data) {
  zkr_election_observer *o = (zkr_election_observer *)data;
  (void)stat;
  pthread_mutex_lock(&o->mu);
  if (!o->freed && rc == ZOK)
    o->again = 1; /* created meanwhile */
  obs_idle(o);
  pthread_mutex_unlock(&o->mu);
  obs_unref(o);
}

/* Under mu: set our one watch (of @kind on the path). */
static int obs_watch(zkr_election_observer *o, zkr__watch_kind kind) {
  if (o->watch_id && zkr__watch_unlink(o->s, o->watch_id))
    o->refs--; /* its callback will never run */
  o->watch_id = 0;
  uint64_t id = 0;
  if (zkr__watch_add(o->s, o->path, kind, obs_watch_cb, o, &id) != ZKR_OK)
    return ZKR_ENOMEM;
  o->watch_id = id;
  o->watch_kind = kind;
  o->refs++;
  return ZKR_OK;
}

static void obs_kids_cb(int rc, const struct String_vector *names,
                        const void *data) {
  zkr_election_observer *o = (zkr_election_observer *)data;
  pthread_mutex_lock(&o->mu);
  int sent = 0;
  if (!o->freed && rc == ZNONODE) {
    /* no path: no leader; watch for its creation */
    obs_report(o, NULL, 0, NULL, NULL, 0);
    zhandle_t *zh;
    uint64_t gen;
    if (obs_watch(o, ZKR__WATCH_DATA) == ZKR_OK &&
        zkr__session_get_zh(o->s, &zh, &gen) == ZKR_OK) {
      o->refs++;
      if (zoo_aexists(zh, o->path, 1, obs_exists_cb, o) == ZOK)
        sent = 1;
      else
        o->refs--;
      zkr__session_put_zh(o->s);
    }
  } else if (!o->freed && rc == ZOK) {
    const char *low = NULL;
    int32_t lseq = 0;
    for (int i = 0; names && i < names->count; i++) {
      int32_t seq;
      if (zkr__seq_parse(names->data[i], &seq) &&
          (!low || zkr__seq_cmp(seq, lseq) < 0)) {
        low = names->data[i];
        lseq = seq;
      }
    }
    if (!low) {
      obs_report(o, NULL, 0, NULL, NULL, 0);
    } else {
      char *full = zkr__path_join(o->path, low);
      zhandle_t *zh;
      uint64_t gen;
      free(o->cand);
      o->cand = zkr__strdup(low);
      if (full && o->cand && zkr__session_get_zh(o->s, &zh, &gen) == ZKR_OK) {
        o->refs++;
        if (zoo_aget(zh, full, 0, obs_data_cb, o) == ZOK)
          sent = 1;
        else
          o->refs--;
        zkr__session_put_zh(o->s);
      }
      free(full);
    }
  }
  if (!sent)
    obs_idle(o);
  pthread_mutex_unlock(&o->mu);
  obs_unref(o);
}

/* Under mu: list the children with a children watch. */
static void obs_refresh(zkr_election_observer *o) {
  zhandle_t *zh;
  uint64_t gen;
  if (o->busy) {
    o->again = 1;
    return;
  }
  if (zkr__session_get_zh(o->s, &zh, &gen) != ZKR_OK)
    return; /* the connection hook refreshes */
  if (obs_watch(o, ZKR__WATCH_CHILD) != ZKR_OK) {
    zkr__session_put_zh(o->s);
    return;
  }
  o->busy = 1;
  o->refs++;
  if (zoo_aget_children(zh, o->path, 1, obs_kids_cb, o) != ZOK) {
    o->refs--;
    o->busy = 0;
  }
  zkr__session_put_zh(o->s);
}

static void obs_hook(zkr_session *s, zkr_session_event ev, int64_t sid,
                     void *ctx) {
  zkr_election_observer *o = ctx;
  (void)s;
  (void)sid;
  if (ev != ZKR_EV_CONNECTED && ev != ZKR_EV_RECONNECTED)
    return;
  pthread_mutex_lock(&o->mu);
  if (!o->freed)
    obs_refresh(o);
  pthread_mutex_unlock(&o->mu);
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
  if (!o || !(o->path = zkr__strdup(path))) {
    free(o);
    return ZKR_ENOMEM;
  }
  pthread_mutex_init(&o->mu, NULL);
  zkr__cond_init(&o->cv);
  o->refs = 1;
  o->s = s;
  zkr__session_ref(s);
  o->fn = fn;
  o->ud = user_data;
  if (zkr__session_hook_add(s, obs_hook, o, &o->hook) != ZKR_OK) {
    obs_unref(o);
    return ZKR_ENOMEM;
  }
  pthread_mutex_lock(&o->mu);
  obs_refresh(o);
  pthread_mutex_unlock(&o->mu);
  *out = o;
  return ZKR_OK;
}

void zkr_election_observer_free(zkr_election_observer *o) {
  if (!o)
    return;
  zkr__session_hook_remove(o->s, o->hook);
  pthread_mutex_lock(&o->mu);
  o->freed = 1;
  if (o->watch_id) {
    if (zkr__watch_unlink(o->s, o->watch_id))
      o->refs--;
    zkr__session_unwatch(o->s, o->path, o->watch_kind); /* none left */
  }
  o->watch_id = 0;
  while (o->calling && !zkr__tls_in_callback)
    pthread_cond_wait(&o->cv, &o->mu);
  pthread_mutex_unlock(&o->mu);
  obs_unref(o);
}

int zkr_election_stats(const zkr_election *e, zkr_stats *out, size_t size) {
  if (!e || !e->q)
    return ZKR_EINVAL;
  return zkr__queue_stats(e->q, out, size);
}
