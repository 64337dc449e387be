/* The multi-lock against a real standalone server: a set of a mutex, a
 * read half and a write half made in one transaction (one node per path,
 * one prefix, one czxid: the set's token), held when every member holds,
 * its guarded writes checking every node; a try-once, a time-out and a
 * cancel that leave nothing behind; the set waiting behind a single-lock
 * holder and taking over on its release; readers of two sets together;
 * threads taking overlapping sets in opposite orders, all completing; a
 * member's node deleted: the set LOST (told), the other nodes let go; a
 * closed session; dispatch mode; bad input. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

static int kids(const char *name) {
  return zkt_children(admin, zkt_path(name));
}

static void test_bad_input(void) {
  zkr_multilock *ml = NULL;
  zkr_multilock_member two[2] = {{zkt_path("a"), ZKR_MULTILOCK_MUTEX},
                                 {zkt_path("a"), ZKR_MULTILOCK_READ}};
  is(zkr_multilock_new(&ml, admin, two, 2, NULL), ZKR_EINVAL,
     "a path named twice: ZKR_EINVAL");
  is(zkr_multilock_new(&ml, admin, two, 0, NULL), ZKR_EINVAL, "n = 0");
  is(zkr_multilock_new(&ml, admin, two, ZKR_MULTILOCK_MAX + 1, NULL),
     ZKR_EINVAL, "n over ZKR_MULTILOCK_MAX");
  is(zkr_multilock_new(&ml, admin, NULL, 1, NULL), ZKR_EINVAL, "NULL members");
  zkr_multilock_member bad[1] = {{"relative", ZKR_MULTILOCK_MUTEX}};
  is(zkr_multilock_new(&ml, admin, bad, 1, NULL), ZKR_EBADPATH, "a bad path");
  zkr_multilock_member kind[1] = {{zkt_path("a"), (zkr_multilock_kind)9}};
  is(zkr_multilock_new(&ml, admin, kind, 1, NULL), ZKR_EINVAL, "a bad kind");
  ok(ml == NULL, "nothing made");
  is(zkr_multilock_acquire(NULL, 0), ZKR_EINVAL, "NULL acquire");
  is(zkr_multilock_release(NULL), ZKR_EINVAL, "NULL release");
  is((int)zkr_multilock_state_get(NULL), ZKR_LOCK_UNLOCKED, "NULL state");
  ok(zkr_multilock_hold(NULL) == NULL, "NULL hold");
  zkr_multilock_free(NULL);
}

static zkr_multilock *set3(zkr_session *s, const zkr_multilock_options *o) {
  zkr_multilock_member m[3] = {{zkt_path("a"), ZKR_MULTILOCK_MUTEX},
                               {zkt_path("b"), ZKR_MULTILOCK_READ},
                               {zkt_path("c"), ZKR_MULTILOCK_WRITE}};
  zkr_multilock *ml = NULL;
  if (zkr_multilock_new(&ml, s, m, 3, o) != ZKR_OK)
    tap_bail("multilock");
  return ml;
}

/* The name of the only child of @name. */
static char *only_child(const char *name) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  char *c = NULL;
  if (zkr__zk_children(admin, zkt_path(name), zkr__deadline(5000), &r) ==
          ZKR_OK &&
      r.names.count == 1)
    c = zkr__strdup(r.names.data[0]);
  zkr__result_clear(&r);
  return c;
}

static int64_t czxid_of(const char *name, const char *child) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", zkt_path(name), child);
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_exists(admin, p, zkr__deadline(5000), &r);
  return r.stat.czxid;
}

/* The zxid of the last change of @name's children. */
static int64_t pzxid_of(const char *name) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_exists(admin, zkt_path(name), zkr__deadline(5000), &r);
  return r.stat.pzxid;
}

