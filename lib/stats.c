/*
 * Monitoring: the figures of each lock object and of each session, the
 * lock hook, and the threshold alerts.
 *
 * Owns: the histogram rule (fixed log-scale buckets), the session's
 * aggregate (atomics: updated by every lock object of the session without
 * a lock), the delivery of lock events to the hook (event thread), the
 * alarms (one session timer each, armed only when a threshold is set) and
 * the alert thread that reads a long wait's holder and calls the user.
 * Must not touch: an object's own figures other than through the caller's
 * lock (the engine's q->mu, the semaphore's mu), the queue's internals.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session-int.h"

int64_t zkr__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- histograms ---- */

static int bucket_of(int64_t us) {
  int i = 0;
  while (i < ZKR_STATS_BUCKETS - 1 && (uint64_t)us > ZKR_STATS_BUCKET_LE_US(i))
    i++;
  return i;
}

/* Under the owner's lock: @o's second part, made when first needed, with
 * the bucket of the one wait before it (NULL out of memory). */
static zkr__figs_more *more_of(zkr__figs *o) {
  if (o->more || o->no_more)
    return o->more;
  o->more = calloc(1, sizeof *o->more);
  if (!o->more) {
    o->no_more = 1;
    zkr__log(ZKR_LOG_WARN, "out of memory: a lock object's figures keep "
                           "acquisitions and waits only from now on");
    return NULL;
  }
  if (o->wait.count == 1)
    o->more->bucket[0][bucket_of((int64_t)o->wait.sum_us)] = 1;
  return o->more;
}

static void fhist_add(zkr__fhist *h, uint64_t *bucket, int64_t us) {
  h->count++;
  h->sum_us += (uint64_t)us;
  if ((uint64_t)us > h->max_us)
    h->max_us = (uint64_t)us;
  if (bucket)
    bucket[bucket_of(us)]++;
}

/* Under the owner's lock: one more wait (@which 0) or hold (1). */
static void hist_add(zkr__figs *o, int which, int64_t us) {
  if (us < 0)
    us = 0;
  zkr__figs_more *m = which || o->wait.count > 0 ? more_of(o) : o->more;
  if (which) {
    if (m)
      fhist_add(&m->hold, m->bucket[1], us);
  } else {
    fhist_add(&o->wait, m ? m->bucket[0] : NULL, us);
  }
}

static void hist_read(const zkr__figs *o, int which, zkr_histogram *out) {
  const zkr__figs_more *m = o->more;
  const zkr__fhist *h = which ? (m ? &m->hold : NULL) : &o->wait;
  memset(out, 0, sizeof *out);
  if (!h)
    return;
  out->count = h->count;
  out->sum_us = h->sum_us;
  out->max_us = h->max_us;
  if (m)
    memcpy(out->bucket, m->bucket[which], sizeof out->bucket);
  else if (h->count == 1)
    out->bucket[bucket_of((int64_t)h->sum_us)] = 1;
}

void zkr__figs_clear(zkr__figs *o) {
  free(o->more);
  memset(o, 0, sizeof *o);
}

static void ahist_add(struct zkr__ahist *h, int64_t us) {
  if (us < 0)
    us = 0;
  atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum_us, (uint64_t)us, memory_order_relaxed);
  uint64_t m = atomic_load_explicit(&h->max_us, memory_order_relaxed);
  while ((uint64_t)us > m && !atomic_compare_exchange_weak_explicit(
                                 &h->max_us, &m, (uint64_t)us,
                                 memory_order_relaxed, memory_order_relaxed))
    ;
  atomic_fetch_add_explicit(&h->bucket[bucket_of(us)], 1, memory_order_relaxed);
}

static void ahist_read(struct zkr__ahist *h, zkr_histogram *out) {
  out->count = atomic_load_explicit(&h->count, memory_order_relaxed);
  out->sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
  out->max_us = atomic_load_explicit(&h->max_us, memory_order_relaxed);
  for (int i = 0; i < ZKR_STATS_BUCKETS; i++)
    out->bucket[i] = atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
}

#define INC(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)
#define DEC(x) atomic_fetch_sub_explicit(&(x), 1, memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

