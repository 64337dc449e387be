/* zkr internal declarations: everything here is zkr__ and not exported. */
#ifndef ZKR_PRIVATE_H
#define ZKR_PRIVATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper.h>

#include "list.h"
#include "zkr/zkr.h"

/* ---- time (time.c) ---- */
/* Monotonic clock in milliseconds. */
int64_t zkr__now_ms(void);
/* Absolute monotonic deadline for a relative timeout; negative: none (-1). */
int64_t zkr__deadline(int64_t timeout_ms);
/* Initialise a condition variable on the monotonic clock. */
int zkr__cond_init(pthread_cond_t *cv);
/* Wait on @cv until @deadline_ms (monotonic; negative = forever).
 * Returns 0, or ETIMEDOUT once the deadline has passed. */
int zkr__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         int64_t deadline_ms);
/* Sleep without holding anything, at most until @deadline_ms. */
void zkr__sleep_ms(int64_t ms);

/* ---- logging (log.c) ---- */
void zkr__log(zkr_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The ZooKeeper client's per-handle log callback. */
void zkr__zk_log_cb(const char *message);
/* The reserved tail of a public options struct (@type names it in the
 * log): ZKR_OK if its @n bytes are all zero, else logs and ZKR_EINVAL. */
int zkr__reserved_check(const unsigned char *tail, size_t n, const char *type);

/* ---- paths and strings (path.c) ---- */
#define ZKR__PATH_MAX 1024
/* Validate an absolute znode path. Returns ZKR_OK or ZKR_EBADPATH. */
int zkr__path_check(const char *path);
/* The checks of a blocking call on @path: zkr__path_check's result, then
 * ZKR_EDEADLK on a callback's thread, else ZKR_OK. */
int zkr__path_call_check(const char *path);
/* Validate "host:port[,host:port...][/chroot]"; an IPv6 address as
 * "[addr]:port" or "addr:port" (the port after the last ':'). Returns
 * ZKR_OK, ZKR_EBADCONN or ZKR_EBADPATH. */
int zkr__hosts_check(const char *hosts);
/* A checked connection string in the form the ZooKeeper C client takes:
 * IPv6 addresses without brackets (it would pass them to getaddrinfo) and
 * ports without leading zeros (it would read them as octal). Malloc'd;
 * NULL if out of memory. */
char *zkr__hosts_client(const char *hosts);
/* Join parent and child into a new string ("/" parent handled). */
char *zkr__path_join(const char *parent, const char *child);
char *zkr__strdup(const char *s);

/* ---- contender names (seq.c) ---- */
/* The sequence number ZooKeeper appended to @name; 0 if it has none (not a
 * contender). */
int zkr__seq_parse(const char *name, int32_t *seq);
/* Does @marker ("__READ__", "__rlock__") stand right before @name's
 * sequence number? */
int zkr__seq_marked(const char *name, const char *marker);
/* Order of two sequence numbers, safe across the signed 32-bit wrap:
 * negative if @a was issued before @b. */
int zkr__seq_cmp(int32_t a, int32_t b);

/* ---- errors (error.c) ---- */
/* Map a ZooKeeper client code to a zkr code. */
int zkr__from_zk(int zrc);
/* The one answer to "is this ZooKeeper error transient?" (error.c):
 * ZKR__ZC_RETRY, the same request may work on this ZooKeeper session
 * (connection loss, time-out); ZKR__ZC_WAIT, that session is going or gone
 * (expired, closing, an invalid handle, moved), so wait for the session
 * manager's next; ZKR__ZC_FINAL, the answer stands. */
enum { ZKR__ZC_FINAL = 0, ZKR__ZC_RETRY = 1, ZKR__ZC_WAIT = 2 };
int zkr__zk_class(int zrc);
/* Retry on this session (ZKR__ZC_RETRY)? */
static inline int zkr__retryable(int zrc) {
  return zkr__zk_class(zrc) == ZKR__ZC_RETRY;
}
/* Not final: retry, or wait for the connection or the next session. */
static inline int zkr__transient(int zrc) {
  return zkr__zk_class(zrc) != ZKR__ZC_FINAL;
}
/* The back-off (ms) before attempt @attempt (0-based). */
int64_t zkr__backoff_ms(int attempt);

/* ---- callback-thread detection ---- */
/* Non-zero while the current thread runs a zkr or ZooKeeper callback. */
extern _Thread_local int zkr__tls_in_callback;

/* ---- session internals (session.c) ---- */
void zkr__session_ref(zkr_session *s);
void zkr__session_unref(zkr_session *s);

/* Borrow the current ZooKeeper handle for one non-blocking zoo_a* call.
 * On ZKR_OK, *zh and *gen are set and the handle stays valid until
 * zkr__session_put_zh(). Fails with ZKR_ECLOSED, ZKR_ESESSIONLOST (no
 * handle: lost without renewal), ZKR_ECONNLOSS (no handle yet). */
int zkr__session_get_zh(zkr_session *s, zhandle_t **zh, uint64_t *gen);
void zkr__session_put_zh(zkr_session *s);

/* Wait until the session is CONNECTED or the deadline passes. */
int zkr__session_wait_usable(zkr_session *s, int64_t deadline_ms);

/* The generation (number of ZooKeeper sessions opened so far) and the
 * session id of the current one. */
uint64_t zkr__session_generation(zkr_session *s, int64_t *session_id);
/* The ACL of the nodes the session creates (zkr_session_options.acl). */
struct ACL_vector;
struct ACL_vector *zkr__session_acl(zkr_session *s);

/* The session mutex and its condition variable, for operation waiters:
 * every completion broadcasts, and closing the session does too. */
void zkr__session_lock(zkr_session *s);
void zkr__session_unlock(zkr_session *s);
/* Returns 0 or ETIMEDOUT. */
int zkr__session_wait_locked(zkr_session *s, int64_t deadline_ms);
void zkr__session_broadcast_locked(zkr_session *s);
int zkr__session_closing_locked(zkr_session *s);

/* Run fn(arg) on the session's event thread. The closure is owned by the
 * event queue: if the session is closed before it runs it still runs
 * (so resources are freed), with the session in state CLOSED. */
int zkr__session_post(zkr_session *s, void (*fn)(void *), void *arg);
/* The same with a node allocated beforehand by the poster, so that a post
 * needs no memory: a node is posted again only after its closure ran,
 * and the poster frees it (zkr__event_free) once it is not queued. Fails
 * only once the event thread has stopped (ZKR_ECLOSED). */
typedef struct event zkr__event;
struct event {
  uint64_t seq;
  int64_t sid;
  void (*fn)(void *);
  void *arg;
  zkr__list link; /* in s->evq while queued */
  int is_closure;
  zkr_session_event ev;
  int owned;            /* the poster's node: never freed by the event queue */
  int user;             /* a user callback: through zkr_session_dispatch() in
                           dispatch mode */
  void (*drop)(void *); /* a user closure not run (dispatch mode, the
                           session closed): frees what fn would */
};
zkr__event *zkr__event_new(void);
void zkr__event_free(zkr__event *e);
/* A poster's node inside the poster's own object (zkr__event_free() is
 * then not for it). */
void zkr__event_init(zkr__event *e);
int zkr__session_post_event(zkr_session *s, zkr__event *e, void (*fn)(void *),
                            void *arg);
/* A user callback: fn(arg) on the event thread, or in dispatch mode in
 * zkr_session_dispatch() on the application's thread. @drop(arg) instead
 * of fn when a dispatch-mode session closes before it ran. ZKR_ECLOSED
 * once closed (the caller then drops it, or in a session without
 * dispatch runs it itself); @e NULL: a node is allocated (ZKR_ENOMEM). */
int zkr__session_post_user(zkr_session *s, zkr__event *e, void (*fn)(void *),
                           void (*drop)(void *), void *arg);
/* Is @s in dispatch mode? (fixed at zkr_session_new()) */
int zkr__session_dispatching(const zkr_session *s);

/* Internal state hooks: called synchronously on the thread where the
 * state changed (ZooKeeper completion thread or the session's manager
 * thread), without session locks held. Must not block. */
typedef void (*zkr__state_hook)(zkr_session *s, zkr_session_event ev,
                                int64_t session_id, void *ctx);
typedef struct zkr__hook zkr__hook;
/* Add a hook; *out (may be NULL) is its handle for the removal. */
int zkr__session_hook_add(zkr_session *s, zkr__state_hook fn, void *ctx,
                          zkr__hook **out);
/* Remove a hook added to @s (NULL: nothing), in O(1); once it returns the
 * hook is not running on any other thread, and never runs again. */
void zkr__session_hook_remove(zkr_session *s, zkr__hook *h);

/* Watch registry: the session's single global watcher hands each node
 * event to the registrants for that path, once (watches are one-shot). */
typedef void (*zkr__watch_fn)(zkr_session *s, int type, const char *path,
                              void *ctx);
/* A data watch (exists, getData: creation, data change, deletion) or a
 * child watch (getChildren: a child created or deleted, the node's
 * deletion). */
typedef enum zkr__watch_kind {
  ZKR__WATCH_DATA = 1,
  ZKR__WATCH_CHILD = 2
} zkr__watch_kind;
int zkr__watch_add(zkr_session *s, const char *path, zkr__watch_kind kind,
                   zkr__watch_fn fn, void *ctx, uint64_t *id);
/* Unlink without waiting: returns 1 if the registrant was unlinked before
 * it was dispatched (it will never run), 0 if it already was (it runs or
 * ran). */
int zkr__watch_unlink(zkr_session *s, uint64_t id);
/* Is ZooKeeper session generation @gen the current one, and does the
 * session clock keep it as of now? The clock's rule (one rule, stated in
 * zkr_session_new(), lost_fraction) is applied here, on the caller's
 * thread: when it says lost, the caller treats what it held in @gen as
 * lost at once, and the manager thread is woken to declare the session
 * lost (listeners, hooks). */
int zkr__session_alive(zkr_session *s, uint64_t gen);
/* Connected, and not just resumed from a pause that could have cost the
 * session (the manager thread ticked within half the session timeout). */
int zkr__session_fresh(zkr_session *s);
/* Node watch events this session has received (wake-ups). */
uint64_t zkr__session_node_events(zkr_session *s);
/* Does the session open a new ZooKeeper session after a loss? */
int zkr__session_renews(zkr_session *s);

/* Timers: run fn(arg) on the event thread at @at_ms (monotonic). A timer
 * pending at close still runs (with the session CLOSED). Cancel returns 1
 * if the timer was removed before it was handed to the event thread. */
int zkr__timer_add(zkr_session *s, int64_t at_ms, void (*fn)(void *), void *arg,
                   uint64_t *id);
int zkr__timer_cancel(zkr_session *s, uint64_t id);

/* Background deletion of a node of ZooKeeper session @gen, retried across
 * connection losses until it succeeds or that session is gone. */
int zkr__session_bg_delete(zkr_session *s, const char *path, uint64_t gen);
/* Background deletion of every child of @parent whose name starts with
 * @prefix (a create whose reply was lost may have left one). */
int zkr__session_bg_cleanup(zkr_session *s, const char *parent,
                            const char *prefix, uint64_t gen);
/* Background deletion of the @n nodes @paths of ZooKeeper session @gen in
 * one transaction (a multi-lock's release), retried as above; if the
 * transaction fails for another reason (a node gone already), each node
 * is deleted alone. */
int zkr__session_bg_delete_set(zkr_session *s, char *const *paths, int n,
                               uint64_t gen);
/* Number of background deletions not finished (for tests). */
int zkr__session_bg_pending(zkr_session *s);
/* Remove the server-side watch of @kind on @path, unless another
 * registrant of this session still wants it. */
void zkr__session_unwatch(zkr_session *s, const char *path,
                          zkr__watch_kind kind);

/* ---- monitoring (stats.c) ---- */
int64_t zkr__now_us(void);
zkr_fail_cause zkr__fail_cause(int rc);
/* A duration's count, sum and maximum (its buckets are elsewhere). */
typedef struct zkr__fhist {
  uint64_t count, sum_us, max_us;
} zkr__fhist;
/* The part of an object's figures that most objects holding one lock
 * never need: it comes with the first release, loss or failure, or the
 * second wait. */
typedef struct zkr__figs_more {
  uint64_t released;
  uint64_t revocations;
  uint64_t failed[ZKR_FAIL_CAUSES];
  zkr__fhist hold;
  uint64_t bucket[2][ZKR_STATS_BUCKETS]; /* [0] the waits', [1] the holds' */
} zkr__figs_more;
/* An object's figures, as zkr_stats reports them, kept small: an object
 * that has acquired once and holds (or waits) needs 64 bytes, the bucket
 * of its one wait following from the wait's sum. All zero: none yet.
 * Under the owner's lock; zkr__figs_clear() frees the rest. */
typedef struct zkr__figs {
  uint64_t acquired, handoffs;
  zkr__fhist wait;
  zkr__figs_more *more; /* NULL until needed */
  uint32_t held, waiting;
  int no_more; /* out of memory when it was needed: kept without it since */
} zkr__figs;
void zkr__figs_clear(zkr__figs *o);
/* An object's figures, @o, under the owner's own lock; each also adds to
 * the session's figures and tells the session's lock hook. An acquisition
 * that succeeds begins @holds holds (a semaphore's: its leases), each
 * ended by zkr__stats_hold_end() (@lost: 0, released; else the
 * zkr_lost_cause). */
void zkr__stats_wait_begin(zkr_session *s, zkr__figs *o);
void zkr__stats_wait_end(zkr_session *s, zkr__figs *o, const char *recipe,
                         const char *path, const char *node, int rc,
                         int64_t wait_us, int handoff, int holds);
void zkr__stats_hold_end(zkr_session *s, zkr__figs *o, const char *recipe,
                         const char *path, const char *node, int lost,
                         int64_t hold_us);
/* A revocation request told to a hold of @o (under the owner's lock); an
 * eviction made by the session's zkr_revoke(). */
void zkr__stats_revocation(zkr_session *s, zkr__figs *o);
void zkr__stats_eviction(zkr_session *s);

/* The session's held locks, by path (a multi-lock refuses a path its
 * session holds: ZKR_EDEADLK). A queue embeds one; zkr__session_held()
 * adds it (@on) when a hold begins and takes it out when the hold ends
 * (either is a no-op when already done). O(1); zkr__session_holds() is
 * O(holds). @path must outlive the entry. */
struct zkr__held {
  zkr__list link;
  const char *path;
};
void zkr__session_held(zkr_session *s, struct zkr__held *h, int on);
int zkr__session_holds(zkr_session *s, const char *path);

/* waitfor.c: is there a cycle of waits through a set whose node at
 * @paths[i] is @nodes[i] (0 <= i < @n), among those queues? 1 (why into
 * @why; into *@ahead a NULL-ended list of the paths of the nodes the set
 * waits behind, for zkr__waitfor_free()), 0, or an error of
 * zkr_rwlock_participants() (*@ahead NULL then). Blocks (reads every
 * queue, each within @timeout_ms). */
int zkr__waitfor_cycle(zkr_session *s, char *const *paths, char *const *nodes,
                       int n, int64_t timeout_ms, char *why, size_t whylen,
                       char ***ahead);
void zkr__waitfor_free(char **ahead);
/* Copy @o (under the owner's lock) for a getter. */
int zkr__stats_copy(const zkr__figs *o, int state, zkr_stats *out, size_t size);
/* A threshold alarm for one wait or hold: NULL when that threshold is off
 * (or out of memory). Disarm it (which frees it) when the episode ends;
 * it fires at most once. */
typedef struct zkr__alarm zkr__alarm;
/* The first contender of a queue, for an alert that names the holder in
 * the way: handed to zkr__alarm_arm() by the layer that arms it (the
 * monitoring calls no layer above it). Malloc'd strings; ZKR_OK or an
 * error (ZKR_ENONODE: none). */
typedef struct zkr__holder {
  char *node, *data;
  int64_t session_id;
} zkr__holder;
typedef int (*zkr__holder_fn)(zkr_session *s, const char *path,
                              int64_t deadline_ms, zkr__holder *out);
zkr__alarm *zkr__alarm_arm(zkr_session *s, zkr_alert_kind kind,
                           const char *recipe, const char *path,
                           const char *node, zkr__holder_fn holder);
void zkr__alarm_set_node(zkr__alarm *a, const char *node);
void zkr__alarm_disarm(zkr__alarm *a);

/* ---- synchronous operations with deadline and retry (zkops.c) ---- */
typedef struct zkr__result {
  struct Stat stat;           /* create2/exists/get/set */
  char *path;                 /* create: the created path (malloc'd) */
  char *data;                 /* get: the value (malloc'd, NUL-added) */
  int datalen;                /* get: its length, -1 for null data */
  struct String_vector names; /* children: the names (free with
                                 zkr__result_clear) */
} zkr__result;
void zkr__result_clear(zkr__result *r);

/* Each returns a zkr code. Connection loss and operation time-outs are
 * retried with bounded back-off until @deadline_ms (absolute monotonic;
 * negative = no deadline). */
/* A flag of zkr__zk_create(): the open ACL, not the session's (a lock
 * path's ancestors, shared with other locks). Not ZooKeeper's. */
#define ZKR__CREATE_OPEN 0x40000000
int zkr__zk_create(zkr_session *s, const char *path, const char *data,
                   int datalen, int flags, int64_t deadline_ms,
                   zkr__result *res);
int zkr__zk_delete(zkr_session *s, const char *path, int version,
                   int64_t deadline_ms);
int zkr__zk_exists(zkr_session *s, const char *path, int64_t deadline_ms,
                   zkr__result *res);
int zkr__zk_get(zkr_session *s, const char *path, int64_t deadline_ms,
                zkr__result *res);
/* Read @n nodes at once (pipelined): rcs[i] and res[i] for paths[i]
 * (ZKR_ENONODE for one gone). Returns an error only if the session could
 * not be used at all; each node's own result is in rcs. */
int zkr__zk_get_many(zkr_session *s, char *const *paths, int n,
                     int64_t deadline_ms, zkr__result *res, int *rcs);
int zkr__zk_set(zkr_session *s, const char *path, const char *data, int datalen,
                int version, int64_t deadline_ms);
/* The same, with the node's new stat in @res->stat. */
int zkr__zk_set_stat(zkr_session *s, const char *path, const char *data,
                     int datalen, int version, int64_t deadline_ms,
                     zkr__result *res);
int zkr__zk_children(zkr_session *s, const char *path, int64_t deadline_ms,
                     zkr__result *res);
/* A multi-op, not retried (its outcome is unknown after a connection
 * loss: ZKR_ECONNLOSS). When the server answered, *zrc is its code and
 * @results are filled (also when it failed). */
/* The first contender at @path (the lowest sequence number among its
 * ephemeral children), with its data and session: a zkr__holder_fn. */
int zkr__zk_first_contender(zkr_session *s, const char *path,
                            int64_t deadline_ms, zkr__holder *out);
int zkr__zk_multi(zkr_session *s, int count, const zoo_op_t *ops,
                  zoo_op_result_t *results, int64_t deadline_ms, int *zrc);
/* Send a multi on the current handle without waiting: ZKR_OK (@done runs
 * on the client's completion thread with @data, once), ZKR_ECONNLOSS (not
 * connected now), ZKR_ECLOSED, or another code; nothing sent on error. */
int zkr__zk_amulti(zkr_session *s, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results, void (*done)(int, const void *),
                   const void *data);

#endif /* ZKR_PRIVATE_H */
