/*
 * zkr -- ZooKeeper recipes for C.
 * rwlock.h: the fair distributed read-write lock.
 *
 * Readers share the lock; a writer holds it alone. Contenders queue as
 * EPHEMERAL|SEQUENTIAL nodes "_c_<uuid>-__READ__<seq>" and
 * "_c_<uuid>-__WRIT__<seq>" under the lock path (Apache Curator's
 * InterProcessReadWriteLock layout, so C and Java processes share one
 * lock). Every child is ordered by its trailing sequence number. A writer
 * holds when no contender is queued before it, and watches only the one
 * just before it. A reader holds when no writer is queued before it, and
 * watches only the nearest writer before it, so a writer's release wakes
 * exactly the readers that can now hold, and a reader's release wakes at
 * most one writer. The order is first come, first served across both
 * kinds: a writer queued before a reader is served first, so a stream of
 * readers never starves a writer.
 *
 * A contender is a reader if its name ends in "__READ__<seq>" (Curator,
 * zkr) or "__rlock__<seq>" (kazoo); every other node with a sequence
 * number (Curator's and kazoo's write nodes, a plain zkr_mutex's or
 * Curator InterProcessMutex's "-lock-" node) counts as a writer: an unknown
 * contender is treated as exclusive.
 *
 * The two halves are zkr_mutex objects, so every zkr_mutex_* call works on
 * them (acquire with deadlines, try-once, async, cancel, release, state,
 * fencing token, guarded writes), except zkr_mutex_free(): they belong to
 * the lock and go with zkr_rwlock_free(). Both halves are reentrant, per
 * thread and per half. The thread holding the write half may take the
 * read half (a downgrade: its read node takes the write node's sequence
 * number, so no writer queued meanwhile slips in) and then release the
 * write half. The thread holding the read half may not take the write
 * half: that is refused at once with ZKR_EUPGRADE (it would wait for
 * itself forever).
 *
 * THREAD SAFETY: as for zkr_mutex (see mutex.h), per half; one thread at a
 * time uses a half. zkr_rwlock_read_lock() and zkr_rwlock_write_lock()
 * may be called from any thread.
 */
#ifndef ZKR_RWLOCK_H
#define ZKR_RWLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/lock.h>
#include <zkr/mutex.h>
#include <zkr/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque read-write lock. */
typedef struct zkr_rwlock zkr_rwlock;

/**
 * zkr_rwlock_new - create a distributed read-write lock object
 *
 * zkr_rwlock_new() creates a read-write lock object for the lock at @path on
 * the session @s and stores it in *@out. Its two halves, returned by
 * zkr_rwlock_read_lock() and zkr_rwlock_write_lock(), are `zkr_mutex` objects:
 * acquire and release them with zkr_mutex_acquire(),
 * zkr_mutex_acquire_async() and zkr_mutex_release(), and use every other
 * zkr_mutex_* call on them, except zkr_mutex_free().
 *
 * Readers hold the lock together; a writer holds it alone. Contenders queue
 * as ephemeral, sequential children of @path named _c_@uuid-__READ__@seq and
 * _c_@uuid-__WRIT__@seq, the layout of Apache Curator's
 * `InterProcessReadWriteLock`, and are served in the order they queued,
 * across both kinds: a reader holds when no writer is queued before it, a
 * writer when nobody is. A reader waits on the nearest writer before it, a
 * writer on the nearest contender before it, so a release wakes only the
 * contenders that can then hold. Children named __rlock__@seq (kazoo's
 * readers) count as readers, every other child with a sequence number as a
 * writer. The guide's page rwlock.md gives the details.
 *
 * @path follows the rules of zkr_mutex_new(), and nothing is sent to
 * ZooKeeper before the first acquisition. @opts are mutex options (see
 * zkr_mutex_new()), or NULL; both halves get them (the identifier, the
 * node watch, the state callback, whose @hold argument is the half's hold,
 * zkr_mutex_hold() of the half). The
 * reentrant option is ignored: both halves are always reentrant, per thread.
 *
 * The thread that holds the write half may acquire the read half: it
 * succeeds at once (a downgrade), with a read node that carries the write
 * node's sequence number, so no contender queued after the write node comes
 * between when the write half is released. The thread that holds the read
 * half may not acquire the write half: that fails at once with ZKR_EUPGRADE.
 *
 * Free the object with zkr_rwlock_free(). On failure *@out is left untouched
 * and nothing needs to be freed.
 *
 * Returns:
 *   ZKR_OK        *@out holds the new lock; both halves are
 *                 ZKR_LOCK_UNLOCKED.
 *   ZKR_EINVAL    @out or @s is NULL.
 *   ZKR_EBADPATH  @path is NULL, is not a valid path, is "/", or lies under
 *                 "/zookeeper".
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * zkr_rwlock_new() may be called from any thread. Each half is used by one
 * thread at a time, as a `zkr_mutex` is; the two halves may be used by
 * different threads at once.
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   // Publish a new table while no reader reads, then keep reading it.
 *   int publish(zkr_session *s, void (*write_table)(void)) {
 *     zkr_rwlock *rw = NULL;
 *     int rc = zkr_rwlock_new(&rw, s, "/locks/price-table", NULL);
 *     if (rc != ZKR_OK)
 *       return rc;
 *     zkr_mutex *rd = zkr_rwlock_read_lock(rw);
 *     zkr_mutex *wr = zkr_rwlock_write_lock(rw);
 *     rc = zkr_mutex_acquire(wr, 30000);
 *     if (rc == ZKR_OK) {
 *       write_table();
 *       rc = zkr_mutex_acquire(rd, 0); // downgrade: at once
 *       zkr_mutex_release(wr);
 *       // ... readers may come in now, writers may not ...
 *       if (rc == ZKR_OK)
 *         rc = zkr_mutex_release(rd);
 *     }
 *     zkr_rwlock_free(rw);
 *     return rc;
 *   }
 *
 * See also: zkr_rwlock_free(), zkr_rwlock_read_lock(),
 *   zkr_rwlock_write_lock(), zkr_rwlock_participants(), zkr_mutex_acquire(),
 *   zkr_mutex_new(), zkr-lock(1)
 *
 * Since: 0.1.0
 * Synopsis: zkr_rwlock
 */
