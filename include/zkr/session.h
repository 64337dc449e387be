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
 * function on it at any time. zkr_session_new() reads its options struct and
 * keeps none of it. Listeners run on the session's event thread (one
 * callback at a time, in order; in dispatch mode, in zkr_session_dispatch()
 * on the caller's thread); they must not block, and blocking zkr calls
 * made from them fail with ZKR_EDEADLK.
 */
#ifndef ZKR_SESSION_H
#define ZKR_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque session. */
typedef struct zkr_session zkr_session;

/** The state a session is in. */
typedef enum zkr_session_state {
  ZKR_STATE_CONNECTING = 0, /**< no ZooKeeper session yet (or being renewed) */
  ZKR_STATE_CONNECTED = 1,  /**< connected, the session is alive */
  ZKR_STATE_SUSPENDED = 2,  /**< disconnected; the session may still be alive */
  ZKR_STATE_LOST = 3,       /**< the session is gone; ephemeral nodes too */
  ZKR_STATE_CLOSED = 4      /**< zkr_session_close() was called */
} zkr_session_state;

/** The ACL of the nodes zkr creates; see zkr_session_options.acl. */
typedef enum zkr_acl_mode {
  ZKR_ACL_OPEN = 0,   /**< every right for anyone (world:anyone), the default */
  ZKR_ACL_CREATOR = 1 /**< every right for the session's credentials, read for
                           anyone */
} zkr_acl_mode;

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
 * Runs on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch()).
 */
typedef void (*zkr_session_listener_fn)(zkr_session *s, zkr_session_event ev,
                                        int64_t session_id, void *user_data);

/**
 * The session timeouts zkr_session_options.session_timeout_ms accepts, in
 * milliseconds. Until the server has answered, the ZooKeeper C client uses
 * the requested value itself: it gives up on a connection attempt after
 * 2/3 of it (computed as ms * 2 / 3 in an int, which overflows from 2^30
 * on, so every attempt then fails at once), and pauses ms / 60 between
 * rounds over the servers (0, a busy loop, below 60 ms).
 */
#define ZKR_SESSION_TIMEOUT_MIN 100
#define ZKR_SESSION_TIMEOUT_MAX 1073741823 /* 2^30 - 1 */

/**
 * One pair of credentials added to every ZooKeeper session: an
 * authentication scheme and its credentials, for example "digest" and
 * "user:password". @cred is sent as the bytes of the string, without its
 * terminating NUL.
 */
typedef struct zkr_auth {
  const char *scheme; /**< non-empty, e.g. "digest" */
  const char *cred;   /**< not NULL, e.g. "user:password" */
} zkr_auth;

/**
 * The options of zkr_session_new(), filled in by the caller, typically in
 * one expression with designated initializers. Zero (or NULL) in any field
 * means its default, so an empty initializer, or a NULL pointer instead of
 * the struct, gives every default. zkr_session_new() copies what it keeps
 * (the credentials too): the struct, and the strings it points to, may go
 * away as soon as the call returns.
 *
 * ABI rule: fields are only ever added, in place of the start of
 * reserved_, which must be all zero (zkr_session_new() refuses anything
 * else with ZKR_EINVAL); reserved_ shrinks by as much, so the size of the
 * struct never changes, and a later field's zero is always its old behaviour. A
 * program built against an older header keeps working with a newer library.
 */
typedef struct zkr_session_options {
  int session_timeout_ms;      /**< session timeout to request; 0: 10000;
                                    else in [ZKR_SESSION_TIMEOUT_MIN,
                                    ZKR_SESSION_TIMEOUT_MAX] */
  int connect_timeout_ms;      /**< how long zkr_session_new() waits for the
                                    first session; 0: 10000; else >= 1 */
  double lost_fraction;        /**< the session clock; 0: 0.25; else in
                                    (0, 10] */
  int no_renew;                /**< non-zero: a lost session is not
                                    replaced; 0 (default): it is */
  const zkr_auth *auth;        /**< auth_count credentials, in order */
  size_t auth_count;           /**< how many; 0 (default): none */
  zkr_acl_mode acl;            /**< ACL of the nodes zkr creates; 0:
                                    ZKR_ACL_OPEN */
  zkr_lock_hook_fn lock_hook;  /**< every acquisition, failure, release and
                                    loss; NULL (default): none */
  void *lock_hook_user_data;   /**< given to lock_hook */
  int64_t alert_wait_ms;       /**< alert on a wait longer than this; 0
                                    (default): never; else > 0 */
  int64_t alert_hold_ms;       /**< alert on a hold longer than this; 0
                                    (default): never; else > 0 */
  zkr_alert_fn alert_fn;       /**< the alert callback; needed when a
                                    threshold is set */
  void *alert_user_data;       /**< given to alert_fn */
  int dispatch;                /**< non-zero: every callback waits for
                                    zkr_session_dispatch(); 0 (default):
                                    callbacks run on the session's threads */
  unsigned char reserved_[60]; /**< must be zero: later fields take its
                                    place */
} zkr_session_options;

