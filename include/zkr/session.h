/*
 * zkr -- ZooKeeper recipes for C.
 * session.h: the shared session manager.
 *
 * A zkr_session owns one ZooKeeper handle (libzookeeper_mt) and is shared by
 * every recipe object created on it. It tracks the connection, tells
 * listeners about state changes, declares the session LOST by itself when
 * it has been disconnected for too long, opens a new ZooKeeper session after
 * a loss (unless told not to), re-adds credentials, and dispatches every
 * watch event to the recipe object that asked for it.
 *
 * THREAD SAFETY: a zkr_session is thread-safe: any thread may call any
 * function on it at any time. A zkr_session_opts object is not: use it from
 * one thread at a time. Listeners run on the session's event thread (one
 * callback at a time, in order); they must not block, and blocking zkr calls
 * made from them fail with ZKR_EDEADLK.
 */
#ifndef ZKR_SESSION_H
#define ZKR_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque session. */
typedef struct zkr_session zkr_session;
/** Opaque session options; copied by zkr_session_new(). */
typedef struct zkr_session_opts zkr_session_opts;

/** The state a session is in. */
typedef enum zkr_session_state {
  ZKR_STATE_CONNECTING = 0, /**< no ZooKeeper session yet (or being renewed) */
  ZKR_STATE_CONNECTED = 1,  /**< connected, the session is alive */
  ZKR_STATE_SUSPENDED = 2,  /**< disconnected; the session may still be alive */
  ZKR_STATE_LOST = 3,       /**< the session is gone; ephemeral nodes too */
  ZKR_STATE_CLOSED = 4      /**< zkr_session_close() was called */
} zkr_session_state;

/** What a listener is told. */
typedef enum zkr_session_event {
  ZKR_EV_CONNECTED = 1,   /**< a new ZooKeeper session is established */
  ZKR_EV_SUSPENDED = 2,   /**< connection dropped; session may be alive */
  ZKR_EV_RECONNECTED = 3, /**< connection back, same session */
  ZKR_EV_LOST = 4,        /**< session expired, or declared lost client-side */
  ZKR_EV_CLOSED = 5       /**< the session was closed; the last event */
} zkr_session_event;

/**
 * A state listener.
 * @s: the session.
 * @ev: the event.
 * @session_id: the ZooKeeper session id the event is about (for
 *   ZKR_EV_CONNECTED the new one, for ZKR_EV_LOST the one that was lost).
 * @user_data: as given to zkr_session_add_listener().
 * Runs on the session's event thread.
 */
typedef void (*zkr_session_listener_fn)(zkr_session *s, zkr_session_event ev,
                                        int64_t session_id, void *user_data);

/**
 * zkr_session_opts_new - allocate session options with the defaults:
 * session timeout 10000 ms, connect timeout 10000 ms, lost fraction 0.25,
 * renew after loss on, no credentials.
 * @out: receives the options; left untouched on failure.
 * Returns ZKR_OK, ZKR_EINVAL (@out NULL), ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_session_opts_new(zkr_session_opts **out);

/** zkr_session_opts_free - free options; NULL is a no-op. */
ZKR_EXTERN void zkr_session_opts_free(zkr_session_opts *opts);

/**
 * The session timeouts zkr_session_opts_set_session_timeout() accepts, in
 * milliseconds. Until the server has answered, the ZooKeeper C client uses
 * the requested value itself: it gives up on a connection attempt after
 * 2/3 of it (computed as ms * 2 / 3 in an int, which overflows from 2^30
 * on, so every attempt then fails at once), and pauses ms / 60 between
 * rounds over the servers (0, a busy loop, below 60 ms).
 */
#define ZKR_SESSION_TIMEOUT_MIN 100
#define ZKR_SESSION_TIMEOUT_MAX 1073741823 /* 2^30 - 1 */

/**
 * zkr_session_opts_set_session_timeout - the session timeout to request, in
 * milliseconds (the server clamps it to its own [min, max], by default
 * [2, 20] times its tickTime; the negotiated value is
 * zkr_session_timeout()).
 * Returns ZKR_OK, or ZKR_EINVAL if @opts is NULL or @ms is not in
 * [ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX] = [100, 2^30-1].
 */
