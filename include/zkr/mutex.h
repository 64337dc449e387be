/*
 * zkr -- ZooKeeper recipes for C.
 * mutex.h: the fair distributed mutex, plain and reentrant.
 *
 * Contenders queue as EPHEMERAL|SEQUENTIAL nodes "_c_<uuid>-lock-<seq>"
 * under the lock path (Apache Curator's InterProcessMutex layout, so a C
 * process and a Java process using Curator share one lock); the lowest
 * sequence number holds, every waiter watches only the node just before
 * its own, so a release wakes one waiter. Locks are granted in the order
 * the contenders queued (FIFO). A holder whose process dies or whose
 * session expires loses the lock with its session.
 *
 * THREAD SAFETY: a zkr_mutex is used by one thread at a time, except
 * zkr_mutex_cancel(), zkr_mutex_state_get(), zkr_mutex_is_held(),
 * zkr_mutex_hold_count(), zkr_mutex_fencing_token() and zkr_mutex_node(),
 * which any thread may call at any time (but not after, or concurrently
 * with, zkr_mutex_free()). Many mutex objects, on one or many paths,
 * may share one session, and each thread may use its own. Callbacks run on
 * the session's event thread, one at a time; they must not block.
 */
#ifndef ZKR_MUTEX_H
#define ZKR_MUTEX_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/lock.h>
#include <zkr/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque mutex. */
typedef struct zkr_mutex zkr_mutex;
/** Opaque mutex options; copied by zkr_mutex_new(). */
typedef struct zkr_mutex_opts zkr_mutex_opts;

/**
 * zkr_mutex_opts_new - allocate mutex options: not reentrant, no id, no
 * state callback.
 * Returns ZKR_OK, ZKR_EINVAL (@out NULL), ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_mutex_opts_new(zkr_mutex_opts **out);

/** zkr_mutex_opts_free - free options; NULL is a no-op. */
ZKR_EXTERN void zkr_mutex_opts_free(zkr_mutex_opts *opts);

/**
 * zkr_mutex_opts_set_reentrant - with 1, the thread holding the mutex may
 * acquire it again, and must release it as many times.
 * Returns ZKR_OK, ZKR_EINVAL (@opts NULL).
 */
ZKR_EXTERN int zkr_mutex_opts_set_reentrant(zkr_mutex_opts *opts,
                                            int reentrant);

/**
 * zkr_mutex_opts_set_watch_node - with 1, a holder watches its own lock
 * node, so that its deletion by another client (an operator, a revoking
 * tool) makes the lock LOST at once, with the state callback. Without it
 * (the default) such a deletion is noticed at the next guarded write or
 * after a reconnection. A waiter, too, checks that its node is still
 * there before it takes the lock without listing the children (queueing
 * again if it is not). Costs one or two more requests per acquisition; a
 * session expiry is noticed either way. Meant for long holds (zkr-lock
 * uses it).
 * Returns ZKR_OK, ZKR_EINVAL (@opts NULL).
 */
ZKR_EXTERN int zkr_mutex_opts_set_watch_node(zkr_mutex_opts *opts, int on);

/**
 * zkr_mutex_opts_set_id - a short identifier of this contender (a job or
 * instance name), stored in the lock node with the host name and pid and
 * shown by zkr_mutex_participants(). Copied.
 * Returns ZKR_OK, ZKR_EINVAL (@opts or @id NULL, @id empty, longer than
 * 256 bytes, or containing control characters), ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_mutex_opts_set_id(zkr_mutex_opts *opts, const char *id);

/**
 * zkr_mutex_opts_set_state_fn - a callback for the state changes of a held
 * lock (HELD, SUSPECT, LOST); its first argument is the zkr_mutex *.
 * Returns ZKR_OK, ZKR_EINVAL (@opts NULL).
 */
ZKR_EXTERN int zkr_mutex_opts_set_state_fn(zkr_mutex_opts *opts,
                                           zkr_lock_state_fn fn,
                                           void *user_data);

