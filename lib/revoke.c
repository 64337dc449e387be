/*
 * Revoking the holds of a path (zkr_revoke()): Apache Curator's revocation
 * request, the holder's node data set to "__REVOKE__" (what
 * Revoker.attemptRevoke() does), then a wait for the holders to release;
 * with a grace period, an eviction of each holder still there after it:
 * one multi of a check of the version the request left and a delete of
 * exactly that node, so that a successor is never touched and a node
 * written again since (another request) is read again first.
 *
 * Owns: the revoker's side. Must not touch: the holder's side (the engine
 * tells a revocable holder, queue-steps.c), any recipe's objects.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "queue.h"
#include "recipe.h"

enum { T_ASKED, T_GONE, T_EVICTED, T_REFUSED };

struct target {
  char *path;
  int version; /* the data version the request left */
  int state;
};

/* The holders of @path by its layout's rule: a semaphore's leases, an
 * election's leader, a lock's or a read-write lock's holders (a mutex's
 * nodes are writers to the read-write rule, so one rule reads both). */
static int holders(zkr_session *s, const char *path, int64_t timeout_ms,
                   struct target **out, int *n) {
  *out = NULL;
  *n = 0;
  zkr__result r;
  memset(&r, 0, sizeof r);
  int rc = zkr__zk_children(s, path, zkr__deadline(timeout_ms), &r);
  if (rc == ZKR_ENONODE)
    return ZKR_OK; /* nothing held */
  if (rc != ZKR_OK)
    return rc;
  zkr_layout layout = zkr_layout_of(r.names.data, (size_t)r.names.count);
  zkr__result_clear(&r);
  zkr_participant *p = NULL, *w = NULL;
  size_t np = 0, nw = 0;
  if (layout == ZKR_LAYOUT_NONE)
    return ZKR_OK;
  if (layout == ZKR_LAYOUT_SEMAPHORE) {
    /* (the names are "leases/NAME"; with the largest limit every lease
     * node counts as held, a lease waiter's too: asked, it is told when it
     * is handed out) */
    rc = zkr_semaphore_participants(s, path, ZKR_SEMAPHORE_MAX, timeout_ms, &p,
                                    &np, &w, &nw);
    zkr_participants_free(w, nw);
  } else if (layout == ZKR_LAYOUT_ELECTION) {
    rc = zkr_election_participants(s, path, timeout_ms, &p, &np);
  } else {
    rc = zkr_rwlock_participants(s, path, timeout_ms, &p, &np);
  }
  if (rc != ZKR_OK)
    return rc;
  struct target *t = calloc(np ? np : 1, sizeof *t);
  if (!t) {
    zkr_participants_free(p, np);
    return ZKR_ENOMEM;
  }
  int k = 0;
  for (size_t i = 0; i < np; i++) {
    if (!p[i].is_holder)
      continue;
    t[k].path = zkr__path_join(path, p[i].node);
    if (!t[k].path) {
      rc = ZKR_ENOMEM;
      break;
    }
    k++;
  }
  zkr_participants_free(p, np);
  if (rc != ZKR_OK) {
    for (int i = 0; i < k; i++)
      free(t[i].path);
    free(t);
    return rc;
  }
  *out = t;
  *n = k;
  return ZKR_OK;
}

static int is_request(const zkr__result *r) {
  return r->datalen == (int)sizeof ZKR__REVOKE_DATA - 1 &&
         memcmp(r->data, ZKR__REVOKE_DATA, sizeof ZKR__REVOKE_DATA - 1) == 0;
}

/* Ask the holder of @t: its data set to the request, conditionally on the
 * version read (so that a lost reply can be sent again); a request already
 * there is taken as it is. */
static int ask(zkr_session *s, struct target *t, int64_t deadline) {
  for (int tries = 0; tries < 5; tries++) {
    zkr__result r;
    memset(&r, 0, sizeof r);
    int rc = zkr__zk_get(s, t->path, deadline, &r);
    if (rc == ZKR_ENONODE) {
      t->state = T_GONE;
      return ZKR_OK;
    }
    if (rc != ZKR_OK)
      return rc;
    int v = r.stat.version, asked = is_request(&r);
    zkr__result_clear(&r);
    if (asked) {
      t->version = v;
      return ZKR_OK;
    }
    rc = zkr__zk_set_stat(s, t->path, ZKR__REVOKE_DATA,
                          (int)sizeof ZKR__REVOKE_DATA - 1, v, deadline, &r);
    if (rc == ZKR_OK) {
      t->version = r.stat.version;
      zkr__result_clear(&r);
      return ZKR_OK;
    }
    if (rc == ZKR_ENOAUTH) {
      t->state = T_REFUSED;
      return ZKR_OK;
    }
    if (rc == ZKR_ENONODE) {
      t->state = T_GONE;
      return ZKR_OK;
    }
    if (rc != ZKR_EBADVERSION)
      return rc;
    /* written meanwhile (or our own write's reply was lost): read again */
  }
  return ZKR_EBADVERSION;
}

