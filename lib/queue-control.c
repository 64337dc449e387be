/*
 * The queue engine's lock control: a hold's maximum (its timer, in the
 * deadline's slot once the node holds, and the giving up when it fires or
 * when a multi-lock gives its set up), and what the owners of held nodes
 * read or mark of a hold's end and of revocation requests. Part of the
 * engine (queue-int.h); queue.c arms the maximum where an acquisition ends
 * held, queue-steps.c watches the held node and notes requests.
 */
#include "config.h"

#include "queue-int.h"

/* Under mu: the hold reached its maximum: delete our node (in the
 * background, once connected if need be) and lose it. */
static void give_up(zkr__queue *q) {
  if (q->node_path)
    zkr__session_bg_delete(q->s, q->node_path, q->gen);
  zkr__q_lose(q, ZKR_LOST_MAX_HOLD);
}

static void max_hold_fired(void *arg) {
  struct qctx *c = arg;
  zkr__queue *q = c->q;
  zkr__q_lock_checked(q);
  if (c == q->timer_ctx) {
    q->timer_id = 0;
    q->timer_ctx = NULL;
    if (c->acq == q->acq && c->attempt == q->attempt && q->phase == Q_HELD)
      give_up(q);
  }
  zkr__q_unlock(q);
  zkr__q_ctx_done(c);
}

/* Under mu, just held: with a maximum hold, its timer (in the deadline's
 * slot, free from now on). Without memory for it the hold is given up at
 * once: a maximum that cannot be enforced is not promised. */
void zkr__q_arm_max_hold(zkr__queue *q) {
  if (q->max_hold_ms <= 0)
    return;
  struct qctx *c = zkr__q_ctx_new(q);
  q->timer_ctx = c;
  if (!c || zkr__timer_add(q->s, zkr__deadline(q->max_hold_ms), max_hold_fired,
                           c, &q->timer_id) != ZKR_OK) {
    q->timer_ctx = NULL;
    q->timer_id = 0;
    zkr__q_ctx_forget(q, c);
    zkr__log(ZKR_LOG_ERROR,
             "out of memory: the maximum hold of a node of %s "
             "cannot be timed; given up now",
             q->parent);
    give_up(q);
  }
}

void zkr__queue_give_up(zkr__queue *q, int64_t czxid) {
  zkr__q_lock_checked(q);
  if (q->phase == Q_HELD && q->czxid == czxid)
    give_up(q);
  zkr__q_unlock(q);
}

int64_t zkr__queue_revoke_time(zkr__queue *q, int64_t czxid) {
  pthread_mutex_lock(&q->mu);
  int64_t t = czxid != 0 && q->revoke_czxid == czxid ? q->revoke_mtime : 0;
  pthread_mutex_unlock(&q->mu);
  return t;
}

zkr_lost_cause zkr__queue_lost_cause(zkr__queue *q, int64_t czxid) {
  zkr__q_lock_checked(q);
  zkr_lost_cause c = ZKR_LOST_NONE;
  if (czxid != 0 && q->lost_czxid == czxid)
    c = (zkr_lost_cause)q->lost_cause;
  zkr__q_unlock(q);
  return c;
}

void zkr__queue_mark_lost(zkr__queue *q, int64_t czxid) {
  pthread_mutex_lock(&q->mu);
  if (q->phase == Q_HELD && q->czxid == czxid)
    zkr__q_lose(q, ZKR_LOST_DELETED);
  zkr__q_unlock(q);
}
