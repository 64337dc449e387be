/*
 * The queue engine's internal interface (see queue.c).
 *
 * Owns: one contender's node in a queue of EPHEMERAL|SEQUENTIAL nodes, from
 * its create to its delete, and the decision when it holds. A recipe plugs
 * in a zkr__qpolicy; everything else (naming the node, adoption after a
 * lost create reply, ordering, watching, deadlines, cancellation, loss) is
 * the engine's. Must not touch: public types (recipes map them), the
 * session's internals (only its zkr__session_* interface).
 */
#ifndef ZKR_QUEUE_H
#define ZKR_QUEUE_H

#include <stdatomic.h>

#include "zkr-private.h"

typedef struct zkr__queue zkr__queue;

/* How a waiter waits. */
typedef enum zkr__qwait {
  /* an exists-watch on the nearest blocker before it (one session woken
   * per departure); needs the default hold rule (no blocker) */
  ZKR__QWAIT_NEAREST = 0,
  /* a children watch on the queue's parent: every change of the queue
   * re-lists (for a contender that alone waits on a shared count, like
   * the semaphore's lease waiter inside its admission mutex) */
  ZKR__QWAIT_CHILDREN = 1
} zkr__qwait;

/* What losing a held node (session gone, node deleted) does. */
typedef enum zkr__qloss {
  ZKR__QLOSS_IDLE = 0,   /* the object is idle until acquired again */
  ZKR__QLOSS_REQUEUE = 1 /* queue again at the back, without deadline (an
                            election's participant rejoins) */
} zkr__qloss;

/* A recipe's policy. The engine reads it, never writes it; it must
 * outlive every queue object that uses it. */
typedef struct zkr__qpolicy {
  /* the part of the node name after "_c_<uuid>-", before the sequence
   * (the recipe's, from the table of layouts) */
  const char *name;
  /* what the figures, lock events and alerts call a node of this policy
   * ("lock" when NULL) */
  const char *label;
  /* does the contender @name, earlier than us, block us? NULL: every
   * earlier contender does */
  int (*blocks)(const char *name, void *ctx);
  /* the hold rule: do we hold with @blockers blockers before us? NULL:
   * when there is none. With ZKR__QWAIT_NEAREST it must be NULL. */
  int (*holds)(int blockers, void *ctx);
  zkr__qwait wait;
  zkr__qloss on_loss;
  /* the layout's nodes that may join the queue at a fixed number
   * (zkr__queue_join_at(): the name after "_c_<uuid>-", for example the
   * read-write lock's read nodes, which a downgrade creates), or NULL:
   * none may, and the engine refuses a join. Such a node can appear before
   * a contender after its listing, so a contender that it would block
   * (by @blocks) lists once more before holding when the last blocker of
   * its listing is seen gone; the engine decides that, not the recipe. */
  const char *late;
  /* every other child of the parent is a blocker, whatever its name or
   * number, earlier or later (the semaphore's leases: Curator counts all
   * children of leases/); only with ZKR__QWAIT_CHILDREN */
  int count_all;
  /* does a child named @name show that the parent holds another recipe's
   * layout? Then the acquisition ends with ZKR_EFOREIGN (our node
   * deleted) instead of queueing beside it. NULL: no child does. */
  int (*foreign)(const char *name, void *ctx);
  void *ctx;
} zkr__qpolicy;

/* The engine's view of a contender's state. Recipes map it to the public
 * zkr_lock_state with zkr__lock_state_of(). */
typedef enum zkr__qstate {
  ZKR__Q_UNLOCKED = 0,
  ZKR__Q_ACQUIRING,
  ZKR__Q_HELD,
  ZKR__Q_SUSPECT,
  ZKR__Q_LOST
} zkr__qstate;

/* Run on the session's event thread (or, once the session is closed, on
 * the thread that ended the acquisition). */
typedef void (*zkr__queue_done_fn)(zkr__queue *q, int rc, void *ud);
typedef void (*zkr__queue_state_fn)(zkr__queue *q, zkr__qstate st, void *ud);

/* What a recipe sets once, when it makes a queue object (all zero: the
 * defaults). */
