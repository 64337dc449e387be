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
 * zkr_mutex_hold_count(), zkr_hold_token() and zkr_hold_node(),
 * which any thread may call at any time (but not after, or concurrently
 * with, zkr_mutex_free()). Many mutex objects, on one or many paths,
 * may share one session, and each thread may use its own. Callbacks run on
 * the session's event thread (in dispatch mode, in zkr_session_dispatch()),
 * one at a time; they must not block.
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

/**
 * The options of zkr_mutex_new() and zkr_rwlock_new(), filled in by the
 * caller, typically in one expression with designated initializers. Zero
 * (or NULL) in any field means its default, so a NULL pointer instead of
 * the struct gives every default: not reentrant, no node watch, no
 * identifier, no state callback. zkr_mutex_new() copies what it keeps (the
 * identifier too): the struct may go away as soon as the call returns.
 *
 * ABI rule: fields are only ever added, in place of the start of
 * reserved_, which must be all zero (zkr_mutex_new() refuses anything else
 * with ZKR_EINVAL); reserved_ shrinks by as much, so the size of the struct
 * never changes, and a later field's zero is always its old behaviour.
 */
typedef struct zkr_mutex_options {
  int reentrant;               /**< non-zero: the holding thread may acquire
                                    again; 0 (default): it gets ZKR_EBUSY */
  int watch_node;              /**< non-zero: watch the own node while held;
                                    0: no watch (default) */
  const char *id;              /**< names the contender in its node's data;
                                    NULL (default): none */
  zkr_lock_state_fn state_fn;  /**< told HELD, SUSPECT, LOST; NULL: none */
  void *state_user_data;       /**< given to state_fn */
  int64_t max_hold_ms;         /**< give a hold up after this long (ms);
                                    0 (default): no maximum */
  zkr_revoke_fn revoke_fn;     /**< told revocation requests; NULL
                                    (default): they are ignored */
  void *revoke_user_data;      /**< given to revoke_fn */
  unsigned char reserved_[40]; /**< must be zero: later fields take its
                                    place */
} zkr_mutex_options;

