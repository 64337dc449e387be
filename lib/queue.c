/*
 * The queue engine: a queue of ephemeral-sequential nodes plus a rule for
 * whom to wait on. Every recipe is a policy over it (queue.h).
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
 *           parent, and every change lists again.
 *   wake    (NEAREST) the watched blocker went away: the other blockers of
 *           the list may or may not still exist. None: held, without a
 *           request (with watch_held, after one more listing that shows
 *           our node is still there: a third party may have deleted it).
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
#include <sys/random.h>
#include <unistd.h>

#include "queue.h"

typedef enum {
  Q_IDLE,
  Q_CREATING, /* create sent, or to be sent once connected */
  Q_LISTING,
  Q_WATCHING,
  Q_HELD
} qphase;

/* An acquisition's result on its way to the user. */
struct post {
  zkr__event *ev;
  zkr__queue *q;
  zkr__queue_done_fn fn;
  void *ud;
  int rc;
};

/* State changes not yet delivered; more than this many pending (a user
 * callback that blocks the event thread) merges the oldest that is not
 * LOST into its successor. */
#define STATE_RING 16

struct zkr__queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* under mu */
  zkr_session *s;
  char *parent;
  const zkr__qpolicy *pol;
  char *data;
  int datalen;
  uint64_t hook_id;
  int freed;
  int cb_running; /* a user callback runs */

  /* the current acquisition, and its attempt (a new one after a loss) */
  uint64_t acq;
  uint64_t attempt;
  int adopting; /* verifying a node found again after a lost reply */
  /* A fixed node: EPHEMERAL, not sequential, named with a given sequence
   * number, held as soon as it exists (a read-write lock's downgrade: the
   * read node takes the held write node's number), and only in the
   * ZooKeeper session @fixed_gen. */
  int fixed;
  int32_t fixed_seq;
  uint64_t fixed_gen;
  qphase phase;
  int try_once;
  char prefix[48]; /* "_c_<uuid>-" */
  char *node;      /* our node's name */
  char *node_path;
  int32_t seq;
  int64_t czxid;
  uint64_t gen;         /* ZooKeeper session of our node */
  int create_unknown;   /* a create was sent whose outcome is unknown */
  int list_sent;        /* the listing went out right behind the create */
  int create_gen_valid; /* create_unknown refers to generation gen */
  int parent_tries;
  int parent_err;    /* ZooKeeper error of an ancestor's create */
  int waiting_conn;  /* paused until the session is connected again */
  int relist_after;  /* the listing in flight is stale (CHILDREN) */
  int npreds;        /* blockers at the last listing not yet seen gone */
  char *pred1;       /* the nearest of them (NULL if npreds == 0) */
  char *pred2;       /* the second nearest (NULL if npreds < 2) */
  uint64_t watch_id; /* registry id of our one watch, 0 if none */
  zkr__watch_kind watch_kind;
  struct qctx *watch_ctx; /* its callback context, while registered */
  char *watch_path;
  int64_t deadline;
  uint64_t timer_id;
  struct qctx *timer_ctx;
  struct post *dpost;  /* the result's way to the user, from start */
  struct post *orphan; /* a result to deliver after unlocking */
  int result;
  int finished;

  /* once held */
  int watch_held; /* watch our own node while held (opt-in) */
  zkr__qstate lstate;
  zkr__queue_state_fn state_fn;
  void *state_ud;
  zkr__event *sev;  /* the state deliverer's event node */
  int sev_queued;   /* sev is queued on the event thread */
  int state_orphan; /* deliver states after unlocking */
  zkr__qstate ring[STATE_RING];
  int ring_head, ring_len;
};

/* Context of one asynchronous request. */
struct qctx {
  zkr__queue *q;
  uint64_t acq; /* the acquisition (survives restarts of attempts) */
  uint64_t attempt;
  uint64_t gen;
  uint64_t watch_id;
};

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
  free(q->parent);
  free(q->data);
  free(q->node);
  free(q->node_path);
  free(q->pred1);
  free(q->pred2);
  free(q->watch_path);
  post_free(q->dpost);
  zkr__event_free(q->sev);
  pthread_cond_destroy(&q->cv);
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