ZKR_EXTERN int zkr_rwlock_new(zkr_rwlock **out, zkr_session *s,
                              const char *path, const zkr_mutex_options *opts);

/**
 * zkr_rwlock_free - free a read-write lock object and both of its halves
 *
 * zkr_rwlock_free() ends a pending acquisition of either half (as
 * zkr_mutex_cancel() would, without calling an asynchronous acquisition's
 * callback), releases what the halves hold (their nodes are deleted, in the
 * background if the connection is down; a downgrade's read node first), and
 * frees @rw. The halves are invalid afterwards. NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * Not concurrently with any other call on @rw or its halves. It waits for a
 * callback of @rw that is running on another thread; called from such a
 * callback, it does not wait.
 *
 * See also: zkr_rwlock_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_rwlock_free(zkr_rwlock *rw);

/**
 * zkr_rwlock_read_lock - the read half of a read-write lock
 *
 * zkr_rwlock_read_lock() returns the read (shared) half of @rw, a `zkr_mutex`
 * that belongs to @rw: acquire it to read. It is always the same object for
 * one lock, and it is freed by zkr_rwlock_free(); zkr_mutex_free() on it does
 * nothing but log an error.
 *
 * Returns:
 * The read half; NULL if @rw is NULL.
 *
 * Thread safety:
 * Any thread, at any time before zkr_rwlock_free().
 *
 * See also: zkr_rwlock_write_lock(), zkr_rwlock_new(), zkr_mutex_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_mutex *zkr_rwlock_read_lock(zkr_rwlock *rw);

/**
 * zkr_rwlock_write_lock - the write half of a read-write lock
 *
 * zkr_rwlock_write_lock() returns the write (exclusive) half of @rw, a
 * `zkr_mutex` that belongs to @rw: acquire it to write. It is always the same
 * object for one lock, and it is freed by zkr_rwlock_free(); zkr_mutex_free()
 * on it does nothing but log an error. Its acquisition fails at once with
 * ZKR_EUPGRADE when the calling thread holds the read half.
 *
 * Returns:
 * The write half; NULL if @rw is NULL.
 *
 * Thread safety:
 * Any thread, at any time before zkr_rwlock_free().
 *
 * See also: zkr_rwlock_read_lock(), zkr_rwlock_new(), zkr_mutex_acquire()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_mutex *zkr_rwlock_write_lock(zkr_rwlock *rw);

/**
 * zkr_rwlock_participants - list the readers and writers queued for a lock
 *
 * zkr_rwlock_participants() reads the queue of the read-write lock at @path
 * through the session @s and stores it in *@out as an array of *@count
 * entries, in queue order, as zkr_mutex_participants() does, with @is_holder
 * set by the read-write lock's rule: 1 for every reader queued before the
 * first writer, or for the first writer if it is first in the queue. The
 * node's name tells the kind: __READ__ or __rlock__ before the sequence
 * number for a reader, anything else for a writer. A downgrade's read node
 * and its write node carry the same number; both are holders. Persistent
 * children are left out. Free the array with zkr_participants_free().
 *
 * The call blocks, so it must not be called from a zkr callback: there it
 * returns ZKR_EDEADLK.
 *
 * Returns:
 *   ZKR_OK            *@out and *@count hold the queue (empty if @path does
 *                     not exist).
 *   ZKR_EINVAL        @s, @out or @count is NULL.
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
 * See also: zkr_mutex_participants(), zkr_participants_free(),
 *   zkr_rwlock_new(), zkr-ls(1)
 *
 * Since: 0.1.0
 * Synopsis: zkr_participant
 */
ZKR_EXTERN int zkr_rwlock_participants(zkr_session *s, const char *path,
                                       int64_t timeout_ms,
                                       zkr_participant **out, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_RWLOCK_H */
