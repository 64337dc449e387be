/* Every lost hold is reported, however fast the holder asks.
 *
 * A child process holds (a mutex, the read or the write half of a
 * read-write lock, a semaphore lease, a leadership) on a session with a
 * 2 s timeout. Its parent SIGSTOPs it for at least 5 s, until another
 * contender has taken the hold (the child's session expired on the
 * server), writes the child's "go" into a pipe while it is stopped, and
 * SIGCONTs it: the call under test is the first thing the child does
 * after waking (its read of the pipe returns at once), racing the
 * session's own threads. Whatever wins, the call must see the loss:
 *
 *   release     ZKR_ELOCKLOST once, then ZKR_ENOTHELD (a lease: freed)
 *   is_held     0, and the state stays LOST until released
 *   state       ZKR_LOCK_LOST
 *   token       0
 *   node        ZKR_ENOTHELD
 *   guarded     ZKR_ELOCKLOST (a leadership: ZKR_ENOTHELD, it queued again),
 *               the data untouched
 *   is_leader   0;  resign  ZKR_OK
 *
 * and the LOST state callback runs exactly once (a leadership's listener
 * is told "not leading" exactly once). The hold kinds run in parallel,
 * one process each; the rounds of a kind one after the other.
 *
 * Usage: t-lost-hold [--rounds N]   (default 2: what make check runs)
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

#define SESSION_MS 2000
#define PAUSE_MS 5000
#define TAKE_MS 30000 /* the contender must take the hold within this */

enum kind { K_MUTEX, K_READ, K_WRITE, K_LEASE, K_LEADER, NKINDS };
static const char *kind_name[NKINDS] = {"mutex", "read", "write", "lease",
                                        "leadership"};

enum call {
  C_RELEASE,
  C_IS_HELD,
  C_STATE,
  C_TOKEN,
  C_NODE,
  C_GUARDED,
  C_IS_LEADER,
  C_RESIGN,
  NCALLS
};
static const char *call_name[NCALLS] = {"release",       "is_held", "state_get",
                                        "fencing_token", "node",    "guarded",
                                        "is_leader",     "resign"};

/* Which calls each kind has. */
static int has_call(int k, int c) {
  switch (k) {
  case K_LEASE:
    return c != C_IS_HELD && c != C_IS_LEADER && c != C_RESIGN;
  case K_LEADER:
    return c == C_IS_LEADER || c == C_RESIGN || c == C_TOKEN || c == C_NODE ||
           c == C_GUARDED;
  default:
    return c != C_IS_LEADER && c != C_RESIGN;
  }
}

/* One round's outcome, written by its runner into shared memory. */
struct outcome {
  int ran;         /* the round got as far as the call */
  char setup[160]; /* what went wrong before the call, if anything */
  int taken;       /* the contender held while the child was stopped */
  int64_t v;       /* the call's result */
  int state_after; /* state (leadership: is_leader) after the call */
  int rel1, rel2;  /* releases after the call (or the second release) */
  int lost_cb;     /* LOST callbacks (leadership: "not leading" told) */
  int data_intact; /* the guarded write's target still holds "orig" */
};

static const char *hosts;
static const char *root;
static struct outcome *out; /* [NKINDS][NCALLS][rounds] */
static int rounds = 2;

static struct outcome *slot(int k, int c, int r) {
  return &out[((size_t)k * NCALLS + (size_t)c) * (size_t)rounds + (size_t)r];
}

/* ---- the child: hold, wait for "go", make the call ---- */

static atomic_int lost_cb, leading_told, notleading_told;

static void on_state(zkr_hold *lock, zkr_lock_state st, void *ud) {
  (void)lock;
  (void)ud;
  if (st == ZKR_LOCK_LOST)
    atomic_fetch_add(&lost_cb, 1);
}

static void on_leader(zkr_election *e, int is_leader, void *ud) {
  (void)e;
  (void)ud;
  if (is_leader)
    atomic_fetch_add(&leading_told, 1);
  else if (atomic_load(&leading_told) > 0)
    atomic_fetch_add(&notleading_told, 1);
}

