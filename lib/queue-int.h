/*
 * The queue engine's private parts, shared by its files: queue.c (the
 * object, its references, the delivery of its callbacks, the session
 * hook, the deadline and the API), queue-steps.c (the requests of an
 * acquisition and of a held node: create, adoption, listing, the hold
 * decision, the watches, pauses and losses), queue-attr.c (the settings
 * and read-only views), queue-stats.c (the monitoring) and
 * queue-control.c (the maximum hold, and the reads of a hold's end and of
 * revocation requests). Nothing outside the engine includes it; recipes
 * use queue.h.
 *
 * Every function here is called under q->mu unless its comment in the
 * defining file says otherwise.
 */
#ifndef ZKR_QUEUE_INT_H
#define ZKR_QUEUE_INT_H

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
  pthread_cond_t *cv; /* only while a thread sleeps on it (q_sleep) */
  zkr_session *s;
  const zkr__qpolicy *pol;
  char *parent; /* (parent and data are stored after the object) */
  char *data;
  zkr__hook *hook;

  /* the current acquisition, and its attempt (a new one after a loss) */
  uint64_t acq;
  uint64_t attempt;
  /* A fixed node: EPHEMERAL, not sequential, named with a given sequence
   * number, held as soon as it exists (a read-write lock's downgrade: the
   * read node takes the held write node's number), and only in the
   * ZooKeeper session @fixed_gen. */
  uint64_t fixed_gen;
  char *node_path; /* our node's path */
  char *node;      /* its name: the end of node_path */
  int64_t czxid;
  uint64_t gen;           /* ZooKeeper session of our node */
  char *pred1;            /* the nearest blocker (NULL if npreds == 0) */
  char *pred2;            /* the second nearest (NULL if npreds < 2) */
  uint64_t watch_id;      /* registry id of our one watch, 0 if none */
  uint64_t list_seq;      /* listings sent; only the last one's reply counts */
  struct qctx *watch_ctx; /* its callback context, while registered */
  char *watch_path;
  int64_t deadline;
  int64_t max_hold_ms;  /* zkr__qopts.max_hold_ms */
  int64_t lost_czxid;   /* the last node lost, and why (zkr_lost_cause) */
  int64_t revoke_czxid; /* the term told of a revocation request, and */
  int64_t revoke_mtime; /* when it was made (ms since the epoch) */
  zkr__queue_done_fn revoke_fn; /* zkr__qopts.revoke_fn */
  void *revoke_ud;
  uint64_t timer_id; /* the deadline's, or once held the maximum hold's */
  struct qctx *timer_ctx;
  struct post *dpost;  /* the result's way to the user, from start */
  struct post *orphan; /* a result to deliver after unlocking */

  /* once held */
  zkr__queue_done_fn wait_fn; /* told when an acquisition first waits */
  void *wait_ud;
  zkr__queue_state_fn state_fn;
  void *state_ud;
  _Atomic int64_t *token; /* zkr__qopts.token */
  zkr__event sev;         /* the state deliverer's event node */

  /* monitoring (stats.c): this object's figures, under mu */
  zkr__figs st;
  int64_t wait_t0;   /* us */
  int64_t hold_t0;   /* us */
  zkr__alarm *alarm; /* of the wait (wait_open) or of the hold (hold_open) */
  struct zkr__held held; /* in the session's list while hold_open */

  int refs;     /* under mu */
  int sleepers; /* threads in q_sleep() */
  /* ancestors of parent shorter than this are not the recipe's own: a
   * missing one is created with the open ACL, whatever the session's */
  uint32_t own_len;
  int datalen;
  int32_t fixed_seq;
  int32_t seq;
  int parent_tries;
  int parent_err; /* ZooKeeper error of an ancestor's create */
  int npreds;     /* blockers at the last listing not yet seen gone */
  int result;
  qphase phase;
  zkr__watch_kind watch_kind;
  zkr__qstate lstate;
  unsigned char uuid[16];         /* of our nodes' prefix (zkr__q_prefix) */
  unsigned char ring[STATE_RING]; /* zkr__qstate values */
  unsigned char ring_head, ring_len;
  /* flags (0 or 1) */
  unsigned char freed;
  unsigned char cb_running; /* a user callback runs */
  unsigned char adopting;   /* verifying a node found again after a
                               lost reply */
  unsigned char fixed;      /* see fixed_gen */
  unsigned char try_once;
  unsigned char create_unknown;   /* a create was sent whose outcome is
                                     unknown */
  unsigned char list_sent;        /* the listing went out right behind the
                                     create */
  unsigned char create_gen_valid; /* create_unknown refers to generation
                                     gen */
  unsigned char waiting_conn;     /* paused until the session is connected
                                     again */
  unsigned char relist_after; /* the listing in flight is stale (CHILDREN) */
  unsigned char finished;
  unsigned char watch_held;   /* watch our own node while held (opt-in) */
  unsigned char verify;       /* list again before holding: a node that would
                                 block us may join below us (the policy's late) */
  unsigned char sev_queued;   /* sev is queued on the event thread */
  unsigned char state_orphan; /* deliver states after unlocking */
  unsigned char quiet;        /* no figures kept (the semaphore keeps its
                                 own) */
  unsigned char user;         /* results and states are the user's
                                 callbacks (zkr__qopts.user) */
  unsigned char wait_open;    /* an acquisition is being timed */
  unsigned char hold_open;    /* a hold is being timed */
  unsigned char waited;       /* this acquisition waited for a blocker */
  unsigned char lost_cause;   /* see lost_czxid */
  unsigned char member;       /* the node is a set's (made with the set's
                                 other nodes in one transaction): where it
                                 would be made anew, the acquisition ends
                                 with ZKR_ELOCKLOST instead */
};