typedef struct zkr__qopts {
  /* every change of a held node's state (HELD, SUSPECT, LOST), in order,
   * on the event thread (NULL: none, and no post to the event thread) */
  zkr__queue_state_fn state_fn;
  void *state_ud;
  /* a hold's token: the engine stores the held node's czxid here when the
   * node holds (HELD, and SUSPECT after it), at once, on the thread that
   * decides it; the recipe clears it when the hold ends */
  _Atomic int64_t *token;
  /* the first wait of each acquisition for a blocker: wait_fn(q, ZKR_OK,
   * wait_ud) on the event thread (not once the queue is freed) */
  zkr__queue_done_fn wait_fn;
  void *wait_ud;
  /* the recipe's own nodes start at @own_root, the parent or one of its
   * ancestors (NULL: the parent): missing nodes from it down to the
   * parent get the session's ACL (zkr_session_options.acl), missing
   * ancestors above it the open ACL, so that a creator-only lock never
   * closes a path shared with other locks */
  const char *own_root;
  /* watch our own node while held (zkr__queue_watch_held()) */
  int watch_held;
  /* the maximum hold: a node held this long (ms, from the grant) is given
   * up: deleted, and the hold LOST with ZKR_LOST_MAX_HOLD (0: none) */
  int64_t max_hold_ms;
  /* revocable: told revoke_fn(q, ZKR_OK, revoke_ud), as a user callback,
   * once per term when a revocation request (ZKR__REVOKE_DATA as the held
   * node's data) is seen; the held node is watched (watch_held), with
   * getData instead of exists (NULL: not revocable) */
  zkr__queue_done_fn revoke_fn;
  void *revoke_ud;
  /* keep no figures, send no lock events, arm no alarms (the semaphore's
   * queues: the semaphore keeps its own) */
  int quiet;
  /* the results of zkr__queue_start() and the state_fn calls are the
   * user's callbacks (the recipe only passes them on): in a dispatch-mode
   * session they run in zkr_session_dispatch() instead of on the event
   * thread (the engine's own work stays there) */
  int user;
} zkr__qopts;

/* Returns ZKR_OK, ZKR_EINVAL (a policy the engine cannot run),
 * ZKR_ENOMEM. @opts may be NULL. */
int zkr__queue_new(zkr__queue **out, zkr_session *s, const char *parent,
                   const zkr__qpolicy *pol, const char *data, int datalen,
                   const zkr__qopts *opts);
/* Cancels a pending acquisition, releases a held node. No callback runs
 * after it returns (it waits for one running, unless called from it). */
void zkr__queue_free(zkr__queue *q);
/* Start an acquisition: 0 = try once (no node left behind if not
 * acquired: ZKR_EWOULDBLOCK), negative = no deadline. @fn (may be NULL)
 * runs exactly once with the result, unless the queue is freed first. */
int zkr__queue_start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                     void *ud);
/* Join the queue at sequence number @seq: a node EPHEMERAL, not
 * sequential, named with @seq, in the ZooKeeper session generation @gen
 * only, and held as soon as it exists (no listing): a read-write lock's
 * downgrade, where the read node takes the number of the write node this
 * session holds, so that nothing queued after the write node can come
 * between. ZKR_ELOCKLOST if that session is gone (at the start or while
 * creating). */
int zkr__queue_join_at(zkr__queue *q, int32_t seq, uint64_t gen,
                       int64_t timeout_ms, zkr__queue_done_fn fn, void *ud);
/* Start an acquisition with a node the caller made (@name, a child of the
 * parent, in ZooKeeper session generation @gen): a multi-lock set's
 * member, made in one transaction with the set's other nodes. The engine
 * reads its owner and czxid, then queues as usual; where it would make a
 * node anew (the session lost while waiting, the node found gone or not
 * ours), the acquisition ends with ZKR_ELOCKLOST instead, and the caller
 * starts the whole set over. */
int zkr__queue_start_member(zkr__queue *q, const char *name, uint64_t gen,
                            int64_t timeout_ms, zkr__queue_done_fn fn,
                            void *ud);