static struct qctx *ctx_new(zkr__queue *q) {
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
static void ctx_forget(zkr__queue *q, struct qctx *c) {
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

/* Start of every request and watch callback: marks the thread as a
 * callback thread and takes mu. Returns 1 if @c belongs to the current
 * attempt and the object is in @phase. */
static int callback_enter(struct qctx *c, qphase phase) {
  zkr__queue *q = c->q;
  zkr__tls_in_callback++;
  pthread_mutex_lock(&q->mu);
  return c->attempt == q->attempt && q->phase == phase;
}

/* End of every request and watch callback: under mu on entry. */
static void callback_exit(struct qctx *c) {
  zkr__queue *q = c->q;
  q_unlock(q);
  ctx_done(c);
  zkr__tls_in_callback--;
}

/* A reply or send failure that means "not now": the connection or the
 * ZooKeeper session went away. The step is repeated once the session is
 * connected again; a session that is gone for good ends the attempt
 * through the state hook (CLOSED, or LOST without renewal). */
static int transient(int zrc) {
  return zkr__retryable(zrc) || zrc == ZSESSIONEXPIRED || zrc == ZCLOSING ||
         zrc == ZINVALIDSTATE || zrc == ZSESSIONMOVED;
}

/* ------------------------------------------------------------------ */
/* small helpers */

static void make_prefix(char *out, size_t len) {
  unsigned char r[16];
  ssize_t got = getrandom(r, sizeof r, 0);
  if (got != (ssize_t)sizeof r) {
    /* no entropy source: time, pid and address still make a unique id
     * within one ensemble's lifetime for practical purposes */
    int64_t t = zkr__now_ms();
    uintptr_t a = (uintptr_t)out;
    for (size_t i = 0; i < sizeof r; i++)
      r[i] = (unsigned char)((t >> (i * 3)) ^ ((uint64_t)getpid() >> i) ^
                             (a >> (i % 8)));
  }
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* UUID version 4 */
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  snprintf(out, len,
           "_c_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
           "%02x-",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
           r[11], r[12], r[13], r[14], r[15]);
}

static void clear_preds(zkr__queue *q) {
  free(q->pred1);
  free(q->pred2);
  q->pred1 = q->pred2 = NULL;
  q->npreds = 0;
}

static void clear_node(zkr__queue *q) {
  free(q->node);
  free(q->node_path);
  q->node = NULL;
  q->node_path = NULL;
  q->czxid = 0;
}

/* Under mu: take @name (a child of the parent) as our node. */
static int set_node(zkr__queue *q, const char *name) {
  clear_node(q);
  q->node = zkr__strdup(name);
  q->node_path = zkr__path_join(q->parent, name);
  if (!q->node || !q->node_path)
    return ZKR_ENOMEM;
  return zkr__seq_parse(q->node, &q->seq) ? ZKR_OK : ZKR_EZK;
}

/* Under mu: forget our one watch. The registry entry is unlinked without
 * waiting for a callback in progress: that callback finds its watch id
 * stale and only drops its reference. With @server, the server-side watch
 * is removed too, so an abandoned waiter leaves no stale watch. */
static void drop_watch(zkr__queue *q, int server) {
  if (q->watch_id) {
    if (zkr__watch_unlink(q->s, q->watch_id))
      ctx_forget(q, q->watch_ctx); /* its callback will never run */
    q->watch_ctx = NULL;           /* else its callback frees it */
    q->watch_id = 0;
    if (server && q->watch_path)
      zkr__session_unwatch(q->s, q->watch_path, q->watch_kind);
  }
  free(q->watch_path);
  q->watch_path = NULL;
}

/* Under mu, in a watch callback: the registry consumed our watch. */
static void watch_consumed(zkr__queue *q) {
  q->watch_id = 0;
  q->watch_ctx = NULL;
  free(q->watch_path);
  q->watch_path = NULL;
}

static void cancel_timer(zkr__queue *q) {
  if (q->timer_id) {
    if (zkr__timer_cancel(q->s, q->timer_id))
      ctx_forget(q, q->timer_ctx); /* the timer will never run */
    q->timer_ctx = NULL;           /* else it runs and frees it */
    q->timer_id = 0;
  }
}

/* ------------------------------------------------------------------ */
/* the user's callbacks */

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
  pthread_cond_broadcast(&q->cv);
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

/* Under mu: hand @p (its fn, ud and rc set) to the event thread, or to
 * q_unlock() once there is none. */
static void send_post(zkr__queue *q, struct post *p) {
  q_ref_locked(q);
  if (zkr__session_post_event(q->s, p->ev, post_done, p) != ZKR_OK)
    q->orphan = p; /* the session is closed: delivered by q_unlock() */
}

/* Deliver the pending state changes, oldest first (event thread, or after
 * close the thread that made them). Holds a reference taken when it was
 * queued. */
static void deliver_states(void *arg) {
  zkr__queue *q = arg;
  pthread_mutex_lock(&q->mu);
  while (q->ring_len > 0) {
    zkr__qstate st = q->ring[q->ring_head];
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
    pthread_cond_broadcast(&q->cv);
  }
  q->sev_queued = 0;
  pthread_mutex_unlock(&q->mu);
  q_unref(q);
}

/* Under mu: the contender's state changed; tell the user (on the event
 * thread) if it is a change of a held node (HELD, SUSPECT, LOST). */
static void set_lstate(zkr__queue *q, zkr__qstate st) {
  if (q->lstate == st)
    return;
  q->lstate = st;
  pthread_cond_broadcast(&q->cv);
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
  q->ring[(q->ring_head + q->ring_len) % STATE_RING] = st;
  q->ring_len++;
  if (q->sev_queued)
    return;
  q->sev_queued = 1;
  q_ref_locked(q);
  if (zkr__session_post_event(q->s, q->sev, deliver_states, q) != ZKR_OK)
    q->state_orphan = 1; /* the session is closed: by q_unlock() */
}

/* ------------------------------------------------------------------ */
/* completion of an attempt */

/* Under mu: abandon whatever the attempt left on the server. */
static void abandon(zkr__queue *q) {
  drop_watch(q, 1);
  if (q->node_path)
    zkr__session_bg_delete(q->s, q->node_path, q->gen);
  else if (q->create_unknown && q->create_gen_valid)
    zkr__session_bg_cleanup(q->s, q->parent, q->prefix, q->gen);
  clear_node(q);
  clear_preds(q);
  q->create_unknown = 0;
}

static void arm_held_watch(zkr__queue *q);

/* Under mu: the attempt ends with @rc. */
static void finish(zkr__queue *q, int rc) {
  cancel_timer(q);
  q->waiting_conn = 0;
  if (rc == ZKR_OK) {
    drop_watch(q, q->watch_kind == ZKR__WATCH_CHILD);
    clear_preds(q);
    q->phase = Q_HELD;
    set_lstate(q, ZKR__Q_HELD);
    arm_held_watch(q);
  } else {
    abandon(q);
    q->phase = Q_IDLE;
    q->lstate = ZKR__Q_UNLOCKED;
    q->attempt++; /* late callbacks of this attempt are ignored */
  }
  q->result = rc;
  q->finished = 1;
  pthread_cond_broadcast(&q->cv);
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

/* ------------------------------------------------------------------ */
/* sending requests */

static void step_create(zkr__queue *q);
static int step_list(zkr__queue *q);
static void step_watch(zkr__queue *q);
static void step_adopt(zkr__queue *q);
static void relist(zkr__queue *q);

/* Under mu: a step could not be sent or its reply was lost; continue when
 * the session is connected again (state hook). */
static void pause_for_connection(zkr__queue *q) {
  q->waiting_conn = 1;
}

/* Under mu: the handle and a context for one request; NULL if no request
 * may go now (the attempt pauses or ends). Release the handle with
 * zkr__session_put_zh() right after sending. */
static struct qctx *begin_request(zkr__queue *q, zhandle_t **zh) {
  uint64_t gen;
  int rc = zkr__session_get_zh(q->s, zh, &gen);
  if (rc != ZKR_OK) {
    if (rc == ZKR_ECONNLOSS)
      pause_for_connection(q);
    else
      finish(q, rc);
    return NULL;
  }
  struct qctx *c = ctx_new(q);
  if (!c) {
    zkr__session_put_zh(q->s);
    finish(q, ZKR_ENOMEM);
    return NULL;
  }
  c->gen = gen;
  return c;
}

/* Under mu: after sending; a request that could not be sent pauses the
 * attempt (disconnected) or ends it. */
static void end_request(zkr__queue *q, struct qctx *c, int rc) {
  if (rc == ZOK)
    return;
  ctx_forget(q, c);
  if (transient(rc))
    pause_for_connection(q);
  else
    finish(q, zkr__from_zk(rc));
}

/* Under mu: register our one watch, of @kind on @path (taken over), for
 * @wfn; then @send sends the request that sets it on the server, with the
 * completion context @ec. Puts @zh back. Returns ZKR_ENOMEM (nothing
 * registered, nothing sent) or ZKR_OK with *zrc the send's ZooKeeper code
 * (not ZOK: nothing stays registered). */
typedef int (*send_fn)(zhandle_t *zh, const char *path, struct qctx *ec);

static int set_watch(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                     char *path, zkr__watch_fn wfn, send_fn send,
                     struct qctx *ec, int *zrc) {
  struct qctx *wc = path ? ctx_new(q) : NULL;
  uint64_t wid = 0;
  if (!wc || zkr__watch_add(q->s, path, kind, wfn, wc, &wid) != ZKR_OK) {
    zkr__session_put_zh(q->s);
    ctx_forget(q, wc);
    free(path);
    return ZKR_ENOMEM;
  }
  wc->watch_id = wid;
  ec->watch_id = wid;
  q->watch_id = wid;
  q->watch_kind = kind;
  q->watch_ctx = wc;
  q->watch_path = path;
  *zrc = send(zh, path, ec);
  zkr__session_put_zh(q->s);
  if (*zrc != ZOK)
    drop_watch(q, 0);
  return ZKR_OK;
}

/* Under mu: set_watch() with its outcome handled like end_request().
 * Returns 1 if the request was sent. */
static int watch_request(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                         char *path, zkr__watch_fn wfn, send_fn send,
                         struct qctx *ec) {
  int zrc = ZOK;
  if (set_watch(q, zh, kind, path, wfn, send, ec, &zrc) != ZKR_OK) {
    ctx_forget(q, ec);
    finish(q, ZKR_ENOMEM);
    return 0;
  }
  end_request(q, ec, zrc);
  return zrc == ZOK;
}

/* ------------------------------------------------------------------ */
/* create */

/* Requeue: leave the queue position (our node is gone or not ours) and
 * queue again with a new create. Under mu. */
static void requeue(zkr__queue *q) {
  if (q->fixed) {
    /* a fixed node gone before it was held: the write node it was
     * anchored to may be gone too; never queue it again */
    finish(q, ZKR_ELOCKLOST);
    return;
  }
  clear_node(q);
  clear_preds(q);
  q->phase = Q_CREATING;
  step_create(q);
}

/* The completion of an ancestor's create: keep a real error, so that the
 * node's create, which then fails with ZNONODE, reports it. */
static void parent_cb(int rc, const char *value, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)value;
  if (callback_enter(c, Q_CREATING) && rc != ZOK && rc != ZNODEEXISTS &&
      rc != ZNONODE && !transient(rc) && q->parent_err == ZOK)
    q->parent_err = rc; /* the first: the deeper ones fail with ZNONODE */
  callback_exit(c);
}

static int send_parent(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_acreate(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER,
                     parent_cb, c);
}

/* Under mu: the parent is missing. Create it and its ancestors as
 * containers, top down, then the node again: requests of one session are
 * applied in order, so the node's create sees them. */
static void step_parents(zkr__queue *q) {
  q->parent_tries++;
  q->parent_err = ZOK;
  char *anc = zkr__strdup(q->parent);
  if (!anc) {
    finish(q, ZKR_ENOMEM);
    return;
  }
  for (char *p = strchr(anc + 1, '/');; p = strchr(p + 1, '/')) {
    if (p)
      *p = '\0';
    zhandle_t *zh;
    struct qctx *c = begin_request(q, &zh);
    if (!c)
      break;
    int rc = send_parent(zh, anc, c);
    zkr__session_put_zh(q->s);
    end_request(q, c, rc);
    if (rc != ZOK || !p)
      break;
    *p = '/';
  }
  free(anc);
  if (q->phase == Q_CREATING && !q->waiting_conn)
    step_create(q);
}

/* The node's create failed with @rc and the attempt ends: the error to
 * report. */
static int create_error(zkr__queue *q, int rc) {
  if (rc == ZNONODE && q->parent_err != ZOK)
    rc = q->parent_err; /* why the parent could not be made */
  if (rc == ZBADARGUMENTS)
    return ZKR_EBADPATH; /* a path the server refuses */
  return zkr__from_zk(rc);
}

/* Under mu: the create failed; the listing sent behind it is answered
 * while we are not LISTING, so it is ignored: forget its watch too (a
 * listing that failed set none on the server; finish() removes one that
 * did). */
static void drop_sent_list(zkr__queue *q) {
  if (q->list_sent)
    drop_watch(q, 0);
  q->list_sent = 0;
}

static void create_cb(int rc, const char *value, const struct Stat *stat,
                      const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  if (!callback_enter(c, Q_CREATING)) {
    /* an abandoned attempt: remove what it made */
    if (rc == ZOK && value)
      zkr__session_bg_delete(q->s, value, c->gen);
  } else if (rc == ZOK) {
    const char *slash = strrchr(value, '/');
    int src = set_node(q, slash ? slash + 1 : value);
    q->gen = c->gen;
    q->create_unknown = 0;
    q->czxid = stat ? stat->czxid : 0;
    if (src != ZKR_OK) {
      finish(q, src);
    } else if (q->fixed) {
      /* in the write node's session (a loss ends the attempt): held,
       * nothing before it can block it */
      finish(q, c->gen == q->fixed_gen ? ZKR_OK : ZKR_ELOCKLOST);
    } else {
      q->phase = Q_LISTING;
      if (!q->list_sent)
        step_list(q);
      /* else: its reply, which comes next, shows our node */
    }
    q->list_sent = 0;
  } else {
    drop_sent_list(q);
    if (rc == ZNONODE && q->parent_tries < 3 && q->parent_err == ZOK) {
      q->create_unknown = 0;
      step_parents(q);
    } else if (zkr__retryable(rc)) {
      /* The create may or may not have been applied: find it again by
       * its prefix once the connection is back. */
      q->create_unknown = 1;
      q->create_gen_valid = 1;
      q->gen = c->gen;
      pause_for_connection(q);
    } else if (transient(rc)) {
      q->create_unknown = 0;
      pause_for_connection(q); /* a new session will come (or CLOSED) */
    } else {
      q->create_unknown = 0;
      finish(q, create_error(q, rc));
    }
  }
  callback_exit(c);
}

static void step_create(zkr__queue *q) {
  size_t len =
      strlen(q->parent) + 1 + strlen(q->prefix) + strlen(q->pol->name) + 12;
  char *path = malloc(len);
  if (!path) {
    finish(q, ZKR_ENOMEM);
    return;
  }
  if (q->fixed)
    snprintf(path, len, "%s/%s%s%010d", q->parent, q->prefix, q->pol->name,
             q->fixed_seq);
  else
    snprintf(path, len, "%s/%s%s", q->parent, q->prefix, q->pol->name);
  zhandle_t *zh;
  struct qctx *c = begin_request(q, &zh);
  if (c) {
    int rc = zoo_acreate2(zh, path, q->data, q->datalen, &ZOO_OPEN_ACL_UNSAFE,
                          q->fixed ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL,
                          create_cb, c);
    zkr__session_put_zh(q->s);
    end_request(q, c, rc);
    /* Pipelined: the listing goes right behind the create, without
     * waiting for its reply. The server handles one session's requests in
     * order, so the listing shows our node; the client delivers the
     * replies in order, so create_cb has named our node before list_cb
     * reads the listing. If the create fails, the listing's reply comes
     * while we are not LISTING and is ignored. One round trip per
     * acquisition saved; a peer sees the same requests. */
    q->list_sent = 0;
    if (rc == ZOK && !q->fixed && q->phase == Q_CREATING && !q->waiting_conn)
      q->list_sent = step_list(q);
  }
  free(path);
}

/* ------------------------------------------------------------------ */
/* adoption of a node whose create reply was lost */

/* Under mu: look for the node again after reconnecting. */
static void adopt_later(zkr__queue *q) {
  q->create_unknown = 1;
  clear_node(q);
  q->phase = Q_CREATING;
}

static void adopt_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  if (callback_enter(c, Q_LISTING) && q->adopting) {
    q->adopting = 0;
    int64_t sid = 0;
    zkr__session_generation(q->s, &sid);
    if (rc == ZOK && stat && stat->ephemeralOwner == sid && c->gen == q->gen) {
      q->czxid = stat->czxid;
      step_list(q); /* now find our place */
    } else if (rc == ZOK || rc == ZNONODE) {
      /* not ours after all (another session's): leave it, queue anew */
      zkr__log(ZKR_LOG_WARN,
               "%s: found by prefix but not owned by this "
               "session; not adopted",
               q->node_path);
      requeue(q);
    } else if (transient(rc)) {
      adopt_later(q);
      pause_for_connection(q);
    } else {
      finish(q, zkr__from_zk(rc));
    }
  }
  callback_exit(c);
}

/* Under mu: read the stat of a node found by our prefix. */
static void step_adopt(zkr__queue *q) {
  zhandle_t *zh;
  struct qctx *c = begin_request(q, &zh);
  if (!c)
    return;
  q->adopting = 1;
  int rc = zoo_aexists(zh, q->node_path, 0, adopt_cb, c);
  zkr__session_put_zh(q->s);
  if (rc != ZOK) {
    q->adopting = 0;
    adopt_later(q);
  }
  end_request(q, c, rc);
}

/* Under mu: recovering a create whose reply was lost: is our node among
 * @names? */
static void find_lost_create(zkr__queue *q, const struct String_vector *names) {
  q->create_unknown = 0;
  const char *found = NULL;
  size_t plen = strlen(q->prefix);
  for (int i = 0; names && i < names->count; i++)
    if (strncmp(names->data[i], q->prefix, plen) == 0)
      found = names->data[i];
  if (!found) {
    q->phase = Q_CREATING;
    step_create(q); /* it was never applied */
    return;
  }
  /* The prefix is this attempt's own random id; check that the node's
   * owner is our session and read its czxid (the fencing token). */
  int rc = set_node(q, found);
  if (rc != ZKR_OK)
    finish(q, rc);
  else
    step_adopt(q);
}

/* ------------------------------------------------------------------ */
/* list and decide */

/* Does the policy let us hold with @blockers before us? */
static int holds(const zkr__queue *q, int blockers) {
  return q->pol->holds ? q->pol->holds(blockers, q->pol->ctx) != 0
                       : blockers == 0;
}

static void waiting(zkr__queue *q);

/* Under mu: the children are listed; find our place. */
static void evaluate(zkr__queue *q, const struct String_vector *names) {
  if (q->create_unknown) {
    find_lost_create(q, names);
    return;
  }
  int have_self = 0;
  clear_preds(q);
  int n = names ? names->count : 0;
  const char *near1 = NULL, *near2 = NULL; /* nearest, second nearest */
  int32_t seq1 = 0, seq2 = 0;
  for (int i = 0; i < n; i++) {
    const char *name = names->data[i];
    int32_t seq;
    if (strcmp(name, q->node) == 0) {
      have_self = 1;
      continue;
    }
    if (q->pol->count_all) {
      q->npreds++; /* every other child counts (no nearest to watch) */
      continue;
    }
    if (!zkr__seq_parse(name, &seq) || zkr__seq_cmp(seq, q->seq) >= 0)
      continue;
    if (q->pol->blocks && !q->pol->blocks(name, q->pol->ctx))
      continue;
    q->npreds++;
    if (!near1 || zkr__seq_cmp(seq, seq1) > 0) {
      near2 = near1;
      seq2 = seq1;
      near1 = name;
      seq1 = seq;
    } else if (!near2 || zkr__seq_cmp(seq, seq2) > 0) {
      near2 = name;
      seq2 = seq;
    }
  }
  if (!have_self) {
    drop_watch(q, 1);
    requeue(q); /* our node is gone (deleted by someone) */
    return;
  }
  if ((near1 && !(q->pred1 = zkr__strdup(near1))) ||
      (near2 && !(q->pred2 = zkr__strdup(near2)))) {
    finish(q, ZKR_ENOMEM);
    return;
  }
  if (holds(q, q->npreds)) {
    finish(q, ZKR_OK);
    return;
  }
  if (q->try_once) {
    finish(q, ZKR_EWOULDBLOCK);
    return;
  }
  waiting(q);
}

static void list_cb(int rc, const struct String_vector *names,
                    const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  if (callback_enter(c, Q_LISTING) &&
      (c->watch_id == q->watch_id || q->relist_after)) {
    if (rc == ZOK && q->relist_after) {
      relist(q); /* the queue changed since this listing was read */
    } else if (rc == ZOK) {
      evaluate(q, names);
    } else if (rc == ZNONODE) {
      drop_watch(q, 1);
      requeue(q); /* parent gone: so is our node */
    } else if (transient(rc)) {
      drop_watch(q, 0);
      pause_for_connection(q);
    } else {
      finish(q, zkr__from_zk(rc));
    }
  }
  callback_exit(c);
}

static int send_list(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aget_children(zh, path, 0, list_cb, c);
}

static int send_list_watch(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aget_children(zh, path, 1, list_cb, c);
}

static void children_watch_cb(zkr_session *s, int type, const char *path,
                              void *ctx);

/* Under mu: list the children (with CHILDREN, setting the children watch
 * a waiter waits on, unless it only tries once). Returns 1 if the request
 * was sent. */
static int step_list(zkr__queue *q) {
  zhandle_t *zh;
  struct qctx *c = begin_request(q, &zh);
  if (!c)
    return 0;
  if (q->pol->wait == ZKR__QWAIT_CHILDREN && !q->try_once &&
      !q->create_unknown && !q->adopting) {
    drop_watch(q, 0);
    return watch_request(q, zh, ZKR__WATCH_CHILD, zkr__strdup(q->parent),
                         children_watch_cb, send_list_watch, c);
  }
  int rc = send_list(zh, q->parent, c);
  zkr__session_put_zh(q->s);
  end_request(q, c, rc);
  return rc == ZOK;
}

/* Under mu: list the children again (one read) and carry on from what is
 * there now. */
static void relist(zkr__queue *q) {
  drop_watch(q, 0);
  q->relist_after = 0;
  clear_preds(q);
  q->phase = Q_LISTING;
  step_list(q);
}

/* Under mu: not held after a listing: wait as the policy says. */
static void waiting(zkr__queue *q) {
  q->phase = Q_WATCHING;
  if (q->pol->wait == ZKR__QWAIT_CHILDREN)
    return; /* the listing set the children watch */
  step_watch(q);
}

/* A change of the children (CHILDREN): list again. */
static void children_watch_cb(zkr_session *s, int type, const char *path,
                              void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)type;
  (void)path;
  callback_enter(c, Q_WATCHING);
  if (c->attempt == q->attempt && c->watch_id == q->watch_id &&
      (q->phase == Q_WATCHING || q->phase == Q_LISTING)) {
    watch_consumed(q);
    if (q->phase == Q_WATCHING)
      relist(q);
    else
      q->relist_after = 1; /* the listing in flight is stale */
  }
  callback_exit(c);
}

