/*
 * The queue engine's small calls: an object's settings (given when it is
 * made), and the views a recipe takes of it (state, fencing token,
 * sequence number, node, place in the queue). Part of the engine (queue-int.h);
 * each takes the object's lock for a moment and sends nothing. The views
 * of a hold first apply the session clock (zkr__q_lock_checked()): a hold
 * it gives up becomes LOST there, and an election's participant queues
 * again. Also the prefix of our nodes (a random UUID made per attempt).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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
  q->watch_held = o->watch_held != 0 || o->revoke_fn != NULL;
  q->revoke_fn = o->revoke_fn;
  q->revoke_ud = o->revoke_ud;
  q->max_hold_ms = o->max_hold_ms > 0 ? o->max_hold_ms : 0;
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

/* ---- our nodes' prefix ---- */

void zkr__q_new_uuid(zkr__queue *q) {
  unsigned char *r = q->uuid;
  ssize_t got = getrandom(r, sizeof q->uuid, 0);
  if (got != (ssize_t)sizeof q->uuid) {
    /* no entropy source: time, pid and address still make a unique id
     * within one ensemble's lifetime for practical purposes */
    int64_t t = zkr__now_ms();
    uintptr_t a = (uintptr_t)q;
    for (size_t i = 0; i < sizeof q->uuid; i++)
      r[i] = (unsigned char)((t >> (i * 3)) ^ ((uint64_t)getpid() >> i) ^
                             (a >> (i % 8)));
  }
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* UUID version 4 */
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

void zkr__q_uuid_of(zkr__queue *q, const char *name) {
  unsigned char u[16];
  if (strncmp(name, "_c_", 3) != 0)
    return;
  const char *p = name + 3;
  for (int i = 0; i < 16; i++) {
    if (*p == '-')
      p++;
    int hi = hexval(p[0]), lo = hi < 0 ? -1 : hexval(p[1]);
    if (lo < 0)
      return;
    u[i] = (unsigned char)(hi << 4 | lo);
    p += 2;
  }
  if (*p != '-')
    return;
  memcpy(q->uuid, u, sizeof u);
}

void zkr__q_prefix(const zkr__queue *q, char out[ZKR__QPREFIX_LEN]) {
  const unsigned char *r = q->uuid;
  snprintf(out, ZKR__QPREFIX_LEN,
           "_c_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
           "%02x-",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
           r[11], r[12], r[13], r[14], r[15]);
}
