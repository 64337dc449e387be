/*
 * The base of the asynchronous recipe objects (see object.h): one lock,
 * references, deferred user calls and posted jobs, written once.
 *
 * Owns: the base's fields. Must not touch: what the embedding object
 * keeps (its destroy hook frees that), the session's internals.
 */
#include "config.h"

#include <stdlib.h>

#include "object.h"

void zkr__obj_init(zkr__obj *o, zkr_session *s, void (*destroy)(zkr__obj *)) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&o->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  zkr__cond_init(&o->cv);
  o->depth = 0;
  o->refs = 1;
  o->freed = 0;
  o->calling = 0;
  zkr__list_init(&o->deferred);
  o->s = s;
  zkr__session_ref(s); /* used until the object goes, also once closed */
  o->destroy = destroy;
  o->user = 0;
  o->dposted = 0;
  zkr__event_init(&o->dev);
}

void zkr__obj_set_user(zkr__obj *o) {
  o->user = 1;
}

void zkr__obj_lock(zkr__obj *o) {
  pthread_mutex_lock(&o->mu);
  o->depth++;
}

/* Under mu, held once: run the deferred calls, each without mu. Comes
 * back with mu and one more reference (dropped once mu is let go: a call
 * may retire the object). */
static void run_deferred(zkr__obj *o, int drop) {
  o->refs++;
  o->calling++;
  zkr__list *n;
  while ((n = zkr__list_first(&o->deferred)) != NULL) {
    zkr__obj_call *c = zkr__list_entry(n, zkr__obj_call, link);
    zkr__list_remove(n);
    int call = !o->freed && !drop;
    o->depth--;
    pthread_mutex_unlock(&o->mu);
    if (call)
      zkr__tls_in_callback++;
    c->fn(o, c, call);
    if (call)
      zkr__tls_in_callback--;
    pthread_mutex_lock(&o->mu);
    o->depth++;
  }
  if (--o->calling == 0)
    pthread_cond_broadcast(&o->cv);
}

/* Dispatch mode: run (or, @drop, drop) what was deferred; holds the
 * reference taken when it was queued. */
/* Under mu, held once: run (or drop) the deferred calls if @run, then let
 * go of mu. */
static void unlock_running(zkr__obj *o, int run, int drop) {
  if (run)
    run_deferred(o, drop);
  o->depth--;
  pthread_mutex_unlock(&o->mu);
  if (run)
    zkr__obj_unref(o);
}

static void dispatched(zkr__obj *o, int drop) {
  zkr__obj_lock(o);
  o->dposted = 0;
  /* (a thread running deferred calls runs those deferred meanwhile) */
  unlock_running(o, !zkr__list_empty(&o->deferred) && !o->calling, drop);
  zkr__obj_unref(o);
}

static void dispatch_run(void *arg) {
  dispatched(arg, 0);
}

static void dispatch_drop(void *arg) {
  dispatched(arg, 1);
}

void zkr__obj_unlock(zkr__obj *o) {
  /* (while one thread runs deferred calls, it also runs those deferred
   * meanwhile: one at a time, in order) */
  int run = o->depth == 1 && !zkr__list_empty(&o->deferred) && !o->calling;
  int drop = 0;
  if (run && o->user && zkr__session_dispatching(o->s)) {
    run = 0;
    if (!o->dposted) {
      o->dposted = 1;
      o->refs++;
      if (zkr__session_post_user(o->s, &o->dev, dispatch_run, dispatch_drop,
                                 o) != ZKR_OK) {
        o->dposted = 0; /* the session is closed: dropped */
        o->refs--;
        run = drop = 1;
      }
    }
  }
  unlock_running(o, run, drop);
}

void zkr__obj_ref(zkr__obj *o) {
  o->refs++;
}

void zkr__obj_unref_locked(zkr__obj *o) {
  o->refs--;
}

void zkr__obj_unref(zkr__obj *o) {
  pthread_mutex_lock(&o->mu);
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (!last)
    return;
  zkr_session *s = o->s;
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
  o->destroy(o);
  zkr__session_unref(s);
}

void zkr__obj_enter(zkr__obj *o) {
  zkr__obj_lock(o);
  o->refs++;
}

void zkr__obj_leave(zkr__obj *o) {
  zkr__obj_unlock(o);
  zkr__obj_unref(o);
}

int zkr__obj_wait(zkr__obj *o, int64_t deadline_ms) {
  o->depth = 0;
  int rc = zkr__cond_wait_until(&o->cv, &o->mu, deadline_ms);
  o->depth = 1;
  return rc;
}

void zkr__obj_broadcast(zkr__obj *o) {
  pthread_cond_broadcast(&o->cv);
}

void zkr__obj_defer(zkr__obj *o, zkr__obj_call *c) {
  zkr__list_push_back(&o->deferred, &c->link);
}

struct job {
  zkr__obj *o;
  void (*fn)(zkr__obj *o, void *arg);
  void *arg;
};

static void job_run(void *p) {
  struct job *j = p;
  zkr__obj *o = j->o;
  zkr__obj_lock(o);
  j->fn(o, j->arg);
  zkr__obj_unlock(o);
  free(j);
  zkr__obj_unref(o);
}

int zkr__obj_post(zkr__obj *o, void (*fn)(zkr__obj *o, void *arg), void *arg) {
  struct job *j = malloc(sizeof *j);
  if (!j)
    return ZKR_ENOMEM;
  j->o = o;
  j->fn = fn;
  j->arg = arg;
  o->refs++;
  int rc = zkr__session_post(o->s, job_run, j);
  if (rc == ZKR_OK)
    return ZKR_OK;
  free(j);
  o->refs--; /* (the caller holds mu, so another reference) */
  if (rc != ZKR_ECLOSED)
    return rc;
  fn(o, arg); /* nothing else drives it now */
  return ZKR_OK;
}

void zkr__obj_retire_locked(zkr__obj *o) {
  o->freed = 1;
  while (o->calling && !zkr__tls_in_callback)
    zkr__obj_wait(o, -1); /* a deferred call running on another thread */
}
