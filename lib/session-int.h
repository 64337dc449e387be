/*
 * What the parts of the session manager share (not for the rest of the
 * library, which uses zkr-private.h): the session's structure, and the
 * calls between its files.
 *
 *   session.c   the ZooKeeper handle, connecting, the session states and
 *               the session clock, listeners, the public session API
 *   event.c     the event queue and thread (below session.c and timer.c)
 *   hooks.c     the internal state hooks
 *   sessopts.c  the options and their defaults
 *   watch.c     the watch registry (data and child watches)
 *   timer.c     timers that run closures on the event thread
 *   bgdelete.c  deletions that must happen across connection losses
 *
 * Everything mutable in struct zkr_session is guarded by s->mu.
 */
#ifndef ZKR_SESSION_INT_H
#define ZKR_SESSION_INT_H

#include <stdatomic.h>

#include "list.h"
#include "zkr-private.h"

struct auth {
  char *scheme;
  char *cred;
  struct auth *next;
};

/* The session's options, defaults applied (sessopts.c). */
struct zkr__sopts {
  int session_timeout;
  int connect_timeout;
  double lost_fraction;
  int renew;
  struct auth *auth;
  int acl; /* zkr_acl_mode */
  zkr_lock_hook_fn lock_hook;
  void *lock_hook_ud;
  int64_t alert_wait_ms, alert_hold_ms;
  zkr_alert_fn alert_fn;
  void *alert_ud;
  int dispatch; /* user callbacks through zkr_session_dispatch() */
};

/* A histogram updated without a lock (stats.c). */
struct zkr__ahist {
  atomic_uint_fast64_t count, sum_us, max_us;
  atomic_uint_fast64_t bucket[ZKR_STATS_BUCKETS];
};

/* The session's figures: every lock object of the session adds to them
 * (stats.c). */
struct zkr__agg {
  atomic_uint_fast64_t acquired, released, handoffs;
  atomic_uint_fast64_t failed[8];
  struct zkr__ahist wait, hold;
  atomic_int held, waiting;
  atomic_uint_fast64_t suspensions, reconnects, losses;
  atomic_uint_fast64_t revocations, evictions;
};

struct listener {
  uint64_t id;
  uint64_t since; /* gets only events queued after this sequence number */
  zkr_session_listener_fn fn;
  void *ud;
  zkr__list link; /* in s->listeners, in id order */
};

struct zkr__hook {
  uint64_t id;
  zkr__state_hook fn;
  void *ctx;
  int running;    /* call_hooks() runs it (in this many threads) */
  int dead;       /* removed while it ran: the last call_hooks() frees it */
  zkr__list link; /* in s->hooks: O(1) adds and removals (one hook per
                     lock object) */
};

struct watch {
  uint64_t id;
  zkr__watch_kind kind;
  char *path;
  zkr__watch_fn fn;
  void *ctx;
  zkr__list link; /* in s->watches, newest first */
};

struct timer {
  uint64_t id;
  int64_t at;
  struct event *ev; /* the closure, allocated with the timer */
  size_t pos;       /* its place in the heap */
};

/* The pending timers (timer.c): a min-heap on (at, id), and an index
 * from id to timer (open addressing, capacity a power of two). */
struct zkr__timers {
  struct timer **heap;
  size_t n, cap;
  struct timer **index;
  size_t icap;
};

/* A deletion that must happen even across connection losses: retried on
 * every reconnection of the same ZooKeeper session, dropped when that
 * session is gone (its ephemeral nodes are gone with it). */
struct bgdel {
  char *path;   /* a node to delete, or a parent to clean (prefix) */
  char *prefix; /* non-NULL: delete children of path with this prefix */
  uint64_t gen; /* the ZooKeeper session it belongs to */
  int in_flight;
  /* a set (nset > 0): delete path and set[0..nset-2] in one transaction;
   * ops and res for the request in flight */
  int nset;
  char **set;
  zoo_op_t *ops;
  zoo_op_result_t *res;
  zkr_session *s;
  zkr__list link; /* in s->bgdels */
};
/* Free a background deletion (bgdelete.c). */
void zkr__bg_free(struct bgdel *b);

/* Per-handle context handed to zookeeper_init as the watcher context. */
struct hctx {
  zkr_session *s;
  uint64_t gen;
  int connected_once;
  int probing;  /* the first request on this handle is out */
  int verified; /* a server answered a request on it: the connection
                   counts as up from then on */
};

struct zkr_session {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* state changes, op completions, zh_users, dispatch */
  pthread_cond_t mcv; /* wakes the manager thread */
  pthread_cond_t ecv; /* wakes the event thread */
  atomic_int refs;

  char *hosts;
  struct zkr__sopts opts; /* opts.auth is owned */

