/*
 * zkr -- ZooKeeper recipes for C.
 * semaphore.h: the counting semaphore (N leases).
 *
 * At most N leases of a path are held at once, across processes and
 * machines. The layout is Apache Curator's InterProcessSemaphoreV2, so C
 * and Java processes share the leases of one path: under PATH, a mutex at
 * PATH/locks (nodes "_c_<uuid>-lock-<seq>") admits one contender at a
 * time; the admitted contender creates its lease node
 * "PATH/leases/_c_<uuid>-lease-<seq>" (EPHEMERAL|SEQUENTIAL) and holds
 * when the children of PATH/leases, its own included, number at most N;
 * otherwise it waits on a children watch of PATH/leases, still holding
 * the admission mutex; then it releases the admission mutex. Only the
 * admitted contender watches PATH/leases, so a release wakes at most one
 * session. Every child of PATH/leases counts as a lease, whoever wrote
 * it. The limit N is either given by each participant or read from a
 * shared count node (Curator's SharedCount: a 4-byte big-endian integer)
 * and followed live.
 *
 * Each lease is its own object (zkr_lease), not owned by a thread: release
 * it from any thread. While it is held it has a fencing token and guarded
 * writes, and a state (HELD, SUSPECT, LOST) told through a callback, so
 * that a holder whose session expires learns it before the ensemble can
 * hand its lease to someone else.
 *
 * THREAD SAFETY: a semaphore object may be used by several threads at
 * once: each acquisition is independent. A lease is used by one thread at
 * a time.
 */
#ifndef ZKR_SEMAPHORE_H
#define ZKR_SEMAPHORE_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/lock.h>
#include <zkr/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque semaphore. */
typedef struct zkr_semaphore zkr_semaphore;
/** One lease of a semaphore, held until released. */
typedef struct zkr_lease zkr_lease;

/** The result of zkr_semaphore_acquire_async(): @leases is the array the
 * caller passed, filled with @n leases when @rc is ZKR_OK. */
typedef void (*zkr_semaphore_acquire_fn)(zkr_semaphore *sem, int rc,
                                         zkr_lease **leases, int n,
                                         void *user_data);

/** The largest limit, and the most leases one acquisition may take. */
#define ZKR_SEMAPHORE_MAX 65536

/** The longest semaphore path, in bytes: PATH/leases within 1024 bytes. */
#define ZKR_SEMAPHORE_PATH_MAX 1017

/**
 * The options of zkr_semaphore_new(), filled in by the caller, typically
 * in one expression with designated initializers. Zero (or NULL) in any
 * field means its default, so a NULL pointer instead of the struct gives
 * every default: no identifier, the limit given to zkr_semaphore_new(),
 * no state callback, no node watch. zkr_semaphore_new() copies what it
 * keeps (the strings too): the struct may go away as soon as the call
 * returns.
 *
 * ABI rule: fields are only ever added, in place of the start of
 * reserved_, which must be all zero (zkr_semaphore_new() refuses anything
 * else with ZKR_EINVAL); reserved_ shrinks by as much, so the size of the
 * struct never changes, and a later field's zero is always its old behaviour.
 */
typedef struct zkr_semaphore_options {
  const char *id;              /**< names the contender in its nodes' data;
                                    NULL (default): none */
  const char *count_path;      /**< read the limit from this shared count
                                    node; NULL (default): the limit given */
  int watch_node;              /**< non-zero: a held lease watches its own
                                    node; 0: no watch (default) */
  zkr_lock_state_fn state_fn;  /**< told HELD, SUSPECT, LOST of each lease;
                                    NULL: none */
  void *state_user_data;       /**< given to state_fn */
  int64_t max_hold_ms;         /**< give a lease up after this long (ms);
                                    0 (default): no maximum */
  zkr_revoke_fn revoke_fn;     /**< told revocation requests of a lease;
                                    NULL (default): they are ignored */
  void *revoke_user_data;      /**< given to revoke_fn */
  unsigned char reserved_[40]; /**< must be zero: later fields take its
                                    place */
} zkr_semaphore_options;