ZKR_EXTERN int zkr_session_opts_set_session_timeout(zkr_session_opts *opts,
                                                    int ms);

/**
 * zkr_session_opts_set_connect_timeout - how long zkr_session_new() waits
 * for the first connection, in milliseconds.
 * Returns ZKR_OK, or ZKR_EINVAL if @opts is NULL or @ms < 1.
 */
ZKR_EXTERN int zkr_session_opts_set_connect_timeout(zkr_session_opts *opts,
                                                    int ms);

/**
 * zkr_session_opts_set_lost_fraction - the client-side session clock.
 * After the connection has been down for @fraction times the negotiated
 * session timeout, the session declares itself LOST without waiting to hear
 * it from a server. The ZooKeeper client notices a silent server only after
 * 2/3 of the timeout, so a server may expire the session as early as 1/3 of
 * the timeout after SUSPENDED: fractions below 1/3 (the default, 0.25)
 * guarantee that a lock holder learns of the loss before the ensemble can
 * give its lock to another client. Larger values ride out longer outages at
 * that risk.
 * Returns ZKR_OK, or ZKR_EINVAL if @opts is NULL or @fraction is not in
 * (0, 10].
 */
ZKR_EXTERN int zkr_session_opts_set_lost_fraction(zkr_session_opts *opts,
                                                  double fraction);

/**
 * zkr_session_opts_set_renew - whether a new ZooKeeper session is opened by
 * itself after LOST (default 1). With 0, a lost session stays LOST and
 * every operation on it fails with ZKR_ESESSIONLOST. A session whose
 * credentials the server refused is never renewed (they would fail again).
 * Returns ZKR_OK, or ZKR_EINVAL if @opts is NULL.
 */
ZKR_EXTERN int zkr_session_opts_set_renew(zkr_session_opts *opts, int renew);

/**
 * zkr_session_opts_add_auth - credentials to add to every ZooKeeper session
 * the session opens, e.g. scheme "digest", credentials "user:password".
 * May be called several times. The strings are copied.
 * Returns ZKR_OK, ZKR_EINVAL (NULL or empty @scheme, NULL @cred),
 * ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_session_opts_add_auth(zkr_session_opts *opts,
                                         const char *scheme, const char *cred);

/**
 * zkr_session_new - connect to a ZooKeeper ensemble.
 * @out: receives the session; left untouched on failure.
 * @hosts: "host:port[,host:port...][/chroot]". The chroot node must exist.
 * @opts: options (copied), or NULL for the defaults.
 *
 * Blocks until the first session is established or the connect timeout
 * passes. Must not be called from a zkr callback.
 * Returns ZKR_OK; ZKR_EINVAL (NULL @out or @hosts); ZKR_EBADCONN
 * (malformed @hosts); ZKR_EBADPATH (malformed chroot); ZKR_ECONNECT (no
 * server answered before the connect timeout, or a host name does not
 * resolve); ZKR_EAUTH (the server refused the credentials); ZKR_ENOMEM;
 * ZKR_ESYS (a thread could not be started); ZKR_EDEADLK.
 */
ZKR_EXTERN int zkr_session_new(zkr_session **out, const char *hosts,
                               const zkr_session_opts *opts);

/**
 * zkr_session_close - close the session and release the caller's reference.
 * The ZooKeeper session is closed (its ephemeral nodes go at once), pending
 * and future operations of every recipe on it fail with ZKR_ECLOSED, calls
 * blocked in zkr_session_wait_connected() return ZKR_ECLOSED, and listeners
 * get ZKR_EV_CLOSED as their last event (with the id of the session that
 * was open, or 0). Releases still being sent to the server are waited
 * for first, at most half the session timeout. Recipe objects still
 * holding the session stay valid
 * until freed; the memory goes with the last of them. Like free(), it ends
 * the caller's use of @s: no call on @s may start after it (except through
 * recipe objects, which keep their own reference).
 * NULL is a no-op (returns ZKR_OK).
 * Returns ZKR_OK; ZKR_EDEADLK (called from a zkr callback: nothing done);
 * ZKR_ECLOSED (already closed, only possible while a recipe object still
 * holds the session).
 */
