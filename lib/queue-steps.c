/*
 * The queue engine's steps (see queue.c for the whole engine, queue-int.h
 * for what the two files share): the requests of one acquisition, from
 * the create (with the ancestors and the adoption of a create whose reply
 * was lost) through the listing and the hold decision to the watch on a
 * blocker or on the children; pauses for the connection, restarts after a
 * lost session, the loss of a held node; and the watch and check on our
 * own node while held.
 *
 * Owns: what is sent, in which order, and what each reply means. Must
 * not touch: the user's callbacks (set_lstate and finish deliver them),
 * the object's life.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "queue-int.h"

static int step_list(zkr__queue *q);
static void step_watch(zkr__queue *q);
static void step_adopt(zkr__queue *q);

void zkr__q_step_adopt(zkr__queue *q) {
  step_adopt(q);
}

/* ------------------------------------------------------------------ */
/* create */

/* Requeue: leave the queue position (our node is gone or not ours) and
 * queue again with a new create. Under mu. */
static void requeue(zkr__queue *q) {
  if (q->fixed) {
    /* a fixed node gone before it was held: the write node it was
     * anchored to may be gone too; never queue it again */
    zkr__q_finish(q, ZKR_ELOCKLOST);
    return;
  }
  zkr__q_clear_node(q);
  zkr__q_clear_preds(q);
  q->phase = Q_CREATING;
  zkr__q_step_create(q);
}

/* The completion of an ancestor's create: keep a real error, so that the
 * node's create, which then fails with ZNONODE, reports it. */
static void parent_cb(int rc, const char *value, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)value;
  if (zkr__q_callback_enter(c, Q_CREATING) && rc != ZOK && rc != ZNODEEXISTS &&
      rc != ZNONODE && !zkr__transient(rc) && q->parent_err == ZOK)
    q->parent_err = rc; /* the first: the deeper ones fail with ZNONODE */
  zkr__q_callback_exit(c);
}

static int send_parent(zhandle_t *zh, const char *path, struct qctx *c) {
  /* empty data, not null: what Curator writes (kazoo 2.8 fails on a
   * parent whose data is null); the session's ACL only from the recipe's
   * own root down: the ancestors above it are shared with other locks */
  struct ACL_vector *acl = strlen(path) < c->q->own_len
                               ? &ZOO_OPEN_ACL_UNSAFE
                               : zkr__session_acl(c->q->s);
  return zoo_acreate(zh, path, "", 0, acl, ZOO_CONTAINER, parent_cb, c);
}

/* Under mu: the parent is missing. Create it and its ancestors as
 * containers, top down, then the node again: requests of one session are
 * applied in order, so the node's create sees them. */
static void step_parents(zkr__queue *q) {
  q->parent_tries++;
  q->parent_err = ZOK;
  char *anc = zkr__strdup(q->parent);
  if (!anc) {
    zkr__q_finish(q, ZKR_ENOMEM);
    return;
  }
  for (char *p = strchr(anc + 1, '/');; p = strchr(p + 1, '/')) {
    if (p)
      *p = '\0';
    zhandle_t *zh;
    struct qctx *c = zkr__q_begin_request(q, &zh);
    if (!c)
      break;
    int rc = send_parent(zh, anc, c);
    zkr__session_put_zh(q->s);
    zkr__q_end_request(q, c, rc);
    if (rc != ZOK || !p)
      break;
    *p = '/';
  }
  free(anc);
  if (q->phase == Q_CREATING && !q->waiting_conn)
    zkr__q_step_create(q);
}

/* The node's create failed with @rc and the attempt ends: the error to
 * report. */
static int create_error(zkr__queue *q, int rc) {
  if (rc == ZNONODE && q->parent_err != ZOK)
    rc = q->parent_err; /* why the parent could not be made */
  if (rc == ZBADARGUMENTS)
    return ZKR_EBADPATH; /* a path the server refuses */
  return zkr__from_zk(rc);
}

/* Under mu: the create failed; the listing sent behind it is answered
 * while we are not LISTING, so it is ignored: forget its watch too (a
 * listing that failed set none on the server; finish() removes one that
 * did). */
static void drop_sent_list(zkr__queue *q) {
  if (q->list_sent)
    zkr__q_drop_watch(q, 0);
  q->list_sent = 0;
}

