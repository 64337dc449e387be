/*
 * The multi-lock (zkr/multilock.h): N locks acquired as one set. One
 * transaction (a ZooKeeper multi) makes every member's node, all with one
 * prefix and one czxid; each member is then an engine contender started on
 * that node (zkr__queue_start_member), with its lock's own policy. The set
 * holds when every member holds; the first member to fail ends the
 * acquisition of all (their nodes deleted); a member that would have to
 * make its node anew (its session lost while waiting) makes the whole set
 * start over with a new transaction, so that the order of two sets' nodes
 * is the order of their transactions in every queue they share.
 *
 * Owns: the set, its acquisition, its state and its hold. Must not touch:
 * the engine's internals (queue.h only), other recipes' objects (their
 * policies come from recipe.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hold.h"
#include "object.h"
#include "queue.h"
#include "recipe.h"

enum { ML_IDLE, ML_ACQUIRING, ML_HELD, ML_LOST };

struct member {
  zkr_multilock *ml;
  char *path;
  const zkr__qpolicy *pol;
  zkr__queue *q;
  int done, rc; /* this attempt's result */
};

struct state_call {
  zkr__obj_call c;
  zkr_lock_state st;
};

struct zkr_multilock {
  zkr__obj obj; /* first: the base (lock, references, deferred calls) */
  int n;
  struct member *m;
  zkr__queue **qs; /* the members' queues, for the hold */
  zkr_hold hold;
  char data[700];
  int datalen;
  zkr_lock_state_fn state_fn;
  void *state_ud;
  zkr_revoke_fn revoke_fn;
  void *revoke_ud;
  int64_t revoke_told; /* the set's term told of a request (its czxid) */
  int64_t max_hold_ms; /* the set's maximum hold (0: none) */
  int64_t yield_ms;    /* the wait before a cycle search (<0: none) */
  char **ahead;        /* after a yield: the nodes to let go by first */
  uint64_t mh_timer;   /* its timer while held (holds a reference) */
  void *mh_arg;        /* the timer's argument (struct mh_arg) */
  int phase;
  int cancel;
  int in_acquire;      /* an acquisition runs (on some thread) */
  zkr_lock_state told; /* the last state told to state_fn */
};

/* ---- the user's state callback ---- */

static void state_call_run(zkr__obj *o, zkr__obj_call *c, int call) {
  zkr_multilock *ml = (zkr_multilock *)o;
  struct state_call *sc = (struct state_call *)c;
  if (call && ml->state_fn)
    ml->state_fn(&ml->hold, sc->st, ml->state_ud);
  free(sc);
}

/* Under the lock: tell @st if it is a change. */
static void tell(zkr_multilock *ml, zkr_lock_state st) {
  if (!ml->state_fn || st == ml->told || ml->obj.freed)
    return;
  struct state_call *sc = calloc(1, sizeof *sc);
  if (!sc) {
    zkr__log(ZKR_LOG_ERROR, "out of memory: a multi-lock's state change "
                            "was not told");
    return;
  }
  ml->told = st;
  sc->c.fn = state_call_run;
  sc->st = st;
  zkr__obj_defer(&ml->obj, &sc->c);
}

/* ---- the members' callbacks (event thread) ---- */

static void member_done(zkr__queue *q, int rc, void *ud) {
  struct member *mb = ud;
  zkr_multilock *ml = mb->ml;
  (void)q;
  zkr__obj_enter(&ml->obj);
  mb->done = 1;
  mb->rc = rc;
  zkr__obj_broadcast(&ml->obj);
  zkr__obj_leave(&ml->obj);
}

/* The set's state from its members' (under the lock, while held). */
static zkr_lock_state set_state(zkr_multilock *ml) {
  zkr_lock_state w = ZKR_LOCK_HELD;
  for (int i = 0; i < ml->n; i++) {
    zkr_lock_state st = zkr__lock_state_of(zkr__queue_state(ml->m[i].q));
    if (st == ZKR_LOCK_LOST || st == ZKR_LOCK_UNLOCKED)
      return ZKR_LOCK_LOST;
    if (st == ZKR_LOCK_SUSPECT)
      w = st;
  }
  return w;
}