struct report {
  int64_t v;
  int state_after, rel1, rel2, lost_cb;
};

static void put(int fd, const void *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      _exit(3);
    p = (const char *)p + w;
    n -= (size_t)w;
  }
}

static int get(int fd, void *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p = (char *)p + r;
    n -= (size_t)r;
  }
  return 0;
}

static int lost_seen(void *arg) {
  (void)arg;
  return atomic_load(&lost_cb) > 0 || atomic_load(&notleading_told) > 0;
}

/* The guarded write's arguments: set "late" on the data node. */
static int guarded(zkr_mutex *m, zkr_lease *l, zkr_election *e,
                   const char *data) {
  if (m)
    return zkr_hold_guarded_set(zkr_mutex_hold(m), data, "late", 4, -1, 5000);
  if (l)
    return zkr_hold_guarded_set(zkr_lease_hold(l), data, "late", 4, -1, 5000);
  return zkr_hold_guarded_set(zkr_election_hold(e), data, "late", 4, -1, 5000);
}

static void child(int k, int c, const char *path, const char *data, int ready,
                  int go) {
  zkr_session *s = zkt_connect(hosts, SESSION_MS);
  zkr_mutex *m = NULL, *half = NULL;
  zkr_rwlock *rw = NULL;
  zkr_semaphore *sem = NULL;
  zkr_lease *l = NULL;
  zkr_election *e = NULL;
  int rc = ZKR_EINVAL;
  if (k == K_MUTEX || k == K_READ || k == K_WRITE) {
    zkr_mutex_options o = {0};
    o.state_fn = on_state;
    if (k == K_MUTEX) {
      rc = zkr_mutex_new(&m, s, path, &o);
    } else {
      rc = zkr_rwlock_new(&rw, s, path, &o);
      if (rc == ZKR_OK)
        m = half =
            k == K_READ ? zkr_rwlock_read_lock(rw) : zkr_rwlock_write_lock(rw);
    }
    if (rc == ZKR_OK)
      rc = zkr_mutex_acquire(m, 10000);
  } else if (k == K_LEASE) {
    zkr_semaphore_options o = {0};
    o.state_fn = on_state;
    rc = zkr_semaphore_new(&sem, s, path, 1, &o);
    if (rc == ZKR_OK)
      rc = zkr_semaphore_acquire(sem, 1, 10000, &l);
  } else {
    zkr_election_options o = {0};
    o.listener = on_leader;
    rc = zkr_election_new(&e, s, path, &o);
    if (rc == ZKR_OK)
      rc = zkr_election_start(e);
    if (rc == ZKR_OK)
      rc = zkr_election_await(e, 10000);
  }
  put(ready, &rc, sizeof rc);
  if (rc != ZKR_OK)
    _exit(1);
  char g;
  if (get(go, &g, 1) != 0)
    _exit(2);
  /* awake: the call under test comes first */
  struct report rep = {0, -1, 0, 0, 0};
  char buf[ZKR__PATH_MAX];
  switch (c) {
  case C_RELEASE:
    rep.v = l ? zkr_lease_release(l) : zkr_mutex_release(m);
    if (l)
      l = NULL; /* freed */
    else
      rep.rel2 = zkr_mutex_release(m);
    break;
  case C_IS_HELD:
    rep.v = zkr_mutex_is_held(m);
    break;
  case C_STATE:
    rep.v = l ? zkr_lease_state_get(l) : zkr_mutex_state_get(m);
    break;
  case C_TOKEN:
    rep.v = l   ? zkr_hold_token(zkr_lease_hold(l))
            : e ? zkr_hold_token(zkr_election_hold(e))
                : zkr_hold_token(zkr_mutex_hold(m));
    break;
  case C_NODE:
    rep.v = l   ? zkr_hold_node(zkr_lease_hold(l), buf, sizeof buf)
            : e ? zkr_hold_node(zkr_election_hold(e), buf, sizeof buf)
                : zkr_hold_node(zkr_mutex_hold(m), buf, sizeof buf);
    break;
  case C_GUARDED:
    rep.v = guarded(m, l, e, data);
    break;
  case C_IS_LEADER:
    rep.v = zkr_election_is_leader(e);
    break;
  case C_RESIGN:
    rep.v = zkr_election_resign(e);
    break;
  }
  /* what the object says after the call */
  if (e)
    rep.state_after = zkr_election_is_leader(e);
  else if (l)
    rep.state_after = zkr_lease_state_get(l);
  else if (c != C_RELEASE)
    rep.state_after = zkr_mutex_state_get(m);
  /* the callback: once, and not again */
  zkt_wait_for(lost_seen, NULL, 5000);
  usleep(700 * 1000);
  rep.lost_cb = e ? atomic_load(&notleading_told) : atomic_load(&lost_cb);
  /* then the releases */
  if (l) {
    rep.rel1 = zkr_lease_release(l);
    l = NULL;
  } else if (m && c != C_RELEASE) {
    rep.rel1 = zkr_mutex_release(m);
    rep.rel2 = zkr_mutex_release(m);
  }
  put(ready, &rep, sizeof rep);
  if (e)
    zkr_election_free(e);
  if (sem)
    zkr_semaphore_free(sem);
  if (rw)
    zkr_rwlock_free(rw);
  else if (m)
    zkr_mutex_free(m);
  zkr_session_close(s);
  _exit(0);
}