static void test_basic(void) {
  zkr_multilock *ml = set3(admin, NULL);
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_UNLOCKED, "UNLOCKED");
  ok(zkr_multilock_hold(ml) == NULL, "no hold");
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "a set of three acquired");
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_HELD, "HELD");
  char *a = only_child("a"), *b = only_child("b"), *c = only_child("c");
  ok(a && b && c, "one node in each path");
  ok(a && strstr(a, "-lock-") && b && strstr(b, "-__READ__") && c &&
         strstr(c, "-__WRIT__"),
     "named as each lock's own nodes (%s, %s, %s)", a ? a : "-", b ? b : "-",
     c ? c : "-");
  ok(a && b && c && strncmp(a, b, 40) == 0 && strncmp(a, c, 40) == 0,
     "with one prefix");
  int64_t za = a ? czxid_of("a", a) : 0;
  ok(za > 0 && b && c && czxid_of("b", b) == za && czxid_of("c", c) == za,
     "and one czxid: one transaction");
  zkr_hold *h = zkr_multilock_hold(ml);
  is(zkr_hold_token(h), za, "the set's token is that czxid");
  is(zkr_hold_guarded_set(h, zkt_path("a"), "x", 1, -1, 5000), ZKR_OK,
     "a guarded write under the set");
  is(zkr_multilock_acquire(ml, 0), ZKR_EDEADLK,
     "acquired again: ZKR_EDEADLK (sets are not reentrant)");
  is(zkr_multilock_release(ml), ZKR_OK, "released");
  is(zkr_multilock_release(ml), ZKR_ENOTHELD, "twice: ZKR_ENOTHELD");
  ok(zkr_multilock_hold(ml) == NULL, "no hold after");
  ok(zkt_children_become(admin, zkt_path("a"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("b"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("c"), 0, 5000),
     "every node deleted");
  int64_t pa = pzxid_of("a");
  ok(pa > za && pzxid_of("b") == pa && pzxid_of("c") == pa,
     "in one transaction (the three parents' last child change is one zxid)");
  free(a);
  free(b);
  free(c);
  zkr_multilock_free(ml);
}

struct acq {
  zkr_multilock *ml;
  int64_t timeout;
  int rc;
};

static void *acquire_thread(void *arg) {
  struct acq *x = arg;
  x->rc = zkr_multilock_acquire(x->ml, x->timeout);
  return NULL;
}

static void test_blocked(void) {
  zkr_session *s2 = zkt_connect(hosts, 10000);
  zkr_mutex *single = NULL;
  zkr_mutex_new(&single, s2, zkt_path("a"), NULL);
  is(zkr_mutex_acquire(single, 5000), ZKR_OK, "a single-lock holder of a");
  zkr_multilock *ml = set3(admin, NULL);
  is(zkr_multilock_acquire(ml, 0), ZKR_EWOULDBLOCK,
     "try once: ZKR_EWOULDBLOCK");
  ok(zkt_children_become(admin, zkt_path("a"), 1, 5000) &&
         zkt_children_become(admin, zkt_path("b"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("c"), 0, 5000),
     "nothing left behind");
  is(zkr_multilock_acquire(ml, 500), ZKR_ETIMEDOUT, "0.5 s: ZKR_ETIMEDOUT");
  ok(zkt_children_become(admin, zkt_path("b"), 0, 5000) && kids("a") == 1,
     "nothing left behind");
  struct acq x = {ml, 30000, -1};
  pthread_t th;
  pthread_create(&th, NULL, acquire_thread, &x);
  ok(zkt_children_become(admin, zkt_path("a"), 2, 5000), "the set queues");
  usleep(200 * 1000);
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_ACQUIRING, "ACQUIRING");
  is(zkr_multilock_cancel(ml), ZKR_OK, "cancelled");
  pthread_join(th, NULL);
  is(x.rc, ZKR_ECANCELED, "ZKR_ECANCELED");
  ok(zkt_children_become(admin, zkt_path("a"), 1, 5000) &&
         zkt_children_become(admin, zkt_path("c"), 0, 5000),
     "nothing left behind");
  x.rc = -1;
  pthread_create(&th, NULL, acquire_thread, &x);
  ok(zkt_children_become(admin, zkt_path("a"), 2, 5000), "queued again");
  is(zkr_mutex_release(single), ZKR_OK, "the single holder releases");
  pthread_join(th, NULL);
  is(x.rc, ZKR_OK, "the set holds");
  is(zkr_mutex_acquire(single, 300), ZKR_ETIMEDOUT,
     "and excludes the single-lock user");
  /* readers together: a second set with the read half of b */
  zkr_multilock_member r2[1] = {{zkt_path("b"), ZKR_MULTILOCK_READ}};
  zkr_multilock *reader = NULL;
  zkr_multilock_new(&reader, s2, r2, 1, NULL);
  is(zkr_multilock_acquire(reader, 2000), ZKR_OK,
     "another set's read of b holds beside it");
  zkr_multilock_member w2[1] = {{zkt_path("b"), ZKR_MULTILOCK_WRITE}};
  zkr_multilock *writer = NULL;
  zkr_multilock_new(&writer, s2, w2, 1, NULL);
  is(zkr_multilock_acquire(writer, 0), ZKR_EDEADLK,
     "a write of b in the reader's session: ZKR_EDEADLK");
  zkr_session *s3 = zkt_connect(hosts, 10000);
  zkr_multilock *writer3 = NULL;
  zkr_multilock_new(&writer3, s3, w2, 1, NULL);
  is(zkr_multilock_acquire(writer3, 0), ZKR_EWOULDBLOCK,
     "in another session: waits (try once: ZKR_EWOULDBLOCK)");
  zkr_multilock_free(writer3);
  zkr_session_close(s3);
  zkr_multilock_free(reader);
  zkr_multilock_free(writer);
  zkr_multilock_free(ml); /* (releases) */
  zkr_mutex_free(single);
  zkr_session_close(s2);
  ok(zkt_children_become(admin, zkt_path("a"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("b"), 0, 5000),
     "zkr_multilock_free() released the set");
}

/* Threads taking overlapping sets in opposite orders: none waits for
 * ever, and no two hold one path at once. */
#define THREADS 4
#define ROUNDS 15
static atomic_int holders[3];
static atomic_int overlap;

/* (made by the main thread: zkt_path() and zkt_connect() are not for
 * threads) */
static char xyz[3][256];
static zkr_session *wsess[THREADS];

static void *worker(void *arg) {
  int k = (int)(intptr_t)arg;
  zkr_session *s = wsess[k];
  int a = k % 3, b = (k + 1 + (k / 3)) % 3;
  zkr_multilock_member m[2] = {{xyz[k % 2 ? b : a], 0},
                               {xyz[k % 2 ? a : b], 0}};
  zkr_multilock *ml = NULL;
  intptr_t done = 0;
  if (zkr_multilock_new(&ml, s, m, 2, NULL) == ZKR_OK) {
    for (int r = 0; r < ROUNDS; r++) {
      if (zkr_multilock_acquire(ml, 60000) != ZKR_OK)
        break;
      if (atomic_fetch_add(&holders[a], 1) != 0 ||
          atomic_fetch_add(&holders[b], 1) != 0)
        atomic_store(&overlap, 1);
      usleep(2000);
      atomic_fetch_sub(&holders[a], 1);
      atomic_fetch_sub(&holders[b], 1);
      zkr_multilock_release(ml);
      done++;
    }
    zkr_multilock_free(ml);
  }
  return (void *)done;
}

static void test_orders(void) {
  pthread_t th[THREADS];
  const char *names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    snprintf(xyz[i], sizeof xyz[i], "%s", zkt_path(names[i]));
  for (int i = 0; i < THREADS; i++)
    wsess[i] = zkt_connect(hosts, 10000);
  for (int i = 0; i < THREADS; i++)
    pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  int all = 1;
  for (int i = 0; i < THREADS; i++) {
    void *done = NULL;
    pthread_join(th[i], &done);
    all &= (intptr_t)done == ROUNDS;
  }
  for (int i = 0; i < THREADS; i++)
    zkr_session_close(wsess[i]);
  ok(all,
     "%d threads, sets of 2 of 3 paths in opposite orders, %d rounds "
     "each: every round completed",
     THREADS, ROUNDS);
  ok(!atomic_load(&overlap), "never two holders of one path");
}

static zkt_statelog slog;

static void test_loss(void) {
  zkt_statelog_init(&slog);
  zkr_multilock_options o = {0};
  o.state_fn = zkt_state_fn;
  o.state_user_data = &slog;
  zkr_multilock *ml = set3(admin, &o);
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "held");
  zkr_hold *h = zkr_multilock_hold(ml);
  char *b = only_child("b");
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", zkt_path("b"), b ? b : "");
  free(b);
  is(zkr__zk_delete(admin, p, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the second member's node");
  is(zkr_hold_guarded_set(h, zkt_path("a"), "y", 1, -1, 5000), ZKR_ELOCKLOST,
     "a guarded write checks every node: ZKR_ELOCKLOST");
  ok(zkt_wait_for(zkt_lost_seen, &slog, 5000), "LOST told");
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_LOST, "the set is LOST");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_DELETED, "cause ZKR_LOST_DELETED");
  ok(zkt_children_become(admin, zkt_path("a"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("c"), 0, 5000),
     "the other members' nodes were let go at once");
  is(zkr_multilock_release(ml), ZKR_ELOCKLOST, "the release says it");
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "acquired again");
  zkr_multilock_free(ml);

  zkr_session *s = zkt_connect(hosts, 10000);
  ml = set3(s, NULL);
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "a set on its own session");
  zkr_session_close(s);
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_LOST, "session closed: LOST");
  is(zkr_multilock_acquire(ml, 1000), ZKR_EDEADLK,
     "held (lost) until released");
  is(zkr_multilock_release(ml), ZKR_ELOCKLOST, "released: ZKR_ELOCKLOST");
  is(zkr_multilock_acquire(ml, 1000), ZKR_ECLOSED, "then ZKR_ECLOSED");
  zkr_multilock_free(ml);
}