/* ------------------------------------------------------------------ */
/* NEAREST: watch the nearest blocker */

/* Under mu: no blocker of the last listing is left. Held, without a
 * request; but with watch_held, which promises that a deletion of our node
 * by someone else is noticed, list once more to see that it is still
 * there (a listing proves it; a watch event does not); and with the
 * policy's verify, to see that no blocker with a lower number appeared
 * after the listing (a downgrade's read node). */
static void none_left(zkr__queue *q) {
  if (q->watch_held || q->pol->verify)
    relist(q);
  else
    finish(q, ZKR_OK);
}

/* Under mu: the nearest blocker is gone. None left of the last listing:
 * held. One whose name we kept: watch it. Otherwise list again. */
static void pred_gone(zkr__queue *q) {
  drop_watch(q, 0);
  if (q->npreds > 0)
    q->npreds--;
  free(q->pred1);
  q->pred1 = q->pred2;
  q->pred2 = NULL;
  if (q->npreds == 0)
    none_left(q);
  else if (q->npreds == 1 && q->pred1)
    step_watch(q); /* the one we kept the name of */
  else
    relist(q); /* several may remain */
}

static void watch_cb(zkr_session *s, int type, const char *path, void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)path;
  if (callback_enter(c, Q_WATCHING) && c->watch_id == q->watch_id) {
    watch_consumed(q); /* the registry already unlinked it */
    if (type == ZOO_DELETED_EVENT)
      pred_gone(q);
    else
      step_watch(q); /* changed, or anything else: look again */
  }
  callback_exit(c);
}