/**
 * zkr_mutex_new - create a distributed mutex object
 *
 * zkr_mutex_new() creates a mutex object for the lock at @path on the session
 * @s and stores it in *@out. One object is one contender: the processes, and
 * the objects within a process, that use the same path on the same ensemble
 * exclude each other. Contenders queue in the order they ask and are served in
 * that order.
 *
 * A contender queues by creating an ephemeral, sequential child of @path named
 * _c_@uuid-lock-@seq, the layout of Apache Curator's `InterProcessMutex`, so
 * zkr processes and Java processes using Curator share the lock (and kazoo
 * processes, with the right option); the guide's page on the mutex, mutex.md,
 * gives the details and the rules for sharing a lock. The node's data is
 * "host=@H pid=@P", followed by " id=@I" if an identifier is given in @opts.
 *
 * @path is an absolute znode path, relative to the chroot of the session's
 * connection string if it has one. It must not be "/" or lie under
 * "/zookeeper", and it follows the rules of every zkr path: no empty, "." or
 * ".." component, no trailing "/", no control character, at most 1024 bytes. It
 * is copied. @path and its missing ancestors are created by the first
 * acquisition, as container nodes, which the server removes once they are
 * empty; the nodes zkr creates have the open ACL (anyone may do anything).
 * Nothing is sent to ZooKeeper before the first acquisition.
 *
 * @opts are the options, a zkr_mutex_options the caller fills in; NULL, or
 * zero in any field, means the default. They are copied (the identifier too),
 * so @opts may be a compound literal:
 *
 *     zkr_mutex_new(&m, s, "/locks/job",
 *                   &(zkr_mutex_options){.reentrant = 1, .id = "worker-1"});
 *
 * The fields:
 *
 *   reentrant        Non-zero: the mutex belongs to the thread that acquired
 *                    it (for zkr_mutex_acquire(), the calling thread; for
 *                    zkr_mutex_acquire_async(), the thread that started it).
 *                    While the lock is held (ZKR_LOCK_HELD or
 *                    ZKR_LOCK_SUSPECT), that thread may acquire it again: the
 *                    call returns ZKR_OK at once, without a request, and the
 *                    hold count (zkr_mutex_hold_count()) grows by one. The
 *                    thread must release it as many times; the node is
 *                    deleted, and the next waiter gets the lock, at the last
 *                    release. Nested acquisitions share one node, so one
 *                    fencing token. Another thread that acquires or releases
 *                    it gets ZKR_EBUSY (only a release made from a zkr
 *                    callback is accepted from another thread). 0, the
 *                    default: a held mutex refuses a second acquisition with
 *                    ZKR_EBUSY rather than waiting for itself, and may be
 *                    released by any thread. Reentrancy belongs to one object:
 *                    two objects on one path are two contenders, even in one
 *                    thread.
 *   watch_node       Non-zero: while it holds, the mutex watches its own node
 *                    (an `exists` watch, set with the read of the node that
 *                    each acquisition makes before it takes the lock: the
 *                    node must still be there and be this session's, else
 *                    the mutex queues again with a new node); when an
 *                    operator or a tool deletes the node, the state becomes
 *                    ZKR_LOCK_LOST at once and state_fn is told. It costs
 *                    one more request and round trip per acquisition
 *                    (and per change of the node's data, which does not
 *                    affect the lock). 0, the default: a deletion is noticed
 *                    at the next guarded write (ZKR_ELOCKLOST) or check after
 *                    a reconnection. A session loss makes the lock
 *                    ZKR_LOCK_LOST either way. For long holds; zkr-lock(1)
 *                    uses it. It does not close the gap between a check and
 *                    the use of the resource: fencing tokens and guarded
 *                    writes do (zkr_hold_token()).
 *   id               A short identifier of the contender, such as a job or
 *                    instance name, stored in the data of every node the
 *                    mutex creates after the host name and process id:
 *                    "host=web-3 pid=4711 id=nightly-report". It must be
 *                    non-empty, at most 256 bytes long, and free of control
 *                    characters (bytes below 0x20, and 0x7f). The data is for
 *                    people and tools (zkr_mutex_participants(), kazoo's
 *                    `Lock.contenders()`); zkr never reads it back, and it
 *                    need not be unique. NULL, the default: "host=@H pid=@P".
 *   state_fn         Called with state_user_data each time the state of a held
 *                    lock changes: ZKR_LOCK_HELD (an acquisition succeeded, or
 *                    a SUSPECT lock was confirmed after the connection came
 *                    back to the same session with the node still there),
 *                    ZKR_LOCK_SUSPECT (the connection dropped while held: stop
 *                    touching the resource until HELD again), ZKR_LOCK_LOST
 *                    (the session was lost, expired, declared lost by the
 *                    session clock or closed, or the node was found deleted;
 *                    another contender may hold the lock now). Not called for
 *                    other states, nor on release, nor for a SUSPECT that
 *                    zkr_mutex_state_get() reports after a pause of the
 *                    process. It runs on the session's event thread (in
 *                    dispatch mode, in zkr_session_dispatch()), one call
 *                    at a time and in order; it must not block (blocking zkr
 *                    calls fail there with ZKR_EDEADLK) and may call the
 *                    non-blocking mutex functions. Calls are queued: read
 *                    zkr_mutex_state_get() for the current state. The HELD
 *                    call of an acquisition may run before or after
 *                    zkr_mutex_acquire() returns. It is not called after
 *                    zkr_mutex_free() has returned; state_user_data must stay
 *                    valid until then.
 *   max_hold_ms      The maximum hold, in milliseconds: a hold still held
 *                    this long after it was acquired is given up by the
 *                    holder itself, whatever its state: its node is deleted
 *                    (once connected, if the connection is down), the state
 *                    becomes ZKR_LOCK_LOST (told to state_fn),
 *                    zkr_hold_lost_cause() says ZKR_LOST_MAX_HOLD and the
 *                    figures count it under ZKR_FAIL_MAX_HOLD. It bounds a
 *                    holder that is alive but wedged, whose session would
 *                    keep the lock forever. For a read-write lock, each half's
 *                    holds. 0, the default: no maximum; negative is invalid.
 *   revoke_fn        Makes the holds revocable: each hold watches its own
 *                    node's data (with one getData instead of the exists of
 *                    watch_node, which it implies), and a revocation request
 *                    (the data set to `__REVOKE__`, byte for byte Apache
 *                    Curator's, by zkr_revoke() or Curator's
 *                    `Revoker.attemptRevoke()`) calls revoke_fn once per hold
 *                    with revoke_user_data and the request's time, as the
 *                    state callback is called. What to do is the holder's
 *                    choice: release, or finish first, or ignore it (a
 *                    revoker may then evict the hold: it becomes
 *                    ZKR_LOCK_LOST with ZKR_LOST_DELETED). NULL, the default:
 *                    requests are ignored. See the guide's revocation.md.
 *   reserved_        Must be all zero.
 *
 * The mutex holds a reference on @s. Many mutexes, on one path or on many, may
 * share a session. If the session is closed first, the mutex stays valid and
 * its operations fail with ZKR_ECLOSED until it is freed. Free it with
 * zkr_mutex_free(). On failure *@out is left untouched and nothing needs to be
 * freed.
 *
 * Returns:
 *   ZKR_OK        *@out holds the new mutex, in state ZKR_LOCK_UNLOCKED.
 *   ZKR_EINVAL    @out or @s is NULL, or @opts is invalid: an empty, too
 *                 long or control-character id, a negative max_hold_ms,
 *                 or a non-zero byte in reserved_ (logged; nothing is
 *                 created).
 *   ZKR_EBADPATH  @path is NULL, is not a valid path, is "/", or lies under
 *                 "/zookeeper".
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * zkr_mutex_new() may be called from any thread, including from zkr callbacks.
 *
 * A `zkr_mutex` is used by one thread at a time, except zkr_mutex_cancel(),
 * zkr_mutex_state_get() and zkr_mutex_is_held(), which any thread may call at
 * any time. Different mutex objects may be used from different threads at once,
 * on the same session and the same path.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Run the job only if no other instance is running it right now.
 *   int run_exclusive(zkr_session *s, void (*job)(void)) {
 *     zkr_mutex *m = NULL;
 *     int rc = zkr_mutex_new(&m, s, "/locks/cleanup-job", NULL);
 *     if (rc != ZKR_OK)
 *       return rc;
 *     rc = zkr_mutex_acquire(m, 0); // try once
 *     if (rc == ZKR_OK) {
 *       job();
 *       rc = zkr_mutex_release(m);
 *     } else if (rc == ZKR_EWOULDBLOCK) {
 *       printf("another instance runs the job\n");
 *     }
 *     zkr_mutex_free(m);
 *     return rc;
 *   }
 *
 * See also: zkr_mutex_free(), zkr_mutex_acquire(), zkr_mutex_acquire_async(),
 *   zkr_mutex_release(), zkr_mutex_participants(), zkr_mutex_hold_count(),
 *   zkr_session_new()
 *
 * Since: 0.1.0
 * Synopsis: zkr_mutex, zkr_mutex_options, zkr_lock_state_fn
 */
