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

/* Is @h's term the one its queue holds now? Also its node's path. */
static int current(const zkr_hold *h, char *path, size_t len) {
  zkr__qinfo i;
  if (path && len > 0)
    path[0] = '\0';
  int64_t mine = atomic_load(&((zkr_hold *)h)->czxid);
  if (!h->q || mine == 0 || !zkr__queue_info(h->q, &i, path, len))
    return 0;
  if (i.czxid == mine)
    return 1;
  if (path && len > 0)
    path[0] = '\0';
  return 0;
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
  zkr__qstate st = zkr__queue_state(h->q); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current(h, NULL, 0))
    return ZKR_LOCK_LOST; /* this term is over without a release */
  return zkr__lock_state_of(st);
}

zkr_lost_cause zkr_hold_lost_cause(const zkr_hold *h) {
  if (!h || !h->q)
    return ZKR_LOST_NONE;
  int64_t mine = atomic_load(&((zkr_hold *)h)->czxid);
  return mine ? zkr__queue_lost_cause(h->q, mine) : ZKR_LOST_NONE;
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

/* The outcome of a guarded transaction whose reply is @zrc and @res (of
 * @count + 1): the caller's results copied to @out when the server
 * answered; the hold marked lost when its node was gone. */
static int outcome(zkr__queue *q, int64_t mine, int zrc, int count,
                   const zoo_op_result_t *res, zoo_op_result_t *out) {
  if (!answered(zrc))
    return zkr__from_zk(zrc);
  memcpy(out, res + 1, (size_t)count * sizeof *res);
  if (zrc == ZOK)
    return ZKR_OK;
  if (res[0].err == ZNONODE) {
    zkr__queue_mark_lost(q, mine);
    return ZKR_ELOCKLOST;
  }
  for (int i = 1; i <= count; i++)
    if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY)
      return zkr__from_zk(res[i].err);
  return zkr__from_zk(zrc);
}

int zkr_hold_guarded_multi(zkr_hold *h, int count, const zoo_op_t *ops,
                           zoo_op_result_t *results, int64_t timeout_ms) {
  if (!ops || !results || count < 1 || count > 1000)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t mine = h ? atomic_load(&h->czxid) : 0;
  if (!h || !h->q || mine == 0)
    return ZKR_ENOTHELD; /* (NULL: what a recipe gives when not holding) */
  char node[ZKR__PATH_MAX + 64];
  zkr__qstate st = zkr__queue_state(h->q); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current(h, node, sizeof node))
    return ZKR_ELOCKLOST; /* this term is over; nothing sent */
  if (st != ZKR__Q_HELD)
    return ZKR_ENOTHELD; /* SUSPECT: nothing sent */
  zoo_op_t *all = calloc((size_t)count + 1, sizeof *all);
  zoo_op_result_t *res = calloc((size_t)count + 1, sizeof *res);
  if (!all || !res) {
    free(all);
    free(res);
    return ZKR_ENOMEM;
  }
  zoo_check_op_init(&all[0], node, -1);
  memcpy(all + 1, ops, (size_t)count * sizeof *all);
  int zrc = 0;
  int rc = zkr__zk_multi(zkr__queue_session(h->q), count + 1, all, res,
                         zkr__deadline(timeout_ms), &zrc);
  if (rc == ZKR_OK || zrc != 0) /* the server answered */
    rc = outcome(h->q, mine, rc == ZKR_OK ? ZOK : zrc, count, res, results);
  free(all);
  free(res);
  return rc;
}

/* ---- the asynchronous guarded write ---- */

struct gw {
  zkr_session *s;
  zkr__queue *q; /* referenced: the hold's queue, to mark it lost */
  int64_t mine;
  int count;
  zoo_op_t *all;        /* the check op, then the caller's */
  zoo_op_result_t *res; /* count + 1, filled by the client */
  zoo_op_result_t *out; /* the caller's @results */
  zkr_guarded_fn fn;
  void *ud;
  int rc;
  char node[ZKR__PATH_MAX + 64];
};

static void gw_free(void *arg) {
  struct gw *g = arg;
  zkr__queue_unref(g->q);
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
  g->rc = outcome(g->q, g->mine, zrc, g->count, g->res, g->out);
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
  zkr__qstate st = zkr__queue_state(h->q); /* (applies the session clock) */
  if (st == ZKR__Q_LOST || !current(h, g->node, sizeof g->node)) {
    free(g);
    return ZKR_ELOCKLOST; /* this term is over; nothing sent */
  }
  if (st != ZKR__Q_HELD) {
    free(g);
    return ZKR_ENOTHELD; /* SUSPECT: nothing sent */
  }
  g->s = zkr__queue_session(h->q);
  g->all = calloc((size_t)count + 1, sizeof *g->all);
  g->res = calloc((size_t)count + 1, sizeof *g->res);
  if (!g->all || !g->res) {
    free(g->all);
    free(g->res);
    free(g);
    return ZKR_ENOMEM;
  }
  g->q = h->q;
  zkr__queue_ref(g->q);
  g->mine = mine;
  g->count = count;
  g->out = results;
  g->fn = fn;
  g->ud = user_data;
  zoo_check_op_init(&g->all[0], g->node, -1);
  memcpy(g->all + 1, ops, (size_t)count * sizeof *ops);
  int rc = zkr__zk_amulti(g->s, count + 1, g->all, g->res, gw_done, g);
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