static void exists_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)stat;
  if (callback_enter(c, Q_WATCHING) && c->watch_id == q->watch_id &&
      q->watch_id != 0) {
    if (rc == ZOK) {
      /* the watch is set: wait for it */
    } else if (rc == ZNONODE) {
      /* Gone before we looked. exists() left a watch for its creation
       * on the server: remove it. Whether it held is unknown, so only
       * this one is dropped. */
      drop_watch(q, 1);
      pred_gone(q);
    } else if (transient(rc)) {
      pause_for_connection(q);
    } else {
      finish(q, zkr__from_zk(rc));
    }
  }
  callback_exit(c);
}

static int send_exists(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aexists(zh, path, 1, exists_cb, c);
}

/* Under mu: watch the nearest remaining blocker (one exists+watch). */
static void step_watch(zkr__queue *q) {
  drop_watch(q, 0);
  if (!q->pred1) {
    if (q->npreds == 0)
      none_left(q);
    else
      relist(q); /* a name not kept (cannot happen) */
    return;
  }
  zhandle_t *zh;
  struct qctx *c = begin_request(q, &zh);
  if (c)
    watch_request(q, zh, ZKR__WATCH_DATA, zkr__path_join(q->parent, q->pred1),
                  watch_cb, send_exists, c);
}

