/*
 * zkr -- ZooKeeper recipes for C.
 * lock.h: what every recipe shares: the state of a held lock, lease or
 * leadership, the callback types, and the participants of a queue.
 *
 * Every recipe object (zkr_mutex today; the read-write lock's halves, the
 * semaphore's leases and the election's participant as they come) goes
 * through the same states and reports them through the same callback
 * types, whose first argument is the recipe object they were registered
 * on, passed as a void pointer.
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
 * Called when what a recipe object holds changes state (HELD, SUSPECT,
 * LOST), on the session's event thread, once per change and in order.
 * @lock is the recipe object the callback was set on (for a mutex, its
 * zkr_mutex *), @state the new state.
 */
typedef void (*zkr_lock_state_fn)(void *lock, zkr_lock_state state,
                                  void *user_data);

/**
 * Called exactly once with the result of an asynchronous acquisition, on
 * the session's event thread (once the session is closed, on the thread
 * that closed it): @lock is the recipe object (for a mutex, its
 * zkr_mutex *), @rc ZKR_OK (held) or an error code as listed for the
 * recipe's blocking acquire. Not called if the object is freed first.
 */
typedef void (*zkr_acquire_fn)(void *lock, int rc, void *user_data);

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
} zkr_participant;

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
 * See also: zkr_mutex_state_get(), zkr_mutex_opts_set_state_fn()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_lock_state_name(zkr_lock_state state);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_LOCK_H */