/* Under the lock: a member was lost while the set was held: the set is
 * lost, and the other members' nodes are let go at once. */
static void disarm_max_hold(zkr_multilock *ml);

static void set_lost(zkr_multilock *ml) {
  disarm_max_hold(ml);
  ml->phase = ML_LOST;
  for (int i = 0; i < ml->n; i++)
    if (zkr__queue_state(ml->m[i].q) != ZKR__Q_LOST)
      zkr__queue_release(ml->m[i].q);
  tell(ml, ZKR_LOCK_LOST);
}

/* A revocation request of a member's node (a user callback): told once
 * per hold of the set. */
static void member_revoked(zkr__queue *q, int rc, void *ud) {
  struct member *mb = ud;
  zkr_multilock *ml = mb->ml;
  (void)rc;
  int64_t mine = atomic_load(&ml->hold.czxid);
  int64_t t = zkr__queue_revoke_time(q, mine);
  zkr__obj_lock(&ml->obj);
  int tell_it = t && mine && ml->revoke_told != mine && ml->phase == ML_HELD;
  if (tell_it)
    ml->revoke_told = mine;
  zkr__obj_unlock(&ml->obj);
  if (tell_it)
    ml->revoke_fn(&ml->hold, t, ml->revoke_ud);
}

static void member_state(zkr__queue *q, zkr__qstate st, void *ud) {
  struct member *mb = ud;
  zkr_multilock *ml = mb->ml;
  (void)q;
  zkr__obj_enter(&ml->obj);
  if (ml->phase == ML_HELD) {
    if (st == ZKR__Q_LOST)
      set_lost(ml);
    else
      tell(ml, set_state(ml));
  }
  zkr__obj_leave(&ml->obj);
}

/* ---- the maximum hold, timed for the whole set ---- */

struct mh_arg {
  zkr_multilock *ml;
  int64_t czxid; /* the term it times */
};

static void max_hold_fired(void *arg) {
  struct mh_arg *a = arg;
  zkr_multilock *ml = a->ml;
  zkr__obj_enter(&ml->obj);
  if (ml->mh_timer && atomic_load(&ml->hold.czxid) == a->czxid) {
    ml->mh_timer = 0;
    if (ml->phase == ML_HELD) {
      /* the first member given up (its cause: ZKR_LOST_MAX_HOLD), the
       * others let go with the set */
      zkr__queue_give_up(ml->m[0].q, atomic_load(&ml->hold.czxid));
      set_lost(ml);
    }
  }
  zkr__obj_leave(&ml->obj);
  zkr__obj_unref(&ml->obj); /* the timer's */
  free(a);
}

/* Under the lock: the set is held: time its maximum. */
static void arm_max_hold(zkr_multilock *ml) {
  if (ml->max_hold_ms <= 0)
    return;
  struct mh_arg *a = malloc(sizeof *a);
  if (a) {
    a->ml = ml;
    a->czxid = atomic_load(&ml->hold.czxid);
  }
  zkr__obj_ref(&ml->obj);
  if (!a || zkr__timer_add(ml->obj.s, zkr__deadline(ml->max_hold_ms),
                           max_hold_fired, a, &ml->mh_timer) != ZKR_OK) {
    free(a);
    ml->mh_timer = 0;
    zkr__obj_unref_locked(&ml->obj);
    ml->mh_arg = NULL;
    zkr__log(ZKR_LOG_ERROR, "out of memory: a multi-lock's maximum hold "
                            "cannot be timed; given up now");
    zkr__queue_give_up(ml->m[0].q, atomic_load(&ml->hold.czxid));
    set_lost(ml);
    return;
  }
  ml->mh_arg = a;
}

/* Under the lock: the hold ends: its timer goes. */
static void disarm_max_hold(zkr_multilock *ml) {
  if (ml->mh_timer && zkr__timer_cancel(ml->obj.s, ml->mh_timer)) {
    zkr__obj_unref_locked(&ml->obj); /* it will never run */
    free(ml->mh_arg);
  }
  ml->mh_timer = 0; /* else it runs, finds nothing and frees its arg */
  ml->mh_arg = NULL;
}

/* ---- the object ---- */

