/*
 * zkr -- ZooKeeper recipes for C.
 * lock.h: what every recipe shares: the state of a held lock, lease or
 * leadership, the hold (zkr_hold: the fencing token, the node, the state
 * and the guarded writes of one hold, whatever the recipe), the callback
 * types, and the participants of a queue.
 *
 * A mutex (and each half of a read-write lock), a semaphore's lease and a
 * leader's term are holds: zkr_mutex_hold(), zkr_lease_hold() and
 * zkr_election_hold() give the zkr_hold of each, and the zkr_hold_*
 * functions below work on any of them.
 *
 * THREAD SAFETY: every function declared here is thread-safe.
 */
#ifndef ZKR_LOCK_H
#define ZKR_LOCK_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The state of a recipe object: a mutex, a lease, a leadership. */
typedef enum zkr_lock_state {
  ZKR_LOCK_UNLOCKED = 0,  /**< not held, not acquiring */
  ZKR_LOCK_ACQUIRING = 1, /**< an acquisition is in progress */
  ZKR_LOCK_HELD = 2,      /**< held, and the session is connected */
  ZKR_LOCK_SUSPECT = 3,   /**< held, but the connection dropped: it may be
                               lost; stop touching the resource */
  ZKR_LOCK_LOST = 4       /**< was held and is lost (session gone, or the
                               node deleted): another may hold it now */
} zkr_lock_state;

/**
 * One hold: a mutex's (or a read-write lock half's) from its acquisition
 * to its release, a semaphore lease's from its acquisition to its
 * release, a leader's for one term. Given by zkr_mutex_hold(),
 * zkr_lease_hold() and zkr_election_hold(); owned by the recipe object,
 * never freed by the caller.
 */
typedef struct zkr_hold zkr_hold;
typedef struct zkr_mutex zkr_mutex;

/**
 * Called when a hold changes state (HELD, SUSPECT, LOST), on the session's
 * event thread (in dispatch mode, in zkr_session_dispatch()), once per
 * change and in order. @hold is the hold that
 * changed (zkr_mutex_hold() of the mutex, zkr_lease_hold() of the lease
 * the callback was set for), @state its new state.
 */
typedef void (*zkr_lock_state_fn)(zkr_hold *hold, zkr_lock_state state,
                                  void *user_data);

/**
 * Called exactly once with the result of an asynchronous acquisition of a
 * mutex (or of a read-write lock's half), on the session's event thread
 * (once the session is closed, on the thread that closed it; in dispatch
 * mode, in zkr_session_dispatch(), and dropped by the close): @m is the
 * mutex, @rc ZKR_OK (held) or an error code as listed for
 * zkr_mutex_acquire(). Not called if the mutex is freed first.
 */
typedef void (*zkr_acquire_fn)(zkr_mutex *m, int rc, void *user_data);

/**
 * Called exactly once with the outcome of zkr_hold_guarded_multi_async(),
 * on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch()): @rc as listed there.
 */
typedef void (*zkr_guarded_fn)(int rc, void *user_data);

/**
 * Called once per hold when another client asks its holder to let go (a
 * revocation request, Apache Curator's protocol: the node's data set to
 * `__REVOKE__`, by zkr_revoke() or Curator's `Revoker.attemptRevoke()`),
 * on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch()): @hold is the hold asked, @requested_ms when the
 * request was made (the server's time, ms since the epoch). The holder may
 * release (from the callback too: the release does not block), finish
 * first, or ignore the request; a revoker may evict a holder that does not
 * release in time (zkr_revoke() with a grace period).
 */
typedef void (*zkr_revoke_fn)(zkr_hold *hold, int64_t requested_ms,
                              void *user_data);

/**
 * The part a contender plays, set by the library from its node's name and
 * place (one table, lib/layout.c), in zkr_participant.role:
 *   ZKR_ROLE_OTHER      none of those below.
 *   ZKR_ROLE_LOCK       an exclusive contender: a mutex's node (Curator's
 *                       "-lock-"), kazoo's Lock, or a writer that names
 *                       itself like one.
 *   ZKR_ROLE_READ       a reader of a read-write lock (Curator's and zkr's
 *                       "__READ__", kazoo's "__rlock__").
 *   ZKR_ROLE_WRITE      a writer of a read-write lock ("__WRIT__", kazoo's
 *                       WriteLock "__lock__").
 *   ZKR_ROLE_LEASE      a semaphore's lease node (PATH/leases).
 *   ZKR_ROLE_ADMISSION  a semaphore's contender queued for admission
 *                       (PATH/locks).
 *   ZKR_ROLE_LATCH      an election participant of the latch layout
 *                       (zkr_election_start(), Curator's LeaderLatch).
 *   ZKR_ROLE_SELECTOR   an election participant of the selector layout
 *                       (zkr_election_run(), Curator's LeaderSelector).
 */
