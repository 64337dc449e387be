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

#include "recipe.h"

struct zkr_semaphore_opts {
  char *id;
  char *count_path;
  int watch_node;
  zkr_lock_state_fn state_fn;
  void *state_ud;
};

/* A_NEW: made, its start job (job_kick) not run yet. Only that job takes
 * it on: the end of a preparation starts the acquisitions waiting in
 * A_PREP, and one it started too would have its admission queue started
 * twice, and the second start fail with ZKR_EBUSY. */
typedef enum { A_NEW, A_PREP, A_ADMIT, A_LEASE, A_END } aphase;

struct zkr_lease {
  zkr_semaphore *sem;
  zkr__queue *q;
  struct acq *acq;        /* the acquisition it belongs to, until handed out */
  zkr_lease *prev, *next; /* in sem->leases once handed out */
  /* monitoring, under the semaphore's mu */
  int hold_open;
  int64_t hold_t0; /* us */
  zkr__alarm *hold_alarm;
};

struct acq {
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

struct zkr_semaphore {
  pthread_mutex_t mu; /* recursive */
  int depth;          /* how many times its holder has locked mu */
  pthread_cond_t cv;
  int refs;
  int freeing;
  /* acquisitions ended whose callback is still to run, in order; their
   * callbacks run once mu is let go (the outermost unlock) */
  struct acq *ready, **ready_tail;
  int calling; /* such callbacks running now */
  zkr_session *s;
  char *path, *locks, *leases;
  char data[600];
  int datalen;
  zkr__qpolicy adm_pol, lease_pol;
  atomic_int limit;
  int fixed_limit;
  char *count_path;
  zkr_lock_state_fn state_fn;
  void *state_ud;
  int watch_node; /* leases watch their own node while held */
  struct acq *acqs;
  uint64_t next_acq_id;
  zkr_stats st; /* monitoring (its queues keep none) */
  zkr_lease *handed;
  /* preparation: the layout check (once) and the first count read */
  int layout_ok;
  int prep_busy;
  int prep_out; /* requests outstanding */
  int prep_zrc_data, prep_zrc_kids;
  int prep_foreign;
  uint64_t retry_timer;
  /* the count follower */
  int count_state;   /* 0 unknown, 1 reading, 2 known */
  int count_reread;  /* a read was lost with the connection: read again
                        once it is back */
  int count_err;     /* the last read's zkr error (ZKR_OK when known) */
  int count_in_prep; /* the read in flight is the preparation's */
  uint64_t count_watch;
  zkr__hook *hook;
};

/* A job run on the event thread (post_job). */
struct job {
  zkr_semaphore *sem;
  uint64_t acq_id; /* 0: none */
  void (*fn)(zkr_semaphore *sem, struct acq *acq);
};

/* ---- semaphore.c ---- */
/* The semaphore's recursive mutex, and its references (the last frees).
 * The outermost unlock runs the callbacks of the acquisitions that ended
 * meanwhile, without mu. */
void zkr__sem_sem_lock(zkr_semaphore *sem);
void zkr__sem_sem_unlock(zkr_semaphore *sem);
void zkr__sem_sem_ref(zkr_semaphore *sem);
void zkr__sem_sem_unref(zkr_semaphore *sem);
/* Under mu: run fn(sem, acq) on the event thread (inline once it stopped). */
int zkr__sem_post_job(zkr_semaphore *sem, struct acq *acq,
                      void (*fn)(zkr_semaphore *, struct acq *));
/* The time an acquisition has left: -1 none, 0 try once, < -1 passed. */
int64_t zkr__sem_remaining(const struct acq *a);
/* Under mu, event thread: start (or go on with) an acquisition; end it. */
void zkr__sem_acq_kick(zkr_semaphore *sem, struct acq *a);
void zkr__sem_acq_finish(zkr_semaphore *sem, struct acq *a, int rc);

/* ---- semaphore-prep.c ---- */
/* A job: a waiting contender counts again (the limit changed). */
void zkr__sem_reevaluate_all(zkr_semaphore *sem, struct acq *unused);
/* Under mu, event thread: send what the preparation still needs, or
 * settle the acquisitions waiting for it. */
void zkr__sem_prep_step(zkr_semaphore *sem, struct acq *unused);
/* Decode a SharedCount's data: 4 bytes, big-endian, signed. 1 with *@out,
 * or 0 if @v is not one. (Also reached by fuzz/fuzz-semcount.) */
int zkr__sem_count_decode(const char *v, int len, int32_t *out);
/* The limit a decoded count @v gives: @v within [0, ZKR_SEMAPHORE_MAX]. */
int zkr__sem_count_limit(int32_t v);
/* Is the node data @v (@len bytes, not terminated) a decimal number, what
 * kazoo's Semaphore stores as its max_leases? */
int zkr__sem_is_number(const char *v, int len);
/* The session hook that reads the count again on a new session. */
void zkr__sem_count_hook(zkr_session *s, zkr_session_event ev, int64_t sid,
                         void *ctx);

#endif