static void ml_destroy(zkr__obj *o) {
  zkr_multilock *ml = (zkr_multilock *)o;
  zkr__waitfor_free(ml->ahead);
  for (int i = 0; i < ml->n; i++)
    free(ml->m[i].path);
  free(ml->m);
  free(ml->qs);
  free(ml);
}

int zkr_multilock_new(zkr_multilock **out, zkr_session *s,
                      const zkr_multilock_member *members, int n,
                      const zkr_multilock_options *opts) {
  static const zkr_multilock_options none;
  if (!opts)
    opts = &none;
  if (!out || !s || !members || n < 1 || n > ZKR_MULTILOCK_MAX)
    return ZKR_EINVAL;
  for (int i = 0; i < n; i++) {
    int rc = zkr__lock_path_check(members[i].path);
    if (rc != ZKR_OK)
      return rc;
    if (members[i].kind < ZKR_MULTILOCK_MUTEX ||
        members[i].kind > ZKR_MULTILOCK_WRITE)
      return ZKR_EINVAL;
    for (int j = 0; j < i; j++)
      if (strcmp(members[i].path, members[j].path) == 0) {
        zkr__log(ZKR_LOG_ERROR, "zkr_multilock_new: %s is named twice",
                 members[i].path);
        return ZKR_EINVAL;
      }
  }
  int rc =
      zkr__options_check("zkr_multilock_options", opts->id, opts->max_hold_ms,
                         opts->reserved_, sizeof opts->reserved_);
  if (rc != ZKR_OK)
    return rc;
  if (zkr_session_state_get(s) == ZKR_STATE_CLOSED)
    return ZKR_ECLOSED;
  zkr_multilock *ml = calloc(1, sizeof *ml);
  if (!ml)
    return ZKR_ENOMEM;
  ml->m = calloc((size_t)n, sizeof *ml->m);
  ml->qs = calloc((size_t)n, sizeof *ml->qs);
  if (!ml->m || !ml->qs) {
    free(ml->m);
    free(ml->qs);
    free(ml);
    return ZKR_ENOMEM;
  }
  ml->n = n;
  /* "host=H pid=P set=N[ id=I]": the set before the id, which may hold
   * any text */
  int dlen = zkr__contender_data(NULL, ml->data, sizeof ml->data);
  dlen +=
      snprintf(ml->data + dlen, sizeof ml->data - (size_t)dlen, " set=%d%s%s",
               n, opts->id ? " id=" : "", opts->id ? opts->id : "");
  if (dlen >= (int)sizeof ml->data)
    dlen = (int)sizeof ml->data - 1;
  ml->datalen = dlen;
  ml->state_fn = opts->state_fn;
  ml->state_ud = opts->state_user_data;
  ml->revoke_fn = opts->revoke_fn;
  ml->max_hold_ms = opts->max_hold_ms;
  ml->yield_ms = opts->yield_after_ms == 0 ? 30000 : opts->yield_after_ms;
  ml->revoke_ud = opts->revoke_user_data;
  ml->told = ZKR_LOCK_UNLOCKED;
  zkr__obj_init(&ml->obj, s, ml_destroy);
  zkr__obj_set_user(&ml->obj); /* (its deferred calls: state_fn) */
  for (int i = 0; i < n && rc == ZKR_OK; i++) {
    struct member *mb = &ml->m[i];
    mb->ml = ml;
    mb->pol = members[i].kind == ZKR_MULTILOCK_MUTEX
                  ? zkr__mutex_policy()
                  : zkr__rwlock_policy(members[i].kind == ZKR_MULTILOCK_WRITE);
    mb->path = zkr__strdup(members[i].path);
    if (!mb->path) {
      rc = ZKR_ENOMEM;
      break;
    }
    zkr__qopts qo = {.state_fn = member_state,
                     .state_ud = mb,
                     .revoke_fn = opts->revoke_fn ? member_revoked : NULL,
                     .revoke_ud = mb};
    rc = zkr__queue_new(&mb->q, s, mb->path, mb->pol, ml->data, ml->datalen,
                        &qo);
    ml->qs[i] = mb->q;
  }
  if (rc != ZKR_OK) {
    for (int i = 0; i < n; i++)
      zkr__queue_free(ml->m[i].q);
    zkr__obj_unref(&ml->obj);
    return rc;
  }
  ml->hold.q = ml->m[0].q;
  ml->hold.set = ml->qs;
  ml->hold.nset = n;
  *out = ml;
  return ZKR_OK;
}