/* Wait for the result of the acquisition started last. */
int zkr__queue_wait(zkr__queue *q);
int zkr__queue_cancel(zkr__queue *q);
/* Delete our node (in the background if the connection is down).
 * ZKR_ENOTHELD, or ZKR_ELOCKLOST once after a loss. */
int zkr__queue_release(zkr__queue *q);
/* The same, except that a node to delete is not deleted: its path goes
 * to *@node_path (the caller's to free; NULL if there is none) and its
 * ZooKeeper session to *@gen, for the caller to delete (a multi-lock's
 * release: every member's node in one transaction). */
int zkr__queue_release_take(zkr__queue *q, char **node_path, uint64_t *gen);
zkr__qstate zkr__queue_state(zkr__queue *q);
/* The public state of an engine state. */
zkr_lock_state zkr__lock_state_of(zkr__qstate st);
/* A view of a queue object. */
typedef struct zkr__qinfo {
  int64_t czxid; /* the fencing token: our node's czxid (0 unless held) */
  int32_t seq;   /* our node's sequence number (0 unless held) */
  uint64_t gen;  /* the ZooKeeper session generation of our node */
  int ahead;     /* blockers before a waiter as of its last look at the
                    queue; -1 when it is not waiting */
  int waited;    /* the last acquisition waited for a blocker */
} zkr__qinfo;
/* Is it held (HELD or SUSPECT)? With @out, the view; with @path, our
 * node's path ("" unless held). */
int zkr__queue_info(zkr__queue *q, zkr__qinfo *out, char *path, size_t len);
/* Our node, the one with @czxid, was found deleted (by a guarded write):
 * LOST, if it is still the one held. */
void zkr__queue_mark_lost(zkr__queue *q, int64_t czxid);
/* Curator's revocation request: a holder's node data set to this. */
#define ZKR__REVOKE_DATA "__REVOKE__"
/* When the revocation request told for the term of @czxid was made (the
 * node's mtime, ms since the epoch), or 0 if none was told for it. */
int64_t zkr__queue_revoke_time(zkr__queue *q, int64_t czxid);
/* Post revoke_fn again if a request was told for the term held now (for
 * a recipe that had no hold to tell it to then). */
void zkr__queue_retell_revoke(zkr__queue *q);
/* Give the hold of the node with @czxid up now, as its maximum hold
 * would: the node deleted, LOST with ZKR_LOST_MAX_HOLD (a multi-lock's
 * maximum, timed for the whole set). Nothing if it holds another. */
void zkr__queue_give_up(zkr__queue *q, int64_t czxid);
/* Why the hold of the node with @czxid was lost: ZKR_LOST_NONE unless it
 * is the last node this object lost (after the session clock is applied). */
zkr_lost_cause zkr__queue_lost_cause(zkr__queue *q, int64_t czxid);
/* Post fn(q, rc, ud) to the event thread (not called once the queue is
 * freed). */
int zkr__queue_post_result(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                           int rc);
/* The same for a user callback: in a dispatch-mode session it runs in
 * zkr_session_dispatch() (ZKR_ECLOSED once that session is closed: not
 * run). */
int zkr__queue_post_user(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                         int rc);
zkr_session *zkr__queue_session(zkr__queue *q);
/* Keep @q's memory (not its hold) past zkr__queue_free(), for a request
 * that may still report on it (zkr__queue_mark_lost() is then a no-op). */
void zkr__queue_ref(zkr__queue *q);
void zkr__queue_unref(zkr__queue *q);
/* While held, watch our own node: its deletion by another client makes
 * the lock LOST at once (one more request per acquisition). Turned on
 * while held, the watch is set at once (the semaphore's admission node,
 * once its lease waiter has to wait). */
void zkr__queue_watch_held(zkr__queue *q, int on);
/* A waiter with ZKR__QWAIT_CHILDREN whose hold rule changed (a limit read
 * from a shared count): look at the queue again. */
void zkr__queue_reevaluate(zkr__queue *q);
/* This object's figures (zkr_mutex_stats() and the like). */
int zkr__queue_stats(zkr__queue *q, zkr_stats *out, size_t size);

#endif