static void create_cb(int rc, const char *value, const struct Stat *stat,
                      const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  if (!zkr__q_callback_enter(c, Q_CREATING)) {
    /* an abandoned attempt: remove what it made */
    if (rc == ZOK && value)
      zkr__session_bg_delete(q->s, value, c->gen);
  } else if (rc == ZOK) {
    const char *slash = strrchr(value, '/');
    int src = zkr__q_set_node(q, slash ? slash + 1 : value);
    q->gen = c->gen;
    q->create_unknown = 0;
    q->czxid = stat ? stat->czxid : 0;
    if (src != ZKR_OK) {
      zkr__q_finish(q, src);
    } else if (q->fixed) {
      /* in the write node's session (a loss ends the attempt): held,
       * nothing before it can block it */
      zkr__q_finish(q, c->gen == q->fixed_gen ? ZKR_OK : ZKR_ELOCKLOST);
    } else {
      q->phase = Q_LISTING;
      if (!q->list_sent)
        step_list(q);
      /* else: its reply, which comes next, shows our node */
    }
    q->list_sent = 0;
  } else {
    drop_sent_list(q);
    if (rc == ZNONODE && q->parent_tries < 3 && q->parent_err == ZOK) {
      q->create_unknown = 0;
      step_parents(q);
    } else if (zkr__retryable(rc)) {
      /* The create may or may not have been applied: find it again by
       * its prefix once the connection is back. */
      q->create_unknown = 1;
      q->create_gen_valid = 1;
      q->gen = c->gen;
      zkr__q_pause_for_connection(q);
    } else if (zkr__transient(rc)) {
      q->create_unknown = 0;
      zkr__q_pause_for_connection(q); /* a new session will come (or CLOSED) */
    } else {
      q->create_unknown = 0;
      zkr__q_finish(q, create_error(q, rc));
    }
  }
  zkr__q_callback_exit(c);
}

void zkr__q_step_create(zkr__queue *q) {
  if (q->member) {
    /* a set's member is created with the set, never alone: the set
     * starts over */
    zkr__q_clear_node(q);
    zkr__q_finish(q, ZKR_ELOCKLOST);
    return;
  }
  char prefix[ZKR__QPREFIX_LEN];
  zkr__q_prefix(q, prefix);
  size_t len =
      strlen(q->parent) + 1 + strlen(prefix) + strlen(q->pol->name) + 12;
  char *path = malloc(len);
  if (!path) {
    zkr__q_finish(q, ZKR_ENOMEM);
    return;
  }
  if (q->fixed)
    snprintf(path, len, "%s/%s%s%010d", q->parent, prefix, q->pol->name,
             q->fixed_seq);
  else
    snprintf(path, len, "%s/%s%s", q->parent, prefix, q->pol->name);
  zhandle_t *zh;
  struct qctx *c = zkr__q_begin_request(q, &zh);
  if (c) {
    int rc = zoo_acreate2(zh, path, q->data, q->datalen, zkr__session_acl(q->s),
                          q->fixed ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL,
                          create_cb, c);
    zkr__session_put_zh(q->s);
    zkr__q_end_request(q, c, rc);
    /* Pipelined: the listing goes right behind the create, without
     * waiting for its reply. The server handles one session's requests in
     * order, so the listing shows our node; the client delivers the
     * replies in order, so create_cb has named our node before list_cb
     * reads the listing. If the create fails, the listing's reply comes
     * while we are not LISTING and is ignored. One round trip per
     * acquisition saved; a peer sees the same requests. */
    q->list_sent = 0;
    if (rc == ZOK && !q->fixed && q->phase == Q_CREATING && !q->waiting_conn)
      q->list_sent = step_list(q);
  }
  free(path);
}

/* ------------------------------------------------------------------ */
/* adoption of a node whose create reply was lost */

/* Under mu: look for the node again after reconnecting. */
static void adopt_later(zkr__queue *q) {
  q->create_unknown = 1;
  zkr__q_clear_node(q);
  q->phase = Q_CREATING;
}

static void adopt_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  if (zkr__q_callback_enter(c, Q_LISTING) && q->adopting) {
    q->adopting = 0;
    int64_t sid = 0;
    zkr__session_generation(q->s, &sid);
    if (rc == ZOK && stat && stat->ephemeralOwner == sid && c->gen == q->gen) {
      q->czxid = stat->czxid;
      step_list(q); /* now find our place */
    } else if (rc == ZOK || rc == ZNONODE) {
      /* not ours after all (another session's): leave it, queue anew */
      zkr__log(ZKR_LOG_WARN,
               "%s: found by prefix but not owned by this "
               "session; not adopted",
               q->node_path);
      requeue(q);
    } else if (zkr__transient(rc)) {
      adopt_later(q);
      zkr__q_pause_for_connection(q);
    } else {
      zkr__q_finish(q, zkr__from_zk(rc));
    }
  }
  zkr__q_callback_exit(c);
}

