/*
 * zkr -- ZooKeeper recipes for C.
 * stats.h: what every lock object and every session counts (acquisitions,
 * failures by cause, wait and hold times as histograms), a hook that sees
 * each acquisition, release, failure and loss, and threshold alerts for a
 * wait or a hold that lasts too long.
 *
 * The figures are kept by the queue engine that every recipe uses, with no
 * ZooKeeper request and no lock beyond the one the engine takes anyway.
 * The histograms have fixed log-scale buckets, the same everywhere, so
 * that they can be added up across objects, sessions and processes and
 * exported as they are (docs/monitoring.md).
 *
 * THREAD SAFETY: every function declared here is thread-safe.
 */
#ifndef ZKR_STATS_H
#define ZKR_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The number of buckets of a zkr_histogram. */
#define ZKR_STATS_BUCKETS 28

/** The upper bound, in microseconds, of bucket @i of a zkr_histogram, for
 * @i from 0 to ZKR_STATS_BUCKETS - 2: 125 us, 250 us, 500 us, 1 ms, ...,
 * about 2.3 hours. The last bucket has no bound. */
#define ZKR_STATS_BUCKET_LE_US(i) ((uint64_t)125 << (i))

/** A distribution of durations. bucket[i] counts the durations d with
 * ZKR_STATS_BUCKET_LE_US(i - 1) < d <= ZKR_STATS_BUCKET_LE_US(i) (not
 * cumulative; the last bucket counts every longer one). */
typedef struct zkr_histogram {
  uint64_t count;  /**< durations recorded */
  uint64_t sum_us; /**< their sum, microseconds */
  uint64_t max_us; /**< the longest, microseconds */
  uint64_t bucket[ZKR_STATS_BUCKETS];
} zkr_histogram;

/** Why an acquisition failed, or a hold ended other than by a release. */
typedef enum zkr_fail_cause {
  ZKR_FAIL_TIMEDOUT = 0, /**< its deadline passed (ZKR_ETIMEDOUT) */
  ZKR_FAIL_REFUSED = 1,  /**< a try-once found it taken (ZKR_EWOULDBLOCK) */
  ZKR_FAIL_CANCELED = 2, /**< cancelled, or the object freed while waiting */
  ZKR_FAIL_LOST = 3,     /**< held, then lost (session gone, node deleted) */
  ZKR_FAIL_CLOSED = 4,   /**< the session was closed or lost for good
                              while waiting */
  ZKR_FAIL_ERROR = 5,    /**< any other error */
  ZKR_FAIL_MAX_HOLD = 6, /**< held for its maximum hold, then given up
                              (max_hold_ms in the options) */
  ZKR_FAIL_CAUSES = 7    /**< the number of causes */
} zkr_fail_cause;

/** The figures of a lock object or of a session. New fields are only ever
 * added at the end: pass sizeof(zkr_stats) of the header you compiled
 * with, and zkr fills that much. */
typedef struct zkr_stats {
  size_t size;          /**< the bytes zkr filled */
  uint64_t acquired;    /**< acquisitions (terms, for an election) */
  uint64_t released;    /**< holds ended by a release (or a resignation) */
  uint64_t failed[8];   /**< by zkr_fail_cause; lost holds included */
  uint64_t handoffs;    /**< acquisitions that waited for another contender
                             to go first (the lock was handed on to it) */
  zkr_histogram wait;   /**< from the start of an acquisition to its end,
                             acquired or failed */
  zkr_histogram hold;   /**< from acquired to released or lost */
  int state;            /**< a lock object: its zkr_lock_state; a session:
                             its zkr_session_state */
  uint32_t held;        /**< holds now (a lock object: 0 or 1) */
  uint32_t waiting;     /**< acquisitions under way now */
  uint64_t suspensions; /**< a session: connections dropped */
  uint64_t reconnects;  /**< a session: reconnections to the same session */
  uint64_t losses;      /**< a session: ZooKeeper sessions lost (expired,
                             or declared lost by the session clock) */
  uint64_t revocations; /**< revocation requests told to holds (revoke_fn
                             in the options); a session: all of its
                             objects' */
  uint64_t evictions;   /**< a session: holders its zkr_revoke() calls
                             evicted */
} zkr_stats;

/** What a zkr_lock_event reports. */
typedef enum zkr_lock_event_type {
  ZKR_LOCK_EV_ACQUIRED = 0, /**< an acquisition succeeded */
  ZKR_LOCK_EV_FAILED = 1,   /**< an acquisition failed (see cause) */
  ZKR_LOCK_EV_RELEASED = 2, /**< a hold ended by a release */
  ZKR_LOCK_EV_LOST = 3      /**< a hold ended by a loss */
} zkr_lock_event_type;

/** One acquisition, release, failure or loss, as a zkr_lock_hook_fn sees
 * it. The strings are valid during the call only. */
typedef struct zkr_lock_event {
  zkr_lock_event_type type;
  const char *recipe;   /**< the node kind: "lock" (a mutex, a selector),
                             "read", "write", "lease", "latch" */
  const char *path;     /**< the lock's path (a semaphore's leases path) */
  const char *node;     /**< our node's name, or NULL if there was none */
  int error;            /**< ZKR_LOCK_EV_FAILED: the zkr_error code */
  zkr_fail_cause cause; /**< ZKR_LOCK_EV_FAILED and _LOST */
  int64_t wait_us;      /**< _ACQUIRED and _FAILED: the wait */
  int64_t hold_us;      /**< _RELEASED and _LOST: the hold */
} zkr_lock_event;