/**
 * zkr_mutex_new - create a mutex object for the lock at @path.
 * @out: receives the mutex; left untouched on failure.
 * @s: the session (the mutex holds a reference on it).
 * @path: the lock path, an absolute znode path; it and its parents are
 *   created on demand as container nodes, which the server removes once
 *   empty.
 * @opts: options (copied), or NULL for the defaults.
 * Nothing is sent to ZooKeeper until the first acquisition.
 * Returns ZKR_OK; ZKR_EINVAL (NULL @out or @s); ZKR_EBADPATH (@path NULL,
 * not absolute, "/" itself, with empty, "." or ".." components, a trailing
 * "/", control characters, over 1024 bytes, or under "/zookeeper");
 * ZKR_ECLOSED; ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_mutex_new(zkr_mutex **out, zkr_session *s, const char *path,
                             const zkr_mutex_opts *opts);

/**
 * zkr_mutex_free - free a mutex: a pending acquisition is cancelled (its
 * callback is not called), a held lock released. NULL is a no-op. When it
 * returns no callback of @m is running (it waits for one running on the
 * event thread, unless called from that callback) and none will run.
 */
ZKR_EXTERN void zkr_mutex_free(zkr_mutex *m);

/**
 * zkr_mutex_acquire - acquire, blocking.
 * @timeout_ms: negative waits without limit; 0 tries once and leaves no
 *   node behind if the lock is held by another; otherwise the deadline.
 * Waiting survives connection losses; if the session is lost while
 * waiting, the wait starts over in the new session (the place in the
 * queue is lost with the old one).
 * Returns ZKR_OK (held; for a reentrant mutex held by this thread, the
 * hold count grows); ZKR_EWOULDBLOCK (@timeout_ms 0 and held by another);
 * ZKR_ETIMEDOUT; ZKR_ECANCELED (zkr_mutex_cancel()); ZKR_EBUSY (an
 * acquisition is already in progress, or held and not reentrant, or held
 * by another thread); ZKR_ECLOSED; ZKR_ESESSIONLOST (lost and renewal
 * off); ZKR_ENOAUTH (the lock path's ACL refuses us); ZKR_ENONODE (the
 * lock path cannot be created: e.g. the session's chroot does not exist);
 * ZKR_EZK (another ZooKeeper error, e.g. the lock path is an ephemeral
 * node); ZKR_EDEADLK (called from a zkr callback); ZKR_EINVAL (@m NULL);
 * ZKR_ENOMEM. With @timeout_ms 0 the call still waits for a connection,
 * at most the session timeout (then ZKR_ETIMEDOUT).
 */
ZKR_EXTERN int zkr_mutex_acquire(zkr_mutex *m, int64_t timeout_ms);

/**
 * zkr_mutex_acquire_async - start an acquisition; @fn gets the result on
 * the session's event thread (no thread per waiter), exactly once, with
 * the zkr_mutex * as its first argument; if the session is closed first,
 * with ZKR_ECLOSED. Same @timeout_ms as
 * zkr_mutex_acquire(). If this function fails, @fn is never called.
 * Returns ZKR_OK (started; for a reentrant mutex already held by this
 * thread the hold count grows and @fn is called with ZKR_OK), ZKR_EBUSY,
 * ZKR_ECLOSED, ZKR_ESESSIONLOST, ZKR_EINVAL (NULL @m or @fn), ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_mutex_acquire_async(zkr_mutex *m, int64_t timeout_ms,
                                       zkr_acquire_fn fn, void *user_data);

/**
 * zkr_mutex_cancel - cancel a pending acquisition, from any thread: it
 * ends with ZKR_ECANCELED, our node and watch are removed, and the lock is
 * never granted to it afterwards.
 * Returns ZKR_OK; ZKR_EINVAL (@m NULL or nothing to cancel).
 */
ZKR_EXTERN int zkr_mutex_cancel(zkr_mutex *m);

/**
 * zkr_mutex_release - release: our node is deleted. If the
 * connection is down the deletion is retried in the background until it
 * succeeds or the session ends. A reentrant mutex is released when its
 * hold count drops to zero.
 * Returns ZKR_OK; ZKR_ENOTHELD (not held: nothing changes); ZKR_ELOCKLOST
 * (it was held but has been lost; the state returns to UNLOCKED);
 * ZKR_EBUSY (a reentrant mutex held by another thread); ZKR_EINVAL.
 */
ZKR_EXTERN int zkr_mutex_release(zkr_mutex *m);

/** zkr_mutex_state_get - the current state (ZKR_LOCK_UNLOCKED for NULL). */
ZKR_EXTERN zkr_lock_state zkr_mutex_state_get(const zkr_mutex *m);

/**
 * zkr_mutex_is_held - 1 if the lock is held and the session connected
 * (state HELD), else 0: while SUSPECT the lock may already belong to
 * another, so it is not reported as held.
 */
ZKR_EXTERN int zkr_mutex_is_held(const zkr_mutex *m);