static atomic_int revoked;

static void on_revoke(zkr_hold *h, int64_t requested_ms, void *ud) {
  (void)h;
  (void)ud;
  if (requested_ms > 0)
    atomic_fetch_add(&revoked, 1);
}

static int revoked_seen(void *arg) {
  (void)arg;
  return atomic_load(&revoked) > 0;
}

static void test_control(void) {
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_multilock_options o = {0};
  o.state_fn = zkt_state_fn;
  o.state_user_data = &log;
  o.max_hold_ms = 700;
  o.revoke_fn = on_revoke;
  zkr_multilock *ml = set3(admin, &o);
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "a set with a 0.7 s maximum");
  zkr_hold *h = zkr_multilock_hold(ml);
  zkr_revoke_result r;
  is(zkr_revoke(admin, zkt_path("b"), 100, -1, &r), ZKR_ETIMEDOUT,
     "a revocation request of one of its paths");
  ok(zkt_wait_for(revoked_seen, NULL, 5000), "the set's revoke_fn was told");
  zkr_revoke(admin, zkt_path("c"), 100, -1, &r);
  usleep(300 * 1000);
  is(atomic_load(&revoked), 1, "once per hold of the set");
  ok(zkt_wait_for(zkt_lost_seen, &log, 10000),
     "given up at its maximum: LOST told");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_MAX_HOLD, "cause ZKR_LOST_MAX_HOLD");
  ok(zkt_children_become(admin, zkt_path("a"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("b"), 0, 5000) &&
         zkt_children_become(admin, zkt_path("c"), 0, 5000),
     "every node deleted");
  is(zkr_multilock_release(ml), ZKR_ELOCKLOST, "the release says it was lost");
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "acquired again");
  is(zkr_multilock_release(ml), ZKR_OK, "released before the maximum");
  usleep(1000 * 1000);
  is((int)zkr_multilock_state_get(ml), ZKR_LOCK_UNLOCKED,
     "nothing fires after the release");
  zkr_multilock_free(ml);
}