/* ------------------------------------------------------------------ */
/* pauses, losses */

/* Under mu: continue a paused attempt now that the session is connected. */
static void resume(zkr__queue *q) {
  q->waiting_conn = 0;
  switch (q->phase) {
  case Q_CREATING:
    if (q->create_unknown) {
      q->phase = Q_LISTING;
      step_list(q); /* evaluate() looks for the prefix first */
    } else {
      step_create(q);
    }
    break;
  case Q_LISTING:
    step_list(q);
    break;
  case Q_WATCHING:
    if (q->pol->wait == ZKR__QWAIT_CHILDREN)
      relist(q);
    else
      step_watch(q);
    break;
  default:
    break;
  }
}

/* Under mu: start over with a new node in the next ZooKeeper session (or
 * this one), the deadline unchanged: our node, if any, went with the old
 * session or is gone. */
static void restart(zkr__queue *q) {
  drop_watch(q, 0);
  clear_node(q);
  clear_preds(q);
  q->create_unknown = 0;
  q->list_sent = 0;
  q->parent_tries = 0;
  q->phase = Q_CREATING;
  q->attempt++;
  make_prefix(q->prefix, sizeof q->prefix);
  if (zkr_session_state_get(q->s) == ZKR_STATE_CONNECTED)
    step_create(q);
  else
    pause_for_connection(q);
}