void zkr_multilock_free(zkr_multilock *ml) {
  if (!ml)
    return;
  zkr__obj_lock(&ml->obj);
  ml->obj.freed = 1;
  ml->cancel = 1;
  for (int i = 0; i < ml->n; i++)
    zkr__queue_cancel(ml->m[i].q); /* (EINVAL when not acquiring) */
  while (ml->in_acquire)
    zkr__obj_wait(&ml->obj, -1);
  disarm_max_hold(ml);
  zkr__obj_retire_locked(&ml->obj);
  zkr__obj_unlock(&ml->obj);
  /* releases what is held, deletes what is queued */
  for (int i = 0; i < ml->n; i++)
    zkr__queue_free(ml->m[i].q);
  zkr__obj_unref(&ml->obj);
}

/* ---- the acquisition ---- */

/* The lock path @path and its missing ancestors, as containers (what the
 * engine makes): the ancestors with the open ACL, shared with other locks;
 * the lock path with the session's. */
static int ensure_path(zkr_session *s, const char *path, int64_t deadline) {
  char *p = zkr__strdup(path);
  if (!p)
    return ZKR_ENOMEM;
  int rc = ZKR_OK;
  for (char *slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
    if (slash)
      *slash = '\0';
    int flags = ZOO_CONTAINER | (slash ? ZKR__CREATE_OPEN : 0);
    rc = zkr__zk_create(s, p, "", 0, flags, deadline, NULL);
    if (rc == ZKR_EEXISTS)
      rc = ZKR_OK;
    if (rc != ZKR_OK || !slash)
      break;
    *slash = '/';
  }
  free(p);
  return rc;
}

static void new_prefix(char out[64]) {
  unsigned char r[16];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
    int64_t t = zkr__now_ms();
    for (size_t i = 0; i < sizeof r; i++)
      r[i] = (unsigned char)((t >> (i * 3)) ^ ((uint64_t)getpid() >> i) ^
                             (uint64_t)rand());
  }
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  snprintf(out, 64,
           "_c_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
           "%02x-",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
           r[11], r[12], r[13], r[14], r[15]);
}

/* After a lost reply of the set's transaction: was it applied? Then
 * @names get its nodes (found by @prefix in each parent): 1; not applied:
 * 0; or an error. Made, but with a node gone since (deleted by another
 * client): the nodes found are deleted (in the background, in ZooKeeper
 * session @gen), and 0: a node left there would block the set made next. */
static int find_set(zkr_multilock *ml, const char *prefix, char **names,
                    uint64_t gen, int64_t deadline) {
  size_t plen = strlen(prefix);
  int found = 0, missing = 0;
  for (int i = 0; i < ml->n; i++) {
    zkr__result r;
    memset(&r, 0, sizeof r);
    int rc = zkr__zk_children(ml->obj.s, ml->m[i].path, deadline, &r);
    if (rc != ZKR_OK && rc != ZKR_ENONODE)
      return rc;
    for (int k = 0; rc == ZKR_OK && k < r.names.count && !names[i]; k++)
      if (strncmp(r.names.data[k], prefix, plen) == 0)
        names[i] = zkr__strdup(r.names.data[k]);
    zkr__result_clear(&r);
    if (names[i])
      found++;
    else
      missing++;
  }
  if (missing == 0)
    return 1;
  for (int i = 0; found && i < ml->n; i++)
    if (names[i]) {
      char *p = zkr__path_join(ml->m[i].path, names[i]);
      if (p)
        zkr__session_bg_delete(ml->obj.s, p, gen);
      free(p);
    }
  return 0;
}

/* Make the set's nodes in one transaction: their names into @names, the
 * ZooKeeper session generation they belong to into *@gen. */