/* Under mu: read the stat of a node found by our prefix. */
static void step_adopt(zkr__queue *q) {
  zhandle_t *zh;
  struct qctx *c = zkr__q_begin_request(q, &zh);
  if (!c) {
    /* paused (disconnected): found again by prefix once connected, as
     * after a lost create reply, never listed without its owner read */
    if (q->waiting_conn)
      adopt_later(q);
    return;
  }
  q->adopting = 1;
  int rc = zoo_aexists(zh, q->node_path, 0, adopt_cb, c);
  zkr__session_put_zh(q->s);
  if (rc != ZOK) {
    q->adopting = 0;
    adopt_later(q);
  }
  zkr__q_end_request(q, c, rc);
}

/* Under mu: recovering a create whose reply was lost: is our node among
 * @names? */
static void find_lost_create(zkr__queue *q, const struct String_vector *names) {
  q->create_unknown = 0;
  const char *found = NULL;
  char prefix[ZKR__QPREFIX_LEN];
  zkr__q_prefix(q, prefix);
  size_t plen = strlen(prefix);
  for (int i = 0; names && i < names->count; i++)
    if (strncmp(names->data[i], prefix, plen) == 0)
      found = names->data[i];
  if (!found) {
    q->phase = Q_CREATING;
    zkr__q_step_create(q); /* it was never applied */
    return;
  }
  /* The prefix is this attempt's own random id; check that the node's
   * owner is our session and read its czxid (the fencing token). */
  int rc = zkr__q_set_node(q, found);
  if (rc != ZKR_OK)
    zkr__q_finish(q, rc);
  else
    step_adopt(q);
}

/* ------------------------------------------------------------------ */
/* list and decide */

/* Does the policy let us hold with @blockers before us? */
static void hold_now(zkr__queue *q);

static int holds(const zkr__queue *q, int blockers) {
  return q->pol->holds ? q->pol->holds(blockers, q->pol->ctx) != 0
                       : blockers == 0;
}

static void waiting(zkr__queue *q);

/* Under mu: the children are listed; find our place. */
static void evaluate(zkr__queue *q, const struct String_vector *names) {
  if (q->create_unknown) {
    find_lost_create(q, names);
    return;
  }
  int have_self = 0;
  zkr__q_clear_preds(q);
  int n = names ? names->count : 0;
  const char *near1 = NULL, *near2 = NULL; /* nearest, second nearest */
  int32_t seq1 = 0, seq2 = 0;
  for (int i = 0; i < n; i++) {
    const char *name = names->data[i];
    int32_t seq;
    if (strcmp(name, q->node) == 0) {
      have_self = 1;
      continue;
    }
    if (q->pol->foreign && q->pol->foreign(name, q->pol->ctx)) {
      zkr__q_finish(q, ZKR_EFOREIGN);
      return;
    }
    if (q->pol->count_all) {
      q->npreds++; /* every other child counts (no nearest to watch) */
      continue;
    }
    if (!zkr__seq_parse(name, &seq) || zkr__seq_cmp(seq, q->seq) >= 0)
      continue;
    if (q->pol->blocks && !q->pol->blocks(name, q->pol->ctx))
      continue;
    q->npreds++;
    if (!near1 || zkr__seq_cmp(seq, seq1) > 0) {
      near2 = near1;
      seq2 = seq1;
      near1 = name;
      seq1 = seq;
    } else if (!near2 || zkr__seq_cmp(seq, seq2) > 0) {
      near2 = name;
      seq2 = seq;
    }
  }
  if (!have_self) {
    zkr__q_drop_watch(q, 1);
    requeue(q); /* our node is gone (deleted by someone) */
    return;
  }
  if ((near1 && !(q->pred1 = zkr__strdup(near1))) ||
      (near2 && !(q->pred2 = zkr__strdup(near2)))) {
    zkr__q_finish(q, ZKR_ENOMEM);
    return;
  }
  if (holds(q, q->npreds)) {
    hold_now(q);
    return;
  }
  if (q->try_once) {
    zkr__q_finish(q, ZKR_EWOULDBLOCK);
    return;
  }
  waiting(q);
}