/**
 * zkr_session_new - connect to a ZooKeeper ensemble
 *
 * zkr_session_new() opens a session with a ZooKeeper ensemble and stores it in
 * *@out. A session owns one ZooKeeper handle of libzookeeper_mt and is shared
 * by every zkr recipe object created on it. It keeps track of the connection,
 * tells listeners about changes (see zkr_session_add_listener()), declares the
 * session lost by itself when it has been disconnected for too long (see
 * lost_fraction below), and, unless told otherwise, opens a
 * new ZooKeeper session after a loss.
 *
 * @hosts is a comma-separated list of @host:@port pairs, optionally followed
 * by a chroot path:
 *
 *     127.0.0.1:2181
 *     zk1.example.com:2181,zk2.example.com:2181,zk3.example.com:2181/app
 *     [::1]:2181
 *
 * Every host needs a port (1 to 65535). A host is a name or address made of
 * letters, digits, '.', '-' and '_', or an IPv6 address, in brackets or bare
 * (`::1:2181`: the port follows the last colon). The ZooKeeper C client is
 * given the bare form, which is the only one it resolves, and ports without
 * leading zeros, which it would read as octal. With a chroot, every path the
 * session's recipes use is relative to it. The chroot must be a valid path
 * other than "/", and its node must already exist: zkr does not create it, and
 * operations below a missing chroot fail (typically with ZKR_ENONODE). @hosts
 * is copied.
 *
 * @opts are the options, a zkr_session_options the caller fills in; NULL, or
 * zero in any field, means the default. What the session keeps is copied (the
 * credentials too), so @opts may be a compound literal:
 *
 *     zkr_session_new(&s, hosts, &(zkr_session_options){
 *                                    .session_timeout_ms = 6000});
 *
 * The fields:
 *
 *   session_timeout_ms   The ZooKeeper session timeout to request, default
 *                        10000. The server clamps it to its own range (by
 *                        default 2 to 20 times its tickTime); the value
 *                        granted is returned by zkr_session_timeout(). It is
 *                        how long the ensemble keeps a session, and its
 *                        ephemeral nodes, after it last heard from the
 *                        client: shorter frees the locks of a crashed process
 *                        sooner, longer rides out longer interruptions and
 *                        pauses. It must be in [ZKR_SESSION_TIMEOUT_MIN,
 *                        ZKR_SESSION_TIMEOUT_MAX] = [100, 2^30-1], the
 *                        ZooKeeper C client's range: the client uses the
 *                        requested value itself until the server answers,
 *                        abandons a connection attempt after @ms * 2 / 3,
 *                        computed in an `int` (which overflows from 2^30 on),
 *                        and pauses @ms / 60 between rounds over the servers
 *                        (a busy loop below 60 ms).
 *   connect_timeout_ms   How long zkr_session_new() waits for the first
 *                        ZooKeeper session before it gives up with
 *                        ZKR_ECONNECT, default 10000; at least 1. It applies
 *                        only to zkr_session_new(): reconnections and
 *                        renewals go on in the background until the session
 *                        is closed (bound a wait for them with
 *                        zkr_session_wait_connected()).
 *   lost_fraction        The session clock, default 0.25; in (0, 10]. After
 *                        the connection has been down for this fraction of
 *                        the negotiated timeout, the session declares itself
 *                        lost (ZKR_STATE_LOST, listeners get ZKR_EV_LOST)
 *                        without waiting to hear it from a server, and recipe
 *                        objects on it treat what they held as lost. The
 *                        ZooKeeper client notices a silent server only after
 *                        2/3 of the timeout, and the ensemble may expire the
 *                        session as early as 1/3 of the timeout after that:
 *                        with a fraction below 1/3, such as the default, a
 *                        holder learns that it has lost its session before
 *                        the ensemble can hand what it held to someone else.
 *                        (With a negotiated 10000 ms: a silent server is
 *                        noticed after about 6667 ms, the session is declared
 *                        lost 2500 ms later, and the ensemble may expire it no
 *                        earlier than about 3333 ms after the disconnection
 *                        was noticed.) Larger fractions ride out longer
 *                        interruptions but give up that guarantee; with 1 or
 *                        more the client in practice learns of the loss from
 *                        the server. The clock has a second half: the session
 *                        is also taken as lost when its manager thread, which
 *                        wakes every sixth of the timeout, last woke more than
 *                        2/3 of the timeout ago (the whole process was paused:
 *                        SIGSTOP, swapping, a stalled virtual machine). The
 *                        manager applies the rule as it wakes, and every call
 *                        that reports on or ends a hold (release, is_held,
 *                        state, fencing token, node, guarded writes,
 *                        is_leader, resign) applies it first on the caller's
 *                        thread, so a process resumed from a long pause is
 *                        never told that it still holds what it lost.
 *   no_renew             0, the default: after a loss the session goes to
 *                        ZKR_STATE_CONNECTING at once and opens a new
 *                        ZooKeeper session (listeners then get
 *                        ZKR_EV_CONNECTED with the new id); recipe objects are
 *                        told that what they held is gone. Non-zero: a lost
 *                        session stays ZKR_STATE_LOST, every operation on it
 *                        fails with ZKR_ESESSIONLOST, and the application
 *                        closes it and starts again. If the server rejects the
 *                        credentials, renewal is off for that session whatever
 *                        this field says.
 *   auth, auth_count     @auth_count zkr_auth pairs (scheme and credentials,
 *                        such as "digest" and "user:password"), added in
 *                        order with zoo_add_auth() to every ZooKeeper session
 *                        the session opens, the first one and each one opened
 *                        after a loss (the client itself sends them again
 *                        after a reconnection to the same session). Each
 *                        scheme must be non-empty and each credential
 *                        non-NULL. If the server rejects them, the session is
 *                        lost and not renewed. The "digest" scheme accepts any
 *                        user and password: wrong credentials show up only as
 *                        ZKR_ENOAUTH on nodes whose ACL asks for the right
 *                        ones.
 *   acl                  The ACL of every node the session creates (contender
 *                        nodes of every recipe, and the parents created for
 *                        them: the lock path, a semaphore's `locks` and
 *                        `leases`). Missing ancestors above the lock path,
 *                        created as containers, get the open ACL whatever the
 *                        mode: they are shared with other locks.
 *                        ZKR_ACL_OPEN (0, the default): every right for anyone
 *                        (world:anyone), as Curator and kazoo do by default.
 *                        ZKR_ACL_CREATOR: every right for the session's
 *                        credentials (the "auth" scheme) and read for anyone,
 *                        so zkr-ls and observers still see the queue; it needs
 *                        credentials. Deleting and creating a node are rights
 *                        on its parent: ZKR_ACL_CREATOR keeps clients without
 *                        the credentials from deleting, changing or queueing
 *                        when zkr created the parent too; under an existing
 *                        open parent anyone can still delete a contender node.
 *                        Every participant of one lock must use the same
 *                        credentials.
 *   lock_hook            Called with lock_hook_user_data for each
 *                        acquisition, failure, release and loss of any lock
 *                        object of the session (every recipe), with its wait
 *                        or hold time, on the session's event thread. A
 *                        reentrant acquisition makes no event. NULL, the
 *                        default: none, and nothing is allocated for it.
 *   alert_wait_ms,       Call alert_fn with alert_user_data once for each
 *   alert_hold_ms,       acquisition that waits longer than alert_wait_ms,
 *   alert_fn             with the lock's oldest contender (its holder: node,
 *                        id, host, pid, read from ZooKeeper when the threshold
 *                        is crossed), and once for each hold that lasts longer
 *                        than alert_hold_ms. 0 turns a threshold off; with
 *                        both off (the default) nothing is armed and nothing
 *                        runs, and alert_fn is ignored. alert_fn runs on a
 *                        thread the session starts for it, one alert at a
 *                        time, and may call any zkr function. (With
 *                        dispatch, the alert thread reads the holder and
 *                        alert_fn runs in zkr_session_dispatch().)
 *   dispatch             Non-zero puts the session in dispatch mode: every
 *                        callback of the session and of the recipe objects
 *                        on it (acquisition results, hold states,
 *                        leadership, observers, listeners, the lock hook,
 *                        alerts) is queued instead of run on the session's
 *                        threads, and runs when the application calls
 *                        zkr_session_dispatch(), on the thread that calls
 *                        it; zkr_session_fd() gives a descriptor that is
 *                        readable while callbacks wait, for an event loop
 *                        (epoll, libuv, libevent) to watch. 0 (the default)
 *                        runs them on the session's event thread. See
 *                        docs/event-loop.md.
 *   reserved_            Must be all zero.
 *
 * Invalid options change nothing: the call logs why (see zkr_set_log_hook())
 * and returns ZKR_EINVAL before it connects.
 *
 * The call blocks until the first ZooKeeper session is established or the
 * connect timeout passes. A session counts as established once a server has
 * answered the handshake and then a first request (an exists on the root,
 * sent by zkr): something that is not a ZooKeeper server, such as an HTTP
 * server on a mistyped port whose error page parses as a handshake, never
 * answers one, and the call fails with ZKR_ECONNECT at the connect timeout
 * (closing that connection may take up to 1.5 s more). On success the session
 * is in state ZKR_STATE_CONNECTED, and the caller holds one reference to it,
 * released with zkr_session_close(). On failure *@out is left untouched and
 * nothing remains to be released.
 *
 * Each session runs two threads of its own in addition to the two threads of
 * the ZooKeeper client: a manager thread (session clock and renewal) and an
 * event thread that runs every user callback (in dispatch mode, the event
 * thread does the recipes' own work and the callbacks run in
 * zkr_session_dispatch()).
 *
 * It must not be called from a zkr callback (a session listener, or any
 * callback a recipe runs on the session's event thread): there it returns
 * ZKR_EDEADLK.
 *
 * Returns:
 *   ZKR_OK        The session is connected; *@out is set.
 *   ZKR_EINVAL    @out or @hosts is NULL, or @opts is invalid: a field out of
 *                 its range, an auth entry with a NULL or empty scheme or a
 *                 NULL credential, @auth NULL with a non-zero @auth_count,
 *                 ZKR_ACL_CREATOR without credentials, a threshold set
 *                 without alert_fn, or a non-zero byte in reserved_.
 *   ZKR_EBADCONN  @hosts is malformed (empty, a host without a port, a bad
 *                 port, a bad host name, an empty entry).
 *   ZKR_EBADPATH  The chroot part of @hosts is not a valid znode path, or is
 *                 "/".
 *   ZKR_ECONNECT  No server answered before the connect timeout (a handshake
 *                 and a first request), or a host name does not resolve.
 *   ZKR_EAUTH     The server refused the credentials added with
 *                 zkr_session_options.auth. (With the "digest" scheme the
 *                 server accepts any user and password; a wrong password shows
 *                 up later, as ZKR_ENOAUTH on nodes whose ACL requires the
 *                 right one.)
 *   ZKR_ENOMEM    Out of memory.
 *   ZKR_ESYS      A thread could not be started.
 *   ZKR_EDEADLK   Called from a zkr callback.
 *
 * Thread safety:
 * zkr_session_new() may be called from any thread except a zkr callback. The
 * session it returns is thread-safe: any thread may call any function on it.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   int main(void) {
 *     zkr_session *s = NULL;
 *     int rc = zkr_session_new(&s, "127.0.0.1:2181/myapp",
 *                              &(zkr_session_options){
 *                                  .session_timeout_ms = 15000,
 *                                  .auth = &(zkr_auth){"digest", "app:secret"},
 *                                  .auth_count = 1});
 *     if (rc != ZKR_OK) {
 *       fprintf(stderr, "zkr: %s\n", zkr_strerror(rc));
 *       return 1;
 *     }
 *     printf("session 0x%llx, timeout %d ms\n",
 *            (unsigned long long)zkr_session_id(s), zkr_session_timeout(s));
 *     zkr_session_close(s);
 *     return 0;
 *   }
 *
 * See also: zkr_session_close(), zkr_session_timeout(),
 *   zkr_session_add_listener(), zkr_session_wait_connected(),
 *   zkr_set_log_hook(), zkr_strerror()
 *
 * Since: 0.1.0
 * Synopsis: zkr_session, zkr_session_options, zkr_auth, zkr_acl_mode,
 *   ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX
 */