zkr_fail_cause zkr__fail_cause(int rc) {
  switch (rc) {
  case ZKR_ETIMEDOUT:
    return ZKR_FAIL_TIMEDOUT;
  case ZKR_EWOULDBLOCK:
    return ZKR_FAIL_REFUSED;
  case ZKR_ECANCELED:
    return ZKR_FAIL_CANCELED;
  case ZKR_ELOCKLOST:
    return ZKR_FAIL_LOST;
  case ZKR_ECLOSED:
  case ZKR_ESESSIONLOST:
    return ZKR_FAIL_CLOSED;
  default:
    return ZKR_FAIL_ERROR;
  }
}

/* ---- the lock hook ---- */

/* One allocation per event: the record and its three strings after it. */
struct hook_rec {
  zkr_session *s;
  zkr_lock_event ev;
  char text[];
};

static void hook_run(void *arg) {
  struct hook_rec *r = arg;
  zkr_session *s = r->s;
  if (s->opts.lock_hook)
    s->opts.lock_hook(&r->ev, s->opts.lock_hook_ud);
  free(r);
}

static void hook_post(zkr_session *s, zkr_lock_event_type type,
                      const char *recipe, const char *path, const char *node,
                      int err, zkr_fail_cause cause, int64_t wait_us,
                      int64_t hold_us) {
  if (!s->opts.lock_hook)
    return;
  recipe = recipe ? recipe : "";
  path = path ? path : "";
  size_t lr = strlen(recipe) + 1, lp = strlen(path) + 1;
  size_t ln = node ? strlen(node) + 1 : 0;
  struct hook_rec *r = malloc(sizeof *r + lr + lp + ln);
  if (!r) {
    zkr__log(ZKR_LOG_WARN, "out of memory: a lock event was not delivered");
    return;
  }
  memset(r, 0, sizeof *r);
  r->s = s;
  char *t = r->text;
  r->ev.recipe = memcpy(t, recipe, lr);
  r->ev.path = memcpy(t + lr, path, lp);
  r->ev.node = node ? memcpy(t + lr + lp, node, ln) : NULL;
  r->ev.type = type;
  r->ev.error = err;
  r->ev.cause = cause;
  r->ev.wait_us = wait_us;
  r->ev.hold_us = hold_us;
  if (zkr__session_post_user(s, NULL, hook_run, free, r) != ZKR_OK)
    free(r); /* the session is closed: no more events */
}

/* ---- an object's figures (under its owner's lock) ---- */

void zkr__stats_wait_begin(zkr_session *s, zkr__figs *o) {
  o->waiting++;
  INC(s->agg.waiting);
}

void zkr__stats_wait_end(zkr_session *s, zkr__figs *o, const char *recipe,
                         const char *path, const char *node, int rc,
                         int64_t wait_us, int handoff, int holds) {
  if (o->waiting > 0) {
    o->waiting--;
    DEC(s->agg.waiting);
  }
  hist_add(o, 0, wait_us);
  ahist_add(&s->agg.wait, wait_us);
  if (rc == ZKR_OK) {
    o->acquired++;
    o->held += (uint32_t)holds;
    INC(s->agg.acquired);
    atomic_fetch_add_explicit(&s->agg.held, holds, memory_order_relaxed);
    if (handoff) {
      o->handoffs++;
      INC(s->agg.handoffs);
    }
    hook_post(s, ZKR_LOCK_EV_ACQUIRED, recipe, path, node, ZKR_OK,
              ZKR_FAIL_ERROR, wait_us, 0);
  } else {
    zkr_fail_cause c = zkr__fail_cause(rc);
    zkr__figs_more *m = more_of(o);
    if (m)
      m->failed[c]++;
    INC(s->agg.failed[c]);
    hook_post(s, ZKR_LOCK_EV_FAILED, recipe, path, node, rc, c, wait_us, 0);
  }
}

void zkr__stats_hold_end(zkr_session *s, zkr__figs *o, const char *recipe,
                         const char *path, const char *node, int lost,
                         int64_t hold_us) {
  if (o->held > 0) {
    o->held--;
    DEC(s->agg.held);
  }
  hist_add(o, 1, hold_us);
  ahist_add(&s->agg.hold, hold_us);
  zkr__figs_more *m = more_of(o);
  zkr_fail_cause c =
      lost == ZKR_LOST_MAX_HOLD ? ZKR_FAIL_MAX_HOLD : ZKR_FAIL_LOST;
  if (lost) {
    if (m)
      m->failed[c]++;
    INC(s->agg.failed[c]);
  } else {
    if (m)
      m->released++;
    INC(s->agg.released);
  }
  hook_post(s, lost ? ZKR_LOCK_EV_LOST : ZKR_LOCK_EV_RELEASED, recipe, path,
            node, lost ? ZKR_ELOCKLOST : ZKR_OK, lost ? c : ZKR_FAIL_ERROR, 0,
            hold_us);
}

