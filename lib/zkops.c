/*
 * Synchronous ZooKeeper operations with a deadline (and a multi sent
 * without waiting, for the asynchronous guarded write).
 *
 * Each operation is issued with the client's asynchronous API on the
 * session's current handle and waited for on the session's condition
 * variable, so a waiter wakes at its deadline, when the session closes, or
 * when the reply comes, whichever is first. An operation abandoned at its
 * deadline is freed by its completion, which always runs (the client calls
 * every pending completion, with an error, when a handle is closed).
 * Connection loss and operation time-outs are retried with bounded
 * exponential back-off until the deadline, never past it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zkr-private.h"

enum op_kind {
  OP_CREATE,
  OP_DELETE,
  OP_EXISTS,
  OP_GET,
  OP_SET,
  OP_CHILDREN,
  OP_MULTI
};

struct op {
  zkr_session *s;
  int refs; /* under the session mutex: waiter + completion */
  int done;
  int zrc;
  zkr__result res;
  zoo_op_result_t *mres; /* multi: results, owned by the op */
};

struct spec {
  enum op_kind kind;
  const char *path;
  const char *data;
  int datalen;
  int flags;
  int version;
  int count;           /* multi */
  const zoo_op_t *ops; /* multi */
};

void zkr__result_clear(zkr__result *r) {
  if (!r)
    return;
  free(r->path);
  free(r->data);
  deallocate_String_vector(&r->names);
  memset(r, 0, sizeof *r);
}

/* Completion side: record, wake, and free if the waiter is gone. */
static void op_finish(struct op *op, int zrc) {
  zkr_session *s = op->s;
  zkr__session_lock(s);
  op->zrc = zrc;
  op->done = 1;
  int last = --op->refs == 0;
  zkr__session_broadcast_locked(s);
  zkr__session_unlock(s);
  if (last) {
    zkr__result_clear(&op->res);
    free(op->mres);
    free(op);
  }
}

static void string_stat_cb(int rc, const char *value, const struct Stat *stat,
                           const void *data) {
  struct op *op = (struct op *)data;
  zkr__tls_in_callback++;
  if (rc == ZOK) {
    if (value)
      op->res.path = zkr__strdup(value);
    if (stat)
      op->res.stat = *stat;
  }
  op_finish(op, rc);
  zkr__tls_in_callback--;
}

static void void_cb(int rc, const void *data) {
  zkr__tls_in_callback++;
  op_finish((struct op *)data, rc);
  zkr__tls_in_callback--;
}

static void stat_cb(int rc, const struct Stat *stat, const void *data) {
  struct op *op = (struct op *)data;
  zkr__tls_in_callback++;
  if (rc == ZOK && stat)
    op->res.stat = *stat;
  op_finish(op, rc);
  zkr__tls_in_callback--;
}

static void data_cb(int rc, const char *value, int len, const struct Stat *stat,
                    const void *data) {
  struct op *op = (struct op *)data;
  zkr__tls_in_callback++;
  if (rc == ZOK) {
    if (stat)
      op->res.stat = *stat;
    op->res.datalen = value ? len : -1;
    op->res.data = malloc(value && len > 0 ? (size_t)len + 1 : 1);
    if (op->res.data) {
      if (value && len > 0)
        memcpy(op->res.data, value, (size_t)len);
      op->res.data[value && len > 0 ? len : 0] = '\0';
    } else {
      rc = ZSYSTEMERROR;
    }
  }
  op_finish(op, rc);
  zkr__tls_in_callback--;
}

static void strings_cb(int rc, const struct String_vector *strings,
                       const void *data) {
  struct op *op = (struct op *)data;
  zkr__tls_in_callback++;
  if (rc == ZOK && strings && strings->count > 0) {
    op->res.names.data = calloc((size_t)strings->count, sizeof(char *));
    if (!op->res.names.data) {
      rc = ZSYSTEMERROR;
    } else {
      op->res.names.count = strings->count;
      for (int i = 0; i < strings->count; i++) {
        op->res.names.data[i] = zkr__strdup(strings->data[i]);
        if (!op->res.names.data[i])
          rc = ZSYSTEMERROR;
      }
    }
  }
  op_finish(op, rc);
  zkr__tls_in_callback--;
}