ZKR_EXTERN int zkr_session_new(zkr_session **out, const char *hosts,
                               const zkr_session_options *opts);

/**
 * zkr_session_close - close a session and release the caller's reference
 *
 * zkr_session_close() closes the session @s and releases the reference the
 * caller got from zkr_session_new().
 *
 * The ZooKeeper session is closed. If the session is connected, the ensemble
 * ends it at once, so its ephemeral nodes (and with them any locks or
 * leadership held through it) go away immediately; otherwise the ensemble
 * removes them when the session times out.
 *
 * Locks released just before the call are deleted in the background; if such a
 * deletion has not reached the server yet (a reconnection is under way, for
 * instance), the call first waits for it, at most half the session timeout, so
 * that the next contender does not have to wait for this session to expire.
 * Pending and future operations of every recipe object on the session fail with
 * ZKR_ECLOSED, and every listener gets ZKR_EV_CLOSED as its last event.
 *
 * The call blocks until the session's threads have stopped and the listeners
 * have run for the last time: when it returns, no listener is running and none
 * will run again.
 *
 * In dispatch mode (zkr_session_options.dispatch) the call closes the
 * descriptor of zkr_session_fd() and drops the callbacks still queued, and
 * those queued by the close itself (ZKR_ECLOSED results, ZKR_EV_CLOSED): they
 * are never called. No callback of the session runs after it; a callback
 * being dispatched on another thread at the time finishes first. To see
 * every result, free the recipe objects and dispatch before closing.
 *
 * Recipe objects created on the session hold references of their own. They stay
 * valid after the session is closed (their operations fail with ZKR_ECLOSED)
 * until they are freed; the session's memory is released with the last of those
 * references. The caller must not use @s after this call, and must make sure
 * that no other thread is still calling session functions on @s when it is
 * closed.
 *
 * NULL is accepted and does nothing.
 *
 * It must not be called from a zkr callback (a session listener, or any
 * callback a recipe runs on the session's event thread): there it returns
 * ZKR_EDEADLK and does nothing.
 *
 * Returns:
 *   ZKR_OK       The session was closed, or @s was NULL.
 *   ZKR_EDEADLK  Called from a zkr callback; the session is unchanged.
 *   ZKR_ECLOSED  The session was already closed (only possible while a recipe
 *                object still holds it).
 *
 * Thread safety:
 * zkr_session_close() may be called from any thread except a zkr callback, once
 * per session.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <zkr/zkr.h>
 *
 *   void shutdown_session(zkr_session **sp) {
 *     // Free the recipe objects first if you can; those still alive get
 *     // ZKR_ECLOSED from now on.
 *     zkr_session_close(*sp);
 *     *sp = NULL;
 *   }
 *
 * See also: zkr_session_new(), zkr_session_add_listener()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_close(zkr_session *s);

/**
 * zkr_session_close_within - close a session, waiting at most so long
 *
 * zkr_session_close_within() is zkr_session_close() with a bound of its own on
 * the one wait that call may make: for releases whose deletion has not reached
 * the server yet. It waits at most @wait_ms milliseconds for them (0: not at
 * all; negative: half the session timeout, as zkr_session_close() does, which
 * is also the most it ever waits). A deletion still on its way then is left to
 * the ensemble: the node goes when the session ends, at once if the close
 * request reaches a server, else when the session expires.
 *
 * It is for a caller with a deadline of its own, such as a command-line tool
 * that gives up at its time-out or on a signal while the server does not
 * answer. The rest of the call (closing the ZooKeeper handle, stopping the
 * session's threads, the last listener calls) is as for zkr_session_close();
 * closing the handle of a connection whose server does not answer takes up to
 * 1.5 s more, the ZooKeeper client's own bound.
 *
 * Returns:
 *   ZKR_OK       The session was closed, or @s was NULL.
 *   ZKR_EDEADLK  Called from a zkr callback; the session is unchanged.
 *   ZKR_ECLOSED  The session was already closed (only possible while a recipe
 *                object still holds it).
 *
 * Thread safety:
 * As zkr_session_close().
 *
 * See also: zkr_session_close()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_close_within(zkr_session *s, int64_t wait_ms);

/**
 * zkr_session_fd - the descriptor an event loop watches for callbacks
 *
 * zkr_session_fd() returns a file descriptor that is readable while
 * callbacks of the session @s wait to be run by zkr_session_dispatch(). @s
 * must be in dispatch mode (zkr_session_options.dispatch).
 *
 * The descriptor is level-triggered: it stays readable as long as anything
 * is queued and stops being readable once zkr_session_dispatch() has run
 * everything. Add it to epoll(7), poll(2) or select(2) for reading (with
 * EPOLLET it still works if every readiness is followed by dispatching until
 * zkr_session_dispatch() returns 0), to libuv as a uv_poll_t with
 * UV_READABLE, or to libevent with event_new(..., EV_READ | EV_PERSIST, ...).
 * Only watch it: do not read, write or close it. It is the same descriptor
 * for the life of the session and is closed by zkr_session_close(); remove
 * it from the loop before closing the session.
 *
 * Returns:
 * The descriptor (>= 0), or:
 *   ZKR_EINVAL   @s is NULL, or not in dispatch mode.
 *   ZKR_ECLOSED  The session is closed.
 *
 * Thread safety:
 * zkr_session_fd() may be called from any thread, including from zkr
 * callbacks.
 *
 * Example:
 *   #include <sys/epoll.h>
 *   #include <zkr/zkr.h>
 *
 *   // Add the session's callbacks to an epoll set.
 *   int watch_session(int epfd, zkr_session *s) {
 *     int fd = zkr_session_fd(s);
 *     if (fd < 0)
 *       return fd;
 *     struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
 *     return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? ZKR_OK : ZKR_ESYS;
 *   }
 *
 * See also: zkr_session_dispatch(), zkr_session_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_fd(zkr_session *s);

/**
 * zkr_session_dispatch - run the callbacks that are waiting
 *
 * zkr_session_dispatch() runs, on the calling thread, the callbacks of the
 * session @s that were queued when it was entered, oldest first, at most
 * @max queue entries (all of them if @max <= 0), and returns how many it
 * took. An entry is one callback, or several callbacks of one object queued
 * back to back (an election's listener told twice, say). @s must
 * be in dispatch mode (zkr_session_options.dispatch). Call it when the
 * descriptor of zkr_session_fd() is readable; it never waits for a callback
 * to be queued, so it returns 0 when there is none.
 *
 * Callbacks queued while it runs (by the callbacks themselves, or by the
 * session's threads meanwhile) are left for the next call, so a loop that
 * calls it once per readiness is never starved. The callbacks are the same
 * ones, with the same guarantees, as without dispatch mode: each acquisition
 * result exactly once, state changes of a hold in order, listeners in the
 * order of the events; only the thread differs. Inside a dispatched callback
 * the same rules apply as inside any zkr callback: calls that would wait
 * (blocking acquisitions, zkr_session_close(), a timeout other than 0) fail
 * with ZKR_EDEADLK; the asynchronous and non-blocking calls may be made.
 *
 * A callback of an object freed before its turn is dropped (never called);
 * its entry is still taken and counted.
 *
 * Returns:
 * The number of entries taken (>= 0), or:
 *   ZKR_EINVAL   @s is NULL, or not in dispatch mode.
 *   ZKR_EDEADLK  Called from a zkr callback (a dispatched one included).
 *   ZKR_EBUSY    Another thread is dispatching this session now.
 *   ZKR_ECLOSED  The session is closed.
 *
 * Thread safety:
 * One thread at a time per session, typically the event loop's; any thread
 * may be that thread, but not a zkr callback.
 *
 * Example:
 *   #include <poll.h>
 *   #include <zkr/zkr.h>
 *
 *   // Run callbacks as they come until *stop is set.
 *   void run_loop(zkr_session *s, volatile int *stop) {
 *     struct pollfd p = {.fd = zkr_session_fd(s), .events = POLLIN};
 *     while (!*stop)
 *       if (poll(&p, 1, 100) > 0)
 *         zkr_session_dispatch(s, 0);
 *   }
 *
 * See also: zkr_session_fd(), zkr_session_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_dispatch(zkr_session *s, int max);

/**
 * zkr_session_state_get - the current state of a session
 *
 * zkr_session_state_get() returns the state @s is in at the time of the call.
 * The state may change at any moment afterwards; to be told of changes,
 * register a listener with zkr_session_add_listener().
 *
 * The states are:
 *
 *   ZKR_STATE_CONNECTING
 *                     No ZooKeeper session yet: a new one is being opened after
 *                     a loss.
 *   ZKR_STATE_CONNECTED
 *                     Connected to a server; the ZooKeeper session is alive.
 *   ZKR_STATE_SUSPENDED
 *                     The connection dropped. The ZooKeeper session may still
 *                     be alive; the client is trying to reconnect to it.
 *   ZKR_STATE_LOST    The ZooKeeper session is gone, and its ephemeral nodes
 *                     with it: the server expired it, the session clock
 *                     declared it lost, or the server rejected the credentials.
 *   ZKR_STATE_CLOSED  zkr_session_close() was called.
 *
 * zkr_session_state_name() turns a state into a string. The function does not
 * block (it takes an internal lock briefly).
 *
 * Returns:
 * The current state; ZKR_STATE_CLOSED if @s is NULL.
 *
 * Thread safety:
 * zkr_session_state_get() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void report(const zkr_session *s) {
 *     zkr_session_state st = zkr_session_state_get(s);
 *     if (st != ZKR_STATE_CONNECTED)
 *       fprintf(stderr, "ZooKeeper session is %s\n",
 *               zkr_session_state_name(st));
 *   }
 *
 * See also: zkr_session_state_name(), zkr_session_add_listener(),
 *   zkr_session_wait_connected(), zkr_session_id()
 *
 * Since: 0.1.0
 * Synopsis: zkr_session_state
 */
