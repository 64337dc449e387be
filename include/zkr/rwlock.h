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
 * zkr_rwlock_new - create a read-write lock on @path (created as container
 * nodes when first needed) in session @s. Nothing is sent to ZooKeeper
 * until a half is acquired.
 * @opts: NULL or mutex options applied to both halves: the id stored in
 * each node, watch_node, and the state callback (whose @lock argument is
 * the half, a zkr_mutex *). The reentrant option is ignored: both halves
 * are always reentrant.
 * Returns ZKR_OK, ZKR_EINVAL (@out or @s NULL), ZKR_EBADPATH (@path not a
 * valid absolute path, "/" or under "/zookeeper"), ZKR_ECLOSED (the
 * session is closed), ZKR_ENOMEM.
 */
ZKR_EXTERN int zkr_rwlock_new(zkr_rwlock **out, zkr_session *s,
                              const char *path, const zkr_mutex_opts *opts);

/**
 * zkr_rwlock_free - cancel pending acquisitions of both halves, release
 * what they hold (their nodes are deleted, in the background if the
 * connection is down) and free the lock. NULL is a no-op.
 */
ZKR_EXTERN void zkr_rwlock_free(zkr_rwlock *rw);

/**
 * zkr_rwlock_read_lock - the read (shared) half of @rw, a zkr_mutex owned
 * by @rw. NULL if @rw is NULL.
 */
ZKR_EXTERN zkr_mutex *zkr_rwlock_read_lock(zkr_rwlock *rw);

/**
 * zkr_rwlock_write_lock - the write (exclusive) half of @rw, a zkr_mutex
 * owned by @rw. NULL if @rw is NULL.
 */
ZKR_EXTERN zkr_mutex *zkr_rwlock_write_lock(zkr_rwlock *rw);

/**
 * zkr_rwlock_participants - every contender queued on the read-write lock
 * at @path, in queue order, with is_holder set for every current holder
 * (the readers before the first writer, or the first writer). Readers and
 * writers of zkr, Curator and kazoo are all listed; the node name tells
 * the kind. Free with zkr_participants_free().
 * Returns ZKR_OK (a missing path: no participants), ZKR_EINVAL,
 * ZKR_EBADPATH, ZKR_ETIMEDOUT, ZKR_ECLOSED, ZKR_ESESSIONLOST, ZKR_EDEADLK
 * (called from a zkr callback), ZKR_ENOMEM, or another error of the read.
 */
ZKR_EXTERN int zkr_rwlock_participants(zkr_session *s, const char *path,
                                       int64_t timeout_ms,
                                       zkr_participant **out, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_RWLOCK_H */
