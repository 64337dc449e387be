/*
 * The read-write lock: two policies over the queue engine (Curator's
 * "__READ__" and "__WRIT__" naming; a reader is blocked only by earlier
 * writers, a writer by every earlier contender) and two gates: a read
 * acquisition by the thread holding the write half takes a fixed node at
 * the write node's number (the downgrade), a write acquisition by the
 * thread holding the read half is refused (the upgrade). Each half is a
 * zkr_mutex (mutex.c) with all of its API.
 */
#include "config.h"

#include <stdlib.h>

#include "recipe.h"

struct zkr_rwlock {
  zkr_mutex *read;
  zkr_mutex *write;
};

/* A reader is blocked by every earlier contender that is not a reader. */
static int reader_blocked_by(const char *name, void *ctx) {
  (void)ctx;
  return !zkr__is_reader(name);
}

/* In this layout a downgrade's read node takes the number of the write
 * node it replaces (a join at a fixed number): the engine makes a writer,
 * which such a node blocks, list once more before it holds. */
static const zkr__qpolicy read_policy = {.name = ZKR__MARK_READ,
                                         .label = "read",
                                         .blocks = reader_blocked_by,
                                         .late = ZKR__MARK_READ,
                                         .foreign = zkr__semaphore_child};
static const zkr__qpolicy write_policy = {.name = ZKR__MARK_WRITE,
                                          .label = "write",
                                          .late = ZKR__MARK_READ,
                                          .foreign = zkr__semaphore_child};

const zkr__qpolicy *zkr__rwlock_policy(int write) {
  return write ? &write_policy : &read_policy;
}

static const zkr__qpolicy *policy_of(const char *name, void *ctx) {
  (void)ctx;
  return zkr__is_reader(name) ? &read_policy : &write_policy;
}

/* The read half's gate: the thread that holds the write half downgrades
 * (a read node at the write node's number, held at once). */
static int read_gate(zkr_mutex *m, void *ctx, int32_t *seq, uint64_t *gen) {
  zkr_rwlock *rw = ctx;
  (void)m;
  zkr__qinfo i;
  if (!zkr__mutex_held_by_me(rw->write) ||
      !zkr__queue_info(zkr__mutex_queue(rw->write), &i, NULL, 0))
    return ZKR_OK;
  *seq = i.seq;
  *gen = i.gen;
  return ZKR__GATE_FIXED;
}

/* The write half's gate: the thread that holds the read half would wait
 * behind its own read node forever. */
static int write_gate(zkr_mutex *m, void *ctx, int32_t *seq, uint64_t *gen) {
  zkr_rwlock *rw = ctx;
  (void)m;
  (void)seq;
  (void)gen;
  return zkr__mutex_held_by_me(rw->read) ? ZKR_EUPGRADE : ZKR_OK;
}

int zkr_rwlock_new(zkr_rwlock **out, zkr_session *s, const char *path,
                   const zkr_mutex_options *opts) {
  if (!out || !s)
    return ZKR_EINVAL;
  zkr_rwlock *rw = calloc(1, sizeof *rw);
  if (!rw)
    return ZKR_ENOMEM;
  int rc =
      zkr__mutex_make(&rw->read, s, path, opts, &read_policy, read_gate, rw);
  if (rc == ZKR_OK)
    rc = zkr__mutex_make(&rw->write, s, path, opts, &write_policy, write_gate,
                         rw);
  if (rc != ZKR_OK) {
    zkr__mutex_destroy(rw->read);
    free(rw);
    return rc;
  }
  *out = rw;
  return ZKR_OK;
}

void zkr_rwlock_free(zkr_rwlock *rw) {
  if (rw) {
    /* the read half first: a downgraded read node never outlives its
     * write node by more than this */
    zkr__mutex_destroy(rw->read);
    zkr__mutex_destroy(rw->write);
    free(rw);
  }
}

zkr_mutex *zkr_rwlock_read_lock(zkr_rwlock *rw) {
  return rw ? rw->read : NULL;
}

zkr_mutex *zkr_rwlock_write_lock(zkr_rwlock *rw) {
  return rw ? rw->write : NULL;
}

int zkr_rwlock_participants(zkr_session *s, const char *path,
                            int64_t timeout_ms, zkr_participant **out,
                            size_t *count) {
  return zkr__participants(s, path, policy_of, NULL, ZKR__IN_LOCK, NULL,
                           timeout_ms, out, count);
}