static void list_cb(int rc, const struct String_vector *names,
                    const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  /* Only the last listing sent counts: an earlier one still in flight
   * (sent before a pause, or before an adoption began) shows a queue that
   * may have changed, and must not decide anything. */
  if (zkr__q_callback_enter(c, Q_LISTING) && c->list_seq == q->list_seq &&
      (c->watch_id == q->watch_id || q->relist_after)) {
    if (rc == ZOK && q->relist_after) {
      zkr__q_relist(q); /* the queue changed since this listing was read */
    } else if (rc == ZOK) {
      evaluate(q, names);
    } else if (rc == ZNONODE) {
      zkr__q_drop_watch(q, 1);
      requeue(q); /* parent gone: so is our node */
    } else if (zkr__transient(rc)) {
      zkr__q_drop_watch(q, 0);
      zkr__q_pause_for_connection(q);
    } else {
      zkr__q_finish(q, zkr__from_zk(rc));
    }
  }
  zkr__q_callback_exit(c);
}

static int send_list(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aget_children(zh, path, 0, list_cb, c);
}

static int send_list_watch(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aget_children(zh, path, 1, list_cb, c);
}

static void children_watch_cb(zkr_session *s, int type, const char *path,
                              void *ctx);

/* Under mu: list the children (with CHILDREN, setting the children watch
 * a waiter waits on, unless it only tries once). Returns 1 if the request
 * was sent. */
static int step_list(zkr__queue *q) {
  zhandle_t *zh;
  struct qctx *c = zkr__q_begin_request(q, &zh);
  if (!c)
    return 0;
  c->list_seq = ++q->list_seq;
  if (q->pol->wait == ZKR__QWAIT_CHILDREN && !q->try_once &&
      !q->create_unknown && !q->adopting) {
    zkr__q_drop_watch(q, 0);
    return zkr__q_watch_request(q, zh, ZKR__WATCH_CHILD, zkr__strdup(q->parent),
                                children_watch_cb, send_list_watch, c);
  }
  int rc = send_list(zh, q->parent, c);
  zkr__session_put_zh(q->s);
  zkr__q_end_request(q, c, rc);
  return rc == ZOK;
}

/* Under mu: list the children again (one read) and carry on from what is
 * there now. */
void zkr__q_relist(zkr__queue *q) {
  zkr__q_drop_watch(q, 0);
  q->relist_after = 0;
  zkr__q_clear_preds(q);
  q->phase = Q_LISTING;
  step_list(q);
}

/* Under mu: not held after a listing: wait as the policy says. */
static void waiting(zkr__queue *q) {
  if (!q->waited && zkr__q_tell_waiting(q) != ZKR_OK) {
    zkr__q_finish(q, ZKR_ENOMEM);
    return;
  }
  q->phase = Q_WATCHING;
  q->waited = 1; /* (an acquisition handed on, if it ends held) */
  if (q->pol->wait == ZKR__QWAIT_CHILDREN)
    return; /* the listing set the children watch */
  step_watch(q);
}

/* A change of the children (CHILDREN): list again. */
static void children_watch_cb(zkr_session *s, int type, const char *path,
                              void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)type;
  (void)path;
  zkr__q_callback_enter(c, Q_WATCHING);
  if (c->attempt == q->attempt && c->watch_id == q->watch_id &&
      (q->phase == Q_WATCHING || q->phase == Q_LISTING)) {
    zkr__q_watch_consumed(q);
    if (q->phase == Q_WATCHING)
      zkr__q_relist(q);
    else
      q->relist_after = 1; /* the listing in flight is stale */
  }
  zkr__q_callback_exit(c);
}

/* ------------------------------------------------------------------ */
/* NEAREST: watch the nearest blocker */

/* Under mu: no blocker of the last listing is left. Held, without a
 * request; with watch_held, after the read of our node that sets its watch
 * and proves it is still there and ours (hold_now: a watch event does not
 * prove it, a third party may have deleted it); and when a node that
 * would block us may join below us (q->verify, from the policy's late),
 * after one more listing that shows that none appeared after the last
 * one (a downgrade's read node). */
static void none_left(zkr__queue *q) {
  if (q->verify)
    zkr__q_relist(q);
  else
    hold_now(q);
}

static void held_watch_cb(zkr_session *s, int type, const char *path,
                          void *ctx);

/* ------------------------------------------------------------------ */
/* revocation requests (Curator's protocol: a holder's node data set to
 * "__REVOKE__", by Revoker.attemptRevoke() or zkr_revoke()) */

/* Under mu: our held node's data, read by the getData that set its watch:
 * a revocation request is told to the recipe once per term. */
