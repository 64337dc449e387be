/* zkr test helpers: the ZooKeeper sandbox from C, and a private root. */
#ifndef ZKR_TEST_ZKT_H
#define ZKR_TEST_ZKT_H

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "tap.h"
#include "zkr/zkr.h"

/* Start @n servers with scripts/zk-sandbox (in $ZKR_SANDBOX_DIR, set by
 * test/with-zk) and return the connection string (static storage).
 * Skips the whole program, with the reason, if no sandbox can run. */
const char *zkt_start(int n);
/* Run "zk-sandbox ARGS" and return its stdout (malloc'd, trailing newline
 * removed), or NULL if it failed. */
char *zkt_sandbox(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Send a four-letter word to server @id and return the reply (malloc'd). */
char *zkt_4lw(int id, const char *cmd);
/* The value of "key\tvalue" in an mntr reply, or -1. */
int64_t zkt_mntr(int id, const char *key);
/* How many data watches session @sid holds on server @id (from "wchc"),
 * and the first watched path into @first; -1 if wchc failed. */
int zkt_watches_of(int id, int64_t sid, char *first, size_t len);
/* Expire the ZooKeeper session of @s (see zkt.c); 0 once it is gone. */
struct zkr_session;
int zkt_expire(const char *hosts, struct zkr_session *s);
/* A root path private to this test program: /zkr-test/<name>-<pid>. */
const char *zkt_root(const char *name);
/* Milliseconds on the monotonic clock. */
int64_t zkt_now_ms(void);
/* Poll @cond (evaluated by the callback) every 10 ms until it holds or
 * @timeout_ms passes; returns whether it held. */
int zkt_wait_for(int (*cond)(void *), void *arg, int64_t timeout_ms);

/* Create @path and its missing ancestors (containers); a zkr code. */
int zkt_create_parents(zkr_session *s, const char *path, int64_t deadline_ms);
/* A session with @session_timeout_ms; bails out if it cannot connect. */
zkr_session *zkt_connect(const char *hosts, int session_timeout_ms);
/* @name under zkt_root()'s root (one of 8 rotating static buffers). */
const char *zkt_path(const char *name);
/* Children of @path read through @s (-1 if it does not exist); wait until
 * there are @want. */
int zkt_children(zkr_session *s, const char *path);
int zkt_children_become(zkr_session *s, const char *path, int want,
                        int64_t timeout_ms);
/* For zkt_wait_for(): session @arg has no background deletion pending. */
int zkt_bg_idle(void *arg);
/* Wait for @owner's background deletions, then count @path's children
 * through @reader. */
int zkt_settled_children(zkr_session *owner, zkr_session *reader,
                         const char *path);
/* All watches on server 1 (mntr's zk_watch_count: data and child
 * watches; wchc and wchs list data watches only); wait until it is @want. */
int64_t zkt_watch_count(void);
int zkt_watch_count_becomes(int64_t want, int64_t timeout_ms);
/* Wait until that count is at least @least (a fired watch is set again
 * by a request that may still be on its way when the caller looks). */
int zkt_watch_count_reaches(int64_t least, int64_t timeout_ms);
/* Wait until session @s holds @want data watches on server 1 (from wchc),
 * the one on @path if @want is 1 and @path is not NULL. */
int zkt_watches_become(zkr_session *s, const char *path, int want,
                       int64_t timeout_ms);
/* Children of @path in queue order (by sequence number) into @out (up to
 * @max, each malloc'd); returns how many. */
int zkt_queue_order(zkr_session *s, const char *path, char **out, int max);

/* A session listener that records events: zkr_session_add_listener(s,
 * zkt_rec_fn, &rec, NULL) after zkt_rec_init(&rec). With probe_blocking,
 * the listener also makes a blocking call and keeps its result in
 * blocking_rc (it must be ZKR_EDEADLK). */
#define ZKT_MAXEV 64
typedef struct zkt_rec {
  pthread_mutex_t mu;
  int n;
  zkr_session_event ev[ZKT_MAXEV];
  int64_t sid[ZKT_MAXEV], at[ZKT_MAXEV];
  int probe_blocking, blocking_rc;
} zkt_rec;
void zkt_rec_init(zkt_rec *r);
void zkt_rec_fn(zkr_session *s, zkr_session_event ev, int64_t sid, void *ud);
int zkt_rec_count(zkt_rec *r);
/* The first @ev recorded: 1 and its time and session id, or 0. */
int zkt_rec_find(zkt_rec *r, zkr_session_event ev, int64_t *at, int64_t *sid);
/* Wait until @ev is recorded, or until @n events are. */
int zkt_rec_wait(zkt_rec *r, zkr_session_event ev, int64_t timeout_ms);
int zkt_rec_wait_n(zkt_rec *r, int n, int64_t timeout_ms);
/* The events as "CONNECTED,SUSPENDED,...". */
void zkt_rec_str(zkt_rec *r, char *buf, size_t len);

/* A lock state recorder: .state_fn = zkt_state_fn, .state_user_data =
 * &log in the options, after zkt_statelog_init(&log); zkt_lost_seen(&log) for
 * zkt_wait_for(): a LOST was recorded. */
typedef struct zkt_statelog {
  pthread_mutex_t mu;
  zkr_lock_state last;
  int lost;
} zkt_statelog;
void zkt_statelog_init(zkt_statelog *l);
void zkt_state_fn(zkr_hold *lock, zkr_lock_state st, void *ud);
int zkt_lost_seen(void *arg);

/* Cancel @m's acquisition from another thread after @delay_ms: start
 * zkt_cancel_later with a zkt_canceller as its argument. */
typedef struct zkt_canceller {
  zkr_mutex *m;
  int delay_ms;
} zkt_canceller;
void *zkt_cancel_later(void *arg);

/* test/zkproxy between the client and @target ("host:port"): returns the
 * port it listens on (in a directory of its own under the sandbox's). */
int zkt_proxy_start(const char *target);
/* Send the proxy a command (see test/zkproxy.c: "cut-after-request OP",
 * "refuse", "accept", ...). */
void zkt_proxy_cmd(const char *cmd);
/* How many lines of the proxy's event file start with @prefix; wait until
 * at least @n do. */
int zkt_proxy_seen(const char *prefix);
int zkt_proxy_wait(const char *prefix, int n, int64_t timeout_ms);
/* Stop the proxy; its exit status (0: clean). */
int zkt_proxy_stop(void);

#endif
