/*
 * The queue engine's small calls: an object's settings, made by its
 * recipe before or between acquisitions (the state and wait callbacks,
 * the held watch), and the views a recipe takes of it (state, sequence
 * number, node, place in the queue). Part of the engine (queue-int.h);
 * each takes the object's lock for a moment and sends nothing. The views
 * of a hold first apply the session clock (zkr__q_lock_checked()): a hold
 * it gives up becomes LOST there, and an election's participant queues
 * again.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "queue-int.h"

zkr_lock_state zkr__lock_state_of(zkr__qstate st) {
  switch (st) {
  case ZKR__Q_UNLOCKED:
    return ZKR_LOCK_UNLOCKED;
  case ZKR__Q_ACQUIRING:
    return ZKR_LOCK_ACQUIRING;
  case ZKR__Q_HELD:
    return ZKR_LOCK_HELD;
  case ZKR__Q_SUSPECT:
    return ZKR_LOCK_SUSPECT;
  case ZKR__Q_LOST:
    return ZKR_LOCK_LOST;
  }
  return ZKR_LOCK_UNLOCKED;
}

zkr__qstate zkr__queue_state(zkr__queue *q) {
  zkr__q_lock_checked(q);
  zkr__qstate st = q->lstate;
  zkr__q_unlock(q);
  /* Held, but the session is not known to be alive right now (a pause):
   * report it as SUSPECT until the session manager has decided. */
  if (st == ZKR__Q_HELD && !zkr__session_fresh(q->s))
    st = ZKR__Q_SUSPECT;
  return st;
}

int zkr__queue_seq(zkr__queue *q, int32_t *seq, uint64_t *gen) {
  zkr__q_lock_checked(q);
  int held = q->phase == Q_HELD && q->lstate != ZKR__Q_LOST && q->node;
  *seq = held ? q->seq : 0;
  *gen = q->gen;
  zkr__q_unlock(q);
  return held;
}

int zkr__queue_info(zkr__queue *q, int64_t *czxid, char *path, size_t len,
                    uint64_t *gen) {
  zkr__q_lock_checked(q);
  int held = q->phase == Q_HELD && q->lstate != ZKR__Q_LOST;
  if (czxid)
    *czxid = held ? q->czxid : 0;
  if (path && len > 0)
    snprintf(path, len, "%s", held && q->node_path ? q->node_path : "");
  if (gen)
    *gen = q->gen;
  zkr__q_unlock(q);
  return held;
}

void zkr__queue_set_state_fn(zkr__queue *q, zkr__queue_state_fn fn, void *ud) {
  pthread_mutex_lock(&q->mu);
  q->state_fn = fn;
  q->state_ud = ud;
  pthread_mutex_unlock(&q->mu);
}

void zkr__queue_set_watch_held(zkr__queue *q, int on) {
  pthread_mutex_lock(&q->mu);
  q->watch_held = on != 0;
  pthread_mutex_unlock(&q->mu);
}

void zkr__queue_set_wait_fn(zkr__queue *q, zkr__queue_done_fn fn, void *ud) {
  pthread_mutex_lock(&q->mu);
  q->wait_fn = fn;
  q->wait_ud = ud;
  pthread_mutex_unlock(&q->mu);
}

void zkr__queue_set_own_root(zkr__queue *q, const char *root) {
  size_t n = strlen(root);
  pthread_mutex_lock(&q->mu);
  if (strncmp(q->parent, root, n) == 0 &&
      (q->parent[n] == '\0' || q->parent[n] == '/'))
    q->own_len = n;
  pthread_mutex_unlock(&q->mu);
}

zkr_session *zkr__queue_session(zkr__queue *q) {
  return q->s;
}

int zkr__queue_ahead(zkr__queue *q) {
  pthread_mutex_lock(&q->mu);
  int n = q->phase == Q_WATCHING || q->phase == Q_LISTING ? q->npreds : -1;
  pthread_mutex_unlock(&q->mu);
  return n;
}