static void check_revoke(zkr__queue *q, const char *value, int len,
                         const struct Stat *stat) {
  if (!q->revoke_fn || q->phase != Q_HELD || !value ||
      len != (int)sizeof ZKR__REVOKE_DATA - 1 ||
      memcmp(value, ZKR__REVOKE_DATA, sizeof ZKR__REVOKE_DATA - 1) != 0 ||
      q->revoke_czxid == q->czxid)
    return;
  q->revoke_czxid = q->czxid;
  q->revoke_mtime = stat ? stat->mtime : 0;
  if (!q->quiet) /* (a quiet queue's owner counts it) */
    zkr__stats_revocation(q->s, &q->st);
  zkr__q_post_revoke(q);
}

/* watch_held: the exists (getData, when revocable) on our node before
 * holding, which sets the held node's watch (kept once held, dropped
 * otherwise) and checks that its ephemeral owner is our current session. */
static void owner_settle(struct qctx *c, int rc, const struct Stat *stat,
                         const char *value, int len) {
  zkr__queue *q = c->q;
  if (zkr__q_callback_enter(c, Q_LISTING) && c->list_seq == q->list_seq) {
    int64_t sid = 0;
    zkr__session_generation(q->s, &sid);
    if (rc == ZOK && stat && stat->ephemeralOwner == sid && c->gen == q->gen) {
      q->czxid = stat->czxid;
      zkr__q_finish(q, ZKR_OK); /* (its watch, if any, is the held one) */
      check_revoke(q, value, len, stat);
    } else if (rc == ZOK || rc == ZNONODE) {
      zkr__log(ZKR_LOG_WARN,
               "%s: not owned by this session (or gone) when it would "
               "hold; queued again with a new node",
               q->node_path);
      /* the node's deletion fires a watch on it, which nobody wants;
       * exists() on a missing node left one for its creation */
      zkr__q_drop_watch(q, rc == ZNONODE && value == NULL && len < 0);
      if (rc == ZOK)
        zkr__session_bg_delete(q->s, q->node_path, c->gen);
      requeue(q);
    } else if (zkr__transient(rc)) {
      zkr__q_drop_watch(q, 0);
      zkr__q_pause_for_connection(q); /* resume lists, then checks again */
    } else {
      zkr__q_drop_watch(q, 0);
      zkr__q_finish(q, zkr__from_zk(rc));
    }
  }
  zkr__q_callback_exit(c);
}

static void owner_cb(int rc, const struct Stat *stat, const void *data) {
  owner_settle((struct qctx *)data, rc, stat, NULL, -1);
}

static void owner_data_cb(int rc, const char *value, int len,
                          const struct Stat *stat, const void *data) {
  owner_settle((struct qctx *)data, rc, stat, value ? value : "", len);
}

static int send_owner_exists(zhandle_t *zh, const char *path, struct qctx *c) {
  if (c->q->revoke_fn)
    return zoo_aget(zh, path, 1, owner_data_cb, c);
  return zoo_aexists(zh, path, 1, owner_cb, c);
}

/* Under mu: no blocker is left: hold; with watch_held, first read our node
 * (one exists that sets its watch and checks its owner). Without it the
 * node is ours by the way it was found: its create's reply came in the
 * current ZooKeeper session, or an adoption read its owner (adopt_cb). */
static void hold_now(zkr__queue *q) {
  if (!q->watch_held) {
    zkr__q_finish(q, ZKR_OK);
    return;
  }
  zhandle_t *zh;
  /* a children watch (a lease) goes from the server too; an exists watch
   * was set by an earlier check, not answered */
  zkr__q_drop_watch(q, q->watch_kind == ZKR__WATCH_CHILD);
  q->phase = Q_LISTING; /* (resume lists again and comes back here) */
  struct qctx *c = zkr__q_begin_request(q, &zh);
  if (!c)
    return;
  c->list_seq = ++q->list_seq; /* a listing still in flight is stale */
  zkr__q_watch_request(q, zh, ZKR__WATCH_DATA, zkr__strdup(q->node_path),
                       held_watch_cb, send_owner_exists, c);
}

/* Under mu: the nearest blocker is gone. None left of the last listing:
 * held. One whose name we kept: watch it. Otherwise list again. */
static void pred_gone(zkr__queue *q) {
  zkr__q_drop_watch(q, 0);
  if (q->npreds > 0)
    q->npreds--;
  free(q->pred1);
  q->pred1 = q->pred2;
  q->pred2 = NULL;
  if (q->npreds == 0)
    none_left(q);
  else if (q->npreds == 1 && q->pred1)
    step_watch(q); /* the one we kept the name of */
  else
    zkr__q_relist(q); /* several may remain */
}

