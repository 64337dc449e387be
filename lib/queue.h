/* The queue engine's internal interface (see queue.c). */
#ifndef ZKR_QUEUE_H
#define ZKR_QUEUE_H

#include "zkr-private.h"

typedef struct zkr__queue zkr__queue;

/* A recipe's policy: how its nodes are named and whom a contender waits
 * for. */
typedef struct zkr__qpolicy {
  /* the part of the node name after "_c_<uuid>-", before the sequence:
   * "lock-" (mutex), "__READ__", "__WRIT__", "latch-" */
  const char *name;
  /* does the contender @name, earlier than us, block us? */
  int (*blocks)(const char *name, void *ctx);
  void *ctx;
} zkr__qpolicy;

typedef enum zkr__qstate {
  ZKR__Q_UNLOCKED = 0,
  ZKR__Q_ACQUIRING = 1,
  ZKR__Q_HELD = 2,
  ZKR__Q_SUSPECT = 3,
  ZKR__Q_LOST = 4
} zkr__qstate;

/* Runs on the session's event thread. */
typedef void (*zkr__queue_done_fn)(zkr__queue *q, int rc, void *ud);
typedef void (*zkr__queue_state_fn)(zkr__queue *q, zkr__qstate st, void *ud);

int zkr__queue_new(zkr__queue **out, zkr_session *s, const char *parent,
                   const zkr__qpolicy *pol, const char *data, int datalen);
/* Cancels a pending acquisition, releases a held node. */
void zkr__queue_free(zkr__queue *q);
/* Start an acquisition: 0 = try once (no node left behind if not
 * acquired: ZKR_EWOULDBLOCK), negative = no deadline. @fn (may be NULL)
 * runs on the event thread with the result. */
int zkr__queue_start(zkr__queue *q, int64_t timeout_ms, zkr__queue_done_fn fn,
                     void *ud);
/* Wait for the result of the acquisition started last. */
int zkr__queue_wait(zkr__queue *q);
int zkr__queue_cancel(zkr__queue *q);
/* Delete our node (in the background if the connection is down). */
int zkr__queue_release(zkr__queue *q);
zkr__qstate zkr__queue_state(zkr__queue *q);
/* Is it held (HELD or SUSPECT)? Also the fencing token, our node's path
 * and the ZooKeeper session generation of the node. */
int zkr__queue_info(zkr__queue *q, int64_t *czxid, char *path, size_t len,
                    uint64_t *gen);
void zkr__queue_set_state_fn(zkr__queue *q, zkr__queue_state_fn fn, void *ud);
/* Our node was found deleted (by a guarded write): LOST. */
void zkr__queue_mark_lost(zkr__queue *q);
/* Reentry: grow the hold count if held (ZKR_OK), else ZKR_ENOTHELD. */
int zkr__queue_reenter(zkr__queue *q);
/* The hold count (0 if not held). Release drops it by one and deletes the
 * node when it reaches zero. */
int zkr__queue_hold_count(zkr__queue *q);
/* Post fn(q, rc, ud) to the event thread (not called once the queue is
 * freed). */
int zkr__queue_post_result(zkr__queue *q, zkr__queue_done_fn fn, void *ud,
                           int rc);
zkr_session *zkr__queue_session(zkr__queue *q);
/* While held, watch our own node: its deletion by another client makes
 * the lock LOST at once (one more request per acquisition). */
void zkr__queue_set_watch_held(zkr__queue *q, int on);

#endif
