/*
 * The event queue and its thread: the session's closures (recipes' work,
 * timers) and its user callbacks (results and state changes, listener
 * events, lock events, alerts) run here, one at a time, in the order
 * queued. In dispatch mode (zkr_session_options.dispatch) the user
 * callbacks go to a second queue instead, run by zkr_session_dispatch()
 * on the application's thread, and an eventfd is readable while that
 * queue is not empty.
 *
 * Owns: s->evq, s->ev_stop, the event thread's loop; s->dq, s->dfd and
 * the dispatch state. Below the session manager and the timers, which
 * queue into it; it calls nothing of theirs (a listener event is
 * delivered from the session's listener list, read under s->mu).
 */
#include "config.h"

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "session-int.h"

void zkr__event_push_locked(zkr_session *s, struct event *e) {
  if (e->user && s->opts.dispatch) {
    if (s->dq_len++ == 0 && s->dfd >= 0) {
      uint64_t one = 1;
      ssize_t w = write(s->dfd, &one, sizeof one); /* readable now */
      (void)w;
    }
    zkr__list_push_back(&s->dq, &e->link);
    return;
  }
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
  e->user = 0;
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

int zkr__session_post_user(zkr_session *s, zkr__event *e, void (*fn)(void *),
                           void (*drop)(void *), void *arg) {
  int mine = !e;
  if (mine && !(e = calloc(1, sizeof *e)))
    return ZKR_ENOMEM;
  e->is_closure = 1;
  e->user = 1;
  e->fn = fn;
  e->drop = drop;
  e->arg = arg;
  pthread_mutex_lock(&s->mu);
  if (s->opts.dispatch ? s->d_closed : s->ev_stop) {
    pthread_mutex_unlock(&s->mu);
    if (mine)
      free(e);
    return ZKR_ECLOSED;
  }
  zkr__event_push_locked(s, e);
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

int zkr__session_dispatching(const zkr_session *s) {
  return s->opts.dispatch;
}

/* Under s->mu, @e taken off its queue: run it (without s->mu while user
 * code runs) and free it unless its poster owns it. */
static void run_locked(zkr_session *s, struct event *e) {
  if (e->is_closure) {
    /* an owned node may be reused or freed by its closure */
    int owned = e->owned;
    pthread_mutex_unlock(&s->mu);
    e->fn(e->arg);
    pthread_mutex_lock(&s->mu);
    if (!owned)
      free(e);
    return;
  }
  uint64_t last = 0;
  for (;;) {
    /* the next listener after @last (the list may have changed while the
     * last one ran), in id order */
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
    s->running_listener_thread = pthread_self();
    pthread_mutex_unlock(&s->mu);
    fn(s, e->ev, e->sid, ud);
    pthread_mutex_lock(&s->mu);
    s->running_listener = 0;
    pthread_cond_broadcast(&s->cv);
  }
  free(e);
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
    zkr__list_remove(first);
    run_locked(s, zkr__list_entry(first, struct event, link));
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- dispatch mode ---- */

int zkr__dispatch_open(zkr_session *s) {
  s->dfd = -1;
  zkr__list_init(&s->dq);
  if (!s->opts.dispatch)
    return ZKR_OK;
  s->dfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return s->dfd >= 0 ? ZKR_OK : ZKR_ESYS;
}

/* Under s->mu: the queue is empty now: the descriptor stops being
 * readable. */
static void drained_locked(zkr_session *s) {
  uint64_t v;
  ssize_t r = read(s->dfd, &v, sizeof v);
  (void)r;
}

static void drop(struct event *e) {
  if (!e->is_closure) {
    free(e);
    return;
  }
  int owned = e->owned;
  if (e->drop)
    e->drop(e->arg);
  if (!owned)
    free(e);
}

void zkr__dispatch_close(zkr_session *s) {
  if (!s->opts.dispatch)
    return;
  pthread_mutex_lock(&s->mu);
  s->d_closed = 1;
  while (s->d_running)
    pthread_cond_wait(&s->cv, &s->mu);
  zkr__list q;
  zkr__list_init(&q);
  while (!zkr__list_empty(&s->dq)) {
    zkr__list *n = zkr__list_first(&s->dq);
    zkr__list_remove(n);
    zkr__list_push_back(&q, n);
  }
  s->dq_len = 0;
  if (s->dfd >= 0)
    close(s->dfd);
  s->dfd = -1;
  pthread_mutex_unlock(&s->mu);
  while (!zkr__list_empty(&q)) {
    zkr__list *n = zkr__list_first(&q);
    zkr__list_remove(n);
    drop(zkr__list_entry(n, struct event, link));
  }
}

int zkr_session_fd(zkr_session *s) {
  if (!s || !s->opts.dispatch)
    return ZKR_EINVAL;
  pthread_mutex_lock(&s->mu);
  int fd = s->d_closed ? ZKR_ECLOSED : s->dfd;
  pthread_mutex_unlock(&s->mu);
  return fd;
}

int zkr_session_dispatch(zkr_session *s, int max) {
  if (!s || !s->opts.dispatch)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  pthread_mutex_lock(&s->mu);
  if (s->d_closed || s->dfd < 0) {
    pthread_mutex_unlock(&s->mu);
    return ZKR_ECLOSED;
  }
  if (s->d_running) {
    pthread_mutex_unlock(&s->mu);
    return ZKR_EBUSY;
  }
  s->d_running = 1;
  size_t n = s->dq_len;
  if (max > 0 && (size_t)max < n)
    n = (size_t)max;
  int ran = 0;
  zkr__tls_in_callback++;
  while ((size_t)ran < n && !s->d_closed) {
    zkr__list *first = zkr__list_first(&s->dq);
    if (!first)
      break;
    zkr__list_remove(first);
    if (--s->dq_len == 0)
      drained_locked(s);
    run_locked(s, zkr__list_entry(first, struct event, link));
    ran++;
  }
  zkr__tls_in_callback--;
  s->d_running = 0;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return ran;
}
