/* The mutex: the queue engine with Curator's InterProcessMutex naming and
 * "wait for the nearest node before mine". */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

struct zkr_mutex_opts {
  int reentrant;
  int watch_node;
  char *id;
  zkr_lock_state_fn state_fn;
  void *state_ud;
};

struct zkr_mutex {
  zkr__queue *q;
  int reentrant;
  int count;       /* hold count (reentrant) */
  pthread_t owner; /* the acquiring thread */
  zkr_lock_state_fn state_fn;
  void *state_ud;
  struct async_ctx {
    zkr_mutex *m;
    zkr_acquire_fn fn;
    void *ud;
  } actx;
};

/* Every earlier contender blocks a mutex waiter. */
static int mutex_blocks(const char *name, void *ctx) {
  (void)name;
  (void)ctx;
  return 1;
}

static const zkr__qpolicy mutex_policy = {
    .name = "lock-",
    .blocks = mutex_blocks,
    .ctx = NULL,
};

int zkr_mutex_opts_new(zkr_mutex_opts **out) {
  if (!out)
    return ZKR_EINVAL;
  zkr_mutex_opts *o = calloc(1, sizeof *o);
  if (!o)
    return ZKR_ENOMEM;
  *out = o;
  return ZKR_OK;
}

void zkr_mutex_opts_free(zkr_mutex_opts *opts) {
  if (!opts)
    return;
  free(opts->id);
  free(opts);
}

int zkr_mutex_opts_set_watch_node(zkr_mutex_opts *opts, int on) {
  if (!opts)
    return ZKR_EINVAL;
  opts->watch_node = on != 0;
  return ZKR_OK;
}

int zkr_mutex_opts_set_reentrant(zkr_mutex_opts *opts, int reentrant) {
  if (!opts)
    return ZKR_EINVAL;
  opts->reentrant = reentrant != 0;
  return ZKR_OK;
}

