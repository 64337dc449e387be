/*
 * Background deletions: a node of a given ZooKeeper session (or the
 * children of a parent with a given prefix, after a create whose reply was
 * lost) deleted even across connection losses: retried at every
 * reconnection of that session, dropped once the session is gone (its
 * ephemeral nodes went with it).
 * Owns: s->bgdels. Must not touch: why a node is deleted (its callers').
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session-int.h"

static void bg_issue_locked(zkr_session *s, struct bgdel *b);

void zkr__bg_free(struct bgdel *b) {
  for (int i = 0; i + 1 < b->nset; i++)
    free(b->set[i]);
  free(b->set);
  free(b->ops);
  free(b->res);
  free(b->path);
  free(b->prefix);
  free(b);
}

static void bg_unlink_free_locked(zkr_session *s, struct bgdel *b) {
  zkr__list_remove(&b->link);
  zkr__bg_free(b);
  pthread_cond_broadcast(&s->cv);
}

static int bg_add(zkr_session *s, const char *path, const char *prefix,
                  uint64_t gen);

static void bg_done(zkr_session *s, struct bgdel *b, int rc) {
  pthread_mutex_lock(&s->mu);
  b->in_flight = 0;
  if (zkr__retryable(rc) && b->gen == s->gen && !s->closing &&
      s->state == ZKR_STATE_CONNECTED)
    bg_issue_locked(s, b); /* still connected: try again now */
  else if (zkr__retryable(rc) && b->gen == s->gen && !s->closing)
    ; /* kept: retried at the next reconnection */
  else {
    if (rc != ZOK && rc != ZNONODE && b->gen == s->gen && !s->closing)
      zkr__log(ZKR_LOG_WARN, "background delete of %s failed: %s", b->path,
               zerror(rc));
    bg_unlink_free_locked(s, b);
    pthread_cond_broadcast(&s->cv); /* zkr_session_close() may wait */
  }
  pthread_mutex_unlock(&s->mu);
}

int zkr__bg_pending_locked(zkr_session *s) {
  for (zkr__list *n = zkr__list_first(&s->bgdels); n;
       n = zkr__list_next(&s->bgdels, n))
    if (zkr__list_entry(n, struct bgdel, link)->gen == s->gen)
      return 1;
  return 0;
}

static void bg_void_cb(int rc, const void *data) {
  struct bgdel *b = (struct bgdel *)data;
  zkr__tls_in_callback++;
  bg_done(b->s, b, rc);
  zkr__tls_in_callback--;
}

/* A set's transaction: refused for a reason other than the connection
 * (a node gone already: the transaction is all or nothing), each node is
 * deleted alone. */
static void bg_multi_cb(int rc, const void *data) {
  struct bgdel *b = (struct bgdel *)data;
  zkr_session *s = b->s;
  zkr__tls_in_callback++;
  if (rc != ZOK && !zkr__retryable(rc)) {
    zkr__session_bg_delete(s, b->path, b->gen);
    for (int i = 0; i + 1 < b->nset; i++)
      zkr__session_bg_delete(s, b->set[i], b->gen);
    rc = ZOK;
  }
  bg_done(s, b, rc);
  zkr__tls_in_callback--;
}

static void bg_children_cb(int rc, const struct String_vector *names,
                           const void *data) {
  struct bgdel *b = (struct bgdel *)data;
  zkr_session *s = b->s;
  zkr__tls_in_callback++;
  if (rc == ZOK && names) {
    size_t plen = strlen(b->prefix);
    for (int i = 0; i < names->count; i++) {
      if (strncmp(names->data[i], b->prefix, plen) != 0)
        continue;
      char *child = zkr__path_join(b->path, names->data[i]);
      if (child) {
        zkr__session_bg_delete(s, child, b->gen);
        free(child);
      }
    }
  }
  bg_done(s, b, rc == ZNONODE ? ZOK : rc);
  zkr__tls_in_callback--;
}