/** Receives every zkr_lock_event of a session's lock objects, on the
 * session's event thread (in dispatch mode, in zkr_session_dispatch()), in
 * the order they happened per object. */
typedef void (*zkr_lock_hook_fn)(const zkr_lock_event *ev, void *user_data);

/** What a zkr_alert is about. */
typedef enum zkr_alert_kind {
  ZKR_ALERT_WAIT = 0, /**< an acquisition waited longer than its threshold */
  ZKR_ALERT_HOLD = 1  /**< a lock was held longer than its threshold */
} zkr_alert_kind;

/** A threshold crossed, once per wait or hold. The strings are valid
 * during the call only. */
typedef struct zkr_alert {
  zkr_alert_kind kind;
  const char *recipe; /**< as in zkr_lock_event */
  const char *path;   /**< the lock's path */
  const char *node;   /**< our node's name, or NULL (not created yet) */
  int64_t elapsed_ms; /**< how long it had waited or held when crossed */
  /* ZKR_ALERT_WAIT: the oldest contender of the queue (a holder), as
   * zkr-ls shows it; NULLs and 0 if it could not be read */
  const char *holder_node; /**< its node's name */
  const char *holder_data; /**< its node's data ("host=H pid=P id=I") */
  const char *holder_id;   /**< id= of a zkr contender's data */
  const char *holder_host; /**< host= */
  int64_t holder_pid;      /**< pid=, 0 if none */
  int64_t holder_session;  /**< its ZooKeeper session */
} zkr_alert;

/** Receives each threshold crossed, on the session's alert thread (not
 * the event thread: a long wait's holder is read from ZooKeeper first; in
 * dispatch mode the alert thread reads it, and this runs in
 * zkr_session_dispatch()). */
typedef void (*zkr_alert_fn)(const zkr_alert *alert, void *user_data);

struct zkr_session;
struct zkr_mutex;
struct zkr_semaphore;
struct zkr_election;

/**
 * zkr_session_stats - the figures of every lock object of a session
 *
 * zkr_session_stats() copies into @out the figures added up over every
 * lock object that used @s (freed ones included), the session's own
 * (suspensions, reconnects, losses; state), and the holds and
 * acquisitions under way now. @size is sizeof(zkr_stats) as the caller
 * compiled it; zkr fills that many bytes at most and sets @out->size.
 *
 * Returns:
 *   ZKR_OK      Copied.
 *   ZKR_EINVAL  @s or @out is NULL, or @size is too small for the first
 *               version of zkr_stats.
 *
 * Thread safety:
 * Any thread, callbacks included. It sends no request.
 *
 * See also: zkr_mutex_stats(), zkr_session_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_session_stats(const struct zkr_session *s, zkr_stats *out,
                                 size_t size);

/**
 * zkr_mutex_stats - the figures of one mutex
 *
 * zkr_mutex_stats() copies into @out the figures of @m since it was made:
 * its acquisitions, failures by cause, wait and hold times and its state.
 * A read-write lock's halves (zkr_rwlock_read_lock(),
 * zkr_rwlock_write_lock()) are mutex objects and are read the same way.
 * A reentrant acquisition by the holding thread is not counted (it makes
 * no request). @size as for zkr_session_stats().
 *
 * Returns:
 *   ZKR_OK      Copied.
 *   ZKR_EINVAL  @m or @out is NULL, or @size is too small.
 *
 * Thread safety:
 * Any thread, callbacks included.
 *
 * See also: zkr_session_stats()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_mutex_stats(const struct zkr_mutex *m, zkr_stats *out,
                               size_t size);

/**
 * zkr_semaphore_stats - the figures of one semaphore object
 *
 * zkr_semaphore_stats() copies into @out the figures of the leases taken
 * through @sem: each acquisition of one or more leases counts once (its
 * wait from the call to the last lease granted), each lease's hold counts
 * in the hold times. @size as for zkr_session_stats().
 *
 * Returns:
 *   ZKR_OK      Copied.
 *   ZKR_EINVAL  @sem or @out is NULL, or @size is too small.
 *
 * Thread safety:
 * Any thread, callbacks included.
 *
 * See also: zkr_session_stats()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_semaphore_stats(const struct zkr_semaphore *sem,
                                   zkr_stats *out, size_t size);

/**
 * zkr_election_stats - the figures of one election participant
 *
 * zkr_election_stats() copies into @out the figures of @e: each term it
 * led counts as an acquisition (its wait from joining the queue), each
 * end of a term as a release (resigned, its function returned) or a loss
 * (ZKR_FAIL_LOST). @size as for zkr_session_stats().
 *
 * Returns:
 *   ZKR_OK      Copied.
 *   ZKR_EINVAL  @e or @out is NULL, or @size is too small.
 *
 * Thread safety:
 * Any thread, callbacks included.
 *
 * See also: zkr_session_stats()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_stats(const struct zkr_election *e, zkr_stats *out,
                                  size_t size);

#ifdef __cplusplus
}
#endif

#endif