typedef enum zkr_role {
  ZKR_ROLE_OTHER = 0,
  ZKR_ROLE_LOCK,
  ZKR_ROLE_READ,
  ZKR_ROLE_WRITE,
  ZKR_ROLE_LEASE,
  ZKR_ROLE_ADMISSION,
  ZKR_ROLE_LATCH,
  ZKR_ROLE_SELECTOR
} zkr_role;

/**
 * The recipe whose nodes the children of a path show (zkr_layout_of()):
 *   ZKR_LAYOUT_NONE       no children.
 *   ZKR_LAYOUT_LOCK       contenders, none of them a reader or a
 *                         read-write lock's writer: a mutex (zkr's,
 *                         Curator's InterProcessMutex, kazoo's Lock).
 *   ZKR_LAYOUT_RWLOCK     a read-write lock's contenders.
 *   ZKR_LAYOUT_SEMAPHORE  zkr's and Curator's semaphore: the children
 *                         "leases" and maybe "locks", and nothing else.
 *   ZKR_LAYOUT_KAZOO_SEMAPHORE  kazoo's semaphore: lease nodes right under
 *                         the path.
 *   ZKR_LAYOUT_ELECTION   an election: a latch participant among them.
 *   ZKR_LAYOUT_OTHER      children, none of them a contender.
 */
typedef enum zkr_layout {
  ZKR_LAYOUT_NONE = 0,
  ZKR_LAYOUT_LOCK,
  ZKR_LAYOUT_RWLOCK,
  ZKR_LAYOUT_SEMAPHORE,
  ZKR_LAYOUT_KAZOO_SEMAPHORE,
  ZKR_LAYOUT_ELECTION,
  ZKR_LAYOUT_OTHER
} zkr_layout;

/** One contender in a queue (a lock's, an election's). */
typedef struct zkr_participant {
  char *node;         /**< node name */
  int32_t seq;        /**< sequence number */
  int is_holder;      /**< 1 if it holds by the recipe's rule (the first in
                           a mutex's queue; every reader before the first
                           writer; the leader) */
  int64_t session_id; /**< the owner's ZooKeeper session */
  int64_t czxid;      /**< its fencing token */
  int64_t ctime_ms;   /**< when it queued (server time, ms since epoch) */
  char *data;         /**< the node's data: "host=H pid=P id=I" for zkr
                           nodes, whatever another library stored else */
  zkr_role role;      /**< its part, from its name and place */
} zkr_participant;

