/*
 * Timers: run a closure on the session's event thread at a monotonic
 * time. The event that carries the closure is allocated with the timer,
 * so firing one cannot fail. A timer pending at close still runs (with
 * the session CLOSED), so that what it owns is freed.
 *
 * The pending timers are a binary min-heap on (time, id), so timers due
 * at the same time fire in the order added; an index from id to timer
 * (open addressing) makes a cancel O(log n) like an add.
 *
 * Owns: s->timers. Must not touch: the event queue beyond
 * zkr__event_push_locked().
 */
#include "config.h"

#include <stdlib.h>

#include "session-int.h"

/* ---- the index: id -> timer, linear probing, deletion by shifting ---- */

static size_t slot_of(uint64_t id, size_t cap) {
  uint64_t h = id * UINT64_C(0x9e3779b97f4a7c15);
  return (size_t)(h >> 32) & (cap - 1);
}

/* Make room for one more entry; 0 or -1 (out of memory). */
static int index_grow(struct zkr__timers *ts) {
  if ((ts->n + 1) * 2 <= ts->icap)
    return 0;
  size_t cap = ts->icap ? ts->icap * 2 : 16;
  struct timer **idx = calloc(cap, sizeof *idx);
  if (!idx)
    return -1;
  for (size_t i = 0; i < ts->icap; i++) {
    struct timer *t = ts->index[i];
    if (!t)
      continue;
    size_t j = slot_of(t->id, cap);
    while (idx[j])
      j = (j + 1) & (cap - 1);
    idx[j] = t;
  }
  free(ts->index);
  ts->index = idx;
  ts->icap = cap;
  return 0;
}

static void index_put(struct zkr__timers *ts, struct timer *t) {
  size_t j = slot_of(t->id, ts->icap);
  while (ts->index[j])
    j = (j + 1) & (ts->icap - 1);
  ts->index[j] = t;
}

/* The slot of @id, or SIZE_MAX. */
static size_t index_find(const struct zkr__timers *ts, uint64_t id) {
  if (!ts->icap)
    return SIZE_MAX;
  for (size_t j = slot_of(id, ts->icap); ts->index[j];
       j = (j + 1) & (ts->icap - 1))
    if (ts->index[j]->id == id)
      return j;
  return SIZE_MAX;
}

static void index_del(struct zkr__timers *ts, size_t j) {
  size_t mask = ts->icap - 1;
  ts->index[j] = NULL;
  /* shift back the entries of the run after j that belong before it */
  for (size_t k = (j + 1) & mask; ts->index[k]; k = (k + 1) & mask) {
    size_t home = slot_of(ts->index[k]->id, ts->icap);
    /* k's entry may move to j if j lies cyclically in [home, k) */
    if ((k > j && (home <= j || home > k)) ||
        (k < j && home <= j && home > k)) {
      ts->index[j] = ts->index[k];
      ts->index[k] = NULL;
      j = k;
    }
  }
}

/* ---- the heap ---- */

static int before(const struct timer *a, const struct timer *b) {
  return a->at < b->at || (a->at == b->at && a->id < b->id);
}

static void heap_set(struct zkr__timers *ts, size_t i, struct timer *t) {
  ts->heap[i] = t;
  t->pos = i;
}

static void sift_up(struct zkr__timers *ts, size_t i) {
  struct timer *t = ts->heap[i];
  while (i > 0 && before(t, ts->heap[(i - 1) / 2])) {
    heap_set(ts, i, ts->heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_set(ts, i, t);
}

static void sift_down(struct zkr__timers *ts, size_t i) {
  struct timer *t = ts->heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= ts->n)
      break;
    if (c + 1 < ts->n && before(ts->heap[c + 1], ts->heap[c]))
      c++;
    if (!before(ts->heap[c], t))
      break;
    heap_set(ts, i, ts->heap[c]);
    i = c;
  }
  heap_set(ts, i, t);
}

/* Take the timer at heap position @i out (heap and index). */
static struct timer *take(struct zkr__timers *ts, size_t i) {
  struct timer *t = ts->heap[i];
  index_del(ts, index_find(ts, t->id));
  ts->n--;
  if (i < ts->n) {
    heap_set(ts, i, ts->heap[ts->n]);
    sift_down(ts, i);
    sift_up(ts, i);
  }
  return t;
}

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
  struct zkr__timers *ts = &s->timers;
  int rc = s->closing ? ZKR_ECLOSED : ZKR_OK;
  if (rc == ZKR_OK && ts->n == ts->cap) {
    size_t cap = ts->cap ? ts->cap * 2 : 16;
    struct timer **h = realloc(ts->heap, cap * sizeof *h);
    if (h) {
      ts->heap = h;
      ts->cap = cap;
    } else {
      rc = ZKR_ENOMEM;
    }
  }
  if (rc == ZKR_OK && index_grow(ts) != 0)
    rc = ZKR_ENOMEM;
  if (rc != ZKR_OK) {
    pthread_mutex_unlock(&s->mu);
    free(e);
    free(t);
    return rc;
  }
  t->id = ++s->next_id;
  index_put(ts, t);
  ts->heap[ts->n] = t;
  t->pos = ts->n++;
  sift_up(ts, t->pos);
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
  struct timer *t = NULL;
  pthread_mutex_lock(&s->mu);
  size_t j = index_find(&s->timers, id);
  if (j != SIZE_MAX)
    t = take(&s->timers, s->timers.index[j]->pos);
  pthread_mutex_unlock(&s->mu);
  if (!t)
    return 0;
  free(t->ev);
  free(t);
  return 1;
}

int64_t zkr__timers_fire_locked(zkr_session *s, int64_t now) {
  struct zkr__timers *ts = &s->timers;
  while (ts->n > 0 && ts->heap[0]->at <= now) {
    struct timer *t = take(ts, 0);
    zkr__event_push_locked(s, t->ev);
    free(t);
  }
  return ts->n > 0 ? ts->heap[0]->at : -1;
}

void zkr__timers_free(struct zkr__timers *ts) {
  for (size_t i = 0; i < ts->n; i++) {
    free(ts->heap[i]->ev);
    free(ts->heap[i]);
  }
  free(ts->heap);
  free(ts->index);
  ts->heap = NULL;
  ts->index = NULL;
  ts->n = ts->cap = ts->icap = 0;
}