/**
 * zkr_semaphore_new - create a distributed counting semaphore object
 *
 * zkr_semaphore_new() creates a semaphore object for the semaphore at @path
 * on the session @s and stores it in *@out. At most @limit leases of @path
 * are held at once by every participant together; each participant must
 * use the same @limit (nothing in ZooKeeper records it), or read it from a
 * shared count node (count_path in @opts), in which case
 * @limit must be 0.
 *
 * The layout is Apache Curator's `InterProcessSemaphoreV2` (see the header
 * and the guide's page semaphore.md), so Curator clients and zkr clients
 * share the leases of one path. kazoo's `Semaphore` uses another layout
 * that cannot share a path with it: an acquisition on a path that holds
 * kazoo's layout fails with ZKR_EFOREIGN and changes nothing.
 *
 * @path follows the rules of zkr_mutex_new(), and is at most
 * ZKR_SEMAPHORE_PATH_MAX (1017) bytes long, so that its child `leases` stays
 * within zkr's 1024-byte path limit. Nothing is sent to ZooKeeper
 * before the first acquisition. Free the object with zkr_semaphore_free().
 * On failure *@out is left untouched.
 *
 * @opts are the options, a zkr_semaphore_options the caller fills in; NULL,
 * or zero in any field, means the default. They are copied (the strings
 * too), so @opts may be a compound literal:
 *
 *     zkr_semaphore_new(&sem, s, "/sem/api", 3,
 *                       &(zkr_semaphore_options){.id = "worker-1"});
 *
 * The fields:
 *
 *   id           The identifier written, with the host name and the process
 *                id, into the data of the lease and admission nodes
 *                ("host=H pid=P id=I"), which zkr_semaphore_participants()
 *                and zkr-ls(1) show: 1 to 256 bytes without control
 *                characters. NULL, the default: none.
 *   count_path   Read the limit from the node at this path, which holds a
 *                4-byte big-endian signed integer (Apache Curator's
 *                `SharedCount` format), instead of taking @limit, which must
 *                then be 0. The semaphore reads the node at its first
 *                acquisition and follows it with a watch from then on: when
 *                an operator changes it, a waiting contender counts again at
 *                once (a raised limit admits it, a lowered one lets no new
 *                lease in until fewer than the new limit are held). A count
 *                below 1 admits nobody. The node is not created: an
 *                acquisition fails with ZKR_ENONODE while it does not exist,
 *                and with ZKR_EBADCOUNT while its data is not 4 bytes. It must
 *                be a valid znode path. NULL, the default: @limit.
 *   watch_node   Non-zero: every lease, while held, watches its own node: if
 *                another client deletes it (an operator clearing a stuck
 *                lease, say), the lease becomes ZKR_LOCK_LOST at once and
 *                state_fn is told, instead of being noticed only by the next
 *                guarded write. It costs one more request per lease (an
 *                exists with a watch). 0, the default: no watch; zkr-lock(1)
 *                turns it on.
 *   state_fn     Called with state_user_data on each change of the state of
 *                every lease of the semaphore once it is held: ZKR_LOCK_HELD,
 *                ZKR_LOCK_SUSPECT (the connection dropped: stop touching the
 *                resource), ZKR_LOCK_LOST (the session is gone or the node
 *                was deleted: another contender may hold the lease now). The
 *                @hold argument is the lease's hold (zkr_lease_hold()). It
 *                runs on the session's event thread (in dispatch mode, in
 *                zkr_session_dispatch()), in order, once per
 *                change, and must not block for long. The session clock
 *                declares a lost session before the ensemble can expire it,
 *                so LOST comes before another contender can be granted the
 *                lease. NULL, the default: none.
 *   max_hold_ms  The maximum hold of a lease, in milliseconds: a lease still
 *                held this long after its acquisition is given up by the
 *                holder itself: its node is deleted, it becomes
 *                ZKR_LOCK_LOST (told to state_fn), zkr_hold_lost_cause() on
 *                its hold says ZKR_LOST_MAX_HOLD, and the figures count it
 *                under ZKR_FAIL_MAX_HOLD. 0, the default: no maximum;
 *                negative is invalid.
 *   revoke_fn    Makes the leases revocable, as for a mutex
 *                (zkr_mutex_new()): a lease handed out watches its node's
 *                data, and a revocation request calls revoke_fn once per
 *                lease, with revoke_user_data, the lease's hold and the
 *                request's time. NULL, the default: requests are ignored.
 *   reserved_    Must be all zero.
 *
 * Returns:
 *   ZKR_OK        *@out holds the new semaphore.
 *   ZKR_EINVAL    @out or @s is NULL; @limit is below 1 or above
 *                 ZKR_SEMAPHORE_MAX without a count path, or not 0 with
 *                 one; @path is longer than ZKR_SEMAPHORE_PATH_MAX bytes;
 *                 @opts has an empty, too long or control-character id, a
 *                 negative max_hold_ms, or a non-zero byte in reserved_
 *                 (logged; nothing is created).
 *   ZKR_EBADPATH  @path is NULL, is not a valid path, is "/", or lies under
 *                 "/zookeeper"; or count_path in @opts is not a valid path.
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * Any thread.
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   // At most 3 processes call the partner's API at once.
 *   int call_partner(zkr_session *s, int (*call)(int64_t token)) {
 *     zkr_semaphore *sem = NULL;
 *     zkr_lease *lease = NULL;
 *     int rc = zkr_semaphore_new(&sem, s, "/sem/partner-api", 3, NULL);
 *     if (rc != ZKR_OK)
 *       return rc;
 *     rc = zkr_semaphore_acquire(sem, 1, 30000, &lease);
 *     if (rc == ZKR_OK) {
 *       rc = call(zkr_hold_token(zkr_lease_hold(lease)));
 *       zkr_lease_release(lease);
 *       zkr_lease_free(lease);
 *     }
 *     zkr_semaphore_free(sem);
 *     return rc;
 *   }
 *
 * See also: zkr_semaphore_free(), zkr_semaphore_acquire(),
 *   zkr_semaphore_participants(), zkr_semaphore_limit(), zkr-lock(1)
 *
 * Since: 0.1.0
 * Synopsis: zkr_semaphore, zkr_semaphore_options, zkr_lock_state_fn
 */