static atomic_int dispatched;

static void count_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  (void)h;
  (void)ud;
  if (st == ZKR_LOCK_HELD)
    atomic_fetch_add(&dispatched, 1);
}

static void test_dispatch(void) {
  zkr_session *ds = NULL;
  zkr_session_options so = {0};
  so.dispatch = 1;
  if (zkr_session_new(&ds, hosts, &so) != ZKR_OK ||
      zkr_session_wait_connected(ds, 10000) != ZKR_OK)
    tap_bail("dispatch session");
  zkr_multilock_options o = {0};
  o.state_fn = count_state;
  zkr_multilock *ml = set3(ds, &o);
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "held in dispatch mode");
  usleep(200 * 1000);
  is(atomic_load(&dispatched), 0, "HELD not told outside dispatch");
  for (int i = 0; i < 100 && atomic_load(&dispatched) == 0; i++) {
    zkr_session_dispatch(ds, 0);
    usleep(10000);
  }
  is(atomic_load(&dispatched), 1, "told by zkr_session_dispatch()");
  zkr_multilock_free(ml);
  zkr_session_close(ds);
}

/* A path the session holds already, through another object: ZKR_EDEADLK,
 * nothing sent. */
static void test_edeadlk(void) {
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, admin, zkt_path("d1"), NULL);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "the session holds mutex d1");
  zkr_multilock_member two[2] = {{zkt_path("d2"), ZKR_MULTILOCK_MUTEX},
                                 {zkt_path("d1"), ZKR_MULTILOCK_MUTEX}};
  zkr_multilock *ml = NULL;
  is(zkr_multilock_new(&ml, admin, two, 2, NULL), ZKR_OK, "a set of d2, d1");
  is(zkr_multilock_acquire(ml, 5000), ZKR_EDEADLK,
     "the same session: ZKR_EDEADLK");
  is(zkt_children(admin, zkt_path("d2")), -1, "nothing sent (no d2)");
  zkr_session *s2 = zkt_connect(hosts, 10000);
  zkr_multilock *other = NULL;
  zkr_multilock_new(&other, s2, two, 2, NULL);
  is(zkr_multilock_acquire(other, 0), ZKR_EWOULDBLOCK,
     "another session's set only waits for it");
  is(zkr_mutex_release(m), ZKR_OK, "the mutex released");
  is(zkr_multilock_acquire(ml, 5000), ZKR_OK, "then the set holds");
  is(zkr_multilock_acquire(other, 0), ZKR_EWOULDBLOCK, "(the other waits)");
  zkr_multilock_member one[1] = {{zkt_path("d2"), ZKR_MULTILOCK_READ}};
  zkr_multilock *third = NULL;
  zkr_multilock_new(&third, admin, one, 1, NULL);
  is(zkr_multilock_acquire(third, 1000), ZKR_EDEADLK,
     "a path another set of the session holds: ZKR_EDEADLK");
  zkr_multilock_release(ml);
  zkr_rwlock *rw = NULL;
  zkr_rwlock_new(&rw, admin, zkt_path("d2"), NULL);
  is(zkr_mutex_acquire(zkr_rwlock_read_lock(rw), 5000), ZKR_OK,
     "the session reads d2");
  is(zkr_multilock_acquire(third, 1000), ZKR_EDEADLK,
     "a read half held: ZKR_EDEADLK too (a writer may queue between)");
  zkr_mutex_release(zkr_rwlock_read_lock(rw));
  is(zkr_multilock_acquire(third, 1000), ZKR_OK, "released: it holds");
  zkr_multilock_free(third);
  zkr_rwlock_free(rw);
  zkr_multilock_free(other);
  zkr_session_close(s2);
  zkr_multilock_free(ml);
  zkr_mutex_free(m);
}