/* Evict the holder of @t: check the request's version and delete exactly
 * that node, in one transaction. */
static int evict(zkr_session *s, struct target *t, int64_t deadline) {
  zoo_op_t ops[2];
  zoo_op_result_t res[2];
  zoo_check_op_init(&ops[0], t->path, t->version);
  zoo_delete_op_init(&ops[1], t->path, -1);
  int zrc = ZOK;
  int rc = zkr__zk_multi(s, 2, ops, res, deadline, &zrc);
  if (rc == ZKR_OK) {
    t->state = T_EVICTED;
    zkr__stats_eviction(s);
    zkr__log(ZKR_LOG_INFO, "%s: evicted (revocation not answered in time)",
             t->path);
    return ZKR_OK;
  }
  if (zrc == ZNONODE) {
    t->state = T_GONE; /* released at the last moment */
    return ZKR_OK;
  }
  if (zrc == ZNOAUTH) {
    t->state = T_REFUSED;
    return ZKR_OK;
  }
  if (zrc == ZBADVERSION)
    return ask(s, t, deadline); /* asked again since: the new version */
  if (rc == ZKR_ECONNLOSS)
    return ZKR_OK; /* unknown: the next look at the node tells */
  return rc;
}

int zkr_revoke(zkr_session *s, const char *path, int64_t timeout_ms,
               int64_t grace_ms, zkr_revoke_result *out) {
  if (out)
    memset(out, 0, sizeof *out);
  if (!s || timeout_ms < 0)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t t0 = zkr__now_ms();
  int64_t span = grace_ms > timeout_ms ? grace_ms : timeout_ms;
  int64_t end = t0 + span, evict_at = grace_ms >= 0 ? t0 + grace_ms : -1;
  struct target *t = NULL;
  int n = 0;
  rc = holders(s, path, span, &t, &n);
  for (int i = 0; i < n && rc == ZKR_OK; i++)
    rc = ask(s, &t[i], end);
  int64_t pause = 20;
  while (rc == ZKR_OK) {
    int pending = 0;
    for (int i = 0; i < n; i++)
      pending += t[i].state == T_ASKED;
    if (pending == 0)
      break;
    int64_t now = zkr__now_ms();
    if (evict_at >= 0 && now >= evict_at) {
      for (int i = 0; i < n && rc == ZKR_OK; i++)
        if (t[i].state == T_ASKED)
          rc = evict(s, &t[i], end);
      evict_at = now; /* a holder asked again is evicted on the next turn */
    }
    if (rc != ZKR_OK || now >= end)
      break;
    for (int i = 0; i < n && rc == ZKR_OK; i++) {
      if (t[i].state != T_ASKED)
        continue;
      zkr__result r;
      memset(&r, 0, sizeof r);
      int erc = zkr__zk_exists(s, t[i].path, end, &r);
      if (erc == ZKR_ENONODE)
        t[i].state = T_GONE;
      else if (erc != ZKR_OK && erc != ZKR_ETIMEDOUT)
        rc = erc;
    }
    now = zkr__now_ms();
    int64_t wake = now + pause;
    if (evict_at >= 0 && evict_at > now && evict_at < wake)
      wake = evict_at;
    if (wake > end)
      wake = end;
    if (wake > now)
      zkr__sleep_ms(wake - now);
    if (pause < 200)
      pause *= 2;
  }
  int refused = 0, held = 0;
  for (int i = 0; i < n; i++) {
    if (out) {
      out->holders++;
      out->released += t[i].state == T_GONE;
      out->evicted += t[i].state == T_EVICTED;
      out->held += t[i].state == T_ASKED || t[i].state == T_REFUSED;
      out->refused += t[i].state == T_REFUSED;
    }
    refused += t[i].state == T_REFUSED;
    held += t[i].state == T_ASKED;
    free(t[i].path);
  }
  free(t);
  if (rc != ZKR_OK)
    return rc;
  if (refused)
    return ZKR_ENOAUTH;
  return held ? ZKR_ETIMEDOUT : ZKR_OK;
}