ZKR_EXTERN int zkr_semaphore_new(zkr_semaphore **out, zkr_session *s,
                                 const char *path, int limit,
                                 const zkr_semaphore_options *opts);

/**
 * zkr_semaphore_free - free a semaphore object and its leases
 *
 * zkr_semaphore_free() ends every pending acquisition of @sem (as
 * zkr_semaphore_cancel() would, without calling an asynchronous
 * acquisition's callback), releases every lease of @sem not yet released
 * (their nodes are deleted, in the background if the connection is down),
 * stops following the shared count, and frees @sem and every lease object
 * of it not yet freed with zkr_lease_free(). Its leases are invalid
 * afterwards. NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * Not concurrently with any other call on @sem or its leases. It waits for
 * a callback of @sem that runs on another thread; called from such a
 * callback, it does not wait. Once it is called, no callback of @sem
 * starts (an acquisition that ended but whose callback had not started
 * is freed with its leases, like a pending one).
 *
 * See also: zkr_semaphore_new(), zkr_lease_release()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_semaphore_free(zkr_semaphore *sem);

/**
 * zkr_semaphore_acquire - take leases of a semaphore, waiting if needed
 *
 * zkr_semaphore_acquire() takes @n leases of @sem, all or none, and stores
 * them in @leases[0] .. @leases[@n-1]. It queues for the admission mutex,
 * then creates one lease node after another while admitted, each held when
 * the lease nodes number at most the limit, waiting inside the admission
 * mutex while they do not; then it leaves the admission mutex. Holding the
 * admission mutex across all @n leases means two contenders that each want
 * several leases never hold part of them each and wait for the other (the
 * way Curator, which admits per lease, can).
 *
 * @timeout_ms is the deadline for the whole acquisition: 0 tries once (the
 * admission mutex is free and enough leases are, or ZKR_EWOULDBLOCK, and no
 * node is left behind; while another contender is being admitted, a
 * try-once fails too, as Curator's does), negative waits without a
 * deadline. Whenever the acquisition fails (time-out, cancel, error), the
 * lease nodes it created are deleted before the admission mutex is left,
 * and nothing of it stays in ZooKeeper. A lost session while waiting
 * starts the acquisition over with the new session, as long as the
 * deadline allows. So does the admission node deleted by another client
 * while a lease waits (the waiter watches it): the lease nodes got so
 * far are given back and it queues for admission again.
 *
 * Returns:
 *   ZKR_OK            @leases holds @n leases, each ZKR_LOCK_HELD.
 *   ZKR_EINVAL        @sem or @leases is NULL, or @n is below 1 or above
 *                     the limit (for a shared count, the count read).
 *   ZKR_EWOULDBLOCK   @timeout_ms was 0 and the leases were not free.
 *   ZKR_ETIMEDOUT     The deadline passed.
 *   ZKR_ECANCELED     zkr_semaphore_cancel() was called.
 *   ZKR_EFOREIGN      @path holds another recipe's layout: kazoo's semaphore
 *                     (a number in its data), or any children other than
 *                     locks and leases (kazoo's leases, a mutex's or a
 *                     read-write lock's nodes). Nothing is created.
 *   ZKR_ENONODE       The shared count node does not exist.
 *   ZKR_EBADCOUNT     The shared count node does not hold 4 bytes.
 *   ZKR_ENOAUTH       An ACL forbids creating the nodes.
 *   ZKR_ECLOSED       The session was closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_EDEADLK       Called from a zkr callback.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * Any thread except a zkr callback; several threads may acquire on one
 * semaphore at once.
 *
 * See also: zkr_semaphore_acquire_async(), zkr_lease_release(),
 *   zkr_semaphore_cancel(), zkr_hold_token()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_semaphore_acquire(zkr_semaphore *sem, int n,
                                     int64_t timeout_ms, zkr_lease **leases);

/**
 * zkr_semaphore_acquire_async - take leases without blocking
 *
 * zkr_semaphore_acquire_async() starts the acquisition zkr_semaphore_acquire()
 * makes and returns at once. When it ends, @fn runs once on the session's
 * event thread (in dispatch mode, in zkr_session_dispatch()) with the
 * result code, @leases (filled with @n leases when
 * the code is ZKR_OK) and @user_data. @leases must stay valid until then.
 * If the call itself fails, @fn is not called. @fn runs without the
 * semaphore's lock: while it runs, other threads' calls on @sem go on
 * (zkr_semaphore_free() from another thread waits for it). The callbacks
 * of one semaphore run one at a time, in the order their acquisitions
 * ended.
 *
 * Returns:
 *   ZKR_OK      Started; @fn will run.
 *   ZKR_EINVAL  @sem, @leases or @fn is NULL, or @n is below 1 or above the
 *               limit given to zkr_semaphore_new().
 *   ZKR_ECLOSED The session is closed.
 *   ZKR_ENOMEM  Out of memory.
 *
 * Thread safety:
 * Any thread, also a zkr callback.
 *
 * See also: zkr_semaphore_acquire(), zkr_semaphore_cancel()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_semaphore_acquire_async(zkr_semaphore *sem, int n,
                                           int64_t timeout_ms,
                                           zkr_lease **leases,
                                           zkr_semaphore_acquire_fn fn,
                                           void *user_data);

/**
 * zkr_semaphore_cancel - end the pending acquisitions of a semaphore
 *
 * zkr_semaphore_cancel() ends every acquisition of @sem that is under way:
 * each fails with ZKR_ECANCELED (its blocking call returns, its callback
 * runs), after its nodes are deleted. Leases already held are not touched.
 *
 * Returns:
 *   ZKR_OK        At least one acquisition was ended.
 *   ZKR_ENOTHELD  None was under way.
 *   ZKR_EINVAL    @sem is NULL.
 *
 * Thread safety:
 * Any thread, also a zkr callback.
 *
 * See also: zkr_semaphore_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_semaphore_cancel(zkr_semaphore *sem);

/**
 * zkr_semaphore_limit - the current limit of a semaphore
 *
 * zkr_semaphore_limit() returns the limit @sem enforces: the number given
 * to zkr_semaphore_new(), or the last value read from the shared count
 * node.
 *
 * Returns:
 * The limit; 0 while a shared count was not read yet; -1 if @sem is NULL.
 *
 * Thread safety:
 * Any thread.
 *
 * See also: zkr_semaphore_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_semaphore_limit(const zkr_semaphore *sem);

/**
 * zkr_semaphore_participants - list the leases and the waiters of a semaphore
 *
 * zkr_semaphore_participants() reads the semaphore at @path through the
 * session @s. It stores the lease nodes (the children of @path/leases) in
 * *@leases, *@nleases entries in order, and the contenders queued for the
 * admission mutex (the children of @path/locks) in *@waiters, *@nwaiters
 * entries in order. Each lease has @is_holder 1, except the newest lease
 * node of the admitted contender while the lease nodes outnumber @limit
 * (that contender is still waiting for a lease); with @limit 0 (unknown),
 * every lease node counts as held. The first waiter, @is_holder 1, is the
 * admitted one. Each @node is named relative to @path ("leases/NAME",
 * "locks/NAME"), each @role is ZKR_ROLE_LEASE or ZKR_ROLE_ADMISSION. Free
 * both arrays with zkr_participants_free().
 *
 * Returns:
 *   ZKR_OK            Both arrays are filled (empty if @path does not
 *                     exist).
 *   ZKR_EINVAL        @s or an output is NULL, or @limit is negative.
 *   ZKR_EBADPATH      @path is NULL or not a valid znode path.
 *   ZKR_ETIMEDOUT     @timeout_ms passed first.
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_EDEADLK       Called from a zkr callback.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * Any thread except a zkr callback.
 *
 * See also: zkr_participants_free(), zkr_semaphore_new(), zkr-ls(1)
 *
 * Since: 0.1.0
 * Synopsis: zkr_participant
 */
