/*
 * zkr -- ZooKeeper recipes for C.
 * multilock.h: several locks taken together, all or nothing, without
 * deadlock.
 *
 * A multi-lock is a set of mutexes and read or write halves of read-write
 * locks, on distinct paths, acquired as one: one ZooKeeper transaction
 * creates a contender node in each lock's queue (each named as that lock's
 * Curator-compatible node), and the set holds when every node holds by its
 * queue's rule. Because every set's nodes are made in one transaction,
 * their order in every queue two sets share is the order of those
 * transactions, so sets never wait for each other in a cycle, and a
 * single-lock contender is a set of one.
 *
 * THREAD SAFETY: a zkr_multilock is used by one thread at a time, except
 * zkr_multilock_cancel(), zkr_multilock_state_get() and
 * zkr_multilock_hold(), which any thread may call at any time before
 * zkr_multilock_free(). Callbacks run on the session's event thread (in
 * dispatch mode, in zkr_session_dispatch()); they must not block.
 */
#ifndef ZKR_MULTILOCK_H
#define ZKR_MULTILOCK_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/lock.h>
#include <zkr/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque multi-lock. */
typedef struct zkr_multilock zkr_multilock;

/** The most locks in one set. */
#define ZKR_MULTILOCK_MAX 64

/** What a multi-lock takes at one path. */
typedef enum zkr_multilock_kind {
  ZKR_MULTILOCK_MUTEX = 0, /**< the mutex at the path (zkr_mutex_new()) */
  ZKR_MULTILOCK_READ = 1,  /**< the read half of the read-write lock */
  ZKR_MULTILOCK_WRITE = 2  /**< its write half */
} zkr_multilock_kind;

/** One lock of a set. */
typedef struct zkr_multilock_member {
  const char *path;        /**< the lock's path */
  zkr_multilock_kind kind; /**< what is taken there */
} zkr_multilock_member;

/**
 * The options of zkr_multilock_new(); zero (or NULL for the struct) means
 * every default. The ABI rule of zkr_mutex_options applies: fields are only
 * added in place of reserved_, which must be zero.
 */
typedef struct zkr_multilock_options {
  const char *id;              /**< names the contender in its nodes' data;
                                    NULL (default): none */
  zkr_lock_state_fn state_fn;  /**< told HELD, SUSPECT, LOST of the set;
                                    NULL: none */
  void *state_user_data;       /**< given to state_fn */
  int64_t max_hold_ms;         /**< give the set up after this long (ms);
                                    0 (default): no maximum */
  zkr_revoke_fn revoke_fn;     /**< told revocation requests of the set;
                                    NULL (default): they are ignored */
  void *revoke_user_data;      /**< given to revoke_fn */
  int64_t yield_after_ms;      /**< yield places in a wait-for cycle after
                                    waiting this long (ms); 0 (default):
                                    30000; negative: never */
  unsigned char reserved_[32]; /**< must be zero: later fields take its
                                    place */
} zkr_multilock_options;