static int make_set(zkr_multilock *ml, char **names, uint64_t *gen,
                    int64_t deadline) {
  zkr_session *s = ml->obj.s;
  int n = ml->n;
  char prefix[64];
  size_t blen = ZKR__PATH_MAX + 64;
  zoo_op_t *ops = calloc((size_t)n, sizeof *ops);
  zoo_op_result_t *res = calloc((size_t)n, sizeof *res);
  char *paths = calloc((size_t)n, blen), *bufs = calloc((size_t)n, blen);
  int rc = ZKR_ENOMEM;
  if (!ops || !res || !paths || !bufs)
    goto out;
  for (int tries = 0;; tries++) {
    rc = zkr__session_wait_usable(s, deadline);
    if (rc != ZKR_OK)
      goto out;
    new_prefix(prefix);
    *gen = zkr__session_generation(s, NULL);
    for (int i = 0; i < n; i++) {
      char *p = paths + (size_t)i * blen;
      snprintf(p, blen, "%s/%s%s", ml->m[i].path, prefix, ml->m[i].pol->name);
      zoo_create_op_init(&ops[i], p, ml->data, ml->datalen, zkr__session_acl(s),
                         ZOO_EPHEMERAL_SEQUENTIAL, bufs + (size_t)i * blen,
                         (int)blen);
    }
    int zrc = ZOK;
    rc = zkr__zk_multi(s, n, ops, res, deadline, &zrc);
    if (rc == ZKR_OK) {
      if (zkr__session_generation(s, NULL) != *gen)
        continue; /* made in a session that is gone since: again */
      for (int i = 0; i < n; i++) {
        const char *v = bufs + (size_t)i * blen;
        const char *slash = strrchr(v, '/');
        names[i] = zkr__strdup(slash ? slash + 1 : v);
        if (!names[i]) {
          rc = ZKR_ENOMEM;
          goto out;
        }
      }
      goto out;
    }
    if (rc == ZKR_ECONNLOSS || rc == ZKR_ETIMEDOUT) {
      /* the outcome is unknown: look for the set by its prefix */
      if (zkr__session_generation(s, NULL) != *gen) {
        if (deadline >= 0 && zkr__now_ms() >= deadline)
          goto out;
        continue; /* a new session: whatever was made is gone */
      }
      int f = find_set(ml, prefix, names, *gen, deadline);
      if (f == 1) {
        rc = ZKR_OK;
        goto out;
      }
      for (int i = 0; i < n; i++) {
        free(names[i]);
        names[i] = NULL;
      }
      if (f < 0) {
        rc = f;
        goto out;
      }
      if (deadline >= 0 && zkr__now_ms() >= deadline)
        goto out;
      continue;
    }
    /* the server refused the transaction: which member, and why */
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
      if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY)
        bad = i;
    if (bad >= 0 && res[bad].err == ZNONODE && tries < 3) {
      rc = ensure_path(s, ml->m[bad].path, deadline);
      if (rc == ZKR_OK)
        continue;
      goto out;
    }
    if (bad >= 0)
      rc = res[bad].err == ZNOCHILDRENFOREPHEMERALS
               ? ZKR_EEPHEMERAL
               : zkr__from_zk(res[bad].err);
    goto out;
  }
out:
  free(ops);
  free(res);
  free(paths);
  free(bufs);
  return rc;
}

/* Under the lock, held once: has the set, first in some of its queues,
 * waited long enough to look for a wait-for cycle through it, and is
 * there one? (The lock is let go while the queues are read.) */
static int cycle_found(zkr_multilock *ml, char **names) {
  char **paths = calloc((size_t)ml->n, sizeof *paths);
  if (!paths)
    return 0;
  for (int i = 0; i < ml->n; i++)
    paths[i] = ml->m[i].path;
  char why[512];
  char **ahead = NULL;
  int64_t op = zkr_session_timeout(ml->obj.s);
  zkr__obj_unlock(&ml->obj);
  int rc = zkr__waitfor_cycle(ml->obj.s, paths, names, ml->n,
                              op > 0 ? op : 10000, why, sizeof why, &ahead);
  zkr__obj_lock(&ml->obj);
  free(paths);
  zkr__waitfor_free(ml->ahead);
  ml->ahead = ahead;
  if (rc == 1)
    zkr__log(ZKR_LOG_WARN,
             "multi-lock of %d locks (%s, ...): a wait-for cycle: it %s; "
             "yielding its places and queueing again",
             ml->n, ml->m[0].path, why);
  else if (rc < 0)
    zkr__log(ZKR_LOG_INFO, "multi-lock: cannot look for a wait-for cycle: %s",
             zkr_strerror(rc));
  return rc == 1;
}

