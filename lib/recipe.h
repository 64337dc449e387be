/*
 * Services every recipe shares (recipe.c), over the queue engine.
 *
 * Owns: the lock-path check, the contender's node data, the mapping of
 * the engine's states to the public zkr_lock_state, reentrancy (owner
 * thread and hold count), and the listing of a queue's participants with the
 * roles a policy gives them. Must not touch: the engine's internals (only
 * queue.h), the session's internals, any one recipe's naming or rule (those are
 * the recipe's zkr__qpolicy).
 */
#ifndef ZKR_RECIPE_H
#define ZKR_RECIPE_H

#include <stdatomic.h>

#include "hold.h"
#include "layout.h"

/* A lock path: a valid path, not "/", not under "/zookeeper". */
int zkr__lock_path_check(const char *path);
/* The contender data "host=H pid=P[ id=I]" into @buf; returns its length. */
int zkr__contender_data(const char *id, char *buf, size_t len);
/* A contender id as the recipes' options take it: 1..256 bytes, no
 * control characters. ZKR_OK or ZKR_EINVAL. */
int zkr__contender_id_check(const char *id);
/* The checks every recipe's options struct shares: @id NULL or valid
 * (zkr__contender_id_check()), @max_hold_ms not negative, the @n bytes of
 * @reserved zero. ZKR_OK, or ZKR_EINVAL with the reason logged, naming
 * @type. */
int zkr__options_check(const char *type, const char *id, int64_t max_hold_ms,
                       const unsigned char *reserved, size_t n);

/* Reentrancy: which thread holds, and how many times. The engine holds
 * the node once; the extra holds of the owner thread are counted here. */
typedef struct zkr__owner {
  int reentrant;
  _Atomic(pthread_t) thread; /* the thread that acquired (another half of a
                                read-write lock reads it) */
  atomic_int extra;          /* holds beyond the first */
} zkr__owner;

/* Before an acquisition: if @q is held, returns 1 with *rc ZKR_OK (the
 * owner thread re-entered a reentrant lock: one more hold) or ZKR_EBUSY;
 * else returns 0 and records the calling thread as the owner-to-be. */
int zkr__owner_enter(zkr__owner *o, zkr__queue *q, int *rc);
/* Undo a reentry that could not be completed. */
void zkr__owner_undo(zkr__owner *o);
/* Release one hold: the node itself when the last goes. ZKR_EBUSY if a
 * reentrant lock is held by another thread (and the caller is not a zkr
 * callback). */
int zkr__owner_release(zkr__owner *o, zkr__queue *q);
/* Held (HELD or SUSPECT), and acquired by the calling thread? */
int zkr__owner_mine(zkr__owner *o, zkr__queue *q);
/* The hold count (0 if not held). */
int zkr__owner_count(const zkr__owner *o, zkr__queue *q);

/* The policy a contender named @name follows (a read-write lock has two,
 * the mutex one). */
typedef const zkr__qpolicy *(*zkr__policy_of)(const char *name, void *ctx);

/* The contenders of the queue at @path in order, each with is_holder set
 * by its own policy's blocks and holds rules and its role by its name at
 * @place. Children without a sequence number and persistent ones (no
 * ephemeral owner) are not contenders. With @prefix, each node's name is
 * "@prefix/NAME" (a semaphore's, relative to the semaphore's path). */
int zkr__participants(zkr_session *s, const char *path, zkr__policy_of pol_of,
                      void *ctx, zkr__place place, const char *prefix,
                      int64_t timeout_ms, zkr_participant **out, size_t *count);

/* The lock recipes' policies, for a multi-lock's members: the mutex's
 * (mutex.c), the read-write lock's read or write half's (rwlock.c). */
const zkr__qpolicy *zkr__mutex_policy(void);
const zkr__qpolicy *zkr__rwlock_policy(int write);

/* ---- mutex objects of other policies (mutex.c) ---- */

/* A gate, checked before a mutex object starts an acquisition (each half
 * of a read-write lock has one): ZKR_OK to queue as usual,
 * ZKR__GATE_FIXED with *seq and *gen set to take a fixed node at once
 * (zkr__queue_join_at: the downgrade), or an error code to refuse. */
#define ZKR__GATE_FIXED 1
typedef int (*zkr__gate_fn)(zkr_mutex *m, void *ctx, int32_t *seq,
                            uint64_t *gen);
/* A zkr_mutex with policy @pol; with a @gate it is a half of a read-write
 * lock: always reentrant, and zkr_mutex_free() refuses it. */
int zkr__mutex_make(zkr_mutex **out, zkr_session *s, const char *path,
                    const zkr_mutex_options *opts, const zkr__qpolicy *pol,
                    zkr__gate_fn gate, void *gate_ctx);
/* Free any mutex object, a half included. */
void zkr__mutex_destroy(zkr_mutex *m);
/* Held (HELD or SUSPECT) and acquired by the calling thread? */
int zkr__mutex_held_by_me(zkr_mutex *m);
zkr__queue *zkr__mutex_queue(zkr_mutex *m);

#endif