/* A client that holds one lock while queueing for another (as Curator's
 * InterProcessMultiLock does) makes a cycle with a set: the set yields
 * after yield_after_ms; a slow holder alone does not make it yield. */
struct macq {
  zkr_mutex *m;
  int64_t timeout;
  int rc;
};

static void *mutex_thread(void *arg) {
  struct macq *x = arg;
  x->rc = zkr_mutex_acquire(x->m, x->timeout);
  return NULL;
}

static void test_yield(void) {
  zkr_session *sx = zkt_connect(hosts, 10000), *sc = zkt_connect(hosts, 10000);
  zkr_mutex *xa = NULL, *ca = NULL, *cb = NULL;
  zkr_mutex_new(&xa, sx, zkt_path("ya"), NULL);
  zkr_mutex_new(&ca, sc, zkt_path("ya"), NULL);
  zkr_mutex_new(&cb, sc, zkt_path("yb"), NULL);
  zkr_multilock_member m[2] = {{zkt_path("ya"), ZKR_MULTILOCK_MUTEX},
                               {zkt_path("yb"), ZKR_MULTILOCK_MUTEX}};
  for (int round = 0; round < 3; round++) {
    int never = round == 1, cancel = round == 2;
    zkr_multilock_options o = {0};
    o.yield_after_ms = never ? -1 : 500;
    zkr_multilock *ml = NULL;
    zkr_multilock_new(&ml, admin, m, 2, &o);
    is(zkr_mutex_acquire(xa, 5000), ZKR_OK, "X holds ya");
    struct macq c1 = {ca, 30000, -1};
    pthread_t tc, ts;
    pthread_create(&tc, NULL, mutex_thread, &c1);
    ok(zkt_children_become(admin, zkt_path("ya"), 2, 5000),
       "C queues for ya behind X");
    struct acq sx_ = {ml, never ? 3000 : 30000, -1};
    pthread_create(&ts, NULL, acquire_thread, &sx_);
    ok(zkt_children_become(admin, zkt_path("ya"), 3, 5000) &&
           zkt_children_become(admin, zkt_path("yb"), 1, 5000),
       "the set queues: behind C at ya, first at yb");
    is(zkr_mutex_release(xa), ZKR_OK, "X releases ya");
    pthread_join(tc, NULL);
    is(c1.rc, ZKR_OK, "C holds ya");
    /* C now queues for yb behind the set: a cycle */
    int64_t t0 = zkr__now_ms();
    is(zkr_mutex_acquire(cb, 20000), ZKR_OK,
       never ? "C gets yb once the set gives up at its deadline"
             : "C gets yb: the set yielded its place");
    int64_t waited = zkr__now_ms() - t0;
    if (never) {
      ok(waited >= 2000, "no yield: C waited for the set's deadline (%lld ms)",
         (long long)waited);
      pthread_join(ts, NULL);
      is(sx_.rc, ZKR_ETIMEDOUT, "yield_after_ms < 0: the set timed out");
    } else {
      ok(zkr_multilock_state_get(ml) == ZKR_LOCK_ACQUIRING,
         "the set still waits");
      ok(zkt_children_become(admin, zkt_path("ya"), 1, 5000) &&
             zkt_children_become(admin, zkt_path("yb"), 1, 5000),
         "with no node while C, which it yielded to, holds ya (it lets C "
         "go by before it queues again)");
    }
    if (cancel) {
      is(zkr_multilock_cancel(ml), ZKR_OK, "cancelled while it lets C go by");
      pthread_join(ts, NULL);
      is(sx_.rc, ZKR_ECANCELED, "ZKR_ECANCELED at once, nothing made");
    }
    zkr_mutex_release(cb);
    zkr_mutex_release(ca);
    if (!never && !cancel) {
      pthread_join(ts, NULL);
      is(sx_.rc, ZKR_OK,
         "and holds once C lets go (%lld ms after the cycle "
         "formed)",
         (long long)(zkr__now_ms() - t0));
      zkr_multilock_release(ml);
    }
    zkr_multilock_free(ml);
  }
  /* a slow holder alone: no cycle, no yield */
  zkr_multilock_options o = {0};
  o.yield_after_ms = 200;
  zkr_multilock *ml = NULL;
  zkr_multilock_new(&ml, admin, m, 2, &o);
  is(zkr_mutex_acquire(xa, 5000), ZKR_OK, "X holds ya (slowly)");
  struct acq s1 = {ml, 30000, -1};
  pthread_t ts;
  pthread_create(&ts, NULL, acquire_thread, &s1);
  ok(zkt_children_become(admin, zkt_path("yb"), 1, 5000),
     "the set is first at yb");
  char *yb0 = only_child("yb");
  usleep(1500 * 1000);
  char *yb1 = only_child("yb");
  ok(yb0 && yb1 && strcmp(yb0, yb1) == 0,
     "after 7 times yield_after_ms behind a slow holder, the same node: no "
     "yield");
  zkr_mutex_release(xa);
  pthread_join(ts, NULL);
  is(s1.rc, ZKR_OK, "the set holds once X lets go");
  free(yb0);
  free(yb1);
  zkr_multilock_free(ml);
  zkr_mutex_free(xa);
  zkr_mutex_free(ca);
  zkr_mutex_free(cb);
  zkr_session_close(sx);
  zkr_session_close(sc);
}