/* After a yield: wait until the nodes the set waited behind are gone
 * (the contenders it yielded to have gone by), so that the set made again
 * does not at once close the same cycle. Polled; bounded by @deadline;
 * ended by a cancel. */
static int let_go_by(zkr_multilock *ml, int64_t deadline) {
  zkr__obj_lock(&ml->obj);
  char **ahead = ml->ahead;
  ml->ahead = NULL;
  zkr__obj_unlock(&ml->obj);
  int rc = ZKR_OK;
  for (int i = 0; ahead && ahead[i] && rc == ZKR_OK;) {
    zkr__result r;
    memset(&r, 0, sizeof r);
    int e = zkr__zk_exists(ml->obj.s, ahead[i], deadline, &r);
    zkr__result_clear(&r);
    if (e != ZKR_OK) { /* gone (or unknown: make the set anyway) */
      i++;
      continue;
    }
    int64_t now = zkr__now_ms();
    if (deadline >= 0 && now >= deadline)
      break; /* (the attempt made next ends at once) */
    zkr__obj_lock(&ml->obj);
    if (ml->cancel)
      rc = ZKR_ECANCELED;
    else
      zkr__obj_wait(&ml->obj, deadline >= 0 && deadline < now + 200
                                  ? deadline
                                  : now + 200);
    zkr__obj_unlock(&ml->obj);
  }
  zkr__waitfor_free(ahead);
  return rc;
}

/* Under the lock: has every member held since? */
static int all_held(const zkr_multilock *ml) {
  for (int i = 0; i < ml->n; i++)
    if (!ml->m[i].done || ml->m[i].rc != ZKR_OK)
      return 0;
  return 1;
}

/* One attempt: the set made, its members queued, their results awaited.
 * ZKR_ELOCKLOST: start over (a member would have had to be made anew). */
static int attempt(zkr_multilock *ml, int64_t timeout_ms, int64_t deadline) {
  int n = ml->n;
  char **names = calloc((size_t)n, sizeof *names);
  if (!names)
    return ZKR_ENOMEM;
  uint64_t gen = 0;
  int rc = make_set(ml, names, &gen, deadline);
  if (rc == ZKR_ETIMEDOUT && timeout_ms == 0)
    rc = ZKR_EWOULDBLOCK;
  if (rc != ZKR_OK)
    goto out;
  zkr__obj_lock(&ml->obj);
  for (int i = 0; i < n; i++)
    ml->m[i].done = 0;
  int started = 0;
  for (int i = 0; i < n; i++) {
    int64_t left = timeout_ms;
    if (timeout_ms > 0) {
      left = deadline - zkr__now_ms();
      if (left < 1)
        left = 1;
    }
    int src = ml->cancel
                  ? ZKR_ECANCELED
                  : zkr__queue_start_member(ml->m[i].q, names[i], gen, left,
                                            member_done, &ml->m[i]);
    if (src != ZKR_OK) {
      /* not started: its node is deleted here, the others' by their end */
      char *p = zkr__path_join(ml->m[i].path, names[i]);
      if (p)
        zkr__session_bg_delete(ml->obj.s, p, gen);
      free(p);
      ml->m[i].done = 1;
      ml->m[i].rc = src;
    } else {
      started++;
    }
  }
  /* wait for every member's result; the first failure ends the others */
  int first = ZKR_OK, ended = 0;
  int64_t next_search = -1; /* (while first in some queue) */
  for (;;) {
    int done = 0, held = 0;
    for (int i = 0; i < n; i++) {
      if (!ml->m[i].done)
        continue;
      done++;
      if (ml->m[i].rc != ZKR_OK && first == ZKR_OK)
        first = ml->m[i].rc;
      held += ml->m[i].rc == ZKR_OK;
    }
    if ((first != ZKR_OK || ml->cancel) && !ended) {
      ended = 1;
      if (first == ZKR_OK)
        first = ZKR_ECANCELED;
      for (int i = 0; i < n; i++)
        if (!ml->m[i].done)
          zkr__queue_cancel(ml->m[i].q);
    }
    if (done == n)
      break;
    if (!ended && held && ml->yield_ms >= 0) {
      if (next_search < 0)
        next_search = zkr__now_ms() + ml->yield_ms;
      else if (zkr__now_ms() >= next_search && cycle_found(ml, names)) {
        if (!all_held(ml)) {
          ended = 1; /* yield: every node goes, the set starts over */
          first = ZKR_ELOCKLOST;
          for (int i = 0; i < n; i++)
            if (!ml->m[i].done)
              zkr__queue_cancel(ml->m[i].q);
          continue;
        }
        zkr__waitfor_free(ml->ahead); /* (held meanwhile: no yield) */
        ml->ahead = NULL;
      }
      if (zkr__now_ms() >= next_search)
        next_search =
            zkr__now_ms() + (ml->yield_ms < 2000 ? ml->yield_ms : 2000) + 1;
    }
    zkr__obj_wait(&ml->obj, ended ? -1 : next_search);
  }
  (void)started;
  rc = first;
  if (rc != ZKR_OK) {
    for (int i = 0; i < n; i++)
      if (ml->m[i].rc == ZKR_OK)
        zkr__queue_release(ml->m[i].q); /* held, the set is not */
  }
  zkr__obj_unlock(&ml->obj);
out:
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return rc;
}

