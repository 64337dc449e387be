/*
 * The base every asynchronous recipe object embeds (object.c): its lock,
 * its references, the "being freed" flag, the wait for a user callback
 * running on another thread, and the two ways work reaches the event
 * thread: a posted job (run there under the lock) and a deferred call
 * (run at the outermost unlock, without the lock, so that a user callback
 * that blocks holds up nothing but its own thread).
 *
 * Rules: the lock is recursive; a request, watch, timer or job in flight
 * holds a reference, and so does every call that may run a user callback
 * (which may free the object); the owner's reference is dropped by
 * zkr__obj_retire(); the last reference runs the object's destroy hook.
 * Lock order: an object, then the objects it owns, then the engine.
 */
#ifndef ZKR_OBJECT_H
#define ZKR_OBJECT_H

#include "list.h"
#include "zkr-private.h"

typedef struct zkr__obj zkr__obj;
struct zkr__obj {
  pthread_mutex_t mu; /* recursive */
  pthread_cond_t cv;  /* broadcast by zkr__obj_broadcast() and the end of
                         every deferred call */
  int depth;          /* how many times its holder holds mu */
  int refs;
  int freed;          /* retiring: user callbacks are no longer called */
  int calling;        /* deferred calls running now (without mu) */
  zkr__list deferred; /* zkr__obj_call nodes, in order */
  zkr_session *s;     /* referenced until the object is destroyed */
  void (*destroy)(zkr__obj *o);
  int user;    /* its deferred calls are the user's callbacks: in a
                  dispatch-mode session they run in zkr_session_dispatch() */
  int dposted; /* dev is queued for zkr_session_dispatch() */
  zkr__event dev;
};

/* A call to make at the outermost unlock (embed it, or allocate it). */
typedef struct zkr__obj_call zkr__obj_call;
struct zkr__obj_call {
  zkr__list link;
  /* Runs without mu, on the unlocking thread. @call is 0 once the object
   * is retiring (the user is not called): free what the call owns. */
  void (*fn)(zkr__obj *o, zkr__obj_call *c, int call);
};

/* Set up @o with one reference (the owner's) and one on @s. @destroy
 * frees the embedding structure; it runs without mu, once, when the last
 * reference goes (after the base's own parts are released). */
void zkr__obj_init(zkr__obj *o, zkr_session *s, void (*destroy)(zkr__obj *));
/* Its deferred calls are user callbacks (see zkr__obj.user); before any
 * is deferred. */
void zkr__obj_set_user(zkr__obj *o);
void zkr__obj_lock(zkr__obj *o);
/* The outermost unlock first runs the deferred calls, one at a time, in
 * order, each without mu (and one more reference held meanwhile); those
 * of a user object in a dispatch-mode session are handed to
 * zkr_session_dispatch() instead, which runs them the same way (or drops
 * them, fn(o, c, 0), when the session closes first). */
void zkr__obj_unlock(zkr__obj *o);
/* Under mu: one reference more. */
void zkr__obj_ref(zkr__obj *o);
/* Under mu: one reference less that is known not to be the last (a
 * request that could not be sent, a watch unlinked before it ran). */
void zkr__obj_unref_locked(zkr__obj *o);
/* Drop a reference (takes mu); the last destroys. */
void zkr__obj_unref(zkr__obj *o);
/* Lock and hold a reference for a call that may run user callbacks;
 * leave undoes both (unlock first). */
void zkr__obj_enter(zkr__obj *o);
void zkr__obj_leave(zkr__obj *o);
/* Under mu, held once: wait on cv until @deadline_ms (monotonic; negative:
 * none). 0, or ETIMEDOUT once it passed. */
int zkr__obj_wait(zkr__obj *o, int64_t deadline_ms);
void zkr__obj_broadcast(zkr__obj *o);
/* Under mu: run @c at the outermost unlock. */
void zkr__obj_defer(zkr__obj *o, zkr__obj_call *c);
/* Run fn(o, arg) on the session's event thread, under mu, with a
 * reference held meanwhile (also once the object retires: fn checks
 * o->freed). Once the event thread has stopped (the session closed),
 * fn runs here and now, under mu. ZKR_OK or ZKR_ENOMEM. */
int zkr__obj_post(zkr__obj *o, void (*fn)(zkr__obj *o, void *arg), void *arg);
/* Under mu, held once: mark it retiring, then wait until no deferred
 * call runs on another thread (none is waited for on a callback's thread:
 * it may be the one running). Returns with mu still held. */
void zkr__obj_retire_locked(zkr__obj *o);

#endif
