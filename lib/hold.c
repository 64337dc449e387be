/*
 * The hold (see hold.h): the fencing token, the node, the state and the
 * guarded writes of one term of a queue object, for every recipe.
 *
 * Owns: a term's views, guarded writes (the check op on the term's node in
 * front of the caller's operations, in one transaction). Must not touch:
 * the engine's internals, the recipes' objects.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"

int zkr__hold_take(zkr_hold *h, zkr__queue *q) {
  zkr__qinfo i;
  if (!zkr__queue_info(q, &i, NULL, 0))
    return 0;
  atomic_store(&h->czxid, i.czxid); /* (h->q is set once, by its owner) */
  return 1;
}

void zkr__hold_end(zkr_hold *h) {
  atomic_store(&h->czxid, 0);
}

/* A hold's queues: one, or a multi-lock set's members. */
static int nq(const zkr_hold *h) {
  return h->nset > 0 ? h->nset : 1;
}

static zkr__queue *qat(const zkr_hold *h, int i) {
  return h->nset > 0 ? h->set[i] : h->q;
}

/* Is @h's term the one its queues hold now (each with the term's czxid)?
 * Also their nodes' paths, @len bytes each, into @paths (may be NULL). */
static int current_all(const zkr_hold *h, char *paths, size_t len) {
  zkr__qinfo i;
  int64_t mine = atomic_load(&((zkr_hold *)h)->czxid);
  if (!h->q || mine == 0)
    return 0;
  for (int k = 0; k < nq(h); k++) {
    char *path = paths ? paths + (size_t)k * len : NULL;
    if (!zkr__queue_info(qat(h, k), &i, path, path ? len : 0) ||
        i.czxid != mine)
      return 0;
  }
  return 1;
}

/* The same for the first node only. */
static int current(const zkr_hold *h, char *path, size_t len) {
  if (path && len > 0)
    path[0] = '\0';
  if (current_all(h, NULL, 0) &&
      (!path || len == 0 || zkr__queue_info(h->q, NULL, path, len)))
    return 1;
  if (path && len > 0)
    path[0] = '\0';
  return 0;
}

/* The state of a hold's queues together: LOST if one is, else SUSPECT if
 * one is, else the first's. */
static zkr__qstate worst_state(const zkr_hold *h) {
  zkr__qstate w = ZKR__Q_HELD;
  for (int k = 0; k < nq(h); k++) {
    zkr__qstate st = zkr__queue_state(qat(h, k));
    if (st == ZKR__Q_LOST)
      return st;
    if (st != ZKR__Q_HELD)
      w = st;
  }
  return w;
}

int64_t zkr_hold_token(const zkr_hold *h) {
  return h && current(h, NULL, 0) ? atomic_load(&((zkr_hold *)h)->czxid) : 0;
}

int zkr_hold_node(const zkr_hold *h, char *buf, size_t len) {
  if (!buf || len == 0)
    return ZKR_EINVAL;
  buf[0] = '\0';
  return h && current(h, buf, len) ? ZKR_OK : ZKR_ENOTHELD;
}

zkr_lock_state zkr_hold_state(const zkr_hold *h) {
  if (!h || !h->q || atomic_load(&((zkr_hold *)h)->czxid) == 0)
    return ZKR_LOCK_UNLOCKED;
  zkr__qstate st = worst_state(h); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current(h, NULL, 0))
    return ZKR_LOCK_LOST; /* this term is over without a release */
  return zkr__lock_state_of(st);
}

zkr_lost_cause zkr_hold_lost_cause(const zkr_hold *h) {
  if (!h || !h->q)
    return ZKR_LOST_NONE;
  int64_t mine = atomic_load(&((zkr_hold *)h)->czxid);
  for (int k = 0; mine && k < nq(h); k++) {
    zkr_lost_cause c = zkr__queue_lost_cause(qat(h, k), mine);
    if (c != ZKR_LOST_NONE)
      return c;
  }
  return ZKR_LOST_NONE;
}

