/*
 * Timers: run a closure on the session's event thread at a monotonic
 * time. The event that carries the closure is allocated with the timer,
 * so firing one cannot fail. A timer pending at close still runs (with
 * the session CLOSED), so that what it owns is freed.
 * Owns: s->timers. Must not touch: the event queue beyond
 * zkr__event_push_locked().
 */
#include "config.h"

#include <stdlib.h>

#include "session-int.h"

int zkr__timer_add(zkr_session *s, int64_t at_ms, void (*fn)(void *), void *arg,
                   uint64_t *id) {
  struct timer *t = calloc(1, sizeof *t);
  struct event *e = calloc(1, sizeof *e);
  if (!t || !e) {
    free(t);
    free(e);
    return ZKR_ENOMEM;
  }
  e->is_closure = 1;
  e->fn = fn;
  e->arg = arg;
  t->at = at_ms;
  t->ev = e;
  pthread_mutex_lock(&s->mu);
  if (s->closing) {
    pthread_mutex_unlock(&s->mu);
    free(e);
    free(t);
    return ZKR_ECLOSED;
  }
  t->id = ++s->next_id;
  struct timer **pp = &s->timers;
  while (*pp && (*pp)->at <= at_ms)
    pp = &(*pp)->next;
  t->next = *pp;
  *pp = t;
  if (id)
    *id = t->id;
  /* The manager sleeps until its next tick or the first timer, whichever
   * comes first, and reads the timers again whenever it runs: wake it
   * only for a timer due before it would wake anyway (an alert's timer,
   * minutes away, wakes nobody). */
  if (s->mgr_sleep_until >= 0 && at_ms < s->mgr_sleep_until)
    pthread_cond_signal(&s->mcv);
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

int zkr__timer_cancel(zkr_session *s, uint64_t id) {
  int found = 0;
  pthread_mutex_lock(&s->mu);
  for (struct timer **pp = &s->timers; *pp; pp = &(*pp)->next) {
    if ((*pp)->id == id) {
      struct timer *t = *pp;
      *pp = t->next;
      free(t->ev);
      free(t);
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return found;
}

int64_t zkr__timers_fire_locked(zkr_session *s, int64_t now) {
  while (s->timers && s->timers->at <= now) {
    struct timer *t = s->timers;
    s->timers = t->next;
    zkr__event_push_locked(s, t->ev);
    free(t);
  }
  return s->timers ? s->timers->at : -1;
}