ZKR_EXTERN int zkr_mutex_new(zkr_mutex **out, zkr_session *s, const char *path,
                             const zkr_mutex_options *opts);

/**
 * zkr_mutex_free - free a mutex object, releasing or abandoning its lock
 *
 * zkr_mutex_free() frees @m and drops its reference on the session.
 *
 * An asynchronous acquisition still pending (zkr_mutex_acquire_async()) is
 * cancelled, and its callback is not called. A lock still held is released,
 * whatever its hold count. In both cases the lock node is deleted in the
 * background (as by zkr_mutex_release()), retried across connection losses
 * until it succeeds or the ZooKeeper session ends, which deletes the node
 * anyway. A lock that is already ZKR_LOCK_LOST has nothing left to delete.
 *
 * When zkr_mutex_free() returns, no callback of @m is running and none will
 * run. If one is running on the session's event thread, it waits for it to
 * return, unless it is called from that callback, which is allowed.
 *
 * NULL is accepted and does nothing.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * zkr_mutex_free() may be called from any thread and from the mutex's own
 * callbacks. No other thread may use @m during or after the call: a thread
 * still blocked in zkr_mutex_acquire() on it must be cancelled with
 * zkr_mutex_cancel() and have returned first.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <zkr/zkr.h>
 *
 *   void shutdown_lock(zkr_mutex **mp) {
 *     zkr_mutex_free(*mp); // releases the lock if it is still held
 *     *mp = NULL;
 *   }
 *
 * See also: zkr_mutex_new(), zkr_mutex_release(), zkr_mutex_cancel()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_mutex_free(zkr_mutex *m);

/**
 * zkr_mutex_acquire - acquire a distributed mutex, waiting for it
 *
 * zkr_mutex_acquire() acquires the lock of @m, waiting if another contender
 * holds it or queued before.
 *
 * It creates the contender's ephemeral, sequential node under the lock path
 * (creating the path first if needed), lists the path's children once, and
 * holds the lock if no earlier node is left. Otherwise it watches only the
 * nearest earlier node, and moves on when that one goes away, so each release
 * wakes one waiter. Contenders get the lock in the order their nodes were
 * created.
 *
 * @timeout_ms bounds the wait:
 *
 *   negative  Wait without limit.
 *   0         Try once: take the lock if no contender is queued before this
 *             one, otherwise return ZKR_EWOULDBLOCK without waiting and without
 *             leaving a node behind. While the connection is down it still
 *             waits for it, at most the session timeout (then ZKR_ETIMEDOUT).
 *   positive  Wait at most this many milliseconds, then return ZKR_ETIMEDOUT.
 *
 * An acquisition that ends without the lock (time-out, cancellation, error)
 * leaves nothing behind: its node is deleted (in the background if the
 * connection is down) and its watch removed, and the lock is never granted to
 * it afterwards, even if the contender before it leaves a moment later.
 *
 * Waiting survives connection losses: the acquisition goes on when the
 * connection comes back to the same ZooKeeper session, and a node whose
 * creation reply was lost is found again by the _c_@uuid- prefix of its name
 * rather than left behind. If the session is lost while waiting, the
 * acquisition starts over in the new session (the place in the queue is lost
 * with the old session's node), within the same deadline; if the session is not
 * renewed (zkr_session_options.no_renew), it fails with ZKR_ESESSIONLOST.
 *
 * On success the state is ZKR_LOCK_HELD; zkr_hold_token() and
 * zkr_hold_node() describe the acquisition. Release the lock with
 * zkr_mutex_release().
 *
 * If @m already holds the lock (state ZKR_LOCK_HELD or ZKR_LOCK_SUSPECT), a
 * reentrant mutex acquired by the calling thread returns ZKR_OK at once and its
 * hold count grows (see zkr_mutex_options.reentrant); otherwise the call
 * fails with ZKR_EBUSY. A lock found ZKR_LOCK_LOST by a guarded write or a
 * reconnection check keeps the object busy as well: call zkr_mutex_release()
 * (which returns ZKR_ELOCKLOST) before acquiring again.
 *
 * The call blocks, so it must not be called from a zkr callback (a session
 * listener, or a callback a recipe runs on the session's event thread): there
 * it returns ZKR_EDEADLK at once. Use zkr_mutex_acquire_async() there. Another
 * thread may end the wait with zkr_mutex_cancel().
 *
 * Returns:
 *   ZKR_OK            The lock is held (for a reentrant mutex already held by
 *                     this thread, once more).
 *   ZKR_EWOULDBLOCK   @timeout_ms is 0 and another contender holds the lock or
 *                     is queued first.
 *   ZKR_ETIMEDOUT     The lock was not obtained within @timeout_ms
 *                     milliseconds.
 *   ZKR_ECANCELED     zkr_mutex_cancel() ended the wait.
 *   ZKR_EBUSY         An acquisition is already in progress on @m; or @m holds
 *                     the lock and is not reentrant, or is reentrant and was
 *                     acquired by another thread; or the lock was lost and not
 *                     yet released.
 *   ZKR_ECLOSED       The session is closed, or was closed while waiting.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_ENOAUTH       The ACL of the lock path (or of one of its ancestors)
 *                     does not allow this session to create the nodes.
 *   ZKR_ENONODE       The lock path's ancestors could not be created; typically
 *                     the chroot of the connection string does not exist.
 *   ZKR_EZK           ZooKeeper refused the lock node for another reason, for
 *                     example because the lock path is an ephemeral node (which
 *                     cannot have children).
 *   ZKR_EUPGRADE      @m is the write half of a read-write lock
 *                     (zkr_rwlock_write_lock()) and the calling thread
 *                     holds its read half; nothing was done.
 *   ZKR_ELOCKLOST     @m is the read half of a read-write lock acquired by
 *                     the thread holding the write half (a downgrade), and
 *                     the write lock's session was lost meanwhile.
 *   ZKR_EFOREIGN      The lock path holds a semaphore's layout (its children
 *                     locks and leases): recipes do not mix on one path. Our
 *                     node is deleted; nothing else changes.
 *   ZKR_EDEADLK       Called from a zkr callback; nothing was done.
 *   ZKR_EINVAL        @m is NULL.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * A `zkr_mutex` is used by one thread at a time: do not call
 * zkr_mutex_acquire() on one object from two threads at once (the second gets
 * ZKR_EBUSY). Other threads may call zkr_mutex_cancel(), zkr_mutex_state_get()
 * and zkr_mutex_is_held() on it meanwhile.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Wait up to 30 s for the lock, do the work, release.
 *   int with_lock(zkr_mutex *m, int (*work)(zkr_mutex *)) {
 *     int rc = zkr_mutex_acquire(m, 30000);
 *     if (rc != ZKR_OK) {
 *       fprintf(stderr, "lock: %s\n", zkr_strerror(rc));
 *       return rc;
 *     }
 *     rc = work(m); // check zkr_mutex_is_held() between steps
 *     int rrc = zkr_mutex_release(m);
 *     if (rrc == ZKR_ELOCKLOST)
 *       fprintf(stderr, "lock was lost while working\n");
 *     return rc != ZKR_OK ? rc : rrc;
 *   }
 *
 * See also: zkr_mutex_new(), zkr_mutex_acquire_async(), zkr_mutex_cancel(),
 *   zkr_mutex_release(), zkr_mutex_state_get(), zkr_hold_token(),
 *   zkr_hold_guarded_multi()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_acquire(zkr_mutex *m, int64_t timeout_ms);

/**
 * zkr_mutex_acquire_async - start acquiring a distributed mutex, with a
 * completion callback
 *
 * zkr_mutex_acquire_async() starts an acquisition of the lock of @m and returns
 * at once. When the acquisition ends, @fn is called with @m, the result @rc
 * and @user_data. The acquisition is the
 * one zkr_mutex_acquire() makes, with the same @timeout_ms (negative: no limit;
 * 0: try once; positive: a deadline in milliseconds), the same queue and the
 * same guarantees; no thread waits for it. A process can keep many acquisitions
 * pending this way, on many mutex objects, without a thread for each.
 *
 * @rc is one of: ZKR_OK (the lock is held; release it with
 * zkr_mutex_release()), ZKR_EWOULDBLOCK, ZKR_ETIMEDOUT, ZKR_ECANCELED
 * (zkr_mutex_cancel()), ZKR_ECLOSED, ZKR_ESESSIONLOST, ZKR_ENOAUTH,
 * ZKR_ENONODE, ZKR_EZK or ZKR_ENOMEM, with the meanings given in
 * zkr_mutex_acquire().
 *
 * @fn runs on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch() on the caller's loop), with the session's other
 * callbacks, one at a time. It must not block; blocking zkr calls made from
 * it fail with ZKR_EDEADLK. It may call the non-blocking functions of @m,
 * including zkr_mutex_release(), zkr_mutex_acquire_async() and
 * zkr_mutex_free(). It may run before zkr_mutex_acquire_async() has returned to
 * the caller.
 *
 * @fn is called exactly once for each call that returned ZKR_OK, also when the
 * session is closed while the acquisition waits (then with ZKR_ECLOSED, on the
 * thread that closes the session if its event thread has already stopped; a
 * dispatch-mode session's close drops it instead): what
 * the callback needs is allocated when the acquisition starts, so it cannot be
 * lost to an allocation failure. If zkr_mutex_acquire_async() fails, @fn is
 * never called. If @m is freed while the acquisition is pending, the
 * acquisition is cancelled and @fn is not called. @user_data must stay valid
 * until @fn has run or @m has been freed.
 *
 * If @m is a reentrant mutex that the calling thread already holds, the hold
 * count grows at once and @fn is called with ZKR_OK, as above, on the event
 * thread. For reentrancy, the thread that called zkr_mutex_acquire_async() owns
 * the lock it obtains.
 *
 * Returns:
 *   ZKR_OK            The acquisition has started; @fn will be called.
 *   ZKR_EBUSY         An acquisition is already in progress on @m; or @m holds
 *                     the lock and is not reentrant, or is reentrant and was
 *                     acquired by another thread; or the lock was lost and not
 *                     yet released.
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_EINVAL        @m or @fn is NULL.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * zkr_mutex_acquire_async() does not block and may be called from any thread,
 * including from zkr callbacks, as long as one thread at a time uses @m.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Runs on the session's event thread: hand the work to a thread of
 *   // your own rather than doing it here.
 *   static void on_acquired(zkr_mutex *m, int rc, void *user_data) {
 *     const char *job = user_data;
 *     if (rc != ZKR_OK) {
 *       fprintf(stderr, "%s: not acquired: %s\n", job, zkr_strerror(rc));
 *       return;
 *     }
 *     printf("%s: lock held, token %lld\n", job,
 *            (long long)zkr_hold_token(zkr_mutex_hold(m)));
 *     // ... queue the job, which releases m when done ...
 *   }
 *
 *   int start_job(zkr_mutex *m) {
 *     return zkr_mutex_acquire_async(m, 60000, on_acquired, "rebuild-index");
 *   }
 *
 * See also: zkr_mutex_acquire(), zkr_mutex_cancel(), zkr_mutex_release(),
 *   zkr_mutex_free()
 *
 * Since: 0.1.0
 * Synopsis: zkr_acquire_fn
 */