ZKR_EXTERN int zkr_session_close(zkr_session *s);

/** zkr_session_state_get - the current state; ZKR_STATE_CLOSED for NULL. */
ZKR_EXTERN zkr_session_state zkr_session_state_get(const zkr_session *s);

/**
 * zkr_session_id - the current ZooKeeper session id, 0 when there is none
 * (connecting, lost, closed, or @s NULL).
 */
ZKR_EXTERN int64_t zkr_session_id(const zkr_session *s);

/**
 * zkr_session_timeout - the session timeout negotiated with the server, in
 * milliseconds (0 for NULL; the last negotiated value while a new session
 * is being opened).
 */
ZKR_EXTERN int zkr_session_timeout(const zkr_session *s);

/**
 * zkr_session_wait_connected - wait until the session is CONNECTED.
 * @timeout_ms: how long to wait; 0 polls; negative waits without limit.
 * Returns ZKR_OK; ZKR_ETIMEDOUT; ZKR_ECLOSED; ZKR_ESESSIONLOST (lost and
 * renewal is off, or the server refused the credentials); ZKR_EINVAL;
 * ZKR_EDEADLK (a non-zero @timeout_ms from a zkr callback; polling with 0
 * is allowed there).
 */
ZKR_EXTERN int zkr_session_wait_connected(zkr_session *s, int64_t timeout_ms);

/**
 * zkr_session_add_listener - register a state listener.
 * @fn: the listener; @user_data is passed to it.
 * @id_out: receives an id for zkr_session_remove_listener(); may be NULL.
 * The listener is told exactly the events queued after registration (not
 * one being delivered while it registers, even from another listener).
 * Returns ZKR_OK, ZKR_EINVAL (NULL @s or @fn), ZKR_ECLOSED, ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_session_add_listener(zkr_session *s,
                                        zkr_session_listener_fn fn,
                                        void *user_data, uint64_t *id_out);

/**
 * zkr_session_remove_listener - unregister a listener. When it returns the
 * listener is not running (unless called from that listener itself) and
 * will never be called again.
 * Returns ZKR_OK, ZKR_EINVAL (NULL @s, or no listener with that id).
 */
ZKR_EXTERN int zkr_session_remove_listener(zkr_session *s, uint64_t id);

/**
 * zkr_session_children - list the children of the node at @path, sorted
 * by name (a convenience for tools that walk a tree of locks, such as
 * zkr-ls -r; the recipes do not need it).
 * @out: receives an array of @count NUL-terminated names (NULL when
 *   @count is 0) to free with zkr_children_free().
 * @timeout_ms: negative = no limit; connection losses are retried until
 *   then.
 * Returns ZKR_OK; ZKR_ENONODE (no node at @path: @out and @count are set
 * to NULL and 0); ZKR_EBADPATH; ZKR_EINVAL (NULL @s, @out or @count);
 * ZKR_ECLOSED; ZKR_ESESSIONLOST; ZKR_ETIMEDOUT; ZKR_ENOAUTH; ZKR_EZK;
 * ZKR_EDEADLK (called from a zkr callback); ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_session_children(zkr_session *s, const char *path,
                                    int64_t timeout_ms, char ***out,
                                    size_t *count);

/** zkr_children_free - free what zkr_session_children() returned; NULL is
 * a no-op. */
ZKR_EXTERN void zkr_children_free(char **names, size_t count);

/** zkr_session_state_name - "CONNECTING", "CONNECTED", ... (static). */
ZKR_EXTERN const char *zkr_session_state_name(zkr_session_state state);

/** zkr_session_event_name - "CONNECTED", "SUSPENDED", ... (static). */
ZKR_EXTERN const char *zkr_session_event_name(zkr_session_event ev);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_SESSION_H */