static int start(zhandle_t *zh, const struct spec *sp, struct op *op) {
  switch (sp->kind) {
  case OP_CREATE:
    return zoo_acreate2(zh, sp->path, sp->data, sp->datalen,
                        (sp->flags & ZKR__CREATE_OPEN)
                            ? &ZOO_OPEN_ACL_UNSAFE
                            : zkr__session_acl(op->s),
                        sp->flags & ~ZKR__CREATE_OPEN, string_stat_cb, op);
  case OP_DELETE:
    return zoo_adelete(zh, sp->path, sp->version, void_cb, op);
  case OP_EXISTS:
    return zoo_aexists(zh, sp->path, 0, stat_cb, op);
  case OP_GET:
    return zoo_aget(zh, sp->path, 0, data_cb, op);
  case OP_SET:
    return zoo_aset(zh, sp->path, sp->data, sp->datalen, sp->version, stat_cb,
                    op);
  case OP_CHILDREN:
    return zoo_aget_children(zh, sp->path, 0, strings_cb, op);
  case OP_MULTI:
    return zoo_amulti(zh, sp->count, sp->ops, op->mres, void_cb, op);
  }
  return ZBADARGUMENTS;
}

/* Is it safe to send this operation again after a lost reply? */
static int may_repeat(const struct spec *sp) {
  if (sp->kind == OP_CREATE)
    return !(sp->flags & ZOO_SEQUENCE); /* a repeat may give EEXISTS */
  if (sp->kind == OP_SET)
    return sp->version >= 0; /* conditional: a repeat gives BADVERSION */
  if (sp->kind == OP_MULTI)
    return 0; /* the caller decides */
  return 1;
}

static int run(zkr_session *s, const struct spec *sp, int64_t deadline,
               zkr__result *res, zoo_op_result_t *mres, int *mzrc) {
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  for (int attempt = 0;; attempt++) {
    int rc = zkr__session_wait_usable(s, deadline);
    if (rc != ZKR_OK)
      return rc;
    zhandle_t *zh;
    rc = zkr__session_get_zh(s, &zh, NULL);
    if (rc == ZKR_ECONNLOSS)
      goto backoff; /* between sessions */
    if (rc != ZKR_OK)
      return rc;
    struct op *op = calloc(1, sizeof *op);
    if (!op) {
      zkr__session_put_zh(s);
      return ZKR_ENOMEM;
    }
    op->s = s;
    op->refs = 2;
    if (sp->kind == OP_MULTI) {
      op->mres = calloc((size_t)sp->count, sizeof *op->mres);
      if (!op->mres) {
        zkr__session_put_zh(s);
        free(op);
        return ZKR_ENOMEM;
      }
    }
    int zrc = start(zh, sp, op);
    zkr__session_put_zh(s);
    if (zrc != ZOK) {
      free(op->mres);
      free(op);
      if ((zkr__retryable(zrc) || zrc == ZINVALIDSTATE) && may_repeat(sp))
        goto backoff;
      return zkr__from_zk(zrc);
    }
    zkr__session_lock(s);
    while (!op->done && !zkr__session_closing_locked(s)) {
      if (zkr__session_wait_locked(s, deadline) == ETIMEDOUT)
        break;
    }
    if (!op->done) {
      int closing = zkr__session_closing_locked(s);
      op->refs--; /* the completion frees it */
      zkr__session_unlock(s);
      return closing ? ZKR_ECLOSED : ZKR_ETIMEDOUT;
    }
    op->refs--;
    zkr__session_unlock(s);
    zrc = op->zrc;
    if (zrc == ZOK && res) {
      *res = op->res;
      memset(&op->res, 0, sizeof op->res);
    }
    if (sp->kind == OP_MULTI && mres && !zkr__retryable(zrc)) {
      memcpy(mres, op->mres, (size_t)sp->count * sizeof *mres);
      if (mzrc)
        *mzrc = zrc;
    }
    zkr__result_clear(&op->res);
    free(op->mres);
    free(op);
    if (zrc == ZOK)
      return ZKR_OK;
    if (attempt > 0 && sp->kind == OP_DELETE && zrc == ZNONODE)
      return ZKR_OK; /* an earlier attempt deleted it; its reply was lost */
    if (!(zkr__retryable(zrc) && may_repeat(sp)))
      return zkr__from_zk(zrc);
  backoff:
    if (deadline >= 0 && zkr__now_ms() >= deadline)
      return ZKR_ETIMEDOUT;
    {
      int64_t pause = zkr__backoff_ms(attempt);
      if (deadline >= 0 && zkr__now_ms() + pause > deadline)
        pause = deadline - zkr__now_ms();
      zkr__sleep_ms(pause);
    }
  }
}

int zkr__zk_create(zkr_session *s, const char *path, const char *data,
                   int datalen, int flags, int64_t deadline_ms,
                   zkr__result *res) {
  struct spec sp = {OP_CREATE, path, data, datalen, flags, -1, 0, NULL};
  return run(s, &sp, deadline_ms, res, NULL, NULL);
}

