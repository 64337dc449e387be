/*
 * The event queue and its thread: every user callback of a session runs
 * here, one at a time, in the order queued: closures (recipes' results
 * and state changes, timers) and the session's listener events.
 *
 * Owns: s->evq, s->ev_stop and the event thread's loop.
 * Below the session manager and the timers, which queue into it; it
 * calls nothing of theirs (a listener event is delivered from the
 * session's listener list, read under s->mu).
 */
#include "config.h"

#include <stdlib.h>

#include "session-int.h"

void zkr__event_push_locked(zkr_session *s, struct event *e) {
  zkr__list_push_back(&s->evq, &e->link);
  pthread_cond_signal(&s->ecv);
}

zkr__event *zkr__event_new(void) {
  struct event *e = calloc(1, sizeof *e);
  if (e)
    e->owned = 1;
  return e;
}

void zkr__event_init(zkr__event *e) {
  *e = (zkr__event){.owned = 1};
}

void zkr__event_free(zkr__event *e) {
  free(e);
}

int zkr__session_post_event(zkr_session *s, zkr__event *e, void (*fn)(void *),
                            void *arg) {
  e->is_closure = 1;
  e->fn = fn;
  e->arg = arg;
  pthread_mutex_lock(&s->mu);
  if (s->ev_stop) {
    pthread_mutex_unlock(&s->mu);
    return ZKR_ECLOSED;
  }
  zkr__event_push_locked(s, e);
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

int zkr__session_post(zkr_session *s, void (*fn)(void *), void *arg) {
  struct event *e = calloc(1, sizeof *e);
  if (!e)
    return ZKR_ENOMEM;
  int rc = zkr__session_post_event(s, e, fn, arg);
  if (rc != ZKR_OK)
    free(e);
  return rc;
}

void *zkr__event_main(void *arg) {
  zkr_session *s = arg;
  zkr__tls_in_callback = 1;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (zkr__list_empty(&s->evq) && !s->ev_stop)
      pthread_cond_wait(&s->ecv, &s->mu);
    zkr__list *first = zkr__list_first(&s->evq);
    if (!first)
      break; /* stopped and drained */
    struct event *e = zkr__list_entry(first, struct event, link);
    zkr__list_remove(first);
    if (e->is_closure) {
      /* an owned node may be reused or freed by its closure */
      int owned = e->owned;
      pthread_mutex_unlock(&s->mu);
      e->fn(e->arg);
      pthread_mutex_lock(&s->mu);
      if (owned)
        continue;
    } else {
      uint64_t last = 0;
      for (;;) {
        /* the next listener after @last (the list may have changed while
         * the last one ran), in id order */
        struct listener *l = NULL;
        for (zkr__list *n = zkr__list_first(&s->listeners); n;
             n = zkr__list_next(&s->listeners, n)) {
          struct listener *c = zkr__list_entry(n, struct listener, link);
          if (c->id > last && c->since < e->seq) {
            l = c;
            break;
          }
        }
        if (!l)
          break;
        last = l->id;
        zkr_session_listener_fn fn = l->fn;
        void *ud = l->ud;
        s->running_listener = l->id;
        pthread_mutex_unlock(&s->mu);
        fn(s, e->ev, e->sid, ud);
        pthread_mutex_lock(&s->mu);
        s->running_listener = 0;
        pthread_cond_broadcast(&s->cv);
      }
    }
    free(e);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}