/* Context of one asynchronous request. */
struct qctx {
  zkr__queue *q;
  uint64_t acq; /* the acquisition (survives restarts of attempts) */
  uint64_t attempt;
  uint64_t gen;
  uint64_t watch_id;
  uint64_t list_seq; /* a listing: which one (only the last sent counts) */
};

/* Sends one request for a context, on the handle given. */
typedef int (*send_fn)(zhandle_t *zh, const char *path, struct qctx *ec);

/* ---- locking (queue.c) ---- */
/* Without mu: take it, and first lose a held node whose ZooKeeper session
 * is gone or given up by the session clock as of now
 * (zkr__session_alive()). Every call that reports on or ends a hold
 * locks this way. */
void zkr__q_lock_checked(zkr__queue *q);
/* The settings given to zkr__queue_new() (queue-attr.c). */
void zkr__q_apply_opts(zkr__queue *q, const zkr__qopts *o);
/* Let go of mu, then deliver what could not go to the closed event
 * thread. */
void zkr__q_unlock(zkr__queue *q);

/* ---- contexts and callbacks (queue.c) ---- */
struct qctx *zkr__q_ctx_new(zkr__queue *q);
void zkr__q_ctx_forget(zkr__queue *q, struct qctx *c);
/* A timer's context is spent: free it and drop its reference (not under
 * mu). */
void zkr__q_ctx_done(struct qctx *c);
int zkr__q_callback_enter(struct qctx *c, qphase phase);
void zkr__q_callback_exit(struct qctx *c);

/* ---- our nodes' prefix (queue-attr.c) ---- */
/* A new random UUID for the prefix of our nodes: each attempt has its
 * own, so a node of an abandoned attempt is never taken for ours. */
void zkr__q_new_uuid(zkr__queue *q);
/* Take the uuid of the prefix of the node named @name (a set's member,
 * made by its multi-lock) as ours; unchanged if @name has none. */
void zkr__q_uuid_of(zkr__queue *q, const char *name);
/* Our nodes' prefix, "_c_<uuid>-" (Curator's protected names). */
#define ZKR__QPREFIX_LEN 48
void zkr__q_prefix(const zkr__queue *q, char out[ZKR__QPREFIX_LEN]);

/* ---- the node, the watch, the state (queue.c) ---- */
void zkr__q_clear_preds(zkr__queue *q);
/* Under mu: a new attempt (or none): late callbacks of the old one are
 * ignored, so nothing they would have cleared may stay set. */
static inline void zkr__q_next_attempt(zkr__queue *q) {
  q->attempt++;
  q->adopting = 0; /* an adoption's reply of the old attempt is ignored */
}
void zkr__q_clear_node(zkr__queue *q);
int zkr__q_set_node(zkr__queue *q, const char *name);
void zkr__q_drop_watch(zkr__queue *q, int server);
void zkr__q_watch_consumed(zkr__queue *q);
void zkr__q_set_lstate(zkr__queue *q, zkr__qstate st);
void zkr__q_finish(zkr__queue *q, int rc);
int zkr__q_tell_waiting(zkr__queue *q);
/* monitoring: an acquisition starts; a hold ends (@lost: by a loss) */
void zkr__q_wait_begin(zkr__queue *q);
void zkr__q_wait_end(zkr__queue *q, int rc); /* (queue-stats.c) */
/* @lost: 0 (released) or the zkr_lost_cause */
void zkr__q_hold_end(zkr__queue *q, int lost);

/* ---- sending requests (queue-steps.c) ---- */
void zkr__q_pause_for_connection(zkr__queue *q);
struct qctx *zkr__q_begin_request(zkr__queue *q, zhandle_t **zh);
void zkr__q_end_request(zkr__queue *q, struct qctx *c, int rc);
int zkr__q_set_watch(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                     char *path, zkr__watch_fn wfn, send_fn send,
                     struct qctx *ec, int *zrc);
int zkr__q_watch_request(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                         char *path, zkr__watch_fn wfn, send_fn send,
                         struct qctx *ec);

/* ---- the steps (queue-steps.c) ---- */
void zkr__q_step_create(zkr__queue *q);
/* Read the owner and czxid of the node named (a set's member), then list. */
void zkr__q_step_adopt(zkr__queue *q);
void zkr__q_relist(zkr__queue *q);
void zkr__q_resume(zkr__queue *q);
void zkr__q_restart(zkr__queue *q);
/* @cause: a zkr_lost_cause */
void zkr__q_lose(zkr__queue *q, int cause);
/* queue-control.c: under mu, just held: time the maximum hold (if any). */
void zkr__q_arm_max_hold(zkr__queue *q);
void zkr__q_cancel_timer(zkr__queue *q);
/* Post revoke_fn as a user callback (queue.c). */
void zkr__q_post_revoke(zkr__queue *q);
void zkr__q_arm_held_watch(zkr__queue *q);
void zkr__q_verify_held(zkr__queue *q);
#endif