/* ---- the contender, in the runner ---- */

struct contender {
  zkr_mutex *m;
  zkr_rwlock *rw;
  zkr_semaphore *sem;
  zkr_lease *l;
  zkr_election *e;
  atomic_int done, rc;
};

static void on_acquired(zkr_mutex *lock, int rc, void *ud) {
  struct contender *ct = ud;
  (void)lock;
  atomic_store(&ct->rc, rc);
  atomic_store(&ct->done, 1);
}

static void on_lease(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                     void *ud) {
  struct contender *ct = ud;
  (void)sem;
  (void)l;
  (void)n;
  atomic_store(&ct->rc, rc);
  atomic_store(&ct->done, 1);
}

static int contender_holds(void *arg) {
  struct contender *ct = arg;
  if (ct->e)
    return zkr_election_is_leader(ct->e);
  return atomic_load(&ct->done) && atomic_load(&ct->rc) == ZKR_OK;
}

static int contender_start(struct contender *ct, zkr_session *s, int k,
                           const char *path) {
  memset(ct, 0, sizeof *ct);
  int rc;
  switch (k) {
  case K_MUTEX:
    rc = zkr_mutex_new(&ct->m, s, path, NULL);
    return rc != ZKR_OK
               ? rc
               : zkr_mutex_acquire_async(ct->m, TAKE_MS, on_acquired, ct);
  case K_READ:
  case K_WRITE:
    rc = zkr_rwlock_new(&ct->rw, s, path, NULL);
    return rc != ZKR_OK ? rc
                        : zkr_mutex_acquire_async(zkr_rwlock_write_lock(ct->rw),
                                                  TAKE_MS, on_acquired, ct);
  case K_LEASE:
    rc = zkr_semaphore_new(&ct->sem, s, path, 1, NULL);
    return rc != ZKR_OK ? rc
                        : zkr_semaphore_acquire_async(ct->sem, 1, TAKE_MS,
                                                      &ct->l, on_lease, ct);
  default:
    rc = zkr_election_new(&ct->e, s, path, NULL);
    return rc != ZKR_OK ? rc : zkr_election_start(ct->e);
  }
}

static void contender_end(struct contender *ct) {
  zkr_election_free(ct->e);
  zkr_semaphore_free(ct->sem); /* (and its lease) */
  zkr_rwlock_free(ct->rw);
  zkr_mutex_free(ct->m);
}

/* ---- one round, in the runner of its kind ---- */

static void round_fail(struct outcome *o, const char *what, int rc) {
  snprintf(o->setup, sizeof o->setup, "%s: %s", what, zkr_err_name(rc));
}