ZKR_EXTERN int zkr_semaphore_participants(zkr_session *s, const char *path,
                                          int limit, int64_t timeout_ms,
                                          zkr_participant **leases,
                                          size_t *nleases,
                                          zkr_participant **waiters,
                                          size_t *nwaiters);

/**
 * zkr_lease_release - give a lease back
 *
 * zkr_lease_release() deletes the lease's node (in the background if the
 * connection is down), so another contender can take the lease. It does not
 * free @lease: like every object zkr gives, a lease is freed by its _free
 * function, zkr_lease_free() (or with its semaphore, zkr_semaphore_free()).
 * After the release, zkr_lease_state_get() and the lease's hold report
 * ZKR_LOCK_UNLOCKED. A lease may be released from any thread, not only the
 * one that acquired it.
 *
 * The call first applies the session clock (see
 * zkr_session_options.lost_fraction): a holder resumed from a pause longer
 * than its session allows gets ZKR_ELOCKLOST even if the loss had not been
 * noticed yet. A state callback still queued for the lease is dropped; the
 * return code is the report.
 *
 * Returns:
 *   ZKR_OK        Released.
 *   ZKR_ELOCKLOST The lease had been lost (released all the same): work done
 *                 under it may have overlapped with another holder.
 *   ZKR_ENOTHELD  It was released already.
 *   ZKR_EINVAL    @lease is NULL.
 *
 * Thread safety:
 * Any thread, also a zkr callback; not concurrently with another call on
 * @lease.
 *
 * See also: zkr_lease_free(), zkr_semaphore_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_lease_release(zkr_lease *lease);

/**
 * zkr_lease_free - free a lease object
 *
 * zkr_lease_free() releases @lease if it still holds (as zkr_lease_release()
 * would, without telling whether it had been lost) and frees it; @lease and
 * its hold are invalid afterwards. Leases not freed are freed by
 * zkr_semaphore_free(); a program that takes leases in a loop frees each,
 * so its memory stays flat. NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * Any thread, also a zkr callback; not concurrently with another call on
 * @lease, nor after zkr_semaphore_free() of its semaphore.
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   int call_once(zkr_semaphore *sem, int (*call)(void)) {
 *     zkr_lease *lease;
 *     int rc = zkr_semaphore_acquire(sem, 1, 10000, &lease);
 *     if (rc != ZKR_OK)
 *       return rc;
 *     rc = call();
 *     zkr_lease_release(lease);
 *     zkr_lease_free(lease);
 *     return rc;
 *   }
 *
 * See also: zkr_lease_release(), zkr_semaphore_free()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_lease_free(zkr_lease *lease);

/**
 * zkr_lease_state_get - the state of a lease
 *
 * zkr_lease_state_get() returns ZKR_LOCK_HELD, ZKR_LOCK_SUSPECT or
 * ZKR_LOCK_LOST, as the state callback (zkr_semaphore_options.state_fn)
 * tells it.
 *
 * Returns:
 * The state; ZKR_LOCK_UNLOCKED if @lease is NULL.
 *
 * Thread safety:
 * Any thread.
 *
 * See also: zkr_semaphore_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_lock_state zkr_lease_state_get(const zkr_lease *lease);

/**
 * zkr_lease_hold - the hold of a lease
 *
 * zkr_lease_hold() returns the hold of @lease: its fencing token, its node,
 * its state and its guarded writes, through the zkr_hold_* functions
 * (zkr_hold_token(), zkr_hold_node(), zkr_hold_state(),
 * zkr_hold_guarded_multi(), zkr_hold_guarded_set()), as for a mutex's
 * (zkr_mutex_hold()) or a leader's (zkr_election_hold()).
 *
 * The hold belongs to the lease and lasts as long as it: until
 * zkr_lease_release() (or zkr_semaphore_free()). Do not free it.
 *
 * Returns:
 * The hold, or NULL if @lease is NULL.
 *
 * Thread safety:
 * zkr_lease_hold() does not block and may be called from any thread and from
 * zkr callbacks.
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   int call(int64_t fencing_token); // the rate-limited service
 *
 *   int limited_call(zkr_semaphore *sem) {
 *     zkr_lease *lease;
 *     int rc = zkr_semaphore_acquire(sem, 1, 10000, &lease);
 *     if (rc == ZKR_OK) {
 *       rc = call(zkr_hold_token(zkr_lease_hold(lease)));
 *       zkr_lease_release(lease);
 *       zkr_lease_free(lease);
 *     }
 *     return rc;
 *   }
 *
 * See also: zkr_hold_token(), zkr_hold_guarded_multi(), zkr_lease_release()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_hold *zkr_lease_hold(zkr_lease *lease);

struct zoo_op;
struct zoo_op_result;

#ifdef __cplusplus
}
#endif
#endif /* ZKR_SEMAPHORE_H */