/** zkr_mutex_hold_count - how many times the holder acquired it (0 if not
 * held; at most 1 for a plain mutex). */
ZKR_EXTERN int zkr_mutex_hold_count(const zkr_mutex *m);

/**
 * zkr_mutex_fencing_token - the fencing token of the current acquisition:
 * the czxid of our lock node, a 64-bit number that only grows over the
 * ensemble's whole history, so a resource can reject a request carrying an
 * older token than one it has seen. 0 if not held.
 */
ZKR_EXTERN int64_t zkr_mutex_fencing_token(const zkr_mutex *m);

/**
 * zkr_mutex_node - the full path of our lock node, copied into @buf of
 * @len bytes (NUL-terminated, truncated if needed).
 * Returns ZKR_OK; ZKR_ENOTHELD (not held; @buf gets ""); ZKR_EINVAL.
 */
ZKR_EXTERN int zkr_mutex_node(const zkr_mutex *m, char *buf, size_t len);

/**
 * zkr_mutex_waiters_ahead - while an acquisition waits, the number of
 * contenders ahead of it as of its last look at the queue (it looks again
 * only when woken, so this costs no request and may be higher than the
 * truth, never lower, except that a contender that queued with an
 * earlier sequence after that look is not counted); -1 when it is not
 * waiting (idle, held, or @m NULL). Any thread may call it.
 */
ZKR_EXTERN int zkr_mutex_waiters_ahead(const zkr_mutex *m);

struct zoo_op;
struct zoo_op_result;
/**
 * zkr_mutex_guarded_multi - run the caller's ZooKeeper multi-op so that it
 * commits only while we hold the lock: a check on our lock node is added
 * in front of @ops in the same transaction.
 * @ops, @count: the operations (zoo_op_t from <zookeeper.h>, built with
 *   zoo_create_op_init() etc.), 1 to 1000 of them.
 * @results: @count results, filled as by zoo_multi() for the caller's ops.
 * @timeout_ms: negative = no limit.
 * Returns ZKR_OK (committed); ZKR_ELOCKLOST (our node is gone: nothing was
 * applied, and the state becomes LOST); ZKR_ENOTHELD (not held, or
 * SUSPECT: nothing sent); a zkr code mapped from the first failing op of
 * the caller's (nothing applied: ZKR_ENONODE, ZKR_EEXISTS,
 * ZKR_EBADVERSION, ZKR_ENOAUTH, ...); ZKR_EDEADLK; ZKR_EINVAL; ZKR_ENOMEM.
 * The outcome is unknown (it may or may not have been applied) after
 * ZKR_ECONNLOSS (the connection dropped), ZKR_ETIMEDOUT (the deadline
 * passed after it was sent), ZKR_ESESSIONLOST and ZKR_ECLOSED.
 */
ZKR_EXTERN int zkr_mutex_guarded_multi(zkr_mutex *m, int count,
                                       const struct zoo_op *ops,
                                       struct zoo_op_result *results,
                                       int64_t timeout_ms);

/**
 * zkr_mutex_guarded_set - the common case of a guarded write: set the data
 * of @path (version -1 = any) only while we hold the lock. Returns as
 * zkr_mutex_guarded_multi(), and ZKR_EBADPATH for an invalid @path,
 * ZKR_EINVAL for @m NULL, @datalen < -1 or data NULL with @datalen > 0.
 */
ZKR_EXTERN int zkr_mutex_guarded_set(zkr_mutex *m, const char *path,
                                     const char *data, int datalen, int version,
                                     int64_t timeout_ms);

/**
 * zkr_mutex_participants - list the queue of the lock at @path, in order
 * (zkr's, Curator's and kazoo's nodes alike; other children are left out).
 * @out: receives an array to free with zkr_participants_free(); @count its
 * length. A node that goes away while being read is left out.
 * Every child whose name ends in a ZooKeeper sequence number counts.
 * Returns ZKR_OK (an empty queue, or a path that does not exist, gives
 * @count 0); ZKR_EBADPATH; ZKR_EINVAL; ZKR_ECLOSED; ZKR_ESESSIONLOST;
 * ZKR_ETIMEDOUT (after @timeout_ms); ZKR_ENOAUTH; ZKR_EZK; ZKR_EDEADLK;
 * ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_mutex_participants(zkr_session *s, const char *path,
                                      int64_t timeout_ms, zkr_participant **out,
                                      size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_MUTEX_H */