ZKR_EXTERN int zkr_mutex_acquire_async(zkr_mutex *m, int64_t timeout_ms,
                                       zkr_acquire_fn fn, void *user_data);

/**
 * zkr_mutex_cancel - cancel a pending acquisition of a mutex
 *
 * zkr_mutex_cancel() ends the acquisition pending on @m, whether a thread is
 * blocked in zkr_mutex_acquire() or it was started with
 * zkr_mutex_acquire_async(). That acquisition ends with ZKR_ECANCELED: the
 * blocked call returns it, or the callback is called with it. The contender's
 * node is deleted (in the background if the connection is down), its watch is
 * removed, on the server too, and the lock is never granted to it afterwards.
 * The contender queued behind it moves up.
 *
 * An acquisition that has already ended cannot be cancelled: then the call
 * returns ZKR_EINVAL and changes nothing. This includes an acquisition that has
 * just succeeded; the lock is then held and must be released as usual. A
 * cancellation does not carry over: an acquisition started after it is not
 * affected.
 *
 * The call does not block.
 *
 * Returns:
 *   ZKR_OK      The pending acquisition was cancelled.
 *   ZKR_EINVAL  @m is NULL, or no acquisition is pending on it.
 *
 * Thread safety:
 * zkr_mutex_cancel() may be called from any thread at any time, concurrently
 * with the thread that uses @m, and from zkr callbacks.
 *
 * Example:
 *   #include <pthread.h>
 *   #include <stdatomic.h>
 *   #include <zkr/zkr.h>
 *
 *   static atomic_int stopping;
 *
 *   // A worker thread takes the lock again and again until told to stop.
 *   static void *worker(void *arg) {
 *     zkr_mutex *m = arg;
 *     while (!atomic_load(&stopping)) {
 *       int rc = zkr_mutex_acquire(m, 1000);
 *       if (rc == ZKR_ETIMEDOUT)
 *         continue; // look at the flag again
 *       if (rc != ZKR_OK)
 *         break; // ZKR_ECANCELED, or an error
 *       // ... work ...
 *       zkr_mutex_release(m);
 *     }
 *     return NULL;
 *   }
 *
 *   // Shutdown: the cancel ends a wait in progress at once; a worker that
 *   // is between two waits sees the flag (a cancel finds nothing pending
 *   // then, and the flag bounds the race to one time-out).
 *   void stop_worker(zkr_mutex *m, pthread_t t) {
 *     atomic_store(&stopping, 1);
 *     zkr_mutex_cancel(m);
 *     pthread_join(t, NULL);
 *   }
 *
 *   int start_worker(zkr_mutex *m, pthread_t *t) {
 *     return pthread_create(t, NULL, worker, m);
 *   }
 *
 * See also: zkr_mutex_acquire(), zkr_mutex_acquire_async(), zkr_mutex_free()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_cancel(zkr_mutex *m);

/**
 * zkr_mutex_release - release a distributed mutex
 *
 * zkr_mutex_release() releases the lock held by @m. The state becomes
 * ZKR_LOCK_UNLOCKED at once, and the lock node is deleted, which hands the lock
 * to the next contender in the queue.
 *
 * Only the waiter watching the node is woken (zkr, Curator or kazoo alike).
 *
 * The call does not wait for the deletion. If the connection is down, the
 * deletion is sent when it comes back, and retried across connection losses
 * until it succeeds or the ZooKeeper session ends (which deletes the node
 * anyway). So a lock released while ZKR_LOCK_SUSPECT is handed on once the
 * connection is back, or when the session expires.
 *
 * For a reentrant mutex with a hold count above 1, the call only decreases the
 * count; the lock is released when the count reaches 0.
 *
 * A lock that was lost (state ZKR_LOCK_LOST) is not held any more: the call
 * reports it once with ZKR_ELOCKLOST and returns the object to
 * ZKR_LOCK_UNLOCKED, so it can acquire again. A later call returns
 * ZKR_ENOTHELD. The call first applies the session clock (see
 * zkr_session_options.lost_fraction): a holder resumed from a pause longer
 * than its session allows gets ZKR_ELOCKLOST even if the loss had not been
 * noticed yet, and its state callback is told ZKR_LOCK_LOST once.
 *
 * A pending acquisition is not released: cancel it with zkr_mutex_cancel().
 *
 * Returns:
 *   ZKR_OK         The lock was released, or its hold count decreased.
 *   ZKR_ENOTHELD   @m does not hold the lock (never acquired, already released,
 *                  or still acquiring); nothing changes.
 *   ZKR_ELOCKLOST  The lock had been lost (its session was lost or its node
 *                  deleted); work done under it may have overlapped with
 *                  another holder. The object is back to ZKR_LOCK_UNLOCKED.
 *   ZKR_EBUSY      @m is reentrant and held by another thread; nothing changes.
 *   ZKR_EINVAL     @m is NULL.
 *
 * Thread safety:
 * zkr_mutex_release() does not block and may be called from zkr callbacks. A
 * plain mutex may be released by any thread (one thread at a time uses the
 * object); a reentrant one only by the thread that acquired it, or from a zkr
 * callback.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Release, and tell the caller whether the work was protected
 *   // throughout.
 *   int finish_work(zkr_mutex *m) {
 *     int rc = zkr_mutex_release(m);
 *     if (rc == ZKR_ELOCKLOST)
 *       fprintf(stderr, "lock lost before the release: check the results\n");
 *     else if (rc != ZKR_OK)
 *       fprintf(stderr, "release: %s\n", zkr_strerror(rc));
 *     return rc;
 *   }
 *
 * See also: zkr_mutex_acquire(), zkr_mutex_acquire_async(),
 *   zkr_mutex_state_get(), zkr_mutex_free()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_release(zkr_mutex *m);

/**
 * zkr_mutex_state_get - the state of a mutex object
 *
 * zkr_mutex_state_get() returns the current state of @m:
 *
 *   ZKR_LOCK_UNLOCKED   Not held and not acquiring: before the first
 *                       acquisition, after a release, and after an acquisition
 *                       that failed.
 *   ZKR_LOCK_ACQUIRING  An acquisition is in progress.
 *   ZKR_LOCK_HELD       The lock is held and the session is connected.
 *   ZKR_LOCK_SUSPECT    The lock is held, as far as this process knows, but the
 *                       ZooKeeper session may be gone: the connection has
 *                       dropped, or the process has just been paused (stopped,
 *                       swapped out, starved of CPU) so long that the session
 *                       manager has not run for half the session timeout, and
 *                       it has not yet checked what the pause cost (after a
 *                       pause of more than 2/3 of the timeout it declares the
 *                       session lost). The ensemble may already have expired
 *                       the session and given the lock to another contender.
 *                       Stop touching the protected resource. The state returns
 *                       to ZKR_LOCK_HELD when the connection comes back to the
 *                       same session and the lock node is still there, or
 *                       becomes ZKR_LOCK_LOST.
 *   ZKR_LOCK_LOST       The lock was held and is lost: the session was lost, or
 *                       the lock node was found deleted. Another contender may
 *                       hold it now. The state stays ZKR_LOCK_LOST until
 *                       zkr_mutex_release() (which returns ZKR_ELOCKLOST) or,
 *                       after a session loss, a new acquisition.
 *
 * Only ZKR_LOCK_HELD means that the lock may be used; that is what
 * zkr_mutex_is_held() tests. A state is a snapshot: it can change right after
 * the call returns.
 *
 * Returns:
 * The state; ZKR_LOCK_UNLOCKED if @m is NULL.
 *
 * Thread safety:
 * zkr_mutex_state_get() does not block (it takes internal locks briefly) and
 * may be called from any thread at any time, concurrently with the thread that
 * uses @m, and from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void report(const zkr_mutex *m) {
 *     zkr_lock_state st = zkr_mutex_state_get(m);
 *     printf("lock %s\n", zkr_lock_state_name(st));
 *     if (st == ZKR_LOCK_SUSPECT)
 *       printf("connection lost: pausing work\n");
 *   }
 *
 * See also: zkr_mutex_is_held(), zkr_lock_state_name(), zkr_mutex_new(),
 *   zkr_mutex_release()
 *
 * Since: 0.1.0
 * Synopsis: zkr_lock_state
 */
