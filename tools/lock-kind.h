/*
 * zkr-lock's lock, whatever its kind (lock-kind.c): the mutex at PATH, one
 * side of the read-write lock at PATH (--read, --write), or one lease of
 * the semaphore at PATH (--permits). The rest of zkr-lock sees only these
 * lock_* functions and the hold taken (lock_hold()).
 */
#ifndef ZKR_TOOLS_LOCK_KIND_H
#define ZKR_TOOLS_LOCK_KIND_H

#include <stddef.h>
#include <stdint.h>

#include <zkr/zkr.h>

struct lock_kind {
  int side;     /* 'r', 'w', or 0 (set by the options) */
  long permits; /* --permits N: the semaphore; 0 otherwise */
  zkr_mutex_options mo;
  zkr_semaphore_options so;
  zkr_mutex *m; /* the mutex, or the side of rw taken */
  zkr_rwlock *rw;
  zkr_semaphore *sem;
  zkr_lease *lease[1]; /* filled by the semaphore's acquisition */
  /* --and: the other paths of a multi-lock (PATH first) */
  const char *and_paths[ZKR_MULTILOCK_MAX];
  int nand;
  zkr_multilock_options mlo;
  zkr_multilock *ml;
};
extern struct lock_kind lk;

/* The options: the contender id (kept, not copied), @done told each
 * acquisition's result and @on_state each change of the hold's state (both
 * on the library's event thread), the node watch. ZKR_EINVAL: the id is
 * not valid. */
int lock_opts_set(const char *id, void (*done)(int rc),
                  zkr_lock_state_fn on_state);
/* The lock object, with the options. */
int lock_new(zkr_session *s, const char *path);
int lock_acquire_async(int64_t timeout_ms);
void lock_cancel(void);
/* What -v says while waiting, into @buf; NULL when there is nothing new. */
const char *lock_waiting(char *buf, size_t len);
/* The hold taken: its token, node and state (NULL: none). */
zkr_hold *lock_hold(void);
int lock_release(void);
/* Free the lock object; a node still held or queued is deleted. */
void lock_free(void);
/* "lock" or "lease", for messages. */
const char *lock_noun(void);

#endif
