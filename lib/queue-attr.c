/*
 * The queue engine's small calls: an object's settings (given when it is
 * made), and the views a recipe takes of it (state, fencing token,
 * sequence number, node, place in the queue). Part of the engine (queue-int.h);
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

int zkr__queue_info(zkr__queue *q, zkr__qinfo *out, char *path, size_t len) {
  zkr__q_lock_checked(q);
  int held = q->phase == Q_HELD && q->lstate != ZKR__Q_LOST;
  if (out) {
    out->czxid = held ? q->czxid : 0;
    out->seq = held && q->node ? q->seq : 0;
    out->gen = q->gen;
    out->ahead =
        q->phase == Q_WATCHING || q->phase == Q_LISTING ? q->npreds : -1;
    out->waited = q->waited;
  }
  if (path && len > 0)
    snprintf(path, len, "%s", held && q->node_path ? q->node_path : "");
  zkr__q_unlock(q);
  return held;
}

/* Under mu, before the object is shared: the settings of @o. */
void zkr__q_apply_opts(zkr__queue *q, const zkr__qopts *o) {
  if (!o)
    return;
  q->state_fn = o->state_fn;
  q->token = o->token;
  q->state_ud = o->state_ud;
  q->wait_fn = o->wait_fn;
  q->wait_ud = o->wait_ud;
  q->watch_held = o->watch_held != 0;
  q->quiet = o->quiet != 0;
  q->user = o->user != 0;
  size_t n = o->own_root ? strlen(o->own_root) : 0;
  if (o->own_root && strncmp(q->parent, o->own_root, n) == 0 &&
      (q->parent[n] == '\0' || q->parent[n] == '/'))
    q->own_len = (uint32_t)n;
}

zkr_session *zkr__queue_session(zkr__queue *q) {
  return q->s;
}