void zkr__stats_revocation(zkr_session *s, zkr__figs *o) {
  zkr__figs_more *m = o ? more_of(o) : NULL;
  if (m)
    m->revocations++;
  INC(s->agg.revocations);
}

void zkr__stats_eviction(zkr_session *s) {
  INC(s->agg.evictions);
}

/* ---- the held locks, by path ---- */

void zkr__session_held(zkr_session *s, struct zkr__held *h, int on) {
  pthread_mutex_lock(&s->held_mu);
  if (on && !zkr__list_linked(&h->link))
    zkr__list_push_back(&s->held, &h->link);
  else if (!on && zkr__list_linked(&h->link))
    zkr__list_remove(&h->link);
  pthread_mutex_unlock(&s->held_mu);
}

int zkr__session_holds(zkr_session *s, const char *path) {
  int found = 0;
  pthread_mutex_lock(&s->held_mu);
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->held) {
    if (strcmp(zkr__list_entry(n, struct zkr__held, link)->path, path) == 0) {
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&s->held_mu);
  return found;
}

/* The first version of zkr_stats ends after losses. */
#define STATS_V1_SIZE (offsetof(zkr_stats, losses) + sizeof(uint64_t))

/* @t, a complete zkr_stats, to the caller's @out of @size bytes. */
static int stats_out(zkr_stats *t, int state, zkr_stats *out, size_t size) {
  if (!out || size < STATS_V1_SIZE)
    return ZKR_EINVAL;
  t->state = state;
  t->size = size < sizeof *t ? size : sizeof *t;
  memcpy(out, t, t->size);
  return ZKR_OK;
}

int zkr__stats_copy(const zkr__figs *o, int state, zkr_stats *out,
                    size_t size) {
  zkr_stats t;
  memset(&t, 0, sizeof t);
  t.acquired = o->acquired;
  if (o->more) {
    t.released = o->more->released;
    t.revocations = o->more->revocations;
    for (int i = 0; i < ZKR_FAIL_CAUSES; i++)
      t.failed[i] = o->more->failed[i];
  }
  t.handoffs = o->handoffs;
  hist_read(o, 0, &t.wait);
  hist_read(o, 1, &t.hold);
  t.held = o->held;
  t.waiting = o->waiting;
  return stats_out(&t, state, out, size);
}

int zkr_session_stats(const zkr_session *cs, zkr_stats *out, size_t size) {
  if (!cs || !out || size < STATS_V1_SIZE)
    return ZKR_EINVAL;
  zkr_session *s = (zkr_session *)cs;
  zkr_stats t;
  memset(&t, 0, sizeof t);
  t.acquired = LOAD(s->agg.acquired);
  t.released = LOAD(s->agg.released);
  for (int i = 0; i < 8; i++)
    t.failed[i] = LOAD(s->agg.failed[i]);
  t.handoffs = LOAD(s->agg.handoffs);
  ahist_read(&s->agg.wait, &t.wait);
  ahist_read(&s->agg.hold, &t.hold);
  int held = LOAD(s->agg.held), waiting = LOAD(s->agg.waiting);
  t.held = held > 0 ? (uint32_t)held : 0;
  t.waiting = waiting > 0 ? (uint32_t)waiting : 0;
  t.suspensions = LOAD(s->agg.suspensions);
  t.reconnects = LOAD(s->agg.reconnects);
  t.losses = LOAD(s->agg.losses);
  t.revocations = LOAD(s->agg.revocations);
  t.evictions = LOAD(s->agg.evictions);
  pthread_mutex_lock(&s->mu);
  zkr_session_state state = s->state;
  pthread_mutex_unlock(&s->mu);
  return stats_out(&t, (int)state, out, size);
}

/* Under s->mu: a state event of the session. */
void zkr__stats_session_event(zkr_session *s, zkr_session_event ev) {
  if (ev == ZKR_EV_SUSPENDED)
    INC(s->agg.suspensions);
  else if (ev == ZKR_EV_RECONNECTED)
    INC(s->agg.reconnects);
  else if (ev == ZKR_EV_LOST)
    INC(s->agg.losses);
}