int zkr_mutex_opts_set_id(zkr_mutex_opts *opts, const char *id) {
  if (!opts || !id || !id[0] || strlen(id) > 256)
    return ZKR_EINVAL;
  for (const char *p = id; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return ZKR_EINVAL;
  char *copy = zkr__strdup(id);
  if (!copy)
    return ZKR_ENOMEM;
  free(opts->id);
  opts->id = copy;
  return ZKR_OK;
}

int zkr_mutex_opts_set_state_fn(zkr_mutex_opts *opts, zkr_lock_state_fn fn,
                                void *user_data) {
  if (!opts)
    return ZKR_EINVAL;
  opts->state_fn = fn;
  opts->state_ud = user_data;
  return ZKR_OK;
}

const char *zkr_lock_state_name(zkr_lock_state state) {
  switch (state) {
  case ZKR_LOCK_UNLOCKED:
    return "UNLOCKED";
  case ZKR_LOCK_ACQUIRING:
    return "ACQUIRING";
  case ZKR_LOCK_HELD:
    return "HELD";
  case ZKR_LOCK_SUSPECT:
    return "SUSPECT";
  case ZKR_LOCK_LOST:
    return "LOST";
  }
  return "UNKNOWN";
}

int zkr__lock_path_check(const char *path) {
  int rc = zkr__path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (strcmp(path, "/") == 0)
    return ZKR_EBADPATH;
  if (strcmp(path, "/zookeeper") == 0 || strncmp(path, "/zookeeper/", 11) == 0)
    return ZKR_EBADPATH; /* reserved by the server */
  return ZKR_OK;
}

/* "host=H pid=P id=I": what zkr-ls and participants show. */
int zkr__contender_data(const char *id, char *buf, size_t len) {
  char host[256];
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  int n = snprintf(buf, len, "host=%s pid=%ld%s%s", host, (long)getpid(),
                   id ? " id=" : "", id ? id : "");
  return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}

static void on_state(zkr__queue *q, zkr__qstate st, void *ud) {
  zkr_mutex *m = ud;
  (void)q;
  if (m->state_fn)
    m->state_fn(m, (zkr_lock_state)st, m->state_ud);
}

int zkr_mutex_new(zkr_mutex **out, zkr_session *s, const char *path,
                  const zkr_mutex_opts *opts) {
  if (!out || !s)
    return ZKR_EINVAL;
  int rc = zkr__lock_path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_mutex *m = calloc(1, sizeof *m);
  if (!m)
    return ZKR_ENOMEM;
  char data[600];
  int dlen = zkr__contender_data(opts ? opts->id : NULL, data, sizeof data);
  rc = zkr__queue_new(&m->q, s, path, &mutex_policy, data, dlen);
  if (rc != ZKR_OK) {
    free(m);
    return rc;
  }
  if (opts) {
    m->reentrant = opts->reentrant;
    zkr__queue_set_watch_held(m->q, opts->watch_node);
    m->state_fn = opts->state_fn;
    m->state_ud = opts->state_ud;
  }
  zkr__queue_set_state_fn(m->q, on_state, m);
  *out = m;
  return ZKR_OK;
}

void zkr_mutex_free(zkr_mutex *m) {
  if (!m)
    return;
  zkr__queue_free(m->q);
  free(m);
}

/* Is it held (HELD or SUSPECT) by this object? */
static int held(zkr_mutex *m) {
  zkr__qstate st = zkr__queue_state(m->q);
  return st == ZKR__Q_HELD || st == ZKR__Q_SUSPECT;
}

/* Reentry: returns 1 if the lock is held by this object; then *rc is
 * ZKR_OK (the owner thread reentered a reentrant mutex: count grown) or
 * ZKR_EBUSY. */
static int reenter(zkr_mutex *m, int *rc) {
  if (!held(m))
    return 0;
  if (m->reentrant && pthread_equal(m->owner, pthread_self()))
    *rc = zkr__queue_reenter(m->q) == ZKR_OK ? ZKR_OK : ZKR_EBUSY;
  else
    *rc = ZKR_EBUSY;
  return 1;
}

int zkr_mutex_acquire(zkr_mutex *m, int64_t timeout_ms) {
  if (!m)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int rc;
  if (reenter(m, &rc))
    return rc;
  m->owner = pthread_self();
  rc = zkr__queue_start(m->q, timeout_ms, NULL, NULL);
  if (rc != ZKR_OK)
    return rc;
  return zkr__queue_wait(m->q);
}

static void async_done(zkr__queue *q, int rc, void *ud) {
  struct async_ctx *a = ud;
  (void)q;
  a->fn(a->m, rc, a->ud);
}

int zkr_mutex_acquire_async(zkr_mutex *m, int64_t timeout_ms, zkr_acquire_fn fn,
                            void *user_data) {
  if (!m || !fn)
    return ZKR_EINVAL;
  if (zkr__queue_state(m->q) == ZKR__Q_ACQUIRING)
    return ZKR_EBUSY; /* and the pending callback stays as it was */
  /* The context lives in the mutex: one acquisition at a time. */
  int rc;
  if (held(m) && !(m->reentrant && pthread_equal(m->owner, pthread_self())))
    return ZKR_EBUSY;
  m->actx.m = m;
  m->actx.fn = fn;
  m->actx.ud = user_data;
  if (reenter(m, &rc)) {
    if (rc != ZKR_OK)
      return rc;
    rc = zkr__queue_post_result(m->q, async_done, &m->actx, ZKR_OK);
    if (rc != ZKR_OK)
      zkr__queue_release(m->q); /* undo the reentry */
    return rc;
  }
  m->owner = pthread_self();
  return zkr__queue_start(m->q, timeout_ms, async_done, &m->actx);
}

int zkr_mutex_cancel(zkr_mutex *m) {
  if (!m)
    return ZKR_EINVAL;
  return zkr__queue_cancel(m->q);
}

int zkr_mutex_release(zkr_mutex *m) {
  if (!m)
    return ZKR_EINVAL;
  if (held(m) && m->reentrant && !pthread_equal(m->owner, pthread_self()) &&
      !zkr__tls_in_callback)
    return ZKR_EBUSY;
  return zkr__queue_release(m->q);
}

zkr_lock_state zkr_mutex_state(const zkr_mutex *m) {
  if (!m)
    return ZKR_LOCK_UNLOCKED;
  return (zkr_lock_state)zkr__queue_state(m->q);
}

int zkr_mutex_is_held(const zkr_mutex *m) {
  return m && zkr__queue_state(m->q) == ZKR__Q_HELD;
}

int zkr_mutex_hold_count(const zkr_mutex *m) {
  return m ? zkr__queue_hold_count(m->q) : 0;
}

int64_t zkr_mutex_fencing_token(const zkr_mutex *m) {
  int64_t t = 0;
  if (!m || !zkr__queue_info(m->q, &t, NULL, 0, NULL))
    return 0;
  return t;
}

int zkr_mutex_node(const zkr_mutex *m, char *buf, size_t len) {
  if (!m || !buf || len == 0)
    return ZKR_EINVAL;
  return zkr__queue_info(m->q, NULL, buf, len, NULL) ? ZKR_OK : ZKR_ENOTHELD;
}

int zkr_mutex_guarded_multi(zkr_mutex *m, int count, const struct zoo_op *ops,
                            struct zoo_op_result *results, int64_t timeout_ms) {
  if (!m || !ops || !results || count < 1 || count > 1000)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  char node[ZKR__PATH_MAX + 64];
  if (zkr__queue_state(m->q) != ZKR__Q_HELD ||
      !zkr__queue_info(m->q, NULL, node, sizeof node, NULL))
    return ZKR_ENOTHELD;
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
  int rc = zkr__zk_multi(zkr__queue_session(m->q), count + 1, all, res,
                         zkr__deadline(timeout_ms), &zrc);
  if (rc == ZKR_OK || zrc != 0) {
    memcpy(results, res + 1, (size_t)count * sizeof *res);
    if (rc != ZKR_OK) {
      if (res[0].err == ZNONODE) {
        zkr__queue_mark_lost(m->q);
        rc = ZKR_ELOCKLOST;
      } else {
        for (int i = 1; i <= count; i++)
          if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY) {
            rc = zkr__from_zk(res[i].err);
            break;
          }
      }
    }
  }
  free(all);
  free(res);
  return rc;
}