const char *zkr_lost_cause_name(zkr_lost_cause cause) {
  switch (cause) {
  case ZKR_LOST_NONE:
    return "none";
  case ZKR_LOST_SESSION:
    return "session";
  case ZKR_LOST_DELETED:
    return "deleted";
  case ZKR_LOST_MAX_HOLD:
    return "max-hold";
  }
  return "unknown";
}

/* Did the server answer (the results are filled), or did the request go
 * with the connection or the session? */
static int answered(int zrc) {
  return zrc != ZCONNECTIONLOSS && zrc != ZOPERATIONTIMEOUT &&
         zrc != ZSESSIONEXPIRED && zrc != ZSESSIONMOVED && zrc != ZCLOSING &&
         zrc != ZINVALIDSTATE;
}

/* The outcome of a guarded transaction whose reply is @zrc and @res (@nc
 * checks of the hold's nodes, then @count): the caller's results copied
 * to @out when the server answered; a node found gone makes its queue
 * lost, and the hold with it. */
static int outcome(zkr__queue *const *qs, int nc, int64_t mine, int zrc,
                   int count, const zoo_op_result_t *res,
                   zoo_op_result_t *out) {
  if (!answered(zrc))
    return zkr__from_zk(zrc);
  memcpy(out, res + nc, (size_t)count * sizeof *res);
  if (zrc == ZOK)
    return ZKR_OK;
  for (int k = 0; k < nc; k++)
    if (res[k].err == ZNONODE) {
      zkr__queue_mark_lost(qs[k], mine);
      return ZKR_ELOCKLOST;
    }
  for (int i = nc; i < nc + count; i++)
    if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY)
      return zkr__from_zk(res[i].err);
  return zkr__from_zk(zrc);
}

/* The hold's queues, as an array (@one: room for a single one). */
static zkr__queue *const *queues(const zkr_hold *h, zkr__queue **one) {
  if (h->nset > 0)
    return h->set;
  *one = h->q;
  return one;
}

#define NODE_LEN (ZKR__PATH_MAX + 64)

int zkr_hold_guarded_multi(zkr_hold *h, int count, const zoo_op_t *ops,
                           zoo_op_result_t *results, int64_t timeout_ms) {
  if (!ops || !results || count < 1 || count > 1000)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t mine = h ? atomic_load(&h->czxid) : 0;
  if (!h || !h->q || mine == 0)
    return ZKR_ENOTHELD; /* (NULL: what a recipe gives when not holding) */
  int nc = nq(h);
  char *nodes = malloc((size_t)nc * NODE_LEN);
  zoo_op_t *all = calloc((size_t)(count + nc), sizeof *all);
  zoo_op_result_t *res = calloc((size_t)(count + nc), sizeof *res);
  int rc = ZKR_OK;
  if (!nodes || !all || !res) {
    rc = ZKR_ENOMEM;
    goto out;
  }
  zkr__qstate st = worst_state(h); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current_all(h, nodes, NODE_LEN)) {
    rc = ZKR_ELOCKLOST; /* this term is over; nothing sent */
    goto out;
  }
  if (st != ZKR__Q_HELD) {
    rc = ZKR_ENOTHELD; /* SUSPECT: nothing sent */
    goto out;
  }
  for (int k = 0; k < nc; k++)
    zoo_check_op_init(&all[k], nodes + (size_t)k * NODE_LEN, -1);
  memcpy(all + nc, ops, (size_t)count * sizeof *all);
  int zrc = 0;
  zkr__queue *one;
  rc = zkr__zk_multi(zkr__queue_session(h->q), count + nc, all, res,
                     zkr__deadline(timeout_ms), &zrc);
  if (rc == ZKR_OK || zrc != 0) /* the server answered */
    rc = outcome(queues(h, &one), nc, mine, rc == ZKR_OK ? ZOK : zrc, count,
                 res, results);
out:
  free(nodes);
  free(all);
  free(res);
  return rc;
}

/* ---- the asynchronous guarded write ---- */

struct gw {
  zkr_session *s;
  zkr__queue **qs; /* referenced: the hold's queues, to mark one lost */
  int nc;
  int64_t mine;
  int count;
  zoo_op_t *all;        /* the checks, then the caller's operations */
  zoo_op_result_t *res; /* nc + count, filled by the client */
  zoo_op_result_t *out; /* the caller's @results */
  zkr_guarded_fn fn;
  void *ud;
  int rc;
  char *nodes; /* nc paths of NODE_LEN bytes, for the checks */
};

