/* zkr internal declarations: everything here is zkr__ and not exported. */
#ifndef ZKR_PRIVATE_H
#define ZKR_PRIVATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper.h>

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

/* ---- paths and strings (path.c) ---- */
#define ZKR__PATH_MAX 1024
/* Validate an absolute znode path. Returns ZKR_OK or ZKR_EBADPATH. */
int zkr__path_check(const char *path);
/* Validate "host:port[,host:port...][/chroot]". Returns ZKR_OK,
 * ZKR_EBADCONN or ZKR_EBADPATH. */
int zkr__hosts_check(const char *hosts);
/* Join parent and child into a new string ("/" parent handled). */
char *zkr__path_join(const char *parent, const char *child);
char *zkr__strdup(const char *s);

/* ---- errors (error.c) ---- */
/* Map a ZooKeeper client code to a zkr code. */
int zkr__from_zk(int zrc);

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

/* Internal state hooks: called synchronously on the thread where the
 * state changed (ZooKeeper completion thread or the session's manager
 * thread), without session locks held. Must not block. */
typedef void (*zkr__state_hook)(zkr_session *s, zkr_session_event ev,
                                int64_t session_id, void *ctx);
int zkr__session_hook_add(zkr_session *s, zkr__state_hook fn, void *ctx,
                          uint64_t *id);
void zkr__session_hook_remove(zkr_session *s, uint64_t id);

/* Watch registry: the session's single global watcher hands each node
 * event to the registrants for that path, once (watches are one-shot). */
typedef void (*zkr__watch_fn)(zkr_session *s, int type, const char *path,
                              void *ctx);
int zkr__watch_add(zkr_session *s, const char *path, zkr__watch_fn fn,
                   void *ctx, uint64_t *id);
/* After it returns the registrant is not running (unless this is its own
 * thread) and will never run. Unknown ids are ignored. */
void zkr__watch_remove(zkr_session *s, uint64_t id);

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
int zkr__zk_create(zkr_session *s, const char *path, const char *data,
                   int datalen, int flags, int64_t deadline_ms,
                   zkr__result *res);
int zkr__zk_delete(zkr_session *s, const char *path, int version,
                   int64_t deadline_ms);
int zkr__zk_exists(zkr_session *s, const char *path, int64_t deadline_ms,
                   zkr__result *res);
int zkr__zk_get(zkr_session *s, const char *path, int64_t deadline_ms,
                zkr__result *res);
int zkr__zk_set(zkr_session *s, const char *path, const char *data, int datalen,
                int version, int64_t deadline_ms);
int zkr__zk_children(zkr_session *s, const char *path, int64_t deadline_ms,
                     zkr__result *res);
/* Create @path and its missing ancestors as container nodes (@path itself
 * too unless @leaf_flags says otherwise: -1 = container). */
int zkr__zk_create_parents(zkr_session *s, const char *path,
                           int64_t deadline_ms);

/* The retry policy, exposed for tests: should this ZooKeeper code be
 * retried, and the back-off (ms) before attempt @attempt (0-based). */
int zkr__retryable(int zrc);
int64_t zkr__backoff_ms(int attempt);

#endif /* ZKR_PRIVATE_H */
