/*
 * Internal state hooks: the queue engine, the semaphore and the election
 * observer each add one per object, to learn of the session's state
 * events synchronously, on the thread where the state changed, without
 * session locks held. One list, in the order added; adds and removals
 * are O(1) (a session may hold a hundred thousand lock objects).
 * Owns: s->hooks, s->running_hook. Must not touch: the
 * session's states (session.c calls zkr__hooks_call() when they change).
 */
#include "config.h"

#include <stdlib.h>

#include "session-int.h"

/* In list order, which is id order; a hook added meanwhile (at the tail)
 * runs too. The running hook is not freed while it runs (a removal marks
 * it dead), so its successor is found in O(1): one state event costs
 * O(hooks), not O(hooks^2), for a session with many lock objects. */
/* The hook after @h in the list, or NULL. */
static struct zkr__hook *after(zkr_session *s, struct zkr__hook *h) {
  zkr__list *n = zkr__list_next(&s->hooks, &h->link);
  return n ? zkr__list_entry(n, struct zkr__hook, link) : NULL;
}

void zkr__hooks_call(zkr_session *s, zkr_session_event ev, int64_t sid) {
  pthread_mutex_lock(&s->mu);
  zkr__list *first = zkr__list_first(&s->hooks);
  struct zkr__hook *h =
      first ? zkr__list_entry(first, struct zkr__hook, link) : NULL;
  while (h) {
    zkr__state_hook fn = h->fn;
    void *ctx = h->ctx;
    h->running++;
    s->running_hook = h->id;
    s->running_hook_thread = pthread_self();
    pthread_mutex_unlock(&s->mu);
    fn(s, ev, sid, ctx);
    pthread_mutex_lock(&s->mu);
    s->running_hook = 0;
    pthread_cond_broadcast(&s->cv);
    if (--h->running == 0 && !h->dead) {
      h = after(s, h);
    } else if (h->dead) {
      /* removed while it ran: out of the list, so find its successor by
       * id (the list is in id order) */
      uint64_t last = h->id;
      if (h->running == 0)
        free(h);
      zkr__list *n = zkr__list_first(&s->hooks);
      h = n ? zkr__list_entry(n, struct zkr__hook, link) : NULL;
      while (h && h->id <= last)
        h = after(s, h);
    } else {
      h = after(s, h); /* (still run by another thread) */
    }
  }
  pthread_mutex_unlock(&s->mu);
}

int zkr__session_hook_add(zkr_session *s, zkr__state_hook fn, void *ctx,
                          zkr__hook **out) {
  struct zkr__hook *h = calloc(1, sizeof *h);
  if (!h)
    return ZKR_ENOMEM;
  h->fn = fn;
  h->ctx = ctx;
  pthread_mutex_lock(&s->mu);
  h->id = ++s->next_id;
  zkr__list_push_back(&s->hooks, &h->link);
  if (out)
    *out = h;
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

void zkr__session_hook_remove(zkr_session *s, zkr__hook *h) {
  if (!h)
    return;
  pthread_mutex_lock(&s->mu);
  uint64_t id = h->id;
  zkr__list_remove(&h->link);
  if (h->running > 0)
    h->dead = 1; /* the last call_hooks() running it frees it */
  else
    free(h);
  while (s->running_hook == id &&
         !pthread_equal(s->running_hook_thread, pthread_self()))
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}
