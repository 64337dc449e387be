/*
 * The watch registry: the session's single global watcher hands each node
 * event to the registrants of its path whose kind it fires (data watches:
 * exists, getData; child watches: getChildren), once: watches are
 * one-shot. Also removes a session's server-side watch of one kind when no
 * registrant wants it any more.
 * Owns: s->watches, s->running_watch. Must not touch: the handle's life
 * (session.c), what a watch means to its registrant.
 *
 * What the server sends (ZooKeeper 3.8): a child created or deleted fires
 * the parent's getChildren watches (NodeChildrenChanged); a data change
 * fires exists/getData watches (NodeDataChanged), a creation the exists
 * watches (NodeCreated); a deletion fires both kinds (NodeDeleted), one
 * notification per session.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session-int.h"

int zkr__watch_add(zkr_session *s, const char *path, zkr__watch_kind kind,
                   zkr__watch_fn fn, void *ctx, uint64_t *id) {
  struct watch *w = calloc(1, sizeof *w);
  if (!w)
    return ZKR_ENOMEM;
  w->path = zkr__strdup(path);
  if (!w->path) {
    free(w);
    return ZKR_ENOMEM;
  }
  w->fn = fn;
  w->ctx = ctx;
  w->kind = kind;
  pthread_mutex_lock(&s->mu);
  w->id = ++s->next_id;
  zkr__list_push_front(&s->watches, &w->link);
  if (id)
    *id = w->id;
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

/* Which registrations a node event fires: the server sends a child
 * change to getChildren watches, creation and data changes to
 * exists/getData watches, and a deletion to both. */
static int watch_kind_fires(zkr__watch_kind kind, int type) {
  if (type == ZOO_CHILD_EVENT)
    return kind == ZKR__WATCH_CHILD;
  if (type == ZOO_DELETED_EVENT)
    return 1;
  return kind == ZKR__WATCH_DATA;
}

void zkr__watch_dispatch(zkr_session *s, struct hctx *hc, int type,
                         const char *path) {
  pthread_mutex_lock(&s->mu);
  if (type != ZOO_NOTWATCHING_EVENT)
    s->node_events++;
  /* The event is for the watches registered before it: one that a callback
   * registers on the same path (to watch the node again) waits for the
   * next event. Ids only grow, so those are the ids up to now. */
  uint64_t last = s->next_id;
  for (;;) {
    if (hc->gen != s->gen || s->closing)
      break; /* a watch of a session that is gone: nobody cares */
    struct watch *w = NULL;
    for (zkr__list *n = zkr__list_first(&s->watches); n;
         n = zkr__list_next(&s->watches, n)) {
      struct watch *c = zkr__list_entry(n, struct watch, link);
      if (strcmp(c->path, path) == 0 && c->id <= last &&
          watch_kind_fires(c->kind, type)) {
        w = c;
        break;
      }
    }
    if (!w)
      break;
    zkr__list_remove(&w->link); /* one-shot */
    s->running_watch = w->id;
    s->running_watch_thread = pthread_self();
    pthread_mutex_unlock(&s->mu);
    w->fn(s, type, path, w->ctx);
    free(w->path);
    free(w);
    pthread_mutex_lock(&s->mu);
    s->running_watch = 0;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
}

static void unwatch_done(int rc, const void *data) {
  (void)rc;
  (void)data;
}

void zkr__session_unwatch(zkr_session *s, const char *path,
                          zkr__watch_kind kind) {
  pthread_mutex_lock(&s->mu);
  int others = 0;
  for (zkr__list *n = zkr__list_first(&s->watches); n && !others;
       n = zkr__list_next(&s->watches, n)) {
    struct watch *w = zkr__list_entry(n, struct watch, link);
    if (w->kind == kind && strcmp(w->path, path) == 0)
      others = 1;
  }
  if (!others && s->zh && s->hctx && !s->closing &&
      s->state == ZKR_STATE_CONNECTED) {
    /* zoo_aremove_watches() only checks watches on the server (its
     * request is checkWatches); removeWatches is what drops them there.
     * No other registrant of this session wants the path, so all of this
     * session's watches of that kind on it may go. The 3.8 header declares the
     * completion as void_completion_t *, but the client stores and calls
     * the pointer as the function itself. */
    union {
      void_completion_t fn;
      void_completion_t *as_declared;
    } cb = {.fn = unwatch_done};
    int rc = zoo_aremove_all_watches(s->zh, path,
                                     kind == ZKR__WATCH_CHILD ? ZWATCHTYPE_CHILD
                                                              : ZWATCHTYPE_DATA,
                                     0, cb.as_declared, NULL);
    if (rc != ZOK && rc != ZNOWATCHER)
      zkr__log(ZKR_LOG_WARN, "removing the watch on %s: %s", path, zerror(rc));
  }
  pthread_mutex_unlock(&s->mu);
}

int zkr__watch_unlink(zkr_session *s, uint64_t id) {
  int found = 0;
  pthread_mutex_lock(&s->mu);
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->watches) {
    struct watch *w = zkr__list_entry(n, struct watch, link);
    if (w->id == id) {
      zkr__list_remove(&w->link);
      free(w->path);
      free(w);
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return found;
}