static void one_round(int k, int c, int r) {
  struct outcome *o = slot(k, c, r);
  char path[512], data[512];
  snprintf(path, sizeof path, "%s/%s-%s-%d", root, kind_name[k], call_name[c],
           r);
  snprintf(data, sizeof data, "%s/data-%s-%s-%d", root, kind_name[k],
           call_name[c], r);
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) {
    round_fail(o, "pipe", ZKR_ESYS);
    return;
  }
  /* fork while this process has no threads: the session comes after */
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    child(k, c, path, data, ready[1], go[0]);
  }
  close(ready[1]);
  close(go[0]);
  zkr_session *s = zkt_connect(hosts, 10000);
  struct contender ct;
  memset(&ct, 0, sizeof ct);
  int crc = -1;
  int rc = zkt_create_parents(s, root, zkr__deadline(10000));
  if (rc == ZKR_OK || rc == ZKR_EEXISTS)
    rc = zkr__zk_create(s, data, "orig", 4, 0, zkr__deadline(10000), NULL);
  if (rc != ZKR_OK) {
    round_fail(o, "create the data node", rc);
    kill(pid, SIGKILL);
    goto end;
  }
  if (get(ready[0], &crc, sizeof crc) != 0 || crc != ZKR_OK) {
    round_fail(o, "the child's acquisition", crc);
    goto end;
  }
  rc = contender_start(&ct, s, k, path);
  if (rc != ZKR_OK) {
    round_fail(o, "the contender's start", rc);
    kill(pid, SIGKILL);
    goto end;
  }
  usleep(300 * 1000); /* let the contender queue behind the holder */
  int64_t t0 = zkt_now_ms();
  kill(pid, SIGSTOP);
  int st;
  waitpid(pid, &st, WUNTRACED);
  put(go[1], "g", 1); /* read the instant the child runs again */
  o->taken = zkt_wait_for(contender_holds, &ct, TAKE_MS);
  int64_t left = PAUSE_MS - (zkt_now_ms() - t0);
  if (left > 0)
    usleep((useconds_t)left * 1000);
  kill(pid, SIGCONT);
  struct report rep;
  if (get(ready[0], &rep, sizeof rep) != 0) {
    snprintf(o->setup, sizeof o->setup, "the child reported nothing");
    goto end;
  }
  o->ran = 1;
  o->v = rep.v;
  o->state_after = rep.state_after;
  o->rel1 = rep.rel1;
  o->rel2 = rep.rel2;
  o->lost_cb = rep.lost_cb;
  zkr__result res;
  memset(&res, 0, sizeof res);
  o->data_intact = zkr__zk_get(s, data, zkr__deadline(10000), &res) == ZKR_OK &&
                   res.datalen == 4 && memcmp(res.data, "orig", 4) == 0;
  zkr__result_clear(&res);
end:
  close(ready[0]);
  close(go[1]);
  waitpid(pid, &st, 0);
  contender_end(&ct);
  zkr_session_close(s);
}

static void runner(int k) {
  for (int r = 0; r < rounds; r++)
    for (int c = 0; c < NCALLS; c++)
      if (has_call(k, c))
        one_round(k, c, r);
  _exit(0);
}

/* ---- the verdicts ---- */