int zkr_multilock_acquire(zkr_multilock *ml, int64_t timeout_ms) {
  if (!ml)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  zkr__obj_lock(&ml->obj);
  if (ml->in_acquire || ml->obj.freed) {
    zkr__obj_unlock(&ml->obj);
    return ZKR_EBUSY;
  }
  if (ml->phase != ML_IDLE) {
    zkr__obj_unlock(&ml->obj);
    zkr__log(ZKR_LOG_ERROR,
             "zkr_multilock_acquire: the set (%s, ...) is held "
             "already: sets are not reentrant",
             ml->m[0].path);
    return ZKR_EDEADLK;
  }
  for (int i = 0; i < ml->n; i++)
    if (zkr__session_holds(ml->obj.s, ml->m[i].path)) {
      zkr__obj_unlock(&ml->obj);
      zkr__log(ZKR_LOG_ERROR,
               "zkr_multilock_acquire: the session holds %s already (another "
               "object): the set would wait for it",
               ml->m[i].path);
      return ZKR_EDEADLK;
    }
  ml->phase = ML_ACQUIRING;
  ml->in_acquire = 1;
  ml->cancel = 0;
  zkr__obj_unlock(&ml->obj);
  /* "Try once" does not wait for other contenders, but may have to wait
   * for the connection: bound that by the session timeout. */
  int64_t bound = timeout_ms;
  if (timeout_ms == 0) {
    bound = zkr_session_timeout(ml->obj.s);
    if (bound <= 0)
      bound = 10000;
  }
  int64_t deadline = bound < 0 ? -1 : zkr__now_ms() + bound;
  int rc;
  for (;;) {
    rc = attempt(ml, timeout_ms, deadline);
    if (rc != ZKR_ELOCKLOST)
      break;
    zkr_session_state st = zkr_session_state_get(ml->obj.s);
    if (st == ZKR_STATE_CLOSED) {
      rc = ZKR_ECLOSED;
      break;
    }
    if (st == ZKR_STATE_LOST && !zkr__session_renews(ml->obj.s)) {
      rc = ZKR_ESESSIONLOST;
      break;
    }
    if (deadline >= 0 && zkr__now_ms() >= deadline) {
      rc = timeout_ms == 0 ? ZKR_EWOULDBLOCK : ZKR_ETIMEDOUT;
      break;
    }
    if (ml->cancel || let_go_by(ml, deadline) == ZKR_ECANCELED) {
      rc = ZKR_ECANCELED;
      break;
    }
    /* the set starts over with a new transaction */
  }
  zkr__obj_lock(&ml->obj);
  ml->in_acquire = 0;
  zkr__waitfor_free(ml->ahead);
  ml->ahead = NULL;
  if (rc == ZKR_OK && ml->cancel) {
    for (int i = 0; i < ml->n; i++)
      zkr__queue_release(ml->m[i].q);
    rc = ZKR_ECANCELED;
  }
  if (rc == ZKR_OK) {
    zkr__qinfo qi;
    zkr__queue_info(ml->m[0].q, &qi, NULL, 0);
    atomic_store(&ml->hold.czxid, qi.czxid);
    ml->phase = ML_HELD;
    ml->told = ZKR_LOCK_UNLOCKED;
    zkr_lock_state st = set_state(ml);
    if (st == ZKR_LOCK_LOST) {
      set_lost(ml);
    } else {
      tell(ml, st);
      arm_max_hold(ml);
      for (int i = 0; ml->revoke_fn && i < ml->n; i++)
        zkr__queue_retell_revoke(ml->m[i].q); /* asked before the set held */
    }
  } else {
    ml->phase = ML_IDLE;
  }
  zkr__obj_broadcast(&ml->obj);
  zkr__obj_unlock(&ml->obj);
  return rc;
}