static void watch_cb(zkr_session *s, int type, const char *path, void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)path;
  if (zkr__q_callback_enter(c, Q_WATCHING) && c->watch_id == q->watch_id) {
    zkr__q_watch_consumed(q); /* the registry already unlinked it */
    if (type == ZOO_DELETED_EVENT)
      pred_gone(q);
    else
      step_watch(q); /* changed, or anything else: look again */
  }
  zkr__q_callback_exit(c);
}

/* The nearest blocker is read with getData, not exists: on a node that is
 * gone, exists() would leave a watch for its creation on the server (a
 * sequential name is never created again), which costs a removeWatches;
 * getData sets none. In a queue that drains, the blocker a woken waiter
 * looks at next has often left while it slept. */
static void pred_read_cb(int rc, const char *value, int value_len,
                         const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)value;
  (void)value_len;
  (void)stat;
  if (zkr__q_callback_enter(c, Q_WATCHING) && c->watch_id == q->watch_id &&
      q->watch_id != 0) {
    if (rc == ZOK) {
      /* the watch is set: wait for it */
    } else if (rc == ZNONODE) {
      /* Gone before we looked (no watch was set). Whether it held is
       * unknown, so only this one is dropped. */
      zkr__q_drop_watch(q, 0);
      pred_gone(q);
    } else if (zkr__transient(rc)) {
      zkr__q_pause_for_connection(q);
    } else {
      zkr__q_finish(q, zkr__from_zk(rc));
    }
  }
  zkr__q_callback_exit(c);
}

static int send_pred_read(zhandle_t *zh, const char *path, struct qctx *c) {
  return zoo_aget(zh, path, 1, pred_read_cb, c);
}

/* Under mu: watch the nearest remaining blocker (one getData+watch). */
static void step_watch(zkr__queue *q) {
  zkr__q_drop_watch(q, 0);
  if (!q->pred1) {
    if (q->npreds == 0)
      none_left(q);
    else
      zkr__q_relist(q); /* a name not kept (cannot happen) */
    return;
  }
  zhandle_t *zh;
  struct qctx *c = zkr__q_begin_request(q, &zh);
  if (c)
    zkr__q_watch_request(q, zh, ZKR__WATCH_DATA,
                         zkr__path_join(q->parent, q->pred1), watch_cb,
                         send_pred_read, c);
}

/* ------------------------------------------------------------------ */
/* pauses, losses */

/* Under mu: continue a paused attempt now that the session is connected. */
void zkr__q_resume(zkr__queue *q) {
  q->waiting_conn = 0;
  switch (q->phase) {
  case Q_CREATING:
    if (q->create_unknown) {
      q->phase = Q_LISTING;
      step_list(q); /* evaluate() looks for the prefix first */
    } else {
      zkr__q_step_create(q);
    }
    break;
  case Q_LISTING:
    step_list(q);
    break;
  case Q_WATCHING:
    if (q->pol->wait == ZKR__QWAIT_CHILDREN)
      zkr__q_relist(q);
    else
      step_watch(q);
    break;
  default:
    break;
  }
}

/* Under mu: start over with a new node in the next ZooKeeper session (or
 * this one), the deadline unchanged: our node, if any, went with the old
 * session or is gone. */
void zkr__q_restart(zkr__queue *q) {
  zkr__q_drop_watch(q, 0);
  zkr__q_clear_node(q);
  if (q->member) {
    zkr__q_finish(q, ZKR_ELOCKLOST); /* the set starts over */
    return;
  }
  zkr__q_clear_preds(q);
  q->create_unknown = 0;
  q->list_sent = 0;
  q->parent_tries = 0;
  q->phase = Q_CREATING;
  zkr__q_next_attempt(q);
  zkr__q_new_uuid(q);
  if (zkr_session_state_get(q->s) == ZKR_STATE_CONNECTED)
    zkr__q_step_create(q);
  else
    zkr__q_pause_for_connection(q);
}

/* Under mu: a held node is lost (session gone, or the node deleted): LOST;
 * then idle (release() reports ZKR_ELOCKLOST once), or with
 * ZKR__QLOSS_REQUEUE queued again at the back without a deadline. */