static void gw_free(void *arg) {
  struct gw *g = arg;
  for (int k = 0; g->qs && k < g->nc; k++)
    if (g->qs[k])
      zkr__queue_unref(g->qs[k]);
  free(g->qs);
  free(g->nodes);
  free(g->all);
  free(g->res);
  free(g);
}

static void gw_call(void *arg) {
  struct gw *g = arg;
  g->fn(g->rc, g->ud);
  gw_free(g);
}

/* The client's completion thread: the reply, or the request's end with
 * the connection. */
static void gw_done(int zrc, const void *data) {
  struct gw *g = (struct gw *)data;
  zkr__tls_in_callback++;
  g->rc = outcome(g->qs, g->nc, g->mine, zrc, g->count, g->res, g->out);
  if (zkr__session_post_user(g->s, NULL, gw_call, gw_free, g) != ZKR_OK) {
    if (zkr__session_dispatching(g->s))
      gw_free(g); /* closed: dropped */
    else
      gw_call(g); /* closed: nothing else will run it */
  }
  zkr__tls_in_callback--;
}

int zkr_hold_guarded_multi_async(zkr_hold *h, int count, const zoo_op_t *ops,
                                 zoo_op_result_t *results, zkr_guarded_fn fn,
                                 void *user_data) {
  if (!ops || !results || !fn || count < 1 || count > 1000)
    return ZKR_EINVAL;
  int64_t mine = h ? atomic_load(&h->czxid) : 0;
  if (!h || !h->q || mine == 0)
    return ZKR_ENOTHELD;
  struct gw *g = calloc(1, sizeof *g);
  if (!g)
    return ZKR_ENOMEM;
  int nc = nq(h);
  g->nc = nc;
  g->qs = calloc((size_t)nc, sizeof *g->qs);
  g->nodes = malloc((size_t)nc * NODE_LEN);
  g->all = calloc((size_t)(count + nc), sizeof *g->all);
  g->res = calloc((size_t)(count + nc), sizeof *g->res);
  if (!g->qs || !g->nodes || !g->all || !g->res) {
    gw_free(g);
    return ZKR_ENOMEM;
  }
  zkr__qstate st = worst_state(h); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current_all(h, g->nodes, NODE_LEN)) {
    gw_free(g);
    return ZKR_ELOCKLOST; /* this term is over; nothing sent */
  }
  if (st != ZKR__Q_HELD) {
    gw_free(g);
    return ZKR_ENOTHELD; /* SUSPECT: nothing sent */
  }
  g->s = zkr__queue_session(h->q);
  for (int k = 0; k < nc; k++) {
    g->qs[k] = qat(h, k);
    zkr__queue_ref(g->qs[k]);
    zoo_check_op_init(&g->all[k], g->nodes + (size_t)k * NODE_LEN, -1);
  }
  g->mine = mine;
  g->count = count;
  g->out = results;
  g->fn = fn;
  g->ud = user_data;
  memcpy(g->all + nc, ops, (size_t)count * sizeof *ops);
  int rc = zkr__zk_amulti(g->s, count + nc, g->all, g->res, gw_done, g);
  if (rc != ZKR_OK)
    gw_free(g); /* nothing sent */
  return rc;
}

int zkr_hold_guarded_set(zkr_hold *h, const char *path, const char *data,
                         int datalen, int version, int64_t timeout_ms) {
  if (!path)
    return ZKR_EINVAL;
  if (zkr__path_check(path) != ZKR_OK)
    return ZKR_EBADPATH;
  if (datalen < -1 || (datalen > 0 && !data))
    return ZKR_EINVAL;
  zoo_op_t op;
  zoo_op_result_t r;
  memset(&r, 0, sizeof r);
  zoo_set_op_init(&op, path, data, datalen, version, NULL);
  return zkr_hold_guarded_multi(h, 1, &op, &r, timeout_ms);
}