/* A cycle through a lock neither set takes: set 1 {q1, q3} waits at q1
 * for C, which holds q1 and waits at q2 for set 2 {q2, q3}, which waits at
 * q3 for set 1. Each set finds it by reading its paths' siblings. */
static void test_yield_sibling(void) {
  char q[3][300];
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "sib/q%d", i + 1);
    snprintf(q[i], sizeof q[i], "%s", zkt_path(name));
  }
  zkr_session *sc = zkt_connect(hosts, 10000), *s1 = zkt_connect(hosts, 10000),
              *s2 = zkt_connect(hosts, 10000);
  zkr_mutex *c1 = NULL, *c2 = NULL;
  zkr_mutex_new(&c1, sc, q[0], NULL);
  zkr_mutex_new(&c2, sc, q[1], NULL);
  zkr_multilock_options o = {0};
  o.yield_after_ms = 300;
  zkr_multilock_member m1[2] = {{q[0], ZKR_MULTILOCK_MUTEX},
                                {q[2], ZKR_MULTILOCK_MUTEX}};
  zkr_multilock_member m2[2] = {{q[1], ZKR_MULTILOCK_MUTEX},
                                {q[2], ZKR_MULTILOCK_MUTEX}};
  zkr_multilock *z1 = NULL, *z2 = NULL;
  zkr_multilock_new(&z1, s1, m1, 2, &o);
  zkr_multilock_new(&z2, s2, m2, 2, &o);
  is(zkr_mutex_acquire(c1, 5000), ZKR_OK, "C holds q1");
  struct acq a1 = {z1, 30000, -1}, a2 = {z2, 30000, -1};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, acquire_thread, &a1);
  ok(zkt_children_become(admin, q[2], 1, 5000), "set 1 first at q3");
  pthread_create(&t2, NULL, acquire_thread, &a2);
  ok(zkt_children_become(admin, q[2], 2, 5000) &&
         zkt_children_become(admin, q[1], 1, 5000),
     "set 2 first at q2, behind set 1 at q3");
  struct macq cq = {c2, 30000, -1};
  pthread_t tc;
  pthread_create(&tc, NULL, mutex_thread, &cq);
  ok(zkt_children_become(admin, q[1], 2, 5000),
     "C queues at q2 behind set 2: a cycle through q1, q2, q3");
  int64_t t0 = zkr__now_ms();
  zkr_multilock *first = NULL;
  while (!first && zkr__now_ms() - t0 < 15000) {
    if (zkr_multilock_state_get(z1) == ZKR_LOCK_HELD)
      first = z1;
    else if (zkr_multilock_state_get(z2) == ZKR_LOCK_HELD)
      first = z2;
    else
      usleep(20 * 1000);
  }
  ok(first != NULL,
     "a set yielded: set %d holds %lld ms after the cycle "
     "formed",
     first == z1 ? 1 : 2, (long long)(zkr__now_ms() - t0));
  /* then everyone in turn */
  if (first)
    zkr_multilock_release(first);
  pthread_join(tc, NULL);
  is(cq.rc, ZKR_OK, "C gets q2");
  zkr_mutex_release(c2);
  zkr_mutex_release(c1);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  ok(a1.rc == ZKR_OK && a2.rc == ZKR_OK, "both sets held (%s, %s)",
     zkr_strerror(a1.rc), zkr_strerror(a2.rc));
  zkr_multilock_free(z1);
  zkr_multilock_free(z2);
  zkr_mutex_free(c1);
  zkr_mutex_free(c2);
  zkr_session_close(sc);
  zkr_session_close(s1);
  zkr_session_close(s2);
}

int main(void) {
  tap_init(180);
  hosts = zkt_start(1);
  zkt_root("t-multilock");
  admin = zkt_connect(hosts, 10000);
  test_bad_input();
  test_basic();
  test_blocked();
  test_orders();
  test_loss();
  test_control();
  test_edeadlk();
  test_yield();
  test_yield_sibling();
  test_dispatch();
  zkr_session_close(admin);
  return tap_done();
}
