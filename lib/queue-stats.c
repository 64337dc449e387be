/*
 * The queue engine's monitoring: an object's figures (zkr_stats, under
 * q->mu), the lock events and the threshold alarms of its acquisitions
 * and holds, through stats.c. Part of the engine (queue-int.h); queue.c
 * and queue-steps.c call it where an acquisition starts and ends and where
 * a hold ends.
 */
#include "config.h"

#include "queue-int.h"

/* ------------------------------------------------------------------ */
/* monitoring */

/* What the lock events and alerts call the node kind. */
static const char *recipe_of(const zkr__queue *q) {
  return q->pol->label ? q->pol->label : "lock";
}

void zkr__q_wait_begin(zkr__queue *q) {
  if (q->quiet)
    return;
  if (q->wait_open || q->hold_open) /* (never: a hold ends first; be safe) */
    zkr__alarm_disarm(q->alarm);
  q->wait_open = 1;
  q->wait_t0 = zkr__now_us();
  zkr__stats_wait_begin(q->s, &q->st);
  q->alarm = zkr__alarm_arm(q->s, ZKR_ALERT_WAIT, recipe_of(q), q->parent,
                            q->node, zkr__zk_first_contender);
}

void zkr__q_wait_end(zkr__queue *q, int rc) {
  if (!q->wait_open)
    return;
  q->wait_open = 0;
  zkr__alarm_disarm(q->alarm);
  q->alarm = NULL;
  int64_t now = zkr__now_us();
  zkr__stats_wait_end(q->s, &q->st, recipe_of(q), q->parent, q->node, rc,
                      now - q->wait_t0, q->waited, 1);
  if (rc == ZKR_OK) {
    q->hold_open = 1;
    zkr__session_held(q->s, &q->held, 1);
    q->hold_t0 = now;
    q->alarm = zkr__alarm_arm(q->s, ZKR_ALERT_HOLD, recipe_of(q), q->parent,
                              q->node, NULL);
  }
}

void zkr__q_hold_end(zkr__queue *q, int lost) {
  if (!q->hold_open)
    return;
  q->hold_open = 0;
  zkr__session_held(q->s, &q->held, 0);
  zkr__alarm_disarm(q->alarm);
  q->alarm = NULL;
  zkr__stats_hold_end(q->s, &q->st, recipe_of(q), q->parent, q->node, lost,
                      zkr__now_us() - q->hold_t0);
}

int zkr__queue_stats(zkr__queue *q, zkr_stats *out, size_t size) {
  zkr_lock_state state = zkr__lock_state_of(zkr__queue_state(q));
  pthread_mutex_lock(&q->mu);
  int rc = zkr__stats_copy(&q->st, (int)state, out, size);
  pthread_mutex_unlock(&q->mu);
  return rc;
}