/* Under mu: a held node is lost (session gone, or the node deleted): LOST;
 * then idle (release() reports ZKR_ELOCKLOST once), or with
 * ZKR__QLOSS_REQUEUE queued again at the back without a deadline. */
static void lose(zkr__queue *q) {
  drop_watch(q, 0);
  clear_node(q);
  q->phase = Q_IDLE;
  q->attempt++;
  set_lstate(q, ZKR__Q_LOST);
  if (q->pol->on_loss == ZKR__QLOSS_REQUEUE && !q->freed) {
    zkr_session_state st = zkr_session_state_get(q->s);
    if (st == ZKR_STATE_CLOSED ||
        (st == ZKR_STATE_LOST && !zkr__session_renews(q->s)))
      return; /* no session to queue in: stays LOST */
    q->acq++;
    q->try_once = 0;
    q->finished = 0;
    q->deadline = -1;
    q->lstate = ZKR__Q_ACQUIRING;
    restart(q);
  }
}

/* ------------------------------------------------------------------ */
/* watching our own node while held (opt-in: one request per acquisition) */

static void held_watch_cb(zkr_session *s, int type, const char *path,
                          void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)path;
  if (callback_enter(c, Q_HELD) && c->watch_id == q->watch_id) {
    watch_consumed(q);
    if (type == ZOO_DELETED_EVENT)
      lose(q); /* deleted by another client */
    else
      arm_held_watch(q); /* changed (e.g. a revocation request): again */
  }
  callback_exit(c);
}

static void held_exists_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)stat;
  if (callback_enter(c, Q_HELD) && c->watch_id == q->watch_id &&
      q->watch_id != 0) {
    if (rc == ZNONODE) {
      drop_watch(q, 1); /* exists() left a watch for its creation */
      lose(q);
    } else if (rc != ZOK) {
      /* not set: set again once the connection is back (verify_cb) */
      drop_watch(q, 0);
    }
  }
  callback_exit(c);
}