/**
 * zkr_hold_token - the fencing token of a hold
 *
 * zkr_hold_token() returns the fencing token of @h: the czxid of its node,
 * the ZooKeeper transaction id that created it. Tokens only grow across the
 * ensemble's whole history, so every later hold of the same lock, lease or
 * leadership has a larger one. Send it with every write to a resource that can
 * remember the largest token it has seen and refuse smaller ones: a holder
 * paused past its session timeout, whose hold has passed to another, is then
 * refused, however late its write arrives.
 *
 * The token is that of the hold @h stands for, while it lasts: while it is
 * ZKR_LOCK_HELD or ZKR_LOCK_SUSPECT. It is 0 once the hold is lost or
 * released, and for a leadership's earlier term.
 *
 * Returns:
 * The token (positive), or 0 when @h does not hold or is NULL.
 *
 * Thread safety:
 * zkr_hold_token() does not block (it takes internal locks briefly) and may be
 * called from any thread and from zkr callbacks.
 *
 * Example:
 *   #include <stdint.h>
 *   #include <zkr/zkr.h>
 *
 *   // The client side: every write to the storage service carries the
 *   // token. A service that has seen a larger token refuses the write.
 *   int send_write(const char *key, const char *value, int64_t token);
 *
 *   int store(zkr_mutex *m, const char *key, const char *value) {
 *     int64_t token = zkr_hold_token(zkr_mutex_hold(m));
 *     if (token == 0)
 *       return ZKR_ENOTHELD;
 *     return send_write(key, value, token);
 *   }
 *
 *   // The service side: an UPDATE that applies only with a token at least as
 *   // large as the last one accepted for the row, e.g. in SQL:
 *   //   UPDATE stock SET qty = ?, fence = ? WHERE item = ? AND fence <= ?
 *   // A result of 0 rows means a newer holder has written since: refuse.
 *
 * See also: zkr_hold_guarded_multi(), zkr_hold_state(), zkr_mutex_hold(),
 *   zkr_lease_hold(), zkr_election_hold()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int64_t zkr_hold_token(const zkr_hold *h);

/**
 * zkr_hold_node - the path of a hold's node
 *
 * zkr_hold_node() copies the full path of the node that @h holds into @buf, a
 * buffer of @len bytes, for example
 *
 *     /locks/job/_c_2f1c9a0e-8d5b-4c1e-9a57-0b6d3e2f4a11-lock-0000000042
 *
 * The path is relative to the chroot of the session's connection string, like
 * the recipe's path. The result is always NUL-terminated, and silently
 * truncated if @len is too small; 1082 bytes are always enough (a path of at
 * most 1024 bytes, "/leases/" or a "/", a node name of at most 56 bytes and
 * the NUL).
 *
 * The node exists while the hold lasts, in states ZKR_LOCK_HELD and
 * ZKR_LOCK_SUSPECT. Its sequence number is the contender's place in the queue,
 * and its czxid is the fencing token (zkr_hold_token()). Do not change or
 * delete the node: give the hold up through its recipe (zkr_mutex_release(),
 * zkr_lease_release(), zkr_election_resign()).
 *
 * Returns:
 *   ZKR_OK        @buf holds the path.
 *   ZKR_ENOTHELD  @h does not hold (lost, released, an earlier term) or is
 *                 NULL (what zkr_mutex_hold() gives when not held); @buf
 *                 holds the empty string.
 *   ZKR_EINVAL    @buf is NULL, or @len is 0.
 *
 * Thread safety:
 * zkr_hold_node() does not block (it takes internal locks briefly) and may be
 * called from any thread and from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void log_holder(zkr_hold *h) {
 *     char node[1082];
 *     if (zkr_hold_node(h, node, sizeof node) == ZKR_OK)
 *       printf("holding %s (token %lld)\n", node,
 *              (long long)zkr_hold_token(h));
 *   }
 *
 * See also: zkr_hold_token(), zkr_mutex_participants()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_hold_node(const zkr_hold *h, char *buf, size_t len);

/**
 * zkr_hold_state - the state of a hold
 *
 * zkr_hold_state() returns the state of the hold @h: ZKR_LOCK_HELD,
 * ZKR_LOCK_SUSPECT (the connection dropped: the hold may be lost, stop
 * touching the resource), or ZKR_LOCK_LOST (the session was lost or the node
 * deleted; for a leadership, also any earlier term). A released hold, and
 * NULL, give ZKR_LOCK_UNLOCKED.
 *
 * The call first applies the session clock (see
 * zkr_session_options.lost_fraction): a holder that was paused past the
 * point where the session may have expired sees ZKR_LOCK_LOST at once.
 *
 * Returns:
 * The state.
 *
 * Thread safety:
 * zkr_hold_state() does not block and may be called from any thread and from
 * zkr callbacks.
 *
 * See also: zkr_hold_token(), zkr_mutex_state_get(), zkr_lock_state_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_lock_state zkr_hold_state(const zkr_hold *h);

/** Why a hold was lost (zkr_hold_lost_cause()). */
typedef enum zkr_lost_cause {
  ZKR_LOST_NONE = 0,    /**< the hold is not lost: held, released, or
                             never taken */
  ZKR_LOST_SESSION = 1, /**< its ZooKeeper session ended (expired, closed,
                             or given up by the session clock) */
  ZKR_LOST_DELETED = 2, /**< another client deleted its node */
  ZKR_LOST_MAX_HOLD = 3 /**< it was held for its maximum hold (max_hold_ms
                             in the options): the holder gave it up and
                             deleted its node */
} zkr_lost_cause;

/**
 * zkr_hold_lost_cause - why a hold was lost
 *
 * zkr_hold_lost_cause() returns why the hold @h was lost, while
 * zkr_hold_state() reports it ZKR_LOCK_LOST: ZKR_LOST_SESSION (its ZooKeeper
 * session ended), ZKR_LOST_DELETED (another client deleted its node: an
 * operator, or a revoker that evicted it) or ZKR_LOST_MAX_HOLD (it was held
 * for the maximum hold its object was made with, and the holder gave it up
 * itself: its node is deleted). A hold that is not lost (held, released,
 * never taken), and NULL, give ZKR_LOST_NONE.
 *
 * Like zkr_hold_state(), the call first applies the session clock.
 *
 * Returns:
 * The cause.
 *
 * Thread safety:
 * zkr_hold_lost_cause() does not block and may be called from any thread and
 * from zkr callbacks, the LOST state callback among them.
 *
 * See also: zkr_hold_state(), zkr_lost_cause_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_lost_cause zkr_hold_lost_cause(const zkr_hold *h);

typedef struct zkr_session zkr_session;

/** What zkr_revoke() did, holder by holder. */
typedef struct zkr_revoke_result {
  int holders;  /**< holders found, and asked to let go */
  int released; /**< of them, gone by themselves (released, or lost) */
  int evicted;  /**< of them, deleted by the eviction */
  int held;     /**< of them, still held at the end */
  int refused;  /**< of them, whose node's ACL refused the request or the
                     eviction (counted in held too) */
} zkr_revoke_result;