  zhandle_t *zh;
  struct hctx *hctx;
  int zh_users;
  uint64_t gen; /* ZooKeeper sessions opened so far; +1 at every loss */

  zkr_session_state state;
  int64_t session_id;
  int timeout_ms; /* negotiated */
  int64_t suspended_at;
  int64_t tick_at; /* the manager thread's last wake-up (pause detection) */
  int64_t mgr_sleep_until; /* the manager waits on mcv until this monotonic
                              time; -1 while it runs (it reads the timers
                              before it waits again) */
  int need_renew;
  int64_t renew_at;
  int renew_enabled;
  int auth_failed;
  int auth_pending; /* zoo_add_auth replies not yet received */
  int closing;

  uint64_t next_id;
  uint64_t ev_seq;
  uint64_t node_events; /* node watch events received (tests, benchmark) */
  zkr__list listeners;  /* of struct listener */
  zkr__list hooks;      /* of struct zkr__hook, in id order */
  zkr__list watches;    /* of struct watch */
  uint64_t running_listener;
  pthread_t running_listener_thread;
  uint64_t running_hook;
  pthread_t running_hook_thread;
  uint64_t running_watch;
  pthread_t running_watch_thread;

  struct zkr__timers timers;
  zkr__list bgdels; /* of struct bgdel */

  zkr__list evq; /* of struct event, oldest first */
  int ev_stop;
  /* dispatch mode (event.c): the user callbacks waiting, an eventfd
   * readable while there are any, a thread dispatching, closed */
  zkr__list dq;
  size_t dq_len;
  int dfd;
  int d_running;
  int d_closed;
  pthread_t event_thread;
  pthread_t manager_thread;
  int threads_started;

  /* monitoring (stats.c) */
  struct zkr__agg agg;
  pthread_mutex_t alert_mu;
  pthread_cond_t alert_cv;
  zkr__list alert_jobs; /* of struct ajob (stats.c), under alert_mu */
  int alert_stop;
  int alert_started;
  pthread_t alert_thread;
  pthread_mutex_t held_mu; /* a leaf lock */
  zkr__list held;          /* of struct zkr__held, under held_mu */
};

/* ---- sessopts.c ---- */
/* Check @o (NULL: every default) and fill @dst from it with the defaults
 * (10 s session and connect timeouts, lost fraction 0.25, renewal on, no
 * credentials) where it has zeros, credentials copied. ZKR_OK, ZKR_EINVAL
 * (logged) or ZKR_ENOMEM; on failure @dst is untouched. */
int zkr__opts_from(struct zkr__sopts *dst, const zkr_session_options *o);
/* Free what zkr__opts_from() allocated. */
void zkr__opts_clear(struct zkr__sopts *o);

/* ---- stats.c ---- */
/* Under s->mu: count a state event of the session. */
void zkr__stats_session_event(zkr_session *s, zkr_session_event ev);
/* The alert thread (only if an alert function is set); its mutex and
 * condition are made in any case. Stop before the handle is closed. */
int zkr__alerts_start(zkr_session *s);
void zkr__alerts_stop(zkr_session *s);
void zkr__alerts_destroy(zkr_session *s);

/* ---- event.c ---- */
/* Under s->mu: queue @e for the event thread. */
void zkr__event_push_locked(zkr_session *s, struct event *e);
/* The event thread (pthread_create's start routine, with the session). */
void *zkr__event_main(void *arg);
/* Dispatch mode's queue and descriptor (made only in that mode):
 * ZKR_OK or ZKR_ESYS. Close: after the event thread has stopped, waits
 * for a dispatch under way, closes the descriptor and drops what is
 * queued (user posts fail from then on). */
int zkr__dispatch_open(zkr_session *s);
void zkr__dispatch_close(zkr_session *s);

/* ---- hooks.c ---- */
/* Without s->mu: run every internal state hook for @ev (in the order
 * added; a hook added meanwhile runs too). */
void zkr__hooks_call(zkr_session *s, zkr_session_event ev, int64_t sid);

/* ---- watch.c ---- */
/* Hand a node event to the registrants of @path it fires (one-shot). */
void zkr__watch_dispatch(zkr_session *s, struct hctx *hc, int type,
                         const char *path);

/* ---- timer.c ---- */
/* Under s->mu: hand every timer due at @now to the event thread; returns
 * the time the next one is due, or -1. */
int64_t zkr__timers_fire_locked(zkr_session *s, int64_t now);
/* Free the timers still pending (when struct zkr_session is freed). */
void zkr__timers_free(struct zkr__timers *ts);

/* ---- bgdelete.c ---- */
/* Under s->mu, after (re)connection: send what waits; drop what belongs
 * to a session that is gone. */
void zkr__bg_kick_locked(zkr_session *s);
/* Under s->mu: are deletions of the current session still to do? */
int zkr__bg_pending_locked(zkr_session *s);

#endif