int zkr_mutex_guarded_set(zkr_mutex *m, const char *path, const char *data,
                          int datalen, int version, int64_t timeout_ms) {
  if (!m || zkr__path_check(path) != ZKR_OK || datalen < -1 ||
      (datalen > 0 && !data))
    return path && zkr__path_check(path) != ZKR_OK ? ZKR_EBADPATH : ZKR_EINVAL;
  zoo_op_t op;
  zoo_op_result_t r;
  memset(&r, 0, sizeof r);
  zoo_set_op_init(&op, path, data, datalen, version, NULL);
  return zkr_mutex_guarded_multi(m, 1, &op, &r, timeout_ms);
}

/* ---- participants ---- */

static int part_cmp(const void *a, const void *b) {
  return zkr__seq_cmp(((const zkr_participant *)a)->seq,
                      ((const zkr_participant *)b)->seq);
}

void zkr_participants_free(zkr_participant *p, size_t count) {
  if (!p)
    return;
  for (size_t i = 0; i < count; i++) {
    free(p[i].node);
    free(p[i].data);
  }
  free(p);
}

int zkr_mutex_participants(zkr_session *s, const char *path, int64_t timeout_ms,
                           zkr_participant **out, size_t *count) {
  if (!s || !out || !count)
    return ZKR_EINVAL;
  int rc = zkr__path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int64_t deadline = zkr__deadline(timeout_ms);
  zkr__result kids;
  memset(&kids, 0, sizeof kids);
  rc = zkr__zk_children(s, path, deadline, &kids);
  if (rc == ZKR_ENONODE) {
    *out = NULL;
    *count = 0;
    return ZKR_OK;
  }
  if (rc != ZKR_OK)
    return rc;
  size_t n = 0;
  zkr_participant *arr =
      calloc(kids.names.count > 0 ? (size_t)kids.names.count : 1, sizeof *arr);
  if (!arr) {
    zkr__result_clear(&kids);
    return ZKR_ENOMEM;
  }
  for (int i = 0; i < kids.names.count; i++) {
    int32_t seq;
    const char *name = kids.names.data[i];
    if (!zkr__seq_parse(name, &seq))
      continue;
    char *full = zkr__path_join(path, name);
    if (!full) {
      rc = ZKR_ENOMEM;
      break;
    }
    zkr__result r;
    memset(&r, 0, sizeof r);
    int grc = zkr__zk_get(s, full, deadline, &r);
    free(full);
    if (grc == ZKR_ENONODE)
      continue; /* left meanwhile */
    if (grc != ZKR_OK) {
      rc = grc;
      break;
    }
    arr[n].node = zkr__strdup(name);
    arr[n].seq = seq;
    arr[n].session_id = r.stat.ephemeralOwner;
    arr[n].czxid = r.stat.czxid;
    arr[n].ctime_ms = r.stat.ctime;
    arr[n].data = r.data;
    r.data = NULL;
    zkr__result_clear(&r);
    if (!arr[n].node || !arr[n].data) {
      n++;
      rc = ZKR_ENOMEM;
      break;
    }
    n++;
  }
  zkr__result_clear(&kids);
  if (rc != ZKR_OK) {
    zkr_participants_free(arr, n);
    return rc;
  }
  qsort(arr, n, sizeof *arr, part_cmp);
  if (n > 0)
    arr[0].is_holder = 1;
  *out = arr;
  *count = n;
  return ZKR_OK;
}
