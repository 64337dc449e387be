/*
 * A semaphore's read side (see semaphore.c): the listing of its lease
 * holders and of the contenders waiting for admission, which needs no
 * semaphore object (zkr-ls uses it), and an object's figures.
 *
 * Owns: the split of the two listings into holders and waiters. Must not
 * touch: the acquisitions' states (stats reads them under the
 * semaphore's lock and changes nothing), the engine's internals.
 */
#include "config.h"

#include <stdlib.h>

#include "semaphore-int.h"

/* ---- participants ---- */

static const zkr__qpolicy part_pol = {.name = ZKR__MARK_LOCK};

static const zkr__qpolicy *part_policy_of(const char *name, void *ctx) {
  (void)name;
  (void)ctx;
  return &part_pol;
}

int zkr_semaphore_participants(zkr_session *s, const char *path, int limit,
                               int64_t timeout_ms, zkr_participant **leases,
                               size_t *nleases, zkr_participant **waiters,
                               size_t *nwaiters) {
  if (!s || !leases || !nleases || !waiters || !nwaiters || limit < 0)
    return ZKR_EINVAL;
  int rc = zkr__path_call_check(path);
  if (rc != ZKR_OK)
    return rc;
  char *lp = zkr__path_join(path, ZKR__SEM_LEASES);
  char *kp = zkr__path_join(path, ZKR__SEM_ADMISSION);
  zkr_participant *l = NULL, *w = NULL;
  size_t nl = 0, nw = 0;
  int64_t deadline = zkr__deadline(timeout_ms);
  rc = lp && kp ? ZKR_OK : ZKR_ENOMEM;
  if (rc == ZKR_OK)
    rc = zkr__participants(s, kp, part_policy_of, NULL, ZKR__IN_ADMISSION,
                           ZKR__SEM_ADMISSION, timeout_ms, &w, &nw);
  if (rc == ZKR_OK) {
    int64_t left = deadline < 0 ? -1 : deadline - zkr__now_ms();
    rc = left == 0 || left < -1
             ? ZKR_ETIMEDOUT
             : zkr__participants(s, lp, part_policy_of, NULL, ZKR__IN_LEASES,
                                 ZKR__SEM_LEASES, left, &l, &nl);
  }
  free(lp);
  free(kp);
  if (rc != ZKR_OK) {
    zkr_participants_free(w, nw);
    return rc;
  }
  for (size_t i = 0; i < nl; i++)
    l[i].is_holder = 1;
  /* the admitted contender's newest lease node, while the lease nodes
   * outnumber the limit, is still waiting */
  if (limit > 0 && nl > (size_t)limit && nw > 0 &&
      l[nl - 1].session_id == w[0].session_id)
    l[nl - 1].is_holder = 0;
  *leases = l;
  *nleases = nl;
  *waiters = w;
  *nwaiters = nw;
  return ZKR_OK;
}

int zkr_semaphore_stats(const zkr_semaphore *csem, zkr_stats *out,
                        size_t size) {
  if (!csem)
    return ZKR_EINVAL;
  zkr_semaphore *sem = (zkr_semaphore *)csem;
  zkr__obj_lock(&sem->obj);
  zkr_lock_state state = sem->st.held > 0      ? ZKR_LOCK_HELD
                         : sem->st.waiting > 0 ? ZKR_LOCK_ACQUIRING
                                               : ZKR_LOCK_UNLOCKED;
  int rc = zkr__stats_copy(&sem->st, (int)state, out, size);
  zkr__obj_unlock(&sem->obj);
  return rc;
}