/**
 * zkr_revoke - ask the holders of a lock to let go, and evict them after a
 * grace period
 *
 * zkr_revoke() asks every current holder of the lock, read-write lock,
 * semaphore or election at @path to let go, with Apache Curator's revocation
 * request: the data of the holder's node set to `__REVOKE__`, byte for byte
 * what Curator's `Revoker.attemptRevoke()` writes. A zkr holder made with a
 * revoke_fn (zkr_mutex_options, zkr_semaphore_options) is told, and so is a
 * Curator holder that called `makeRevocable()`. The holders are those of the
 * recipe's rule at the time of the call: the first node of a mutex, the
 * readers before the first writer or the writer of a read-write lock, every
 * lease node of a semaphore, an election's leader. A node already carrying a
 * request is not written again.
 *
 * It then waits until every holder asked has gone (released, or lost), for
 * at most @timeout_ms. With @grace_ms zero or more, a holder still there
 * @grace_ms after the call began is evicted: one transaction checks that its
 * node still has the version the request left and deletes exactly that node,
 * so that no successor is ever deleted. An evicted zkr holder that watches
 * its node (revoke_fn or watch_node) becomes ZKR_LOCK_LOST at once, with
 * ZKR_LOST_DELETED; the next contender's token is larger than the evicted
 * one's. The call returns by the later of @timeout_ms and @grace_ms (plus
 * the eviction's round trip). A negative @grace_ms never evicts.
 *
 * The wait reads each remaining node every 20 to 200 ms. What happened to
 * each holder is counted in *@out (if not NULL).
 *
 * Returns:
 *   ZKR_OK        Nothing is held any more: every holder released, lost or
 *                 was evicted, or there was none (also when @path does not
 *                 exist).
 *   ZKR_ETIMEDOUT A holder asked still holds at the end.
 *   ZKR_ENOAUTH   The ACL of a holder's node refused the request or the
 *                 eviction (a creator-only lock: add the creator's
 *                 credentials to @s with zkr_session_options.auth).
 *   ZKR_EBADVERSION A holder's node was written by another client each of
 *                 the five times it was asked (nothing was evicted).
 *   ZKR_EINVAL    @s is NULL or @timeout_ms is negative.
 *   ZKR_EBADPATH  @path is not a valid lock path.
 *   ZKR_EDEADLK   Called from a zkr callback.
 *   ZKR_ENOMEM    Out of memory.
 *   ZKR_ECLOSED, ZKR_ESESSIONLOST, ZKR_ECONNLOSS  The session could not be
 *                 used.
 *
 * Thread safety:
 * zkr_revoke() blocks; it may be called from any thread except zkr's
 * callbacks.
 *
 * See also: zkr_mutex_new(), zkr_hold_lost_cause()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_revoke(zkr_session *s, const char *path, int64_t timeout_ms,
                          int64_t grace_ms, zkr_revoke_result *out);

/**
 * zkr_lost_cause_name - the name of a loss's cause
 *
 * zkr_lost_cause_name() returns a short lower-case name of @cause: "none",
 * "session", "deleted", "max-hold"; "unknown" for any other value.
 *
 * Returns:
 * A static string.
 *
 * Thread safety:
 * zkr_lost_cause_name() may be called from any thread.
 *
 * See also: zkr_hold_lost_cause()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_lost_cause_name(zkr_lost_cause cause);

struct zoo_op;
struct zoo_op_result;
/**
 * zkr_hold_guarded_multi - a ZooKeeper transaction that commits only while a
 * hold lasts
 *
 * zkr_hold_guarded_multi() runs the caller's ZooKeeper operations @ops as one
 * transaction (a multi-op) that also checks that the node of the hold @h still
 * exists. The check is made by the ensemble, atomically with the operations: if
 * the node is gone because the session expired or someone deleted it, none of
 * the operations is applied. So a holder that was paused past its session
 * timeout, and whose lock, lease or leadership has passed to another, cannot
 * overwrite the other's work, however late its request arrives.
 *
 * @ops is an array of @count operations (1 to 1000), type `zoo_op_t` from
 * `<zookeeper.h>`, built with zoo_create_op_init(), zoo_delete_op_init(),
 * zoo_set_op_init() and zoo_check_op_init(). Their paths are relative to the
 * chroot of the session's connection string. The strings and buffers they point
 * to must stay valid until the call returns. `<zkr/zkr.h>` does not include
 * `<zookeeper.h>`; a program that does needs the ZooKeeper client's header
 * directory (@{-I/usr/include/zookeeper} on Debian) and, for the
 * zoo_*_op_init() functions, its library (@{-lzookeeper_mt}).
 *
 * @results is an array of @count results; when the server has answered (the
 * call returned ZKR_OK, or one of the caller's operations failed), it is filled
 * as zoo_multi() fills it, for the caller's operations only.
 *
 * The call first applies the session clock (see
 * zkr_session_options.lost_fraction), then checks that @h holds, in state
 * ZKR_LOCK_HELD; in any other state, including ZKR_LOCK_SUSPECT, nothing is
 * sent. The transaction is not sent again after a connection loss, because its
 * outcome is then unknown: the caller must find out (by reading the data)
 * whether it was applied. If the connection is down when the call is made, it
 * waits for it to come back, within @timeout_ms (negative: no limit).
 *
 * Whatever the outcome, a transaction that was applied was applied while the
 * node of @h existed: an unknown outcome never means a write without the hold.
 *
 * The call blocks, so it must not be called from a zkr callback: there it
 * returns ZKR_EDEADLK at once.
 *
 * Returns:
 *   ZKR_OK            The transaction committed: every operation was applied.
 *   ZKR_ELOCKLOST     @h is ZKR_LOCK_LOST or an earlier term (nothing was
 *                     sent), or the server found its node gone (nothing was
 *                     applied, and @h becomes ZKR_LOCK_LOST).
 *   ZKR_ENOTHELD      @h was released, is ZKR_LOCK_SUSPECT, or is NULL (what
 *                     zkr_mutex_hold() gives when not held); nothing was
 *                     sent.
 *   ZKR_EBADVERSION, ZKR_ENONODE, ZKR_EEXISTS, ZKR_ENOTEMPTY, ZKR_ENOAUTH,
 *   ZKR_EZK
 *                     One of the caller's operations failed (the code is that
 *                     of the first one to fail; see @results for each); nothing
 *                     was applied.
 *   ZKR_ECONNLOSS     The connection dropped after the transaction was sent: it
 *                     may or may not have been applied.
 *   ZKR_ETIMEDOUT     @timeout_ms passed, waiting for the connection or for the
 *                     answer; if the transaction had been sent, it may or may
 *                     not have been applied.
 *   ZKR_ECLOSED       The session is closed, or was closed while the
 *                     transaction was in flight (then it may or may not have
 *                     been applied).
 *   ZKR_ESESSIONLOST  The session was lost: while waiting for the connection,
 *                     with renewal off (nothing was applied), or while the
 *                     transaction was in flight (it may or may not have been
 *                     applied).
 *   ZKR_EDEADLK       Called from a zkr callback; nothing was sent.
 *   ZKR_EINVAL        @ops or @results is NULL, or @count is outside 1..1000.
 *   ZKR_ENOMEM        Out of memory; nothing was sent.
 *
 * Thread safety:
 * Any thread but a zkr callback's.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <string.h>
 *   #include <zookeeper.h>
 *   #include <zkr/zkr.h>
 *
 *   // Publish a new configuration and append it to a history, both or
 *   // neither, and only while we hold the lock.
 *   int publish(zkr_mutex *m, const char *config) {
 *     char created[256];
 *     zoo_op_t ops[2];
 *     zoo_op_result_t results[2];
 *     int len = (int)strlen(config);
 *     zoo_set_op_init(&ops[0], "/app/config", config, len, -1, NULL);
 *     zoo_create_op_init(&ops[1], "/app/history/v-", config, len,
 *                        &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL,
 *                        created, sizeof created);
 *     int rc = zkr_hold_guarded_multi(zkr_mutex_hold(m), 2, ops, results,
 *                                     10000);
 *     if (rc == ZKR_OK)
 *       printf("published as %s\n", created);
 *     else if (rc == ZKR_ELOCKLOST)
 *       fprintf(stderr, "lock lost: not published\n");
 *     return rc;
 *   }
 *
 * See also: zkr_hold_guarded_set(), zkr_hold_guarded_multi_async(),
 *   zkr_hold_token(), zkr_hold_state()
 *
 * Since: 0.1.0
 * Synopsis: #include <zookeeper.h>
 */