int zkr__zk_delete(zkr_session *s, const char *path, int version,
                   int64_t deadline_ms) {
  struct spec sp = {OP_DELETE, path, NULL, 0, 0, version, 0, NULL};
  return run(s, &sp, deadline_ms, NULL, NULL, NULL);
}

int zkr__zk_exists(zkr_session *s, const char *path, int64_t deadline_ms,
                   zkr__result *res) {
  struct spec sp = {OP_EXISTS, path, NULL, 0, 0, -1, 0, NULL};
  return run(s, &sp, deadline_ms, res, NULL, NULL);
}

int zkr__zk_get(zkr_session *s, const char *path, int64_t deadline_ms,
                zkr__result *res) {
  struct spec sp = {OP_GET, path, NULL, 0, 0, -1, 0, NULL};
  return run(s, &sp, deadline_ms, res, NULL, NULL);
}

/* Pipelined: up to GET_WINDOW requests in flight, so that reading the
 * data of N contenders costs about N / GET_WINDOW round trips, not N. A
 * request that could not be sent, or whose reply was lost with the
 * connection, is read again alone with zkr__zk_get() (retry, back-off). */
#define GET_WINDOW 256
int zkr__zk_get_many(zkr_session *s, char *const *paths, int n,
                     int64_t deadline_ms, zkr__result *res, int *rcs) {
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  for (int base = 0; base < n; base += GET_WINDOW) {
    int m = n - base < GET_WINDOW ? n - base : GET_WINDOW;
    struct op *ops[GET_WINDOW];
    memset(ops, 0, sizeof ops);
    int rc = zkr__session_wait_usable(s, deadline_ms);
    if (rc != ZKR_OK)
      return rc;
    zhandle_t *zh = NULL;
    rc = zkr__session_get_zh(s, &zh, NULL);
    if (rc != ZKR_OK && rc != ZKR_ECONNLOSS)
      return rc;
    if (rc == ZKR_OK) {
      for (int i = 0; i < m; i++) {
        struct op *op = calloc(1, sizeof *op);
        if (!op)
          break; /* the rest is read one by one below */
        op->s = s;
        op->refs = 2;
        if (zoo_aget(zh, paths[base + i], 0, data_cb, op) != ZOK) {
          free(op);
          continue;
        }
        ops[i] = op;
      }
      zkr__session_put_zh(s);
    }
    int timed_out = 0, closing = 0;
    zkr__session_lock(s);
    for (int i = 0; i < m && !timed_out && !closing; i++) {
      while (ops[i] && !ops[i]->done) {
        if ((closing = zkr__session_closing_locked(s)))
          break;
        if (zkr__session_wait_locked(s, deadline_ms) == ETIMEDOUT) {
          timed_out = !ops[i]->done;
          break;
        }
      }
    }
    struct op *done[GET_WINDOW];
    for (int i = 0; i < m; i++) {
      done[i] = NULL;
      if (!ops[i])
        continue;
      if (ops[i]->done) {
        ops[i]->refs--;
        done[i] = ops[i];
      } else {
        ops[i]->refs--; /* the completion frees it */
      }
    }
    zkr__session_unlock(s);
    for (int i = 0; i < m; i++) {
      struct op *op = done[i];
      int k = base + i;
      if (op) {
        rcs[k] = op->zrc == ZOK ? ZKR_OK : zkr__from_zk(op->zrc);
        if (op->zrc == ZOK) {
          res[k] = op->res;
          memset(&op->res, 0, sizeof op->res);
        }
        int again = zkr__retryable(op->zrc);
        zkr__result_clear(&op->res);
        free(op);
        if (!again)
          continue;
      } else if (ops[i] && (timed_out || closing)) {
        rcs[k] = closing ? ZKR_ECLOSED : ZKR_ETIMEDOUT;
        continue;
      }
      /* not sent, not answered, or its reply lost: alone, with retries */
      memset(&res[k], 0, sizeof res[k]);
      rcs[k] = zkr__zk_get(s, paths[k], deadline_ms, &res[k]);
    }
  }
  return ZKR_OK;
}

int zkr__zk_set(zkr_session *s, const char *path, const char *data, int datalen,
                int version, int64_t deadline_ms) {
  struct spec sp = {OP_SET, path, data, datalen, 0, version, 0, NULL};
  return run(s, &sp, deadline_ms, NULL, NULL, NULL);
}

int zkr__zk_set_stat(zkr_session *s, const char *path, const char *data,
                     int datalen, int version, int64_t deadline_ms,
                     zkr__result *res) {
  struct spec sp = {OP_SET, path, data, datalen, 0, version, 0, NULL};
  return run(s, &sp, deadline_ms, res, NULL, NULL);
}