/**
 * zkr_multilock_new - create a multi-lock object
 *
 * zkr_multilock_new() creates a multi-lock over the @n locks of @members (1
 * to ZKR_MULTILOCK_MAX, on distinct paths) on the session @s, and stores it in
 * *@out. Nothing is sent until an acquisition. The paths are copied.
 *
 * Each member's node is the one its lock's recipe makes, so a set shares
 * each lock with single-lock users of zkr, Apache Curator and kazoo: a
 * mutex's node `_c_<uuid>-lock-<seq>`, a read half's `_c_<uuid>-__READ__<seq>`,
 * a write half's `_c_<uuid>-__WRIT__<seq>`. All the nodes of one set have the
 * same uuid, and each node's data names the set after the contender's id:
 * "host=H pid=P set=N id=I" where N is the number of locks in the set.
 *
 * @opts (may be NULL):
 *   id        As for zkr_mutex_options.
 *   state_fn  Called with state_user_data when the state of the held set
 *             changes: ZKR_LOCK_HELD, ZKR_LOCK_SUSPECT (the connection
 *             dropped), ZKR_LOCK_LOST (a member's node is gone: the session
 *             ended or another client deleted it; the other members are
 *             released at once). The hold given is zkr_multilock_hold(). It
 *             runs on the session's event thread (in dispatch mode, in
 *             zkr_session_dispatch()) and must not block.
 *   max_hold_ms  As for zkr_mutex_options: a set held this long is given
 *             up (every node deleted), LOST with ZKR_LOST_MAX_HOLD.
 *   revoke_fn As for zkr_mutex_options: every node of a held set watches
 *             its data, and a revocation request of any of them calls
 *             revoke_fn once per hold of the set, with revoke_user_data,
 *             the set's hold and the request's time.
 *   yield_after_ms  How long an acquisition waits while first in some of
 *             its queues (holding there, not yet everywhere) before it
 *             looks for a wait-for cycle through the set among its queues:
 *             a client that holds one lock while queueing for another
 *             (Apache Curator's InterProcessMultiLock) can wait for the set
 *             while the set waits for it. The search reads the set's
 *             queues and their siblings (the other children of their
 *             parents, up to 64 each), placing contenders by their nodes'
 *             ZooKeeper sessions. Found, the set yields: every node is
 *             deleted, and once the nodes it waited behind are gone the
 *             set is made again, within the same deadline. Not found, it looks
 * again every min(yield_after_ms, 2 s). 0: 30000 (30 s); negative: never. zkr
 * sets never wait for each other in a cycle; a set is never made to yield by
 * one slow holder alone. reserved_ Must be all zero.
 *
 * Returns:
 *   ZKR_OK        *@out holds the new multi-lock, ZKR_LOCK_UNLOCKED.
 *   ZKR_EINVAL    @out, @s or @members is NULL, @n is out of range, a kind is
 *                 unknown, two members name one path, or @opts is invalid
 *                 (an id as zkr_mutex_new() refuses, a negative
 *                 max_hold_ms, a non-zero byte in reserved_).
 *   ZKR_EBADPATH  A path is not a valid lock path.
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * zkr_multilock_new() may be called from any thread.
 *
 * See also: zkr_multilock_acquire(), zkr_multilock_free()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_multilock_new(zkr_multilock **out, zkr_session *s,
                                 const zkr_multilock_member *members, int n,
                                 const zkr_multilock_options *opts);

/**
 * zkr_multilock_free - free a multi-lock
 *
 * zkr_multilock_free() ends an acquisition in progress (as
 * zkr_multilock_cancel() does), releases a held set, and frees @ml. No
 * callback of @ml runs after it returns (it waits for one running on another
 * thread). NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * zkr_multilock_free() may be called from any thread, once, when no other
 * call on @ml is in progress except an acquisition it ends.
 *
 * See also: zkr_multilock_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_multilock_free(zkr_multilock *ml);

/**
 * zkr_multilock_acquire - acquire every lock of a set, or none
 *
 * zkr_multilock_acquire() makes one contender node in each lock's queue, all
 * in one ZooKeeper transaction (one round trip, one czxid), and waits until
 * every node holds by its queue's rule, watching one node per queue that
 * blocks it. On success the set is held: zkr_multilock_hold() gives its hold,
 * whose fencing token is the czxid the set's nodes share, and whose guarded
 * writes check every node of the set.
 *
 * @timeout_ms bounds the whole acquisition: 0 tries once (ZKR_EWOULDBLOCK if
 * a lock is taken, nothing left behind), negative waits without limit. On any
 * failure every node of the set is deleted. If the ZooKeeper session is lost
 * while waiting, the set is made again in the next session, in one new
 * transaction, within the same deadline. So is a set that yields its places
 * in a wait-for cycle (zkr_multilock_options.yield_after_ms).
 *
 * Returns:
 *   ZKR_OK          Every lock of the set is held.
 *   ZKR_ETIMEDOUT   The deadline passed; nothing is held.
 *   ZKR_EWOULDBLOCK A try-once found a lock taken.
 *   ZKR_ECANCELED   zkr_multilock_cancel() or zkr_multilock_free() ended it.
 *   ZKR_EINVAL      @ml is NULL.
 *   ZKR_EBUSY       The set is being acquired already (on another thread).
 *   ZKR_EDEADLK     Called from a zkr callback; or the set is held already
 *                   (sets are not reentrant); or the session of @ml holds
 *                   a lock at one of its paths already (through another
 *                   object: a mutex, a read-write lock's half, another
 *                   set), which the set would have to wait for. Nothing
 *                   is sent.
 *   ZKR_EFOREIGN    A path holds another recipe's layout (a semaphore's).
 *   ZKR_ENOAUTH     An ACL refused a node or a parent.
 *   ZKR_EEPHEMERAL  A path lies under an ephemeral node.
 *   ZKR_ECLOSED, ZKR_ESESSIONLOST  The session is closed or lost for good.
 *   ZKR_ENOMEM      Out of memory.
 *   ZKR_EZK         Another ZooKeeper error.
 *
 * Thread safety:
 * zkr_multilock_acquire() blocks; one acquisition at a time per object, from
 * any thread but zkr's callbacks.
 *
 * See also: zkr_multilock_release(), zkr_multilock_hold()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_multilock_acquire(zkr_multilock *ml, int64_t timeout_ms);

/**
 * zkr_multilock_cancel - end an acquisition in progress
 *
 * zkr_multilock_cancel() makes an acquisition of @ml in progress on another
 * thread return ZKR_ECANCELED, with every node of the set deleted.
 *
 * Returns:
 *   ZKR_OK     It was acquiring.
 *   ZKR_EINVAL @ml is NULL, or no acquisition is in progress.
 *
 * Thread safety:
 * zkr_multilock_cancel() does not block; any thread, zkr callbacks included.
 *
 * See also: zkr_multilock_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_multilock_cancel(zkr_multilock *ml);

/**
 * zkr_multilock_release - release a held set
 *
 * zkr_multilock_release() deletes every node of the set held by @ml, in one
 * ZooKeeper transaction (sent in the background, and again after a
 * connection loss; a set some of whose nodes are gone already has the
 * others deleted one by one).
 *
 * Returns:
 *   ZKR_OK        Released.
 *   ZKR_ELOCKLOST The set was lost before the release (reported once; the
 *                 nodes left are deleted).
 *   ZKR_ENOTHELD  Not held.
 *   ZKR_EINVAL    @ml is NULL.
 *
 * Thread safety:
 * zkr_multilock_release() does not block; any thread, zkr callbacks
 * included.
 *
 * See also: zkr_multilock_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_multilock_release(zkr_multilock *ml);

/**
 * zkr_multilock_state_get - the state of a multi-lock
 *
 * zkr_multilock_state_get() returns the state of the set: ZKR_LOCK_UNLOCKED,
 * ZKR_LOCK_ACQUIRING, ZKR_LOCK_HELD (every member held, the session
 * connected), ZKR_LOCK_SUSPECT (held, the connection dropped) or
 * ZKR_LOCK_LOST (a member was lost; until the release). NULL gives
 * ZKR_LOCK_UNLOCKED.
 *
 * Returns:
 * The state.
 *
 * Thread safety:
 * zkr_multilock_state_get() does not block; any thread.
 *
 * See also: zkr_multilock_hold()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_lock_state zkr_multilock_state_get(const zkr_multilock *ml);

/**
 * zkr_multilock_hold - the hold of a held set
 *
 * zkr_multilock_hold() returns the hold of the set @ml holds, or NULL while
 * it holds none (and for NULL). Its token (zkr_hold_token()) is the czxid
 * every node of the set shares; its node (zkr_hold_node()) is the first
 * member's; its guarded writes (zkr_hold_guarded_multi()) check every node
 * of the set in the same transaction; its state is the set's.
 *
 * Returns:
 * The hold, or NULL.
 *
 * Thread safety:
 * zkr_multilock_hold() does not block; any thread.
 *
 * See also: zkr_hold_token(), zkr_hold_guarded_multi()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_hold *zkr_multilock_hold(zkr_multilock *ml);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_MULTILOCK_H */