ZKR_EXTERN int zkr_hold_guarded_multi(zkr_hold *h, int count,
                                      const struct zoo_op *ops,
                                      struct zoo_op_result *results,
                                      int64_t timeout_ms);

/**
 * zkr_hold_guarded_multi_async - a guarded transaction that does not wait
 *
 * zkr_hold_guarded_multi_async() sends the same transaction as
 * zkr_hold_guarded_multi(): the caller's @count operations @ops, applied only
 * if the node of the hold @h still exists, checked by the ensemble in the same
 * transaction. It does not wait for the answer: @fn is called with the outcome
 * and @user_data once the server has answered or the request has gone with the
 * connection, on the session's event thread, or in dispatch mode in
 * zkr_session_dispatch() on the caller's loop (see
 * zkr_session_options.dispatch). It is the form for an event loop, which must
 * not wait for the network.
 *
 * The checks before sending are those of zkr_hold_guarded_multi(): the session
 * clock first, then @h must hold, in state ZKR_LOCK_HELD. It does not wait for
 * a connection either: when the session is not connected, nothing is sent and
 * the call returns ZKR_ECONNLOSS (try again after ZKR_EV_RECONNECTED). A
 * request in flight ends with the server's answer or with the connection (a
 * server that stops answering is given up after about two thirds of the
 * session timeout); there is no timeout of its own.
 *
 * @results (@count of them) is filled before @fn is called, when the server
 * answered. @results, and every buffer the operations point to (a create's
 * buffer for the created path in particular), must stay valid until @fn has
 * been called; in dispatch mode, also until the session is closed if it is
 * closed first (the call is then dropped, see zkr_session_close()). The
 * strings and data @ops point to are copied by the call.
 *
 * When the call returns an error, nothing was sent and @fn will not be called.
 * When it returns ZKR_OK, @fn is called exactly once (except that a
 * dispatch-mode session's close drops it), with:
 *   ZKR_OK            The transaction committed.
 *   ZKR_ELOCKLOST     The server found the node of @h gone: nothing was
 *                     applied, and @h becomes ZKR_LOCK_LOST.
 *   ZKR_EBADVERSION, ZKR_ENONODE, ZKR_EEXISTS, ZKR_ENOTEMPTY, ZKR_ENOAUTH,
 *   ZKR_EZK           One of the caller's operations failed (see @results);
 *                     nothing was applied.
 *   ZKR_ECONNLOSS     The connection dropped after the transaction was sent:
 *                     it may or may not have been applied.
 *   ZKR_ESESSIONLOST  The session was lost or closed while the transaction
 *                     was in flight: it may or may not have been applied.
 *
 * @fn does not get @h, which may be gone by then (its recipe object freed);
 * the outcome is still reported.
 *
 * Returns:
 *   ZKR_OK            Sent; @fn will be called.
 *   ZKR_ELOCKLOST     @h is ZKR_LOCK_LOST or an earlier term.
 *   ZKR_ENOTHELD      @h was released, is ZKR_LOCK_SUSPECT, or is NULL.
 *   ZKR_ECONNLOSS     The session is not connected now.
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_EINVAL        @ops, @results or @fn is NULL, or @count is outside
 *                     1..1000.
 *   ZKR_EZK           The ZooKeeper client refused the request (an
 *                     operation it cannot encode).
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * Any thread, including a zkr callback (a dispatched one too).
 *
 * Example:
 *   #include <stdio.h>
 *   #include <stdlib.h>
 *   #include <string.h>
 *   #include <zookeeper.h>
 *   #include <zkr/zkr.h>
 *
 *   struct pub {
 *     zoo_op_t op;
 *     zoo_op_result_t result;
 *   };
 *
 *   static void published(int rc, void *user_data) {
 *     struct pub *p = user_data;
 *     printf("publish: %s\n", zkr_strerror(rc));
 *     free(p);
 *   }
 *
 *   // From an event loop: publish config while holding m, without waiting.
 *   int publish_async(zkr_mutex *m, const char *config) {
 *     struct pub *p = calloc(1, sizeof *p);
 *     if (!p)
 *       return ZKR_ENOMEM;
 *     zoo_set_op_init(&p->op, "/app/config", config, (int)strlen(config), -1,
 *                     NULL);
 *     int rc = zkr_hold_guarded_multi_async(zkr_mutex_hold(m), 1, &p->op,
 *                                           &p->result, published, p);
 *     if (rc != ZKR_OK)
 *       free(p);
 *     return rc;
 *   }
 *
 * See also: zkr_hold_guarded_multi(), zkr_session_dispatch()
 *
 * Since: 0.1.0
 * Synopsis: zkr_guarded_fn, #include <zookeeper.h>
 */