int zkr__zk_children(zkr_session *s, const char *path, int64_t deadline_ms,
                     zkr__result *res) {
  struct spec sp = {OP_CHILDREN, path, NULL, 0, 0, -1, 0, NULL};
  return run(s, &sp, deadline_ms, res, NULL, NULL);
}

int zkr__zk_first_contender(zkr_session *s, const char *path,
                            int64_t deadline_ms, zkr__holder *out) {
  memset(out, 0, sizeof *out);
  zkr__result kids;
  memset(&kids, 0, sizeof kids);
  int rc = zkr__zk_children(s, path, deadline_ms, &kids);
  if (rc != ZKR_OK)
    return rc;
  /* the numbered children, lowest first (a few: the first is ephemeral
   * unless someone put a persistent node in the queue) */
  int n = kids.names.count, tried = 0;
  char *done = calloc(n > 0 ? (size_t)n : 1, 1);
  rc = done ? ZKR_ENONODE : ZKR_ENOMEM;
  while (done && tried < 3) {
    int best = -1;
    int32_t best_seq = 0, seq;
    for (int i = 0; i < n; i++)
      if (!done[i] && zkr__seq_parse(kids.names.data[i], &seq) &&
          (best < 0 || zkr__seq_cmp(seq, best_seq) < 0)) {
        best = i;
        best_seq = seq;
      }
    if (best < 0)
      break;
    done[best] = 1;
    tried++;
    char *p = zkr__path_join(path, kids.names.data[best]);
    zkr__result r;
    memset(&r, 0, sizeof r);
    int grc = p ? zkr__zk_get(s, p, deadline_ms, &r) : ZKR_ENOMEM;
    free(p);
    if (grc == ZKR_OK && r.stat.ephemeralOwner != 0) {
      out->node = zkr__strdup(kids.names.data[best]);
      out->data = r.data && r.datalen >= 0 ? zkr__strdup(r.data) : NULL;
      out->session_id = r.stat.ephemeralOwner;
      zkr__result_clear(&r);
      rc = out->node ? ZKR_OK : ZKR_ENOMEM;
      break;
    }
    zkr__result_clear(&r);
    if (grc != ZKR_OK && grc != ZKR_ENONODE) {
      rc = grc;
      break;
    }
  }
  free(done);
  zkr__result_clear(&kids);
  return rc;
}

int zkr__zk_multi(zkr_session *s, int count, const zoo_op_t *ops,
                  zoo_op_result_t *results, int64_t deadline_ms, int *zrc) {
  struct spec sp = {OP_MULTI, NULL, NULL, 0, 0, -1, count, ops};
  *zrc = 0;
  return run(s, &sp, deadline_ms, NULL, results, zrc);
}

int zkr__zk_amulti(zkr_session *s, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results, void (*done)(int, const void *),
                   const void *data) {
  zkr_session_state st = zkr_session_state_get(s);
  if (st == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zhandle_t *zh;
  if (st != ZKR_STATE_CONNECTED || zkr__session_get_zh(s, &zh, NULL) != ZKR_OK)
    return ZKR_ECONNLOSS;
  int zrc = zoo_amulti(zh, count, ops, results, done, data);
  zkr__session_put_zh(s);
  if (zrc == ZOK)
    return ZKR_OK;
  /* (a handle between connections refuses; anything else is unexpected) */
  return zrc == ZINVALIDSTATE || zrc == ZCONNECTIONLOSS ? ZKR_ECONNLOSS
                                                        : ZKR_EZK;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void zkr_children_free(char **names, size_t count) {
  if (!names)
    return;
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

int zkr_session_children(zkr_session *s, const char *path, int64_t timeout_ms,
                         char ***out, size_t *count) {
  if (!s || !out || !count)
    return ZKR_EINVAL;
  int rc = zkr__path_call_check(path);
  if (rc != ZKR_OK)
    return rc;
  zkr__result kids;
  memset(&kids, 0, sizeof kids);
  rc = zkr__zk_children(s, path, zkr__deadline(timeout_ms), &kids);
  if (rc == ZKR_ENONODE) {
    *out = NULL;
    *count = 0;
  }
  if (rc != ZKR_OK)
    return rc;
  size_t n = kids.names.count > 0 ? (size_t)kids.names.count : 0;
  char **arr = NULL;
  if (n > 0) {
    arr = calloc(n, sizeof *arr);
    if (!arr) {
      zkr__result_clear(&kids);
      return ZKR_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
      arr[i] = zkr__strdup(kids.names.data[i]);
      if (!arr[i]) {
        zkr_children_free(arr, i);
        zkr__result_clear(&kids);
        return ZKR_ENOMEM;
      }
    }
    qsort(arr, n, sizeof *arr, name_cmp);
  }
  zkr__result_clear(&kids);
  *out = arr;
  *count = n;
  return ZKR_OK;
}