static int send_held_exists(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aexists(zh, path, 1, held_exists_cb, c);
}

/* Under mu: with watch_held, set an exists watch on our held node. Not
 * set (disconnected, out of memory): a deletion is noticed as without the
 * option, and verify_cb tries again after a reconnection. */
static void arm_held_watch(zkr__queue *q) {
  if (!q->watch_held || q->phase != Q_HELD || q->watch_id || !q->node_path)
    return;
  uint64_t gen;
  zhandle_t *zh;
  if (zkr__session_get_zh(q->s, &zh, &gen) != ZKR_OK)
    return;
  struct qctx *ec = ctx_new(q);
  int zrc = ZOK;
  if (!ec ||
      set_watch(q, zh, ZKR__WATCH_DATA, zkr__strdup(q->node_path),
                held_watch_cb, send_held_exists, ec, &zrc) != ZKR_OK ||
      zrc != ZOK) {
    if (!ec)
      zkr__session_put_zh(q->s);
    ctx_forget(q, ec);
  }
}

/* ------------------------------------------------------------------ */
/* session state */

static void verify_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)stat;
  if (callback_enter(c, Q_HELD) && q->lstate == ZKR__Q_SUSPECT) {
    if (rc == ZOK) {
      set_lstate(q, ZKR__Q_HELD);
      arm_held_watch(q); /* if its request was lost with the connection */
    } else if (rc == ZNONODE) {
      lose(q); /* deleted under us */
    }
    /* other errors: stays SUSPECT until the next event */
  }
  callback_exit(c);
}

/* Under mu: reconnected to the same session while holding: the node
 * should still be there; make sure. */
static void verify_held(zkr__queue *q) {
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(q->s, &zh, &gen) != ZKR_OK)
    return; /* the next state change decides */
  struct qctx *c = ctx_new(q);
  int rc = c ? zoo_aexists(zh, q->node_path, 0, verify_cb, c) : ZSYSTEMERROR;
  zkr__session_put_zh(q->s);
  if (rc != ZOK)
    ctx_forget(q, c);
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
      set_lstate(q, ZKR__Q_SUSPECT);
    break;
  case ZKR_EV_RECONNECTED:
    if (q->phase == Q_HELD && q->lstate == ZKR__Q_SUSPECT)
      verify_held(q);
    else if (acquiring(q) && q->waiting_conn)
      resume(q);
    break;
  case ZKR_EV_LOST:
  case ZKR_EV_CLOSED:
    if (q->phase == Q_HELD) {
      lose(q); /* the node went with the session */
    } else if (acquiring(q)) {
      if (ev == ZKR_EV_CLOSED) {
        finish(q, ZKR_ECLOSED);
      } else if (q->fixed) {
        finish(q, ZKR_ELOCKLOST); /* the write node went with the session */
      } else if (zkr_session_state_get(q->s) == ZKR_STATE_LOST &&
                 !zkr__session_renews(q->s)) {
        finish(q, ZKR_ESESSIONLOST);
      } else {
        /* Our node (if any) went with the session: start over on the
         * next one, if the deadline allows. */
        restart(q);
      }
    }
    break;
  case ZKR_EV_CONNECTED:
    if (acquiring(q) && q->fixed) {
      finish(q, ZKR_ELOCKLOST); /* a new session: the write node is gone */
    } else if (acquiring(q) && q->waiting_conn) {
      q->create_unknown = 0; /* a new session: nothing of ours is there */
      q->phase = Q_CREATING;
      resume(q);
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
    finish(q, ZKR_ETIMEDOUT);
  q_unlock(q);
  ctx_done(c);
}

/* ------------------------------------------------------------------ */
/* API */

int zkr__queue_new(zkr__queue **out, zkr_session *s, const char *parent,
                   const zkr__qpolicy *pol, const char *data, int datalen) {
  if (!pol || !pol->name ||
      (pol->wait == ZKR__QWAIT_NEAREST &&
       (pol->holds != NULL || pol->count_all)))
    return ZKR_EINVAL; /* a nearest-blocker wait needs the default rule */
  zkr__queue *q = calloc(1, sizeof *q);
  if (!q)
    return ZKR_ENOMEM;
  q->parent = zkr__strdup(parent);
  q->data = malloc(datalen > 0 ? (size_t)datalen : 1);
  q->sev = zkr__event_new();
  if (!q->parent || !q->data || !q->sev) {
    free(q->parent);
    free(q->data);
    zkr__event_free(q->sev);
    free(q);
    return ZKR_ENOMEM;
  }
  if (datalen > 0)
    memcpy(q->data, data, (size_t)datalen);
  q->datalen = datalen;
  q->pol = pol;
  q->s = s;
  q->refs = 1;
  pthread_mutex_init(&q->mu, NULL);
  zkr__cond_init(&q->cv);
  zkr__session_ref(s);
  int rc = zkr__session_hook_add(s, state_hook, q, &q->hook_id);
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
  zkr__session_hook_remove(q->s, q->hook_id);
  pthread_mutex_lock(&q->mu);
  q->freed = 1;
  q->state_fn = NULL;
  if (q->dpost)
    q->dpost->fn = NULL; /* no result callback any more */
  if (acquiring(q))
    finish(q, ZKR_ECANCELED);
  if (q->phase == Q_HELD) {
    drop_watch(q, 0); /* our delete consumes the server's watch */
    if (q->node_path && q->lstate != ZKR__Q_LOST)
      zkr__session_bg_delete(q->s, q->node_path, q->gen);
    clear_node(q);
    q->phase = Q_IDLE;
  }
  q->attempt++;
  /* Wait for a user callback in progress, unless we are inside it. */
  while (q->cb_running && !zkr__tls_in_callback)
    pthread_cond_wait(&q->cv, &q->mu);
  q_unlock(q);
  q_unref(q);
}