static void judge(int k, int c, int r) {
  struct outcome *o = slot(k, c, r);
  const char *kn = kind_name[k], *cn = call_name[c];
  if (!ok(o->ran, "%s %s round %d ran", kn, cn, r + 1)) {
    tap_diag("%s", o->setup[0] ? o->setup : "the runner died");
    return;
  }
  ok(o->taken, "%s %s round %d: the contender took it during the pause", kn, cn,
     r + 1);
  if (k == K_LEADER) {
    switch (c) {
    case C_IS_LEADER:
      is(o->v, 0, "%s %s round %d: not leading", kn, cn, r + 1);
      break;
    case C_RESIGN:
      is(o->v, ZKR_OK, "%s %s round %d: ZKR_OK", kn, cn, r + 1);
      break;
    case C_TOKEN:
      is(o->v, 0, "%s %s round %d: no token", kn, cn, r + 1);
      break;
    case C_NODE:
      is(o->v, ZKR_ENOTHELD, "%s %s round %d: ZKR_ENOTHELD", kn, cn, r + 1);
      break;
    case C_GUARDED:
      is(o->v, ZKR_ENOTHELD, "%s %s round %d: ZKR_ENOTHELD", kn, cn, r + 1);
      ok(o->data_intact, "%s %s round %d: nothing written", kn, cn, r + 1);
      break;
    }
    is(o->state_after, 0, "%s %s round %d: is_leader 0 after it", kn, cn,
       r + 1);
    is(o->lost_cb, 1, "%s %s round %d: the listener was told 0 once", kn, cn,
       r + 1);
    return;
  }
  switch (c) {
  case C_RELEASE:
    is(o->v, ZKR_ELOCKLOST, "%s %s round %d: ZKR_ELOCKLOST", kn, cn, r + 1);
    if (k != K_LEASE)
      is(o->rel2, ZKR_ENOTHELD, "%s %s round %d: then ZKR_ENOTHELD", kn, cn,
         r + 1);
    break;
  case C_IS_HELD:
    is(o->v, 0, "%s %s round %d: 0", kn, cn, r + 1);
    break;
  case C_STATE:
    is(o->v, ZKR_LOCK_LOST, "%s %s round %d: ZKR_LOCK_LOST", kn, cn, r + 1);
    break;
  case C_TOKEN:
    is(o->v, 0, "%s %s round %d: no token", kn, cn, r + 1);
    break;
  case C_NODE:
    is(o->v, ZKR_ENOTHELD, "%s %s round %d: ZKR_ENOTHELD", kn, cn, r + 1);
    break;
  case C_GUARDED:
    is(o->v, ZKR_ELOCKLOST, "%s %s round %d: ZKR_ELOCKLOST", kn, cn, r + 1);
    ok(o->data_intact, "%s %s round %d: nothing written", kn, cn, r + 1);
    break;
  }
  if (c != C_RELEASE) {
    is(o->state_after, ZKR_LOCK_LOST, "%s %s round %d: LOST until released", kn,
       cn, r + 1);
    is(o->rel1, ZKR_ELOCKLOST, "%s %s round %d: the release says ZKR_ELOCKLOST",
       kn, cn, r + 1);
    if (k != K_LEASE)
      is(o->rel2, ZKR_ENOTHELD, "%s %s round %d: then ZKR_ENOTHELD", kn, cn,
         r + 1);
  }
  if (k == K_LEASE && c == C_RELEASE)
    ok(o->lost_cb <= 1, "%s %s round %d: LOST told at most once (%d)", kn, cn,
       r + 1, o->lost_cb);
  else
    is(o->lost_cb, 1, "%s %s round %d: LOST told once", kn, cn, r + 1);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      char *end = NULL;
      const char *v = argv[++i];
      long r = strtol(v, &end, 10);
      rounds = *end || end == v || r < 1 || r > 1000 ? 0 : (int)r;
    } else {
      fprintf(stderr, "usage: t-lost-hold [--rounds N]\n");
      return 64;
    }
  }
  if (rounds < 1 || rounds > 1000) {
    fprintf(stderr, "t-lost-hold: --rounds must be 1..1000\n");
    return 64;
  }
  /* each round takes the pause and a little more; kinds run in parallel */
  tap_init(60 + rounds * 6 * 12);
  hosts = zkt_start(1);
  root = zkt_root("lost-hold");
  size_t n = (size_t)NKINDS * NCALLS * (size_t)rounds;
  out = mmap(NULL, n * sizeof *out, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (out == MAP_FAILED)
    tap_bail("mmap: %s", strerror(errno));
  memset(out, 0, n * sizeof *out);
  pid_t pids[NKINDS];
  for (int k = 0; k < NKINDS; k++) {
    pids[k] = fork();
    if (pids[k] == 0)
      runner(k);
    if (pids[k] < 0)
      tap_bail("fork: %s", strerror(errno));
  }
  for (int k = 0; k < NKINDS; k++)
    waitpid(pids[k], NULL, 0);
  for (int k = 0; k < NKINDS; k++)
    for (int c = 0; c < NCALLS; c++)
      if (has_call(k, c))
        for (int r = 0; r < rounds; r++)
          judge(k, c, r);
  return tap_done();
}
