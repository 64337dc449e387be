/*
 * The semaphore's private parts, shared by its three files: semaphore.c
 * (the objects, the acquisitions, the leases, the API), semaphore-prep.c
 * (what an acquisition needs first: the check that the path does not hold
 * kazoo's layout, and the limit read from a shared count node and followed
 * live) and semaphore-list.c (the participants listing, the figures).
 * Nothing else includes it.
 */
#ifndef ZKR_SEMAPHORE_INT_H
#define ZKR_SEMAPHORE_INT_H

#include <stdatomic.h>

#include "follow.h"
#include "recipe.h"

/* A_NEW: made, its start job (job_kick) not run yet. Only that job takes
 * it on: the end of a preparation starts the acquisitions waiting in
 * A_PREP, and one it started too would have its admission queue started
 * twice, and the second start fail with ZKR_EBUSY. */
typedef enum { A_NEW, A_PREP, A_ADMIT, A_LEASE, A_END } aphase;

struct zkr_lease {
  zkr_semaphore *sem;
  zkr__queue *q;
  zkr_hold hold;          /* set when handed out */
  int released;           /* zkr_lease_release() was called */
  struct acq *acq;        /* the acquisition it belongs to, until handed out */
  zkr_lease *prev, *next; /* in sem->leases once handed out */
  /* monitoring, under the semaphore's lock */
  int hold_open;
  int64_t hold_t0; /* us */
  zkr__alarm *hold_alarm;
};

struct acq {
  zkr__obj_call call; /* its callback, run once the lock is let go */
  zkr_semaphore *sem;
  struct acq *next;
  uint64_t id; /* jobs find it by this, not by its address */
  aphase phase;
  int n, got;
  int try_once;
  int64_t deadline; /* absolute, monotonic ms; -1: none */
  zkr__queue *adm;
  zkr_lease **tmp; /* the n lease objects of this acquisition */
  zkr_lease **out; /* the caller's array */
  zkr_semaphore_acquire_fn fn;
  void *ud;
  int restarting; /* the current lease's end starts over */
  int cancel;     /* cancel asked */
  int done, rc;   /* for a blocking caller */
  int blocking;
  int64_t t0; /* monitoring: when it started, us */
  zkr__alarm *alarm;
};

/* What the preparation knows of the layout and of the count. */
enum { P_NONE, P_READING, P_OK, P_FAILED };

struct zkr_semaphore {
  zkr__obj obj; /* first: the base (lock, references, jobs) */
  char *path, *locks, *leases;
  char data[600];
  int datalen;
  zkr__qpolicy adm_pol, lease_pol;
  atomic_int limit;
  int fixed_limit;
  char *count_path;
  zkr_lock_state_fn state_fn;
  void *state_ud;
  int watch_node;          /* leases watch their own node while held */
  int64_t max_hold_ms;     /* a lease's maximum hold (0: none) */
  zkr_revoke_fn revoke_fn; /* leases are revocable */
  void *revoke_ud;
  struct acq *acqs;
  uint64_t next_acq_id;
  zkr__figs st; /* monitoring (its queues keep none) */
  zkr_lease *handed;
  int torn; /* its teardown ran */
  /* the preparation: the layout check (once), the count (followed) */
  int layout, layout_err;
  zkr__follow *layout_f;
  int count, count_err;
  zkr__follow *count_f;
  /* while READING: the first read that answers (zkr__snapshot.seq); an
   * earlier one was read before the preparation asked */
  uint64_t layout_want, count_want;
  /* what the preparation tells (set by semaphore.c, called under the
   * lock on the event thread): its result for the acquisitions waiting
   * for it, and a change of the limit */
  void (*on_prep)(zkr_semaphore *sem, int rc);
  void (*on_limit)(zkr_semaphore *sem);
  uint64_t retry_timer; /* semaphore.c: the preparation's next try */
};

/* ---- semaphore-prep.c ---- */
/* Under the lock, event thread: ask for what the preparation still
 * needs, or settle the acquisitions waiting for it. */
void zkr__sem_prep_step(zkr_semaphore *sem);
/* Under the lock, event thread: stop the preparation's followers (the
 * semaphore is being freed). */
void zkr__sem_prep_stop(zkr_semaphore *sem);
/* Decode a SharedCount's data: 4 bytes, big-endian, signed. 1 with *@out,
 * or 0 if @v is not one. (Also reached by fuzz/fuzz-semcount.) */
int zkr__sem_count_decode(const char *v, int len, int32_t *out);
/* The limit a decoded count @v gives: @v within [0, ZKR_SEMAPHORE_MAX]. */
int zkr__sem_count_limit(int32_t v);
/* Is the node data @v (@len bytes, not terminated) a decimal number, what
 * kazoo's Semaphore stores as its max_leases? */
int zkr__sem_is_number(const char *v, int len);

#endif