/* Under s->mu: send the deletion if the session is connected. */
static void bg_issue_locked(zkr_session *s, struct bgdel *b) {
  if (b->in_flight || !s->zh || s->state != ZKR_STATE_CONNECTED ||
      b->gen != s->gen)
    return;
  int rc;
  b->in_flight = 1;
  if (b->prefix) {
    rc = zoo_aget_children(s->zh, b->path, 0, bg_children_cb, b);
  } else if (b->nset > 0) {
    zoo_delete_op_init(&b->ops[0], b->path, -1);
    for (int i = 0; i + 1 < b->nset; i++)
      zoo_delete_op_init(&b->ops[i + 1], b->set[i], -1);
    rc = zoo_amulti(s->zh, b->nset, b->ops, b->res, bg_multi_cb, b);
  } else {
    rc = zoo_adelete(s->zh, b->path, -1, bg_void_cb, b);
  }
  if (rc != ZOK)
    b->in_flight = 0; /* retried at the next reconnection */
}

/* Queue @b (made by the caller) and send it if connected. */
static int bg_queue(zkr_session *s, struct bgdel *b, uint64_t gen) {
  b->s = s;
  b->gen = gen;
  pthread_mutex_lock(&s->mu);
  if (s->closing || gen != s->gen) {
    /* the session that owned the node is gone, and the node with it */
    pthread_mutex_unlock(&s->mu);
    zkr__bg_free(b);
    return ZKR_OK;
  }
  zkr__list_push_front(&s->bgdels, &b->link);
  bg_issue_locked(s, b);
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

static int bg_add(zkr_session *s, const char *path, const char *prefix,
                  uint64_t gen) {
  struct bgdel *b = calloc(1, sizeof *b);
  if (!b)
    return ZKR_ENOMEM;
  b->path = zkr__strdup(path);
  b->prefix = prefix ? zkr__strdup(prefix) : NULL;
  if (!b->path || (prefix && !b->prefix)) {
    zkr__bg_free(b);
    return ZKR_ENOMEM;
  }
  return bg_queue(s, b, gen);
}

int zkr__session_bg_delete_set(zkr_session *s, char *const *paths, int n,
                               uint64_t gen) {
  if (n == 1)
    return bg_add(s, paths[0], NULL, gen);
  struct bgdel *b = n > 1 ? calloc(1, sizeof *b) : NULL;
  if (b) {
    b->path = zkr__strdup(paths[0]);
    b->set = calloc((size_t)n - 1, sizeof *b->set);
    b->ops = calloc((size_t)n, sizeof *b->ops);
    b->res = calloc((size_t)n, sizeof *b->res);
    b->nset = b->path && b->set && b->ops && b->res ? 1 : 0;
    for (int i = 1; b->nset == i && i < n; i++)
      if ((b->set[i - 1] = zkr__strdup(paths[i])) != NULL)
        b->nset++;
    if (b->nset == n)
      return bg_queue(s, b, gen);
    zkr__bg_free(b);
  }
  /* out of memory for the transaction: one by one */
  int rc = n > 1 ? ZKR_OK : ZKR_EINVAL;
  for (int i = 0; i < n; i++)
    if (bg_add(s, paths[i], NULL, gen) != ZKR_OK)
      rc = ZKR_ENOMEM;
  return rc;
}

int zkr__session_bg_delete(zkr_session *s, const char *path, uint64_t gen) {
  return bg_add(s, path, NULL, gen);
}

int zkr__session_bg_cleanup(zkr_session *s, const char *parent,
                            const char *prefix, uint64_t gen) {
  return bg_add(s, parent, prefix, gen);
}

void zkr__bg_kick_locked(zkr_session *s) {
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->bgdels) {
    struct bgdel *b = zkr__list_entry(n, struct bgdel, link);
    if (b->gen != s->gen && !b->in_flight)
      bg_unlink_free_locked(s, b);
    else
      bg_issue_locked(s, b);
  }
}

int zkr__session_bg_pending(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
  int n = 0;
  for (zkr__list *l = zkr__list_first(&s->bgdels); l;
       l = zkr__list_next(&s->bgdels, l))
    n++;
  pthread_mutex_unlock(&s->mu);
  return n;
}