/* ---- alarms and the alert thread ---- */

struct zkr__alarm {
  zkr_session *s;
  pthread_mutex_t mu;
  int refs; /* the owner's and the timer's */
  int armed;
  uint64_t timer_id;
  zkr_alert_kind kind;
  int64_t since_ms;
  char *recipe, *path, *node;
  zkr__holder_fn holder;
};

struct ajob {
  zkr_alert_kind kind;
  int64_t elapsed_ms;
  char *recipe, *path, *node;
  zkr__holder_fn holder;
  zkr__list link; /* in s->alert_jobs */
  /* the alert, once the alert thread has read the holder */
  zkr_session *s;
  zkr_alert al;
  zkr__holder h;
  char *id, *host, *pid;
};

static void ajob_free(void *arg) {
  struct ajob *j = arg;
  free(j->recipe);
  free(j->path);
  free(j->node);
  free(j->id);
  free(j->host);
  free(j->pid);
  free(j->h.node);
  free(j->h.data);
  free(j);
}

static void alarm_unref(zkr__alarm *a) {
  pthread_mutex_lock(&a->mu);
  int last = --a->refs == 0;
  pthread_mutex_unlock(&a->mu);
  if (!last)
    return;
  pthread_mutex_destroy(&a->mu);
  free(a->recipe);
  free(a->path);
  free(a->node);
  free(a);
}

/* Event thread: the threshold is crossed; hand the alert to the alert
 * thread if the wait or hold still goes on. */
static void alarm_fired(void *arg) {
  zkr__alarm *a = arg;
  zkr_session *s = a->s;
  struct ajob *j = NULL;
  pthread_mutex_lock(&a->mu);
  if (a->armed) {
    a->armed = 0; /* once per episode */
    j = calloc(1, sizeof *j);
    if (j) {
      j->kind = a->kind;
      j->holder = a->holder;
      j->elapsed_ms = zkr__now_ms() - a->since_ms;
      j->recipe = zkr__strdup(a->recipe);
      j->path = zkr__strdup(a->path);
      j->node = a->node ? zkr__strdup(a->node) : NULL;
      if (!j->recipe || !j->path || (a->node && !j->node)) {
        ajob_free(j);
        j = NULL;
      }
    }
    if (!j)
      zkr__log(ZKR_LOG_WARN, "out of memory: an alert was not delivered");
  }
  pthread_mutex_unlock(&a->mu);
  if (j) {
    pthread_mutex_lock(&s->alert_mu);
    if (s->alert_stop) {
      ajob_free(j);
    } else {
      zkr__list_push_back(&s->alert_jobs, &j->link);
      pthread_cond_signal(&s->alert_cv);
    }
    pthread_mutex_unlock(&s->alert_mu);
  }
  alarm_unref(a);
}

zkr__alarm *zkr__alarm_arm(zkr_session *s, zkr_alert_kind kind,
                           const char *recipe, const char *path,
                           const char *node, zkr__holder_fn holder) {
  int64_t ms =
      kind == ZKR_ALERT_WAIT ? s->opts.alert_wait_ms : s->opts.alert_hold_ms;
  if (ms <= 0 || !s->opts.alert_fn)
    return NULL;
  zkr__alarm *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->s = s;
  a->kind = kind;
  a->holder = holder;
  a->refs = 2;
  a->armed = 1;
  a->since_ms = zkr__now_ms();
  a->recipe = zkr__strdup(recipe);
  a->path = zkr__strdup(path);
  a->node = node ? zkr__strdup(node) : NULL;
  pthread_mutex_init(&a->mu, NULL);
  if (!a->recipe || !a->path || (node && !a->node) ||
      zkr__timer_add(s, a->since_ms + ms, alarm_fired, a, &a->timer_id) !=
          ZKR_OK) {
    a->refs = 1;
    alarm_unref(a);
    return NULL;
  }
  return a;
}

void zkr__alarm_set_node(zkr__alarm *a, const char *node) {
  if (!a)
    return;
  char *n = node ? zkr__strdup(node) : NULL;
  pthread_mutex_lock(&a->mu);
  free(a->node);
  a->node = n;
  pthread_mutex_unlock(&a->mu);
}