void zkr__q_lose(zkr__queue *q, int cause) {
  q->lost_czxid = q->czxid;
  q->lost_cause = (unsigned char)cause;
  zkr__q_cancel_timer(q); /* the maximum hold's */
  zkr__q_hold_end(q, cause);
  zkr__q_drop_watch(q, 0);
  zkr__q_clear_node(q);
  q->phase = Q_IDLE;
  zkr__q_next_attempt(q);
  zkr__q_set_lstate(q, ZKR__Q_LOST);
  if (q->pol->on_loss == ZKR__QLOSS_REQUEUE && !q->freed) {
    zkr_session_state st = zkr_session_state_get(q->s);
    if (st == ZKR_STATE_CLOSED ||
        (st == ZKR_STATE_LOST && !zkr__session_renews(q->s)))
      return; /* no session to queue in: stays LOST */
    q->acq++;
    q->try_once = 0;
    q->finished = 0;
    q->deadline = -1;
    q->lstate = ZKR__Q_ACQUIRING;
    q->waited = 0;
    zkr__q_wait_begin(q);
    zkr__q_restart(q);
  }
}

/* ------------------------------------------------------------------ */
/* watching our own node while held (opt-in: one request per acquisition) */

static void held_watch_cb(zkr_session *s, int type, const char *path,
                          void *ctx) {
  struct qctx *c = ctx;
  zkr__queue *q = c->q;
  (void)s;
  (void)path;
  if (zkr__q_callback_enter(c, Q_HELD) && c->watch_id == q->watch_id) {
    zkr__q_watch_consumed(q);
    if (type == ZOO_DELETED_EVENT)
      zkr__q_lose(q, ZKR_LOST_DELETED); /* deleted by another client */
    else
      zkr__q_arm_held_watch(q); /* changed (e.g. a revocation request): again */
  }
  zkr__q_callback_exit(c);
}

/* The reply of the request that set the held node's watch: exists, or
 * getData when revocable (@len is -1 for an exists). */
static void held_settle(struct qctx *c, int rc, const struct Stat *stat,
                        const char *value, int len) {
  zkr__queue *q = c->q;
  if (zkr__q_callback_enter(c, Q_HELD) && c->watch_id == q->watch_id &&
      q->watch_id != 0) {
    if (rc == ZNONODE) {
      /* exists() left a watch for its creation; getData() none */
      zkr__q_drop_watch(q, len < 0);
      zkr__q_lose(q, ZKR_LOST_DELETED);
    } else if (rc != ZOK) {
      /* not set: set again once the connection is back (verify_cb) */
      zkr__q_drop_watch(q, 0);
    } else {
      check_revoke(q, value, len, stat);
    }
  }
  zkr__q_callback_exit(c);
}

static void held_exists_cb(int rc, const struct Stat *stat, const void *data) {
  held_settle((struct qctx *)data, rc, stat, NULL, -1);
}

static void held_data_cb(int rc, const char *value, int len,
                         const struct Stat *stat, const void *data) {
  held_settle((struct qctx *)data, rc, stat, value ? value : "",
              len < 0 ? 0 : len);
}

static int send_held_exists(zhandle_t *zh, const char *path, struct qctx *c) {
  if (c->q->revoke_fn)
    return zoo_aget(zh, path, 1, held_data_cb, c);
  return zoo_aexists(zh, path, 1, held_exists_cb, c);
}

/* Under mu: with watch_held, set an exists watch on our held node. Not
 * set (disconnected, out of memory): a deletion is noticed as without the
 * option, and verify_cb tries again after a reconnection. */
void zkr__q_arm_held_watch(zkr__queue *q) {
  if (!q->watch_held || q->phase != Q_HELD || q->watch_id || !q->node_path)
    return;
  uint64_t gen;
  zhandle_t *zh;
  if (zkr__session_get_zh(q->s, &zh, &gen) != ZKR_OK)
    return;
  struct qctx *ec = zkr__q_ctx_new(q);
  int zrc = ZOK;
  if (!ec ||
      zkr__q_set_watch(q, zh, ZKR__WATCH_DATA, zkr__strdup(q->node_path),
                       held_watch_cb, send_held_exists, ec, &zrc) != ZKR_OK ||
      zrc != ZOK) {
    if (!ec)
      zkr__session_put_zh(q->s);
    zkr__q_ctx_forget(q, ec);
  }
}

/* ------------------------------------------------------------------ */
/* session state */