ZKR_EXTERN int zkr_hold_guarded_multi_async(zkr_hold *h, int count,
                                            const struct zoo_op *ops,
                                            struct zoo_op_result *results,
                                            zkr_guarded_fn fn, void *user_data);

/**
 * zkr_hold_guarded_set - set a node's data only while a hold lasts
 *
 * zkr_hold_guarded_set() sets the data of the node @path to the @datalen bytes
 * at @data, in one transaction with a check that the node of the hold @h still
 * exists, so the write is applied only while @h holds. It is the common case of
 * zkr_hold_guarded_multi(), which describes the guarantee, the checks made
 * before sending, and the handling of connection losses.
 *
 * @path is an existing node, relative to the chroot of the session's connection
 * string. A @datalen of 0 sets empty data, -1 sets null data (then @data may be
 * NULL). @version is the version the node must have, as read with its data, or
 * -1 for any version; a version turns the write into a compare-and-set, which
 * also protects against a read that was stale. @timeout_ms bounds the call
 * (negative: no limit).
 *
 * The call blocks, so it must not be called from a zkr callback.
 *
 * Returns:
 *   ZKR_OK           The data was set.
 *   ZKR_ELOCKLOST    @h is ZKR_LOCK_LOST or an earlier term (nothing was
 *                    sent), or its node was found gone (nothing was written,
 *                    and @h becomes ZKR_LOCK_LOST).
 *   ZKR_ENOTHELD     @h was released, is ZKR_LOCK_SUSPECT or is NULL; nothing
 *                    was sent.
 *   ZKR_ENONODE      @path does not exist.
 *   ZKR_EBADVERSION  The node's version is not @version.
 *   ZKR_ENOAUTH      The node's ACL does not allow this session to write it.
 *   ZKR_ECONNLOSS, ZKR_ETIMEDOUT, ZKR_ECLOSED, ZKR_ESESSIONLOST
 *                    As for zkr_hold_guarded_multi(): the write may not have
 *                    been sent, or may have been applied (under the hold) with
 *                    its answer lost.
 *   ZKR_EDEADLK      Called from a zkr callback; nothing was sent.
 *   ZKR_EBADPATH     @path is not a valid znode path.
 *   ZKR_EINVAL       @path is NULL, @datalen is below -1, or @data is NULL
 *                    with a positive @datalen.
 *   ZKR_EZK          ZooKeeper refused the write for another reason.
 *   ZKR_ENOMEM       Out of memory; nothing was sent.
 *
 * Thread safety:
 * Any thread but a zkr callback's.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <time.h>
 *   #include <zkr/zkr.h>
 *
 *   // Record when the job last completed, unless the lock was lost.
 *   int mark_done(zkr_mutex *m) {
 *     char when[32];
 *     int n = snprintf(when, sizeof when, "%lld", (long long)time(NULL));
 *     int rc = zkr_hold_guarded_set(zkr_mutex_hold(m),
 *                                   "/jobs/cleanup/last-run", when, n, -1,
 *                                   5000);
 *     if (rc != ZKR_OK)
 *       fprintf(stderr, "not recorded: %s\n", zkr_strerror(rc));
 *     return rc;
 *   }
 *
 * See also: zkr_hold_guarded_multi(), zkr_hold_token()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_hold_guarded_set(zkr_hold *h, const char *path,
                                    const char *data, int datalen, int version,
                                    int64_t timeout_ms);

/**
 * zkr_participants_free - free a list of lock contenders
 *
 * zkr_participants_free() frees the array @p of @count entries returned by
 * zkr_mutex_participants(), with the strings each entry points to (@node and
 * @data). @count must be the count that call returned. NULL is accepted and
 * does nothing.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * zkr_participants_free() may be called from any thread, including from zkr
 * callbacks.
 *
 * See also: zkr_mutex_participants()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_participants_free(zkr_participant *p, size_t count);

/**
 * zkr_lock_state_name - the name of a lock state
 *
 * zkr_lock_state_name() returns the name of @state without its prefix:
 * "UNLOCKED", "ACQUIRING", "HELD", "SUSPECT" or "LOST". A value that is not a
 * ZKR_LOCK_* constant gives "UNKNOWN".
 *
 * The string has static storage: do not modify or free it.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_lock_state_name() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void print_lock_state(const zkr_mutex *m) {
 *     printf("lock: %s\n", zkr_lock_state_name(zkr_mutex_state_get(m)));
 *   }
 *
 * See also: zkr_mutex_state_get(), zkr_mutex_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_lock_state_name(zkr_lock_state state);

/**
 * zkr_role_name - the name of a contender's role
 *
 * zkr_role_name() returns the name of @role in lower case, as zkr-ls and
 * zkr-exporter show it: "lock", "read", "write", "lease", "admission",
 * "latch", "selector", and "other" for ZKR_ROLE_OTHER or a value that is
 * not a ZKR_ROLE_* constant.
 *
 * The string has static storage: do not modify or free it.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_role_name() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void print_queue(const zkr_participant *p, size_t n) {
 *     for (size_t i = 0; i < n; i++)
 *       printf("%s %s\n", zkr_role_name(p[i].role), p[i].node);
 *   }
 *
 * See also: zkr_mutex_participants(), zkr_layout_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_role_name(zkr_role role);

/**
 * zkr_layout_of - which recipe the children of a path show
 *
 * zkr_layout_of() reads the @n names in @children, the children of one node
 * (as zkr_session_children() gives them), and tells which recipe's nodes
 * they are, by the same table the library names its own nodes with: a
 * semaphore (the children "leases" and maybe "locks" and no other), an
 * election (a latch participant among them), kazoo's semaphore (lease
 * nodes right under the path), a read-write lock (a reader, or a writer
 * named "__WRIT__"), a lock (other contenders), none (no children) or
 * other (children, none of them a contender). Only the names are read: a
 * contender is a name that ends in a ZooKeeper sequence number. kazoo's
 * Lock and WriteLock name their nodes alike, so both show as a lock.
 *
 * Returns:
 * A ZKR_LAYOUT_* value; ZKR_LAYOUT_NONE if @n is 0 or @children is NULL.
 *
 * Thread safety:
 * zkr_layout_of() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   int show_layout(zkr_session *s, const char *path) {
 *     char **kids = NULL;
 *     size_t n = 0;
 *     int rc = zkr_session_children(s, path, 5000, &kids, &n);
 *     if (rc == ZKR_OK) {
 *       printf("%s: %s\n", path, zkr_layout_name(zkr_layout_of(kids, n)));
 *       zkr_children_free(kids, n);
 *     }
 *     return rc;
 *   }
 *
 * See also: zkr_layout_name(), zkr_session_children()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_layout zkr_layout_of(char *const *children, size_t n);

/**
 * zkr_role_of - the role of a node named in a layout
 *
 * zkr_role_of() tells the role a child named @name plays in a node whose
 * children show @layout (zkr_layout_of()), by the table the library names
 * its own nodes with. Under ZKR_LAYOUT_SEMAPHORE, the child that holds the
 * lease nodes is ZKR_ROLE_LEASE and the one that holds the contenders
 * queued for admission ZKR_ROLE_ADMISSION. Under ZKR_LAYOUT_ELECTION, a
 * contender is ZKR_ROLE_LATCH or ZKR_ROLE_SELECTOR by its marker; under
 * any other layout, ZKR_ROLE_READ, ZKR_ROLE_WRITE, ZKR_ROLE_LEASE or
 * ZKR_ROLE_LOCK. A name without a sequence number (other than a
 * semaphore's two children) is ZKR_ROLE_OTHER, as is a NULL @name.
 *
 * Returns:
 * A ZKR_ROLE_* value.
 *
 * Thread safety:
 * zkr_role_of() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <string.h>
 *   #include <zkr/zkr.h>
 *
 *   // The child of a semaphore's path that queues its contenders.
 *   const char *admission_child(char *const *kids, size_t n) {
 *     for (size_t i = 0; i < n; i++)
 *       if (zkr_role_of(kids[i], ZKR_LAYOUT_SEMAPHORE) == ZKR_ROLE_ADMISSION)
 *         return kids[i];
 *     return NULL;
 *   }
 *
 * See also: zkr_layout_of(), zkr_role_name()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_role zkr_role_of(const char *name, zkr_layout layout);

/**
 * zkr_layout_name - the name of a layout
 *
 * zkr_layout_name() returns the name of @layout in lower case: "none",
 * "lock", "rwlock", "semaphore", "kazoo-semaphore", "election", and "other"
 * for ZKR_LAYOUT_OTHER or a value that is not a ZKR_LAYOUT_* constant.
 *
 * The string has static storage: do not modify or free it.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_layout_name() is thread-safe and may be called from any thread,
 * including from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void say_layout(char *const *kids, size_t n) {
 *     printf("%s\n", zkr_layout_name(zkr_layout_of(kids, n)));
 *   }
 *
 * See also: zkr_layout_of()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_layout_name(zkr_layout layout);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_LOCK_H */