void zkr__alarm_disarm(zkr__alarm *a) {
  if (!a)
    return;
  pthread_mutex_lock(&a->mu);
  a->armed = 0;
  pthread_mutex_unlock(&a->mu);
  if (zkr__timer_cancel(a->s, a->timer_id))
    alarm_unref(a); /* the timer's reference: it will never run */
  alarm_unref(a);
}

/* "host=H pid=P id=I": the value of @key (up to the next space, or the
 * rest for id=). */
static char *field(const char *data, const char *key, int rest) {
  size_t kl = strlen(key);
  for (const char *p = data; p && *p;) {
    if (strncmp(p, key, kl) == 0 && (p == data || p[-1] == ' ')) {
      const char *v = p + kl;
      size_t n = rest ? strlen(v) : strcspn(v, " ");
      char *out = malloc(n + 1);
      if (out) {
        memcpy(out, v, n);
        out[n] = '\0';
      }
      return out;
    }
    p = strchr(p, ' ');
    if (p)
      p++;
  }
  return NULL;
}

static void alert_call(void *arg) {
  struct ajob *j = arg;
  j->s->opts.alert_fn(&j->al, j->s->opts.alert_ud);
  ajob_free(j);
}

/* Read the holder (blocking, on the alert thread), then call the user's
 * function here, or in dispatch mode hand it to zkr_session_dispatch().
 * Frees @j. */
static void alert_run(zkr_session *s, struct ajob *j) {
  zkr_alert *al = &j->al;
  memset(al, 0, sizeof *al);
  j->s = s;
  al->kind = j->kind;
  al->recipe = j->recipe;
  al->path = j->path;
  al->node = j->node;
  al->elapsed_ms = j->elapsed_ms;
  if (j->kind == ZKR_ALERT_WAIT && j->holder &&
      j->holder(s, j->path, zkr__deadline(5000), &j->h) == ZKR_OK) {
    al->holder_node = j->h.node;
    al->holder_data = j->h.data;
    al->holder_session = j->h.session_id;
    if (j->h.data) {
      j->id = field(j->h.data, "id=", 1);
      j->host = field(j->h.data, "host=", 0);
      j->pid = field(j->h.data, "pid=", 0);
    }
    al->holder_id = j->id;
    al->holder_host = j->host;
    al->holder_pid = j->pid ? strtoll(j->pid, NULL, 10) : 0;
  }
  if (!zkr__session_dispatching(s))
    alert_call(j);
  else if (zkr__session_post_user(s, NULL, alert_call, ajob_free, j) != ZKR_OK)
    ajob_free(j); /* (closed: dropped) */
}

static void *alert_main(void *arg) {
  zkr_session *s = arg;
  pthread_mutex_lock(&s->alert_mu);
  for (;;) {
    while (zkr__list_empty(&s->alert_jobs) && !s->alert_stop)
      pthread_cond_wait(&s->alert_cv, &s->alert_mu);
    if (s->alert_stop)
      break;
    struct ajob *j =
        zkr__list_entry(zkr__list_first(&s->alert_jobs), struct ajob, link);
    zkr__list_remove(&j->link);
    pthread_mutex_unlock(&s->alert_mu);
    alert_run(s, j);
    pthread_mutex_lock(&s->alert_mu);
  }
  pthread_mutex_unlock(&s->alert_mu);
  return NULL;
}

int zkr__alerts_start(zkr_session *s) {
  if (!s->opts.alert_fn)
    return ZKR_OK;
  if (pthread_create(&s->alert_thread, NULL, alert_main, s) != 0)
    return ZKR_ENOMEM;
  s->alert_started = 1;
  return ZKR_OK;
}

void zkr__alerts_stop(zkr_session *s) {
  pthread_mutex_lock(&s->alert_mu);
  s->alert_stop = 1;
  pthread_cond_broadcast(&s->alert_cv);
  pthread_mutex_unlock(&s->alert_mu);
  if (s->alert_started) {
    pthread_join(s->alert_thread, NULL);
    s->alert_started = 0;
  }
  pthread_mutex_lock(&s->alert_mu);
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->alert_jobs) {
    zkr__list_remove(n);
    ajob_free(zkr__list_entry(n, struct ajob, link));
  }
  pthread_mutex_unlock(&s->alert_mu);
}

void zkr__alerts_destroy(zkr_session *s) {
  pthread_mutex_destroy(&s->held_mu);
  pthread_mutex_destroy(&s->alert_mu);
  pthread_cond_destroy(&s->alert_cv);
}