ZKR_EXTERN zkr_session_state zkr_session_state_get(const zkr_session *s);

/**
 * zkr_session_id - the current ZooKeeper session id
 *
 * zkr_session_id() returns the id of the ZooKeeper session that @s currently
 * has: the id the server assigned when the session was established. It is the
 * number ZooKeeper's own tools show as the owner of ephemeral nodes, and is
 * usually printed in hexadecimal.
 *
 * There is an id while the session is ZKR_STATE_CONNECTED or
 * ZKR_STATE_SUSPENDED. After a loss and renewal the session gets a new id; a
 * different id means a different ZooKeeper session, whose ephemeral nodes are
 * not those of the previous one.
 *
 * The function does not block (it takes an internal lock briefly).
 *
 * Returns:
 * The session id, or 0 when there is none: while connecting, after a loss,
 * after zkr_session_close(), or when @s is NULL.
 *
 * Thread safety:
 * zkr_session_id() is thread-safe and may be called from any thread, including
 * from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void print_id(const zkr_session *s) {
 *     printf("session 0x%llx\n", (unsigned long long)zkr_session_id(s));
 *   }
 *
 * See also: zkr_session_state_get(), zkr_session_timeout(),
 *   zkr_session_add_listener()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int64_t zkr_session_id(const zkr_session *s);

/**
 * zkr_session_timeout - the session timeout in force
 *
 * zkr_session_timeout() returns the session timeout, in milliseconds, that zkr
 * works with for the current (or last) ZooKeeper session of @s: the one the
 * server granted, but never more than the one requested.
 *
 * The timeout requested (zkr_session_options.session_timeout_ms) is only a
 * request: the server clamps it to its own range, which by default is 2 to 20
 * times its tickTime. The negotiated value is how long the ensemble keeps the
 * session, and its ephemeral nodes, after it last heard from the client. The
 * session clock (see zkr_session_options.lost_fraction) and every other
 * timer of zkr use the smaller of the two: a server that raises a short
 * request to its minimum leaves the clock on the shorter, safer value, and a
 * broken handshake (something that is not a ZooKeeper server, answering with a
 * timeout of days) cannot stretch zkr's timers.
 *
 * The value is updated each time a new ZooKeeper session is established, and
 * keeps the last negotiated value while the session is lost. The function does
 * not block (it takes an internal lock briefly).
 *
 * Returns:
 * The timeout in milliseconds; 0 before the first connection or when @s is
 * NULL.
 *
 * Thread safety:
 * zkr_session_timeout() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * See also: zkr_session_new(), zkr_session_id()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_timeout(const zkr_session *s);

/**
 * zkr_session_wait_connected - wait until a session is connected
 *
 * zkr_session_wait_connected() returns as soon as @s is in state
 * ZKR_STATE_CONNECTED, waiting for it if needed: while suspended, until the
 * connection is back; after a loss with renewal on, until the new ZooKeeper
 * session is established.
 *
 * @timeout_ms bounds the wait in milliseconds: 0 does not wait at all (it only
 * checks the state), a negative value waits without limit.
 *
 * Recipe operations wait for a connection by themselves, within their own
 * deadlines; this function is for programs that want to wait before starting
 * work, or after being told ZKR_EV_SUSPENDED or ZKR_EV_LOST.
 *
 * With a non-zero @timeout_ms it must not be called from a zkr callback (a
 * session listener, or any callback a recipe runs on the session's event
 * thread): there it returns ZKR_EDEADLK at once. A check with a @timeout_ms of
 * 0 is allowed from callbacks.
 *
 * Returns:
 *   ZKR_OK            The session is connected.
 *   ZKR_ETIMEDOUT     The timeout passed first.
 *   ZKR_ECLOSED       The session is closed or being closed.
 *   ZKR_ESESSIONLOST  The session was lost and renewal is off (see
 *                     zkr_session_options.no_renew): it will never be connected
 *                     again.
 *   ZKR_EINVAL        @s is NULL.
 *   ZKR_EDEADLK       Called from a zkr callback with a non-zero @timeout_ms.
 *
 * Thread safety:
 * zkr_session_wait_connected() is thread-safe: several threads may wait on the
 * same session at once.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Wait up to 30 s for the connection to come back.
 *   int wait_for_zookeeper(zkr_session *s) {
 *     int rc = zkr_session_wait_connected(s, 30000);
 *     if (rc != ZKR_OK)
 *       fprintf(stderr, "ZooKeeper unavailable: %s\n", zkr_strerror(rc));
 *     return rc;
 *   }
 *
 * See also: zkr_session_state_get(), zkr_session_add_listener(),
 *   zkr_session_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_wait_connected(zkr_session *s, int64_t timeout_ms);

/**
 * zkr_session_add_listener - be told about session state changes
 *
 * zkr_session_add_listener() registers @fn to be called with @user_data for
 * each state change of @s. If @id_out is not NULL it receives a non-zero id for
 * zkr_session_remove_listener(). The same function may be registered more than
 * once; each registration has its own id.
 *
 * A listener is called with the session, the event, the ZooKeeper session id
 * the event is about, and its @user_data. The events are:
 *
 *   ZKR_EV_CONNECTED    A new ZooKeeper session was established: the first one,
 *                       during zkr_session_new(), or a new one after a loss.
 *                       @session_id is the new id. (The event of the first
 *                       session is queued inside zkr_session_new(), so no
 *                       listener ever receives it.) Ephemeral nodes and watches
 *                       of the earlier session are gone.
 *   ZKR_EV_SUSPENDED    The connection to the server dropped. The ZooKeeper
 *                       session may still be alive; the client is reconnecting.
 *                       @session_id is the current id.
 *   ZKR_EV_RECONNECTED  The connection is back and the ZooKeeper session is the
 *                       same one: ephemeral nodes and watches are intact.
 *   ZKR_EV_LOST         The ZooKeeper session is gone: the server expired it,
 *                       the session clock declared it lost (see
 *                       zkr_session_options.lost_fraction), or the server
 *                       rejected the credentials. @session_id is the id that
 *                       was lost. Unless renewal is off, a new session is being
 *                       opened.
 *   ZKR_EV_CLOSED       zkr_session_close() was called; this is the last event
 *                       a listener gets. @session_id is the id the session had
 *                       then, or 0.
 *
 * A listener is told the events that happen after it is registered (exactly
 * those queued after the registration: not one being delivered while it
 * registers, even from another listener); it is not told the current state,
 * which zkr_session_state_get() gives. Events are queued, so by the time a
 * listener runs the session may already be in a later state: a listener told
 * ZKR_EV_LOST may find the session ZKR_STATE_CONNECTING or even connected
 * again.
 *
 * All listeners run on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch() on the caller's thread), one call at a time: events
 * are delivered in the order they happened, and for each event the listeners
 * are called in the order they were registered. A listener must not block,
 * since it delays every other callback of the session; blocking zkr calls made
 * from it fail with ZKR_EDEADLK. It may call the non-blocking session
 * functions, including zkr_session_add_listener() and
 * zkr_session_remove_listener().
 *
 * @user_data must stay valid until the listener is removed or
 * zkr_session_close() has returned.
 *
 * Returns:
 *   ZKR_OK       The listener is registered.
 *   ZKR_EINVAL   @s or @fn is NULL.
 *   ZKR_ECLOSED  The session is being closed.
 *   ZKR_ENOMEM   Out of memory.
 *
 * Thread safety:
 * zkr_session_add_listener() is thread-safe and may be called from any thread,
 * including from a listener.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   static void on_state(zkr_session *s, zkr_session_event ev,
 *                        int64_t session_id, void *user_data) {
 *     const char *name = user_data;
 *     (void)s;
 *     fprintf(stderr, "%s: %s (session 0x%llx)\n", name,
 *             zkr_session_event_name(ev), (unsigned long long)session_id);
 *   }
 *
 *   int watch_session(zkr_session *s, uint64_t *id) {
 *     return zkr_session_add_listener(s, on_state, "worker", id);
 *   }
 *
 * See also: zkr_session_remove_listener(), zkr_session_event_name(),
 *   zkr_session_state_get(), zkr_session_new(), zkr_session_close()
 *
 * Since: 0.1.0
 * Synopsis: zkr_session_event, zkr_session_listener_fn
 */