int zkr_multilock_cancel(zkr_multilock *ml) {
  if (!ml)
    return ZKR_EINVAL;
  zkr__obj_lock(&ml->obj);
  int rc = ZKR_EINVAL;
  if (ml->in_acquire && !ml->cancel) {
    ml->cancel = 1;
    for (int i = 0; i < ml->n; i++)
      zkr__queue_cancel(ml->m[i].q);
    zkr__obj_broadcast(&ml->obj);
    rc = ZKR_OK;
  }
  zkr__obj_unlock(&ml->obj);
  return rc;
}

int zkr_multilock_release(zkr_multilock *ml) {
  if (!ml)
    return ZKR_EINVAL;
  zkr__obj_lock(&ml->obj);
  int rc = ZKR_ENOTHELD;
  if (ml->phase == ML_HELD || ml->phase == ML_LOST) {
    rc = ml->phase == ML_LOST ? ZKR_ELOCKLOST : ZKR_OK;
    /* every node in one transaction (one by one if they are not all of
     * one ZooKeeper session, or out of memory) */
    char **del = calloc((size_t)ml->n, sizeof *del);
    uint64_t *gens = calloc((size_t)ml->n, sizeof *gens);
    int nd = 0, one_gen = 1;
    for (int i = 0; i < ml->n; i++) {
      char *p = NULL;
      uint64_t g = 0;
      int r = del && gens ? zkr__queue_release_take(ml->m[i].q, &p, &g)
                          : zkr__queue_release(ml->m[i].q);
      if (r == ZKR_ELOCKLOST)
        rc = ZKR_ELOCKLOST;
      if (p) {
        if (nd > 0 && g != gens[0])
          one_gen = 0;
        del[nd] = p;
        gens[nd++] = g;
      }
    }
    if (one_gen && nd > 0)
      zkr__session_bg_delete_set(ml->obj.s, del, nd, gens[0]);
    for (int i = 0; i < nd; i++) {
      if (!one_gen)
        zkr__session_bg_delete(ml->obj.s, del[i], gens[i]);
      free(del[i]);
    }
    free(del);
    free(gens);
    disarm_max_hold(ml);
    atomic_store(&ml->hold.czxid, 0);
    ml->phase = ML_IDLE;
    ml->told = ZKR_LOCK_UNLOCKED;
  }
  zkr__obj_unlock(&ml->obj);
  return rc;
}

zkr_lock_state zkr_multilock_state_get(const zkr_multilock *cml) {
  if (!cml)
    return ZKR_LOCK_UNLOCKED;
  zkr_multilock *ml = (zkr_multilock *)cml;
  zkr__obj_lock(&ml->obj);
  zkr_lock_state st = ml->phase == ML_IDLE        ? ZKR_LOCK_UNLOCKED
                      : ml->phase == ML_ACQUIRING ? ZKR_LOCK_ACQUIRING
                      : ml->phase == ML_LOST      ? ZKR_LOCK_LOST
                                                  : set_state(ml);
  zkr__obj_unlock(&ml->obj);
  return st;
}

zkr_hold *zkr_multilock_hold(zkr_multilock *ml) {
  if (!ml)
    return NULL;
  zkr__obj_lock(&ml->obj);
  zkr_hold *h = ml->phase == ML_HELD || ml->phase == ML_LOST ? &ml->hold : NULL;
  zkr__obj_unlock(&ml->obj);
  return h;
}
