/*
 * Services every recipe shares: path and id checks, contender data, the
 * public state mapping, reentrancy and participant
 * listings (see recipe.h for what this file owns and must not touch).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recipe.h"

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

int zkr__contender_id_check(const char *id) {
  if (!id || !id[0] || strlen(id) > 256)
    return ZKR_EINVAL;
  for (const char *p = id; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return ZKR_EINVAL;
  return ZKR_OK;
}

int zkr__options_check(const char *type, const char *id, int64_t max_hold_ms,
                       const unsigned char *reserved, size_t n) {
  if (id && zkr__contender_id_check(id) != ZKR_OK) {
    zkr__log(ZKR_LOG_ERROR,
             "%s: id is empty, longer than 256 bytes or holds a control "
             "character",
             type);
    return ZKR_EINVAL;
  }
  if (max_hold_ms < 0) {
    zkr__log(ZKR_LOG_ERROR, "%s: max_hold_ms is negative", type);
    return ZKR_EINVAL;
  }
  return zkr__reserved_check(reserved, n, type);
}

/* ---- states ---- */

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

/* ---- reentrancy ---- */

/* Held (HELD or SUSPECT) by this object? */
static int held(zkr__queue *q) {
  zkr__qstate st = zkr__queue_state(q);
  return st == ZKR__Q_HELD || st == ZKR__Q_SUSPECT;
}

int zkr__owner_enter(zkr__owner *o, zkr__queue *q, int *rc) {
  if (!held(q)) {
    atomic_store(&o->thread, pthread_self());
    atomic_store(&o->extra, 0);
    return 0;
  }
  if (o->reentrant && pthread_equal(atomic_load(&o->thread), pthread_self())) {
    atomic_fetch_add(&o->extra, 1);
    *rc = ZKR_OK;
  } else {
    *rc = ZKR_EBUSY;
  }
  return 1;
}

void zkr__owner_undo(zkr__owner *o) {
  atomic_fetch_sub(&o->extra, 1);
}

int zkr__owner_release(zkr__owner *o, zkr__queue *q) {
  if (held(q) && o->reentrant &&
      !pthread_equal(atomic_load(&o->thread), pthread_self()) &&
      !zkr__tls_in_callback)
    return ZKR_EBUSY;
  if (atomic_load(&o->extra) > 0) {
    if (held(q)) {
      atomic_fetch_sub(&o->extra, 1);
      return ZKR_OK;
    }
    atomic_store(&o->extra, 0); /* lost: the holds went with it */
  }
  return zkr__queue_release(q);
}

int zkr__owner_mine(zkr__owner *o, zkr__queue *q) {
  return held(q) && pthread_equal(atomic_load(&o->thread), pthread_self());
}

int zkr__owner_count(const zkr__owner *o, zkr__queue *q) {
  if (!zkr__queue_info(q, NULL, NULL, 0))
    return 0;
  return 1 + atomic_load(&((zkr__owner *)o)->extra);
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

/* Set is_holder of the sorted @arr by each one's policy: the blockers
 * before it, counted by its own blocks rule, pass its holds rule. */
static void mark_holders(zkr_participant *arr, size_t n, zkr__policy_of pol_of,
                         void *ctx) {
  for (size_t i = 0; i < n; i++) {
    const zkr__qpolicy *pol = pol_of(arr[i].node, ctx);
    int blockers = 0;
    for (size_t j = 0; j < i; j++)
      if (zkr__seq_cmp(arr[j].seq, arr[i].seq) < 0 &&
          (!pol->blocks || pol->blocks(arr[j].node, pol->ctx)))
        blockers++; /* an equal number (a downgrade's read node and its
                       write node) blocks neither */
    arr[i].is_holder =
        pol->holds ? pol->holds(blockers, pol->ctx) != 0 : blockers == 0;
  }
}

int zkr__participants(zkr_session *s, const char *path, zkr__policy_of pol_of,
                      void *ctx, zkr__place place, const char *prefix,
                      int64_t timeout_ms, zkr_participant **out,
                      size_t *count) {
  if (!s || !out || !count)
    return ZKR_EINVAL;
  int rc = zkr__path_call_check(path);
  if (rc != ZKR_OK)
    return rc;
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
  int nk = kids.names.count;
  zkr_participant *arr = calloc(nk > 0 ? (size_t)nk : 1, sizeof *arr);
  char **paths = calloc(nk > 0 ? (size_t)nk : 1, sizeof *paths);
  const char **names = calloc(nk > 0 ? (size_t)nk : 1, sizeof *names);
  int32_t *seqs = calloc(nk > 0 ? (size_t)nk : 1, sizeof *seqs);
  if (!arr || !paths || !names || !seqs) {
    free(arr);
    free(paths);
    free(names);
    free(seqs);
    zkr__result_clear(&kids);
    return ZKR_ENOMEM;
  }
  /* the contenders' names, then their data read at once (pipelined) */
  int m = 0;
  for (int i = 0; i < nk && rc == ZKR_OK; i++) {
    const char *name = kids.names.data[i];
    if (!zkr__seq_parse(name, &seqs[m]))
      continue;
    names[m] = name;
    if (!(paths[m] = zkr__path_join(path, name)))
      rc = ZKR_ENOMEM;
    else
      m++;
  }
  zkr__result *res = calloc(m > 0 ? (size_t)m : 1, sizeof *res);
  int *rcs = calloc(m > 0 ? (size_t)m : 1, sizeof *rcs);
  if (rc == ZKR_OK && (!res || !rcs))
    rc = ZKR_ENOMEM;
  if (rc == ZKR_OK)
    rc = zkr__zk_get_many(s, paths, m, deadline, res, rcs);
  for (int i = 0; i < m && rc == ZKR_OK; i++) {
    if (rcs[i] == ZKR_ENONODE)
      continue; /* left meanwhile */
    if (rcs[i] != ZKR_OK) {
      rc = rcs[i];
      break;
    }
    zkr__result *r = &res[i];
    if (r->stat.ephemeralOwner == 0)
      continue; /* a persistent node is never a contender */
    arr[n].node =
        prefix ? zkr__path_join(prefix, names[i]) : zkr__strdup(names[i]);
    arr[n].role = zkr__role_of(names[i], place);
    arr[n].seq = seqs[i];
    arr[n].session_id = r->stat.ephemeralOwner;
    arr[n].czxid = r->stat.czxid;
    arr[n].ctime_ms = r->stat.ctime;
    arr[n].data = r->data;
    r->data = NULL;
    n++;
    if (!arr[n - 1].node || !arr[n - 1].data)
      rc = ZKR_ENOMEM;
  }
  for (int i = 0; i < m; i++) {
    if (res)
      zkr__result_clear(&res[i]);
    free(paths[i]);
  }
  free(res);
  free(rcs);
  free(paths);
  free(names);
  free(seqs);
  zkr__result_clear(&kids);
  if (rc != ZKR_OK) {
    zkr_participants_free(arr, n);
    return rc;
  }
  qsort(arr, n, sizeof *arr, part_cmp);
  mark_holders(arr, n, pol_of, ctx);
  *out = arr;
  *count = n;
  return ZKR_OK;
}
