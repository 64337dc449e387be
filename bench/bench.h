/*
 * bench.h - the lock back end a benchmark worker drives.
 *
 * One worker program (bench/driver.c) is linked three times: with
 * bench/impl-zkr.c (zkr's public API) into bench/zkr-bench, with
 * bench/impl-zkr-loop.c (zkr in dispatch mode, its callbacks run by an
 * epoll loop) into bench/zkr-loop-bench, and with bench/impl-raw.c (plain
 * libzookeeper_mt, the "raw floor") into bench/raw-bench. The Curator and
 * kazoo harnesses (bench/CuratorBench.java, bench/kazoo_bench.py) implement
 * the same command line and output by hand.
 */
#ifndef ZKR_BENCH_H
#define ZKR_BENCH_H

#include <stdint.h>

typedef struct bsess bsess; /* one ZooKeeper session */
typedef struct block block; /* one contender object on one lock path */

/* The implementation's name in result lines: "zkr", "zkr-loop" or "raw". */
extern const char *const b_impl;

/* Each returns 0 on success, or a non-zero code b_strerror() explains. */
int b_connect(const char *hosts, int session_ms, bsess **out);
void b_close(bsess *s);
int b_lock_new(bsess *s, const char *path, block **out);
int b_acquire(block *l); /* blocks until held */
int b_release(block *l);
void b_lock_free(block *l);
const char *b_strerror(int rc);

/* Optional: start an acquisition without a thread of the caller's; @fn runs
 * on a library thread when it ends. NULL when the back end has none (the
 * driver then uses one thread per waiter). */
typedef void (*b_done_fn)(void *ud, int rc);
extern int (*const b_acquire_async)(block *l, b_done_fn fn, void *ud);

/* Optional: acquire+release cycles of @l driven by the back end's own event
 * loop rather than by the calling thread (scripts/bench's zkr-loop: S1 and
 * S2 through zkr_session_dispatch() on an epoll loop). @fn runs on the
 * loop's thread, one call at a time: with B_START before each acquisition
 * (it returns 0 to stop there, non-zero to start the acquisition), with
 * B_HELD once the lock is held (before the release) and with B_RELEASED
 * after the release returned. The call waits, and returns 0 once @fn has
 * stopped the cycles, or the code of the acquisition or release that
 * failed. NULL when the back end has none (the driver then runs the cycles
 * with b_acquire() and b_release() on its own thread). */
enum { B_START, B_HELD, B_RELEASED };
typedef int (*b_cycle_fn)(void *ud, int phase);
extern int (*const b_cycles)(block *l, b_cycle_fn fn, void *ud);

/* Optional: a read-write lock on @path, its read and write halves as two
 * blocks (b_acquire/b_release work on them; b_lock_free on the write half
 * frees both, on the read half nothing). NULL when the back end has no
 * read-write lock (the raw floor: scenario S5 is not run for it). */
extern int (*const b_rwlock_new)(bsess *s, const char *path, block **rd,
                                 block **wr);

/* Optional: a counting semaphore on @path admitting @limit holders at once
 * (Curator's InterProcessSemaphoreV2 protocol), as one block: b_acquire
 * takes one lease, b_release gives it back, b_lock_free frees it. NULL when
 * the back end has none (scenario S6 is then not run for it). */
extern int (*const b_semaphore_new)(bsess *s, const char *path, int limit,
                                    block **out);

/* Optional: a participant of the leader election on @path (Curator
 * LeaderLatch's protocol) as one block: b_acquire joins (again, after a
 * release) and returns once elected, b_release leaves the election (its
 * node deleted), b_lock_free frees it. NULL when the back end has none
 * (scenario S7 is then not run for it). */
extern int (*const b_election_new)(bsess *s, const char *path, block **out);

/* Optional: a multi-lock over the @n distinct lock paths @paths (mutexes,
 * all taken or none, in one ZooKeeper transaction), as one block: b_acquire
 * takes the whole set, b_release gives every lock back, b_lock_free frees
 * it. NULL when the back end has none (scenario S8 then takes the locks one
 * by one in sorted order only, with b_lock_new blocks). */
extern int (*const b_multilock_new)(bsess *s, const char *const *paths, int n,
                                    block **out);
/* The number of children of @path (the sequence nodes of a lock), or -1. */
int b_count_children(bsess *s, const char *path);

/* Monotonic clock (CLOCK_MONOTONIC), nanoseconds: the same clock as Java's
 * System.nanoTime() and Python's time.monotonic_ns() on Linux. */
int64_t b_now_ns(void);

/* bench/common.c: the children of @path counted through @zh (a handle of
 * the back end's own), or through one plain handle to @hosts opened on
 * first use; -1 on an error. */
typedef struct _zhandle zhandle_t;
int b_count_with(zhandle_t *zh, const char *path);
int b_count_at(const char *hosts, int session_ms, const char *path);

#endif /* ZKR_BENCH_H */