static int start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                 void *ud, int fixed, int32_t fixed_seq, uint64_t fixed_gen) {
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
  q->attempt++;
  q->deadline = zkr__deadline(bound);
  if (bound > 0) {
    struct qctx *c = ctx_new(q);
    q->timer_ctx = c;
    if (!c || zkr__timer_add(q->s, q->deadline, deadline_fired, c,
                             &q->timer_id) != ZKR_OK) {
      q->timer_ctx = NULL;
      ctx_forget(q, c);
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
  make_prefix(q->prefix, sizeof q->prefix);
  if (fixed && zkr__session_generation(q->s, NULL) != fixed_gen)
    finish(q, ZKR_ELOCKLOST); /* the write node's session is gone already */
  else
    step_create(q);
  /* If the create could not even be sent because the session is between
   * ZooKeeper sessions, the state hook resumes it. */
  q_unlock(q);
  return ZKR_OK;
}

int zkr__queue_start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                     void *ud) {
  return start(q, timeout_ms, fn, ud, 0, 0, 0);
}

int zkr__queue_start_fixed(zkr__queue *q, int32_t seq, uint64_t gen,
                           int64_t timeout_ms, zkr__queue_done_fn fn,
                           void *ud) {
  return start(q, timeout_ms, fn, ud, 1, seq, gen);
}

int zkr__queue_wait(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  while (!q->finished)
    pthread_cond_wait(&q->cv, &q->mu);
  int rc = q->result;
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int zkr__queue_cancel(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int rc = ZKR_OK;
  if (acquiring(q))
    finish(q, ZKR_ECANCELED);
  else
    rc = ZKR_EINVAL;
  q_unlock(q);
  return rc;
}

int zkr__queue_release(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int rc = ZKR_OK;
  if (q->phase != Q_HELD) {
    rc = q->lstate == ZKR__Q_LOST ? ZKR_ELOCKLOST : ZKR_ENOTHELD;
    if (q->lstate == ZKR__Q_LOST)
      q->lstate = ZKR__Q_UNLOCKED; /* reported once */
  } else {
    drop_watch(q, 0); /* our delete consumes the server's watch */
    if (q->lstate == ZKR__Q_LOST)
      rc = ZKR_ELOCKLOST;
    else
      zkr__session_bg_delete(q->s, q->node_path, q->gen);
    clear_node(q);
    q->phase = Q_IDLE;
    q->attempt++;
    q->lstate = ZKR__Q_UNLOCKED;
  }
  q_unlock(q);
  return rc;
}

zkr__qstate zkr__queue_state(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  zkr__qstate st = q->lstate;
  pthread_mutex_unlock(&q->mu);
  /* Held, but the session is not known to be alive right now (a pause):
   * report it as SUSPECT until the session manager has decided. */
  if (st == ZKR__Q_HELD && !zkr__session_fresh(q->s))
    st = ZKR__Q_SUSPECT;
  return st;
}

int zkr__queue_seq(zkr__queue *q, int32_t *seq, uint64_t *gen) {
  pthread_mutex_lock(&q->mu);
  int held = q->phase == Q_HELD && q->lstate != ZKR__Q_LOST && q->node;
  *seq = held ? q->seq : 0;
  *gen = q->gen;
  pthread_mutex_unlock(&q->mu);
  return held;
}

int zkr__queue_info(zkr__queue *q, int64_t *czxid, char *path, size_t len,
                    uint64_t *gen) {
  pthread_mutex_lock(&q->mu);
  int held = q->phase == Q_HELD && q->lstate != ZKR__Q_LOST;
  if (czxid)
    *czxid = held ? q->czxid : 0;
  if (path && len > 0)
    snprintf(path, len, "%s", held && q->node_path ? q->node_path : "");
  if (gen)
    *gen = q->gen;
  pthread_mutex_unlock(&q->mu);
  return held;
}

void zkr__queue_set_state_fn(zkr__queue *q, zkr__queue_state_fn fn, void *ud) {
  pthread_mutex_lock(&q->mu);
  q->state_fn = fn;
  q->state_ud = ud;
  pthread_mutex_unlock(&q->mu);
}

void zkr__queue_mark_lost(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  if (q->phase == Q_HELD)
    lose(q);
  q_unlock(q);
}

int zkr__queue_post_result(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                           int rc) {
  struct post *p = post_new(q);
  if (!p)
    return ZKR_ENOMEM;
  p->fn = fn;
  p->ud = ud;
  p->rc = rc;
  pthread_mutex_lock(&q->mu);
  q_ref_locked(q);
  pthread_mutex_unlock(&q->mu);
  int prc = zkr__session_post_event(q->s, p->ev, post_done, p);
  if (prc != ZKR_OK) {
    post_free(p);
    q_unref(q);
  }
  return prc;
}

void zkr__queue_set_watch_held(zkr__queue *q, int on) {
  pthread_mutex_lock(&q->mu);
  q->watch_held = on != 0;
  pthread_mutex_unlock(&q->mu);
}

zkr_session *zkr__queue_session(zkr__queue *q) {
  return q->s;
}

void zkr__queue_reevaluate(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  if (q->phase == Q_WATCHING && q->pol->wait == ZKR__QWAIT_CHILDREN &&
      !q->waiting_conn)
    relist(q);
  else if (q->phase == Q_LISTING)
    q->relist_after = 1;
  q_unlock(q);
}

int zkr__queue_ahead(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int n = q->phase == Q_WATCHING || q->phase == Q_LISTING ? q->npreds : -1;
  pthread_mutex_unlock(&q->mu);
  return n;
}