static void verify_cb(int rc, const struct Stat *stat, const void *data) {
  struct qctx *c = (struct qctx *)data;
  zkr__queue *q = c->q;
  (void)stat;
  if (zkr__q_callback_enter(c, Q_HELD) && q->lstate == ZKR__Q_SUSPECT) {
    if (rc == ZOK) {
      zkr__q_set_lstate(q, ZKR__Q_HELD);
      zkr__q_arm_held_watch(
          q); /* if its request was lost with the connection */
    } else if (rc == ZNONODE) {
      zkr__q_lose(q, ZKR_LOST_DELETED); /* deleted under us */
    }
    /* other errors: stays SUSPECT until the next event */
  }
  zkr__q_callback_exit(c);
}

/* Under mu: reconnected to the same session while holding: the node
 * should still be there; make sure. */
void zkr__q_verify_held(zkr__queue *q) {
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(q->s, &zh, &gen) != ZKR_OK)
    return; /* the next state change decides */
  struct qctx *c = zkr__q_ctx_new(q);
  int rc = c ? zoo_aexists(zh, q->node_path, 0, verify_cb, c) : ZSYSTEMERROR;
  zkr__session_put_zh(q->s);
  if (rc != ZOK)
    zkr__q_ctx_forget(q, c);
}

/* ------------------------------------------------------------------ */
/* sending requests */

/* Under mu: a step could not be sent or its reply was lost; continue when
 * the session is connected again (state hook). */
void zkr__q_pause_for_connection(zkr__queue *q) {
  q->waiting_conn = 1;
}

/* Under mu: the handle and a context for one request; NULL if no request
 * may go now (the attempt pauses or ends). Release the handle with
 * zkr__session_put_zh() right after sending. */
struct qctx *zkr__q_begin_request(zkr__queue *q, zhandle_t **zh) {
  uint64_t gen;
  int rc = zkr__session_get_zh(q->s, zh, &gen);
  if (rc != ZKR_OK) {
    if (rc == ZKR_ECONNLOSS)
      zkr__q_pause_for_connection(q);
    else
      zkr__q_finish(q, rc);
    return NULL;
  }
  struct qctx *c = zkr__q_ctx_new(q);
  if (!c) {
    zkr__session_put_zh(q->s);
    zkr__q_finish(q, ZKR_ENOMEM);
    return NULL;
  }
  c->gen = gen;
  return c;
}

/* Under mu: after sending; a request that could not be sent pauses the
 * attempt (disconnected) or ends it. */
void zkr__q_end_request(zkr__queue *q, struct qctx *c, int rc) {
  if (rc == ZOK)
    return;
  zkr__q_ctx_forget(q, c);
  if (zkr__transient(rc))
    zkr__q_pause_for_connection(q);
  else
    zkr__q_finish(q, zkr__from_zk(rc));
}

/* Under mu: register our one watch, of @kind on @path (taken over), for
 * @wfn; then @send sends the request that sets it on the server, with the
 * completion context @ec. Puts @zh back. Returns ZKR_ENOMEM (nothing
 * registered, nothing sent) or ZKR_OK with *zrc the send's ZooKeeper code
 * (not ZOK: nothing stays registered). */

int zkr__q_set_watch(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                     char *path, zkr__watch_fn wfn, send_fn send,
                     struct qctx *ec, int *zrc) {
  struct qctx *wc = path ? zkr__q_ctx_new(q) : NULL;
  uint64_t wid = 0;
  if (!wc || zkr__watch_add(q->s, path, kind, wfn, wc, &wid) != ZKR_OK) {
    zkr__session_put_zh(q->s);
    zkr__q_ctx_forget(q, wc);
    free(path);
    return ZKR_ENOMEM;
  }
  wc->watch_id = wid;
  ec->watch_id = wid;
  q->watch_id = wid;
  q->watch_kind = kind;
  q->watch_ctx = wc;
  q->watch_path = path;
  *zrc = send(zh, path, ec);
  zkr__session_put_zh(q->s);
  if (*zrc != ZOK)
    zkr__q_drop_watch(q, 0);
  return ZKR_OK;
}

/* Under mu: set_watch() with its outcome handled like end_request().
 * Returns 1 if the request was sent. */
int zkr__q_watch_request(zkr__queue *q, zhandle_t *zh, zkr__watch_kind kind,
                         char *path, zkr__watch_fn wfn, send_fn send,
                         struct qctx *ec) {
  int zrc = ZOK;
  if (zkr__q_set_watch(q, zh, kind, path, wfn, send, ec, &zrc) != ZKR_OK) {
    zkr__q_ctx_forget(q, ec);
    zkr__q_finish(q, ZKR_ENOMEM);
    return 0;
  }
  zkr__q_end_request(q, ec, zrc);
  return zrc == ZOK;
}