ZKR_EXTERN zkr_lock_state zkr_mutex_state_get(const zkr_mutex *m);

/**
 * zkr_mutex_is_held - whether a mutex is held and safe to use right now
 *
 * zkr_mutex_is_held() tells whether @m holds its lock and the session is
 * connected, that is whether its state is ZKR_LOCK_HELD.
 *
 * A lock in state ZKR_LOCK_SUSPECT is not reported as held: the connection has
 * dropped, or the process has just been paused for a long time, and the
 * ensemble may already have given the lock to another contender. After a long
 * pause of the whole process (about half the session timeout or more) the
 * answer is 0 as soon as the process runs again, before any network traffic,
 * until the session manager has checked the session.
 *
 * Check it before each step of work that relies on the lock. It is a snapshot,
 * though: the process can be paused right after the check, for longer than the
 * session timeout, and then act on a lock it no longer holds. Writes that must
 * never happen under a lost lock need more than a check: a guarded write
 * (zkr_hold_guarded_multi()) for data in ZooKeeper, or a fencing token
 * (zkr_hold_token()) that the resource verifies.
 *
 * Returns:
 * 1 if the state is ZKR_LOCK_HELD, else 0 (also when @m is NULL).
 *
 * Thread safety:
 * zkr_mutex_is_held() does not block (it takes internal locks briefly) and may
 * be called from any thread at any time, concurrently with the thread that uses
 * @m, and from zkr callbacks.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <zkr/zkr.h>
 *
 *   // Process a batch item by item; stop as soon as the lock is in doubt.
 *   int process_batch(zkr_mutex *m, int (*step)(size_t), size_t n) {
 *     for (size_t i = 0; i < n; i++) {
 *       if (!zkr_mutex_is_held(m))
 *         return ZKR_ELOCKLOST;
 *       int rc = step(i);
 *       if (rc != 0)
 *         return rc;
 *     }
 *     return ZKR_OK;
 *   }
 *
 * See also: zkr_mutex_state_get(), zkr_hold_token(),
 *   zkr_hold_guarded_multi()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_is_held(const zkr_mutex *m);

/**
 * zkr_mutex_hold_count - how many times a mutex is held
 *
 * zkr_mutex_hold_count() returns how many acquisitions of @m are outstanding,
 * that is how many more calls to zkr_mutex_release() the lock needs. For a
 * reentrant mutex (zkr_mutex_options.reentrant) each acquisition by the
 * holding thread adds one; for a plain mutex it is at most 1.
 *
 * It counts while the lock is held, in state ZKR_LOCK_HELD or ZKR_LOCK_SUSPECT;
 * in every other state, including ZKR_LOCK_LOST, it is 0. A lock that is lost
 * needs one zkr_mutex_release() (returning ZKR_ELOCKLOST), whatever the count
 * was.
 *
 * Returns:
 * The hold count, or 0 if the lock is not held or @m is NULL.
 *
 * Thread safety:
 * zkr_mutex_hold_count() does not block. Call it from the thread that uses @m.
 *
 * Example:
 *   #include <assert.h>
 *   #include <zkr/zkr.h>
 *
 *   // Assert that this code runs inside the outermost acquisition only.
 *   void check_outermost(const zkr_mutex *m) {
 *     assert(zkr_mutex_hold_count(m) == 1);
 *   }
 *
 * See also: zkr_mutex_new(), zkr_mutex_acquire(),
 *   zkr_mutex_release()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_hold_count(const zkr_mutex *m);

/**
 * zkr_mutex_waiters_ahead - how many contenders are ahead of a waiting
 * acquisition
 *
 * While an acquisition of @m waits, zkr_mutex_waiters_ahead() returns the
 * number of contenders ahead of it as of its last look at the queue: the nodes
 * before its own that its last listing showed, less those it has seen go since.
 * The waiter looks at the queue again only when it is woken, so the count costs
 * no request to ZooKeeper and may be higher than the truth (a contender ahead
 * may have left without waking it), never lower, except that a contender that
 * queued with an earlier sequence number after that look is not counted. It is
 * what zkr-lock(1) `-v` reports.
 *
 * Returns:
 * The count (0 or more) while an acquisition waits; -1 when none does (the
 * mutex is idle or held) or @m is NULL.
 *
 * Thread safety:
 * Any thread may call it at any time, and zkr callbacks too; it does not block
 * (it takes an internal lock briefly).
 *
 * See also: zkr_mutex_acquire(), zkr_mutex_acquire_async(),
 *   zkr_mutex_participants(), zkr-lock(1)
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_waiters_ahead(const zkr_mutex *m);

/**
 * zkr_mutex_hold - the hold of a held mutex
 *
 * zkr_mutex_hold() returns the hold of @m while @m holds the lock (states
 * ZKR_LOCK_HELD and ZKR_LOCK_SUSPECT) and after it lost it until it is
 * released (ZKR_LOCK_LOST): the fencing token, the node, the state and the
 * guarded writes of this acquisition, through the zkr_hold_* functions
 * (zkr_hold_token(), zkr_hold_node(), zkr_hold_state(),
 * zkr_hold_guarded_multi(), zkr_hold_guarded_set()). It is the same for every
 * recipe: a semaphore's lease and a leader's term give theirs with
 * zkr_lease_hold() and zkr_election_hold().
 *
 * The hold belongs to @m: do not free it. It stands for this acquisition
 * until zkr_mutex_release() gives it up (the last release of a reentrant
 * lock); after that it reports ZKR_LOCK_UNLOCKED, token 0, and its guarded
 * writes send nothing. Each half of a read-write lock is a zkr_mutex and has
 * its hold.
 *
 * Returns:
 * The hold, or NULL when @m does not hold the lock (never acquired,
 * acquiring, released) or @m is NULL. The zkr_hold_* functions take NULL as
 * a hold that does not hold (token 0, ZKR_ENOTHELD).
 *
 * Thread safety:
 * zkr_mutex_hold() does not block (it takes internal locks briefly) and may be
 * called from any thread and from zkr callbacks.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   // Write the job's result only while the lock is held.
 *   int finish(zkr_mutex *m, const char *result, int len) {
 *     zkr_hold *h = zkr_mutex_hold(m);
 *     printf("token %lld\n", (long long)zkr_hold_token(h));
 *     return zkr_hold_guarded_set(h, "/jobs/rebuild/result", result, len, -1,
 *                                 5000);
 *   }
 *
 * See also: zkr_hold_token(), zkr_hold_guarded_multi(), zkr_mutex_release()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_hold *zkr_mutex_hold(zkr_mutex *m);

/**
 * zkr_mutex_participants - list the contenders queued for a lock
 *
 * zkr_mutex_participants() reads the queue of the lock at @path through the
 * session @s and stores it in *@out as an array of *@count entries, in queue
 * order: the first entry is the holder. No mutex object is needed, and nothing
 * is changed on the server.
 *
 * Every child of @path whose name ends in a ZooKeeper sequence number is
 * listed: zkr's and Curator's _c_@uuid-lock-@seq nodes and kazoo's
 * @{uuid}__lock__@seq nodes alike, ordered by sequence number (safely across
 * the wrap of the counter), never by name. Other children are left out. The
 * fields of each entry are:
 *
 *   @node        the node's name (not its full path);
 *   @seq         its sequence number, the place in the queue;
 *   @is_holder   1 for the first entry, 0 for the others. The first contender
 *                holds the lock, or is about to (its owner may not have been
 *                told yet, or may be a process whose session has died and not
 *                yet expired);
 *   @session_id  the ZooKeeper session that owns the ephemeral node, as printed
 *                by zkr_session_id() and by ZooKeeper's tools (0 for a node
 *                that is not ephemeral);
 *   @czxid       the transaction that created the node: the contender's fencing
 *                token (zkr_hold_token());
 *   @ctime_ms    when the node was created, by the server's clock, in
 *                milliseconds since the Epoch;
 *   @data        the node's data as a NUL-terminated string: "host=@H pid=@P
 *                id=@I" for zkr contenders, the host address for Curator's, the
 *                identifier for kazoo's, "" for none.
 *
 * The list is put together from one listing of the children and one read per
 * contender, so it is not an atomic snapshot: a node that goes away while it is
 * being read is left out, and one that arrives after the listing is not
 * included. @timeout_ms bounds the whole call (negative: no limit); the reads
 * are retried across connection losses within it. A @path that does not exist
 * gives an empty list.
 *
 * On success *@out belongs to the caller, who frees it with
 * zkr_participants_free() and the same *@count; it may be NULL when *@count is
 * 0. On failure *@out and *@count are left untouched.
 *
 * The call blocks, so it must not be called from a zkr callback: there it
 * returns ZKR_EDEADLK.
 *
 * Returns:
 *   ZKR_OK            *@out and *@count hold the queue (possibly empty).
 *   ZKR_EBADPATH      @path is NULL or not a valid znode path.
 *   ZKR_ETIMEDOUT     @timeout_ms passed first.
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_ENOAUTH       The ACL of @path or of a contender's node does not allow
 *                     this session to read it.
 *   ZKR_EDEADLK       Called from a zkr callback.
 *   ZKR_EINVAL        @s, @out or @count is NULL.
 *   ZKR_EZK           An unexpected ZooKeeper error.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * zkr_mutex_participants() may be called from any thread except a zkr callback,
 * concurrently with any other use of the session.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   int show_queue(zkr_session *s, const char *path) {
 *     zkr_participant *p = NULL;
 *     size_t n = 0;
 *     int rc = zkr_mutex_participants(s, path, 5000, &p, &n);
 *     if (rc != ZKR_OK)
 *       return rc;
 *     for (size_t i = 0; i < n; i++)
 *       printf("%s %10d  session 0x%llx  token %lld  %s\n",
 *              p[i].is_holder ? "holder" : "waiter", (int)p[i].seq,
 *              (unsigned long long)p[i].session_id, (long long)p[i].czxid,
 *              p[i].data);
 *     zkr_participants_free(p, n);
 *     return ZKR_OK;
 *   }
 *
 * See also: zkr_participants_free(), zkr_hold_node(), zkr_mutex_new(),
 *   zkr_hold_token(), zkr_session_children(), zkr-ls(1)
 *
 * Since: 0.1.0
 * Synopsis: zkr_participant
 */
ZKR_EXTERN int zkr_mutex_participants(zkr_session *s, const char *path,
                                      int64_t timeout_ms, zkr_participant **out,
                                      size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_MUTEX_H */