ZKR_EXTERN int zkr_session_add_listener(zkr_session *s,
                                        zkr_session_listener_fn fn,
                                        void *user_data, uint64_t *id_out);

/**
 * zkr_session_remove_listener - stop being told about session state changes
 *
 * zkr_session_remove_listener() unregisters the listener that
 * zkr_session_add_listener() registered with the id @id.
 *
 * When it returns, the listener will never be called again and is not running,
 * so its @user_data may be freed. If the listener is running on the event
 * thread at the time of the call, the call waits for it to return. Called from
 * a listener (including the one being removed), it does not wait: listeners run
 * one at a time, so no other listener is running then.
 *
 * Returns:
 *   ZKR_OK      The listener is removed.
 *   ZKR_EINVAL  @s is NULL, or no listener has the id @id (for example, it was
 *               already removed).
 *
 * Thread safety:
 * zkr_session_remove_listener() is thread-safe and may be called from any
 * thread, including from a listener.
 *
 * Example:
 *   #include <stdlib.h>
 *   #include <zkr/zkr.h>
 *
 *   struct watcher {
 *     uint64_t id;
 *     int events;
 *   };
 *
 *   static void count(zkr_session *s, zkr_session_event ev, int64_t sid,
 *                     void *ud) {
 *     (void)s, (void)ev, (void)sid;
 *     ((struct watcher *)ud)->events++;
 *   }
 *
 *   int watcher_start(zkr_session *s, struct watcher **out) {
 *     struct watcher *w = calloc(1, sizeof *w);
 *     if (!w)
 *       return ZKR_ENOMEM;
 *     int rc = zkr_session_add_listener(s, count, w, &w->id);
 *     if (rc != ZKR_OK) {
 *       free(w);
 *       return rc;
 *     }
 *     *out = w;
 *     return ZKR_OK;
 *   }
 *
 *   void watcher_stop(zkr_session *s, struct watcher *w) {
 *     zkr_session_remove_listener(s, w->id);
 *     free(w); // safe: the listener is not running and never will again
 *   }
 *
 * See also: zkr_session_add_listener()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_remove_listener(zkr_session *s, uint64_t id);

/**
 * zkr_session_children - list the children of a znode
 *
 * zkr_session_children() reads the names of the children of the node at @path
 * through the session @s and stores them in *@out as an array of *@count
 * NUL-terminated strings. The names are the last components only, not full
 * paths, and are sorted by name in byte order (strcmp(3)). @path is relative to
 * the chroot of the session's connection string, like the paths of the recipes.
 *
 * The recipes do not need this call; it is there for programs that walk a tree
 * of locks, such as `zkr-ls -r`. Sorting by name is not the order of a lock's
 * queue: to list the contenders of a lock in queue order, use
 * zkr_mutex_participants().
 *
 * The call sets no watch and changes nothing on the server. While the session
 * is disconnected or being renewed it waits, and the request is sent again
 * after a connection loss, all within @timeout_ms milliseconds (negative: no
 * limit).
 *
 * On success *@out belongs to the caller, who frees it with zkr_children_free()
 * and the same *@count. A node without children gives *@count 0 and *@out NULL.
 * If there is no node at @path, the call returns ZKR_ENONODE and sets *@out to
 * NULL and *@count to 0. On any other failure *@out and *@count are left
 * untouched.
 *
 * The call blocks, so it must not be called from a zkr callback: there it
 * returns ZKR_EDEADLK.
 *
 * Returns:
 *   ZKR_OK            *@out and *@count hold the names (possibly none).
 *   ZKR_ENONODE       There is no node at @path.
 *   ZKR_EBADPATH      @path is NULL or not a valid znode path.
 *   ZKR_ETIMEDOUT     @timeout_ms passed first.
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_ENOAUTH       The ACL of @path does not allow this session to read it.
 *   ZKR_EDEADLK       Called from a zkr callback.
 *   ZKR_EINVAL        @s, @out or @count is NULL.
 *   ZKR_EZK           An unexpected ZooKeeper error.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * zkr_session_children() may be called from any thread except a zkr callback,
 * concurrently with any other use of the session.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Print the children of path, one per line; a missing node has none.
 *   int print_children(zkr_session *s, const char *path) {
 *     char **names = NULL;
 *     size_t n = 0;
 *     int rc = zkr_session_children(s, path, 5000, &names, &n);
 *     if (rc == ZKR_ENONODE)
 *       return ZKR_OK;
 *     if (rc != ZKR_OK)
 *       return rc;
 *     for (size_t i = 0; i < n; i++)
 *       printf("%s/%s\n", path, names[i]);
 *     zkr_children_free(names, n);
 *     return ZKR_OK;
 *   }
 *
 * See also: zkr_children_free(), zkr_mutex_participants(), zkr_session_new(),
 *   zkr-ls(1)
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_children(zkr_session *s, const char *path,
                                    int64_t timeout_ms, char ***out,
                                    size_t *count);

/**
 * zkr_children_free - free a list of child names
 *
 * zkr_children_free() frees the array @names of @count strings returned by
 * zkr_session_children(), with the strings themselves. @count must be the count
 * that call returned. NULL is accepted and does nothing.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * zkr_children_free() may be called from any thread, including from zkr
 * callbacks.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <zkr/zkr.h>
 *
 *   // The number of children of path, or -1 on an error.
 *   long count_children(zkr_session *s, const char *path) {
 *     char **names = NULL;
 *     size_t n = 0;
 *     if (zkr_session_children(s, path, 5000, &names, &n) != ZKR_OK)
 *       return -1;
 *     zkr_children_free(names, n);
 *     return (long)n;
 *   }
 *
 * See also: zkr_session_children()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_children_free(char **names, size_t count);

/**
 * zkr_session_state_name - the name of a session state
 *
 * zkr_session_state_name() returns the name of @state without its prefix:
 * "CONNECTING", "CONNECTED", "SUSPENDED", "LOST" or "CLOSED". A value that is
 * not a ZKR_STATE_* constant gives "UNKNOWN".
 *
 * The string has static storage: do not modify or free it.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_session_state_name() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void print_state(const zkr_session *s) {
 *     printf("state: %s\n", zkr_session_state_name(zkr_session_state_get(s)));
 *   }
 *
 * See also: zkr_session_state_get(), zkr_session_event_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_session_state_name(zkr_session_state state);

/**
 * zkr_session_event_name - the name of a session event
 *
 * zkr_session_event_name() returns the name of @ev without its prefix:
 * "CONNECTED", "SUSPENDED", "RECONNECTED", "LOST" or "CLOSED". A value that is
 * not a ZKR_EV_* constant gives "UNKNOWN".
 *
 * The string has static storage: do not modify or free it.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_session_event_name() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * See also: zkr_session_add_listener(), zkr_session_state_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_session_event_name(zkr_session_event ev);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_SESSION_H */
