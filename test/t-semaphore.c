/* The counting semaphore against a real standalone server: bad input
 * creating nothing, Curator's layout and naming, the limit, try-once and
 * time-out leaving nothing, waiting inside the admission mutex and one
 * session woken per release, n leases all or none, cancellation, a limit
 * from a shared count followed live (raised, lowered, missing, malformed),
 * kazoo's layout refused, a foreign child counted as a lease, an expired
 * holder told LOST and its lease passed on, guarded writes, participants,
 * a blocking call from a callback, admission nodes deleted by another
 * client, a callback that blocks holding up no other thread's call. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

/* One contender: its own session and semaphore object. */
typedef struct who {
  zkr_session *s;
  zkr_semaphore *sem;
  zkr_lease *l[4];
  pthread_mutex_t mu;
  int done, rc;
} who;

static void who_open_t(who *w, const char *path, int limit,
                       const zkr_semaphore_options *o, int session_ms) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  w->s = zkt_connect(hosts, session_ms);
  if (zkr_semaphore_new(&w->sem, w->s, path, limit, o) != ZKR_OK)
    tap_bail("zkr_semaphore_new");
}

static void who_open(who *w, const char *path, int limit,
                     const zkr_semaphore_options *o) {
  who_open_t(w, path, limit, o, 10000);
}

static void who_close(who *w) {
  zkr_semaphore_free(w->sem);
  zkr_session_close(w->s);
  pthread_mutex_destroy(&w->mu);
}

static void on_acquired(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                        void *ud) {
  who *w = ud;
  (void)sem;
  (void)l;
  (void)n;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  w->rc = rc;
  pthread_mutex_unlock(&w->mu);
}

static int is_done(void *arg) {
  who *w = arg;
  pthread_mutex_lock(&w->mu);
  int d = w->done;
  pthread_mutex_unlock(&w->mu);
  return d;
}

static void start_async(who *w, int n, int64_t timeout_ms) {
  w->done = 0;
  w->rc = -1;
  if (zkr_semaphore_acquire_async(w->sem, n, timeout_ms, w->l, on_acquired,
                                  w) != ZKR_OK)
    tap_bail("acquire_async");
}

struct node_events {
  zkr_session *s;
  uint64_t want;
};
static int node_events_reached(void *arg) {
  struct node_events *w = arg;
  return zkr__session_node_events(w->s) >= w->want;
}
static int zkt_wait_for_node_events(zkr_session *s, uint64_t want,
                                    int64_t timeout_ms) {
  struct node_events w = {s, want};
  return zkt_wait_for(node_events_reached, &w, timeout_ms);
}

static char *sub(const char *path, const char *child) {
  static char buf[4][512];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", path, child);
  return b;
}

static void test_bad_input(void) {
  const char *path = zkt_path("bad");
  zkr_semaphore *sem = NULL;
  is(zkr_semaphore_new(&sem, admin, path, 0, NULL), ZKR_EINVAL, "limit 0");
  is(zkr_semaphore_new(&sem, admin, path, -3, NULL), ZKR_EINVAL, "limit -3");
  is(zkr_semaphore_new(&sem, admin, path, ZKR_SEMAPHORE_MAX + 1, NULL),
     ZKR_EINVAL, "a limit above ZKR_SEMAPHORE_MAX");
  is(zkr_semaphore_new(NULL, admin, path, 1, NULL), ZKR_EINVAL, "NULL out");
  is(zkr_semaphore_new(&sem, NULL, path, 1, NULL), ZKR_EINVAL, "NULL session");
  is(zkr_semaphore_new(&sem, admin, "/", 1, NULL), ZKR_EBADPATH, "path /");
  is(zkr_semaphore_new(&sem, admin, "no-slash", 1, NULL), ZKR_EBADPATH,
     "a relative path");
  is(zkr_semaphore_new(&sem, admin, NULL, 1, NULL), ZKR_EBADPATH, "NULL path");
  {
    /* PATH/leases must stay within the 1024-byte path limit */
    char longp[1100];
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[ZKR_SEMAPHORE_PATH_MAX + 1] = '\0';
    is(zkr_semaphore_new(&sem, admin, longp, 1, NULL), ZKR_EINVAL,
       "a path of %d bytes: ZKR_EINVAL", ZKR_SEMAPHORE_PATH_MAX + 1);
    longp[ZKR_SEMAPHORE_PATH_MAX] = '\0';
    is(zkr_semaphore_new(&sem, admin, longp, 1, NULL), ZKR_OK,
       "a path of %d bytes: fine", ZKR_SEMAPHORE_PATH_MAX);
    zkr_semaphore_free(sem);
    sem = NULL;
  }
  is(zkr_semaphore_new(&sem, admin, path, 0,
                       &(zkr_semaphore_options){.count_path = "bad//path"}),
     ZKR_EBADPATH, "a bad count path");
  is(zkr_semaphore_new(&sem, admin, path, 2,
                       &(zkr_semaphore_options){.id = ""}),
     ZKR_EINVAL, "an empty id");
  is(zkr_semaphore_new(&sem, admin, path, 2,
                       &(zkr_semaphore_options){.reserved_[5] = 1}),
     ZKR_EINVAL, "a non-zero reserved byte");
  is(zkr_semaphore_new(
         &sem, admin, path, 2,
         &(zkr_semaphore_options){.count_path = sub(path, "count")}),
     ZKR_EINVAL, "a count path and a limit");
  ok(sem == NULL, "*out untouched");
  is(zkr_semaphore_new(&sem, admin, path, 2, NULL), ZKR_OK, "limit 2");
  zkr_lease *l[3];
  is(zkr_semaphore_acquire(sem, 0, 0, l), ZKR_EINVAL, "0 leases");
  is(zkr_semaphore_acquire(sem, 3, 0, l), ZKR_EINVAL, "3 leases of 2");
  is(zkr_semaphore_acquire(sem, 1, 0, NULL), ZKR_EINVAL, "NULL leases");
  is(zkr_semaphore_acquire_async(sem, 1, 0, l, NULL, NULL), ZKR_EINVAL,
     "async without a callback");
  is(zkr_semaphore_cancel(sem), ZKR_ENOTHELD, "cancel with nothing pending");
  is(zkr_semaphore_acquire(NULL, 1, 0, l), ZKR_EINVAL, "NULL semaphore");
  is(zkr_lease_release(NULL), ZKR_EINVAL, "release NULL");
  is(zkr_semaphore_limit(sem), 2, "the limit is 2");
  is(zkt_children(admin, path), -1, "nothing was created");
  zkr_semaphore_free(sem);
}

static void test_layout_and_limit(void) {
  const char *path = zkt_path("layout");
  who a, b, c;
  who_open(&a, path, 2, NULL);
  who_open(&b, path, 2, NULL);
  who_open(&c, path, 2, NULL);
  is(zkr_semaphore_acquire(a.sem, 1, 5000, a.l), ZKR_OK, "A takes a lease");
  char node[512];
  is(zkr_hold_node(zkr_lease_hold(a.l[0]), node, sizeof node), ZKR_OK,
     "its node: %s", node);
  const char *name = strrchr(node, '/') + 1;
  ok(strncmp(node, sub(path, "leases/_c_"), strlen(sub(path, "leases/_c_"))) ==
             0 &&
         strlen(name) == 3 + 36 + 1 + 6 + 10 &&
         strncmp(name + 40, "lease-", 6) == 0,
     "Curator's lease name under leases/");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_exists(admin, node, zkr__deadline(5000), &r);
  ok(zkr_hold_token(zkr_lease_hold(a.l[0])) == r.stat.czxid && r.stat.czxid > 0,
     "the fencing token is the node's czxid");
  ok(r.stat.ephemeralOwner == zkr_session_id(a.s), "the node is ephemeral");
  is(zkt_children_become(admin, sub(path, "locks"), 0, 5000), 1,
     "the admission mutex was left");
  is(zkr_lease_state_get(a.l[0]), ZKR_LOCK_HELD, "HELD");
  is(zkr_semaphore_acquire(b.sem, 1, 5000, b.l), ZKR_OK, "B takes the 2nd");
  is(zkr_semaphore_acquire(c.sem, 1, 0, c.l), ZKR_EWOULDBLOCK,
     "C cannot take a 3rd (try once)");
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "C's try left no lease");
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "nor an admission node"); /* (its delete is in the background) */
  int64_t t0 = zkt_now_ms();
  is(zkr_semaphore_acquire(c.sem, 1, 300, c.l), ZKR_ETIMEDOUT,
     "C times out after 300 ms");
  ok(zkt_now_ms() - t0 >= 290, "not before");
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "its lease node is gone");
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "and its admission node");

  /* C waits inside the admission mutex; D waits for admission */
  who d;
  who_open(&d, path, 2, NULL);
  start_async(&c, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 3, 5000),
     "C is admitted and its lease node waits");
  start_async(&d, 1, -1);
  ok(zkt_children_become(admin, sub(path, "locks"), 2, 5000),
     "D queues for admission behind C");
  zkr_participant *lp = NULL, *wp = NULL;
  size_t nl = 0, nw = 0;
  is(zkr_semaphore_participants(admin, path, 2, 5000, &lp, &nl, &wp, &nw),
     ZKR_OK, "participants");
  ok(nl == 3 && lp[0].is_holder && lp[1].is_holder && !lp[2].is_holder &&
         lp[2].session_id == zkr_session_id(c.s),
     "3 lease nodes: A and B hold, C's waits");
  ok(nw == 2 && wp[0].is_holder && wp[0].session_id == zkr_session_id(c.s) &&
         !wp[1].is_holder && wp[1].session_id == zkr_session_id(d.s),
     "2 in the admission queue: C admitted, D waiting");
  ok(lp && lp[0].data && strstr(lp[0].data, "pid="), "lease data: %s",
     lp && lp[0].data ? lp[0].data : "?");
  ok(nl == 3 && nw == 2 && lp[0].role == ZKR_ROLE_LEASE &&
         lp[2].role == ZKR_ROLE_LEASE && wp[0].role == ZKR_ROLE_ADMISSION &&
         wp[1].role == ZKR_ROLE_ADMISSION,
     "roles: lease, admission");
  ok(nl == 3 && nw == 2 && strncmp(lp[0].node, "leases/_c_", 10) == 0 &&
         strncmp(wp[0].node, "locks/_c_", 9) == 0,
     "names relative to the path: %s, %s", nl ? lp[0].node : "?",
     nw ? wp[0].node : "?");
  zkr_participants_free(lp, nl);
  zkr_participants_free(wp, nw);
  uint64_t dev = zkr__session_node_events(d.s);
  uint64_t bev = zkr__session_node_events(b.s);
  is(zkr_lease_release(a.l[0]), ZKR_OK, "A releases");
  ok(zkt_wait_for(is_done, &c, 5000) && c.rc == ZKR_OK, "C gets the lease");
  ok(zkt_wait_for(is_done, &d, 300) == 0, "D still waits (2 leases held)");
  is(zkt_children(admin, sub(path, "leases")), 3,
     "D's lease node waits inside the admission mutex");
  is(zkr__session_node_events(b.s), bev, "B was not woken");
  ok(zkr__session_node_events(d.s) - dev == 1,
     "D was woken once (C left the admission mutex)");
  dev = zkr__session_node_events(d.s);
  is(zkr_lease_release(b.l[0]), ZKR_OK, "B releases");
  ok(zkt_wait_for(is_done, &d, 5000) && d.rc == ZKR_OK, "D gets it");
  /* D watched its own admission node while admitted: leaving the
   * admission mutex deletes it, and that fires D's watch too */
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000) &&
         zkt_wait_for_node_events(d.s, dev + 2, 5000),
     "D left the admission mutex");
  usleep(200 * 1000); /* time for an extra wake-up to show */
  is(zkr__session_node_events(d.s) - dev, 2,
     "woken once by B's release (the other event: its own admission "
     "node deleted)");
  zkr_lease_release(c.l[0]);
  zkr_lease_release(d.l[0]);
  who_close(&a);
  who_close(&b);
  who_close(&c);
  who_close(&d);
  is(zkt_children(admin, sub(path, "leases")), 0, "nothing left");
}

static void test_many_and_cancel(void) {
  const char *path = zkt_path("many");
  who a, b;
  who_open(&a, path, 3, NULL);
  who_open(&b, path, 3, NULL);
  is(zkr_semaphore_acquire(a.sem, 2, 5000, a.l), ZKR_OK, "A takes 2 of 3");
  ok(zkr_hold_token(zkr_lease_hold(a.l[0])) !=
         zkr_hold_token(zkr_lease_hold(a.l[1])),
     "two leases, two tokens");
  is(zkr_semaphore_acquire(b.sem, 2, 0, b.l), ZKR_EWOULDBLOCK,
     "B cannot take 2 (try once)");
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000), "and left none");
  start_async(&b, 2, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 4, 5000),
     "B got one and waits for the other");
  ok(!is_done(&b), "B waits");
  is(zkr_lease_release(a.l[1]), ZKR_OK, "A gives one back");
  ok(zkt_wait_for(is_done, &b, 5000) && b.rc == ZKR_OK, "B has both");
  is(zkt_children(admin, sub(path, "leases")), 3, "3 leases held");
  zkr_lease_release(b.l[0]);
  zkr_lease_release(b.l[1]);
  is(zkr_semaphore_acquire(b.sem, 3, 0, b.l), ZKR_EWOULDBLOCK,
     "B cannot take 3 while A holds 1");
  start_async(&b, 3, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 4, 5000),
     "B waits with 2 got and a 3rd node waiting");
  is(zkr_semaphore_cancel(b.sem), ZKR_OK, "cancel");
  ok(zkt_wait_for(is_done, &b, 5000) && b.rc == ZKR_ECANCELED,
     "B's acquisition ends: ZKR_ECANCELED");
  ok(zkt_children_become(admin, sub(path, "leases"), 1, 5000),
     "B's lease nodes are all gone");
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "and its admission node");
  zkr_lease_release(a.l[0]);
  who_close(&a);
  who_close(&b);
}

static int set_count(const char *path, int32_t v) {
  char b[4] = {(char)((uint32_t)v >> 24), (char)((uint32_t)v >> 16),
               (char)((uint32_t)v >> 8), (char)v};
  return zkr__zk_set(admin, path, b, 4, -1, zkr__deadline(5000));
}

static void test_shared_count(void) {
  const char *path = zkt_path("counted");
  const char *cpath = zkt_path("counted-limit");
  zkr_semaphore_options o = {0};
  o.count_path = cpath;
  who a, b, c;
  who_open(&a, path, 0, &o);
  who_open(&b, path, 0, &o);
  who_open(&c, path, 0, &o);
  is(zkr_semaphore_limit(a.sem), 0, "no limit read yet");
  is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_ENONODE,
     "no count node: ZKR_ENONODE");
  is(zkt_children(admin, path), -1, "and nothing created");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_create(admin, cpath, "abc", 3, 0, zkr__deadline(5000), &r);
  zkr__result_clear(&r);
  is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_EBADCOUNT,
     "3 bytes: ZKR_EBADCOUNT");
  is(set_count(cpath, 1), ZKR_OK, "the count is 1");
  is(zkr_semaphore_acquire(a.sem, 2, 2000, a.l), ZKR_EINVAL,
     "2 leases of a count of 1: ZKR_EINVAL");
  is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_OK, "A takes the lease");
  is(zkr_semaphore_limit(a.sem), 1, "A's limit is 1");
  start_async(&b, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000), "B waits");
  is(set_count(cpath, 2), ZKR_OK, "the count is raised to 2");
  ok(zkt_wait_for(is_done, &b, 5000) && b.rc == ZKR_OK,
     "B is admitted at once");
  is(zkr_semaphore_limit(b.sem), 2, "B's limit is 2");
  is(set_count(cpath, 1), ZKR_OK, "the count is lowered to 1");
  start_async(&c, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 3, 5000), "C waits");
  ok(zkt_wait_for(is_done, &c, 300) == 0, "C waits");
  zkr_lease_release(a.l[0]);
  ok(zkt_wait_for(is_done, &c, 500) == 0,
     "one lease held, count 1: C still waits");
  zkr_lease_release(b.l[0]);
  ok(zkt_wait_for(is_done, &c, 5000) && c.rc == ZKR_OK, "none held: C gets it");
  is(zkr_semaphore_limit(c.sem), 1, "C's limit is 1");
  zkr_lease_release(c.l[0]);
  who_close(&a);
  who_close(&b);
  who_close(&c);
}

static void test_foreign(void) {
  /* kazoo's layout: its limit in PATH's data, its leases right under PATH */
  const char *path = zkt_path("kazoo-sem");
  zkt_create_parents(admin, path, zkr__deadline(5000));
  zkr__zk_set(admin, path, "3", 1, -1, zkr__deadline(5000));
  who a;
  who_open(&a, path, 3, NULL);
  is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_EFOREIGN,
     "a number in PATH's data (kazoo's limit): ZKR_EFOREIGN");
  is(zkt_children(admin, path), 0, "nothing created");
  who_close(&a);
  path = zkt_path("kazoo-sem2");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkt_create_parents(admin, sub(path, "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
                     zkr__deadline(5000));
  who_open(&a, path, 3, NULL);
  is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_EFOREIGN,
     "a lease node right under PATH (kazoo's): ZKR_EFOREIGN");
  is(zkt_children(admin, path), 1, "nothing created");
  ok(strstr(zkr_strerror(ZKR_EFOREIGN), "another recipe's layout") != NULL,
     "%s", zkr_strerror(ZKR_EFOREIGN));
  who_close(&a);
  /* recipes do not mix on one path: a mutex or a read-write lock on a
   * semaphore's path, and a semaphore on a mutex's path, are refused */
  path = zkt_path("mixed");
  who_open(&a, path, 2, NULL);
  is(zkr_semaphore_acquire(a.sem, 1, 5000, a.l), ZKR_OK, "a lease holder");
  {
    zkr_mutex *m = NULL;
    zkr_rwlock *rw = NULL;
    zkr_mutex_new(&m, a.s, path, NULL);
    zkr_rwlock_new(&rw, a.s, path, NULL);
    is(zkr_mutex_acquire(m, 5000), ZKR_EFOREIGN,
       "a mutex on the semaphore's path: ZKR_EFOREIGN");
    is(zkr_mutex_acquire(zkr_rwlock_write_lock(rw), 5000), ZKR_EFOREIGN,
       "a write lock there: ZKR_EFOREIGN");
    is(zkr_mutex_acquire(zkr_rwlock_read_lock(rw), 5000), ZKR_EFOREIGN,
       "a read lock there: ZKR_EFOREIGN");
    zkr_mutex_free(m);
    zkr_rwlock_free(rw);
  }
  is(zkt_settled_children(a.s, admin, path), 2,
     "nothing left beside locks/ and leases/");
  zkr_lease_release(a.l[0]);
  who_close(&a);
  path = zkt_path("mutex-path");
  {
    zkr_session *ms = zkt_connect(hosts, 10000);
    zkr_mutex *m = NULL;
    zkr_mutex_new(&m, ms, path, NULL);
    is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a mutex holder");
    who_open(&a, path, 3, NULL);
    is(zkr_semaphore_acquire(a.sem, 1, 2000, a.l), ZKR_EFOREIGN,
       "a semaphore on the mutex's path: ZKR_EFOREIGN");
    is(zkt_children(admin, path), 1, "nothing created");
    who_close(&a);
    zkr_mutex_release(m);
    zkr_mutex_free(m);
    zkr_session_close(ms);
  }
  /* a foreign child of leases/ counts */
  path = zkt_path("foreign-lease");
  zkt_create_parents(admin, sub(path, "leases/somebody-else"),
                     zkr__deadline(5000));
  who_open(&a, path, 1, NULL);
  is(zkr_semaphore_acquire(a.sem, 1, 0, a.l), ZKR_EWOULDBLOCK,
     "limit 1 and a foreign child in leases/: no lease");
  zkr__zk_delete(admin, sub(path, "leases/somebody-else"), -1,
                 zkr__deadline(5000));
  is(zkr_semaphore_acquire(a.sem, 1, 0, a.l), ZKR_OK, "without it: a lease");
  zkr_lease_release(a.l[0]);
  who_close(&a);
}

static void test_expired_holder(void) {
  const char *path = zkt_path("expire");
  zkt_statelog lg;
  zkt_statelog_init(&lg);
  zkr_semaphore_options o = {0};
  o.state_fn = zkt_state_fn;
  o.state_user_data = &lg;
  o.id = "holder-1";
  zkr_session *hs = zkt_connect(hosts, 4000);
  zkr_semaphore *h = NULL;
  zkr_semaphore_new(&h, hs, path, 1, &o);
  zkr_lease *hl = NULL;
  is(zkr_semaphore_acquire(h, 1, 5000, &hl), ZKR_OK, "the holder has it");
  const char *res = zkt_path("expire-resource");
  zkt_create_parents(admin, res, zkr__deadline(5000));
  is(zkr_hold_guarded_set(zkr_lease_hold(hl), res, "one", 3, -1, 5000), ZKR_OK,
     "a guarded write while held");
  who w;
  who_open(&w, path, 1, NULL);
  start_async(&w, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "a waiter is admitted");
  ok(zkt_expire(hosts, hs) == 0, "the holder's session is expired");
  ok(zkt_wait_for(zkt_lost_seen, &lg, 10000), "its state callback says LOST");
  is(zkr_lease_state_get(hl), ZKR_LOCK_LOST, "state LOST");
  ok(zkt_wait_for(is_done, &w, 10000) && w.rc == ZKR_OK,
     "the waiter gets the lease");
  is(zkr_hold_guarded_set(zkr_lease_hold(hl), res, "two", 3, -1, 5000),
     ZKR_ELOCKLOST, "the lost holder's guarded write is refused");
  is(zkr_lease_release(hl), ZKR_ELOCKLOST, "release reports the loss");
  zkr_lease_release(w.l[0]);
  who_close(&w);
  zkr_semaphore_free(h);
  zkr_session_close(hs);
  is(zkt_children(admin, sub(path, "leases")), 0, "nothing left");
}

/* A blocking call from a callback, and freeing with leases held. */
static zkr_semaphore *cb_sem;
static const char *cb_path;
static int cb_rc = 1, cb_list_rc = 1, cb_kids_rc = 1;
static void cb_block(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                     void *ud) {
  zkr_lease *x;
  cb_rc = zkr_semaphore_acquire(cb_sem, 1, 0, &x);
  zkr_participant *pl = NULL, *pw = NULL;
  size_t nl = 0, nw = 0;
  cb_list_rc = zkr_semaphore_participants(((who *)ud)->s, cb_path, 2, 1000, &pl,
                                          &nl, &pw, &nw);
  char **kids = NULL;
  size_t nk = 0;
  cb_kids_rc = zkr_session_children(((who *)ud)->s, cb_path, 1000, &kids, &nk);
  on_acquired(sem, rc, l, n, ud);
}

static void test_callback_and_free(void) {
  const char *path = zkt_path("cb");
  who a;
  who_open(&a, path, 2, NULL);
  cb_sem = a.sem;
  cb_path = path;
  a.done = 0;
  is(zkr_semaphore_acquire_async(a.sem, 1, 5000, a.l, cb_block, &a), ZKR_OK,
     "async");
  ok(zkt_wait_for(is_done, &a, 5000) && a.rc == ZKR_OK, "acquired");
  is(cb_rc, ZKR_EDEADLK, "a blocking acquire from its callback: EDEADLK");
  is(cb_list_rc, ZKR_EDEADLK, "so is zkr_semaphore_participants");
  is(cb_kids_rc, ZKR_EDEADLK, "and zkr_session_children");
  start_async(&a, 1, -1);
  ok(zkt_wait_for(is_done, &a, 5000) && a.rc == ZKR_OK, "a second lease");
  zkr_semaphore_free(a.sem);
  a.sem = NULL;
  ok(zkt_wait_for(zkt_bg_idle, a.s, 5000), "deletions done");
  is(zkt_children(admin, sub(path, "leases")), 0,
     "freeing the semaphore released its leases");
  who_close(&a);
}

/* Freeing the semaphore from its own acquisition's callback: the
 * semaphore must outlive the callback's caller (ASan saw the caller
 * unlock a freed mutex). */
static void cb_free(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                    void *ud) {
  (void)l;
  (void)n;
  zkr_semaphore_free(sem);
  on_acquired(sem, rc, l, n, ud);
}

static void test_free_in_callback(void) {
  const char *path = zkt_path("free-in-cb");
  who a;
  who_open(&a, path, 1, NULL);
  a.done = 0;
  is(zkr_semaphore_acquire_async(a.sem, 1, 5000, a.l, cb_free, &a), ZKR_OK,
     "async, freeing the semaphore from its callback");
  ok(zkt_wait_for(is_done, &a, 5000) && a.rc == ZKR_OK,
     "the callback ran and freed it");
  a.sem = NULL;
  ok(zkt_wait_for(zkt_bg_idle, a.s, 5000), "deletions done");
  is(zkt_children(admin, sub(path, "leases")), 0, "its lease was released");
  /* and while another acquisition of it waits */
  who h, b;
  who_open(&h, path, 1, NULL);
  who_open(&b, path, 1, NULL);
  is(zkr_semaphore_acquire(h.sem, 1, 5000, h.l), ZKR_OK, "H holds");
  start_async(&b, 1, -1); /* B waits admitted */
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000), "B waits");
  zkr_semaphore_free(b.sem); /* B's pending acquisition ends, no callback */
  b.sem = NULL;
  ok(zkt_children_become(admin, sub(path, "leases"), 1, 5000) &&
         zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "freeing a semaphore with a pending acquisition deletes its nodes");
  ok(!is_done(&b), "and does not call its callback");
  zkr_lease_release(h.l[0]);
  who_close(&h);
  who_close(&b);
  who_close(&a);
}

/* Closing the session before freeing the semaphore: the semaphore keeps
 * a reference on it (ASan saw zkr_semaphore_free() use the freed
 * session). */
static void test_close_then_free(void) {
  const char *path = zkt_path("close-then-free");
  zkr_session *x = zkt_connect(hosts, 10000);
  zkr_semaphore *sem = NULL;
  is(zkr_semaphore_new(&sem, x, path, 1, NULL), ZKR_OK, "a semaphore");
  zkr_semaphore_options o = {0};
  o.count_path = zkt_path("close-then-free-count");
  zkr_semaphore *counted = NULL;
  is(zkr_semaphore_new(&counted, x, path, 0, &o), ZKR_OK,
     "and one with a shared count");
  is(zkr_session_close(x), ZKR_OK, "the session is closed first");
  zkr_lease *l = NULL;
  is(zkr_semaphore_acquire(sem, 1, 1000, &l), ZKR_ECLOSED,
     "an acquisition on it: ZKR_ECLOSED");
  zkr_semaphore_free(sem);
  zkr_semaphore_free(counted);
  ok(1, "then the semaphores are freed");
}

/* Closing the session while acquisitions wait, admitted and for
 * admission: both end with ZKR_ECLOSED. */
static void test_close_while_waiting(void) {
  const char *path = zkt_path("close-waiting");
  who h, x;
  who_open(&h, path, 1, NULL);
  who_open(&x, path, 1, NULL);
  who y = x; /* a second semaphore object on x's session */
  pthread_mutex_init(&y.mu, NULL);
  zkr_semaphore_new(&y.sem, x.s, path, 1, NULL);
  is(zkr_semaphore_acquire(h.sem, 1, 5000, h.l), ZKR_OK, "H holds");
  start_async(&x, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "one waits admitted");
  start_async(&y, 1, -1);
  ok(zkt_children_become(admin, sub(path, "locks"), 2, 5000),
     "another waits for admission");
  is(zkr_session_close(x.s), ZKR_OK, "their session is closed");
  ok(zkt_wait_for(is_done, &x, 5000) && x.rc == ZKR_ECLOSED,
     "the admitted one ends with ZKR_ECLOSED");
  ok(zkt_wait_for(is_done, &y, 5000) && y.rc == ZKR_ECLOSED,
     "the one waiting for admission too");
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 10000) &&
         zkt_children_become(admin, sub(path, "leases"), 1, 10000),
     "their nodes went with the session");
  zkr_semaphore_free(x.sem);
  zkr_semaphore_free(y.sem);
  pthread_mutex_destroy(&x.mu);
  pthread_mutex_destroy(&y.mu);
  zkr_lease_release(h.l[0]);
  who_close(&h);
}

/* A lost session while admitted: the acquisition starts over in the new
 * session and gets its lease once one is free. */
static void test_lost_while_admitted(void) {
  const char *path = zkt_path("lost-admitted");
  who h, b;
  who_open(&h, path, 1, NULL);
  /* a short session: it notices the expiry sooner (zkt_expire waits 5 s
   * for that; a 10 s session under load took longer once) */
  who_open_t(&b, path, 1, NULL, 4000);
  is(zkr_semaphore_acquire(h.sem, 1, 5000, h.l), ZKR_OK, "H holds");
  start_async(&b, 1, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "B waits admitted");
  int64_t old = zkr_session_id(b.s);
  ok(zkt_expire(hosts, b.s) == 0, "B's session is expired");
  ok(zkt_wait_for(zkt_bg_idle, b.s, 10000), "B settles");
  int64_t now = 0;
  for (int i = 0; i < 500 && (now == 0 || now == old); i++) {
    now = zkr_session_id(b.s);
    usleep(10000);
  }
  ok(now != 0 && now != old, "B has a new session");
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 10000) &&
         zkt_children_become(admin, sub(path, "locks"), 1, 10000),
     "B waits admitted again, with new nodes");
  ok(!is_done(&b), "B still waits");
  zkr_lease_release(h.l[0]);
  ok(zkt_wait_for(is_done, &b, 10000) && b.rc == ZKR_OK,
     "H releases: B gets the lease");
  is(zkt_children(admin, sub(path, "leases")), 1, "one lease node");
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "the admission mutex was left");
  zkr_lease_release(b.l[0]);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000), "nothing left");
  who_close(&h);
  who_close(&b);
}

/* A cancel asked while a lease of a multi-lease acquisition is being
 * granted (its result already on its way to the event thread): the
 * acquisition must still end with ZKR_ECANCELED, not go on to take the
 * next lease and wait for it for ever. The event thread is held up by
 * another acquisition's callback so that the cancel is queued before the
 * grant. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_in, gate_open;
static void cb_gate(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                    void *ud) {
  (void)sem;
  (void)rc;
  (void)l;
  (void)n;
  (void)ud;
  pthread_mutex_lock(&gate_mu);
  gate_in = 1;
  pthread_cond_broadcast(&gate_cv);
  while (!gate_open)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
}
static int gate_entered(void *arg) {
  (void)arg;
  pthread_mutex_lock(&gate_mu);
  int in = gate_in;
  pthread_mutex_unlock(&gate_mu);
  return in;
}

/* The gate's acquisition is started from another thread. (Until its
 * callbacks ran without the semaphore's lock, the call that started it
 * waited for the gate to open when the acquisition ended first, on a
 * loaded machine; test_callback_unlocked checks that no call does now.) */
struct gate_start {
  zkr_semaphore *gate;
  zkr_lease **gl;
};
static void *start_gate(void *arg) {
  struct gate_start *g = arg;
  if (zkr_semaphore_acquire_async(g->gate, 1, 5000, g->gl, cb_gate, NULL) !=
      ZKR_OK)
    tap_bail("the gate's acquire_async");
  return NULL;
}

static void test_cancel_while_granted(void) {
  const char *path = zkt_path("cancel-granted");
  who h, b;
  who_open(&h, path, 3, NULL);
  who_open(&b, path, 3, NULL);
  is(zkr_semaphore_acquire(h.sem, 2, 5000, h.l), ZKR_OK, "H holds 2 of 3");
  start_async(&b, 3, -1);
  ok(zkt_children_become(admin, sub(path, "leases"), 4, 5000),
     "B wants 3: it got one and waits for the 2nd");
  zkr_semaphore *gate = NULL;
  zkr_lease *gl = NULL;
  zkr_semaphore_new(&gate, b.s, zkt_path("cancel-gate"), 1, NULL);
  struct gate_start gs = {gate, &gl};
  pthread_t gth;
  if (pthread_create(&gth, NULL, start_gate, &gs) != 0)
    tap_bail("pthread_create");
  ok(zkt_wait_for(gate_entered, NULL, 5000), "B's event thread is held up");
  is(zkr_semaphore_cancel(b.sem), ZKR_OK, "B is cancelled");
  uint64_t ev = zkr__session_node_events(b.s);
  zkr_lease_release(h.l[1]); /* B's 2nd lease is granted */
  ok(zkt_wait_for_node_events(b.s, ev + 1, 5000), "B's waiter saw the release");
  usleep(300 * 1000); /* let the grant reach the (held up) event thread */
  pthread_mutex_lock(&gate_mu);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(gth, NULL);
  ok(zkt_wait_for(is_done, &b, 10000) && b.rc == ZKR_ECANCELED,
     "B's acquisition ends with ZKR_ECANCELED");
  ok(zkt_children_become(admin, sub(path, "leases"), 1, 5000) &&
         zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "B's nodes are gone: only H's lease is left");
  zkr_lease_release(gl);
  zkr_semaphore_free(gate);
  zkr_lease_release(h.l[0]);
  who_close(&h);
  who_close(&b);
}

/* An acquisition's callback runs without the semaphore's lock: while one
 * blocks, another thread's calls on the same semaphore return (they
 * used to wait for the callback), and zkr_semaphore_free() from another
 * thread waits for it to end. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_in, hold_open, calls_done, calls_ok, free_done;
static void cb_hold(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                    void *ud) {
  (void)sem;
  (void)l;
  (void)n;
  pthread_mutex_lock(&hold_mu);
  hold_in = rc == ZKR_OK ? 1 : -1;
  pthread_cond_broadcast(&hold_cv);
  while (!hold_open)
    pthread_cond_wait(&hold_cv, &hold_mu);
  pthread_mutex_unlock(&hold_mu);
  on_acquired(sem, rc, l, n, ud);
}
static int flag_set(void *arg) {
  pthread_mutex_lock(&hold_mu);
  int v = *(int *)arg;
  pthread_mutex_unlock(&hold_mu);
  return v;
}
static void set_flag(int *f, int v) {
  pthread_mutex_lock(&hold_mu);
  *f = v;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
}
struct other_calls {
  who *w, *second; /* (second: the same semaphore, its own results) */
};
static void *do_other_calls(void *arg) {
  struct other_calls *c = arg;
  zkr_stats st;
  int good =
      zkr_semaphore_stats(c->w->sem, &st, sizeof st) == ZKR_OK && st.held == 1;
  good = good && zkr_semaphore_cancel(c->w->sem) == ZKR_ENOTHELD;
  good = good && zkr_semaphore_acquire_async(c->w->sem, 1, 5000, c->second->l,
                                             on_acquired, c->second) == ZKR_OK;
  set_flag(&calls_ok, good);
  set_flag(&calls_done, 1);
  return NULL;
}
static void *do_free(void *arg) {
  who *w = arg;
  zkr_semaphore_free(w->sem);
  set_flag(&free_done, 1);
  return NULL;
}
static void open_hold(void) {
  set_flag(&hold_open, 1);
}

static void test_callback_unlocked(void) {
  const char *path = zkt_path("cb-unlocked");
  who a;
  who_open(&a, path, 2, NULL);
  is(zkr_semaphore_acquire_async(a.sem, 1, 5000, a.l, cb_hold, &a), ZKR_OK,
     "an acquisition whose callback blocks");
  ok(zkt_wait_for(flag_set, &hold_in, 10000) && hold_in == 1,
     "its callback runs, with the lease, and blocks");
  who b; /* (only its results and leases: it uses a's semaphore) */
  memset(&b, 0, sizeof b);
  pthread_mutex_init(&b.mu, NULL);
  struct other_calls c = {&a, &b};
  pthread_t th;
  if (pthread_create(&th, NULL, do_other_calls, &c) != 0)
    tap_bail("pthread_create");
  ok(zkt_wait_for(flag_set, &calls_done, 10000),
     "meanwhile another thread's calls on the semaphore return");
  ok(flag_set(&calls_ok),
     "stats (one lease held), cancel (none under way), acquire_async of "
     "the second lease");
  if (!flag_set(&calls_done))
    open_hold(); /* (or that thread would wait for ever) */
  pthread_join(th, NULL);
  open_hold();
  ok(zkt_wait_for(is_done, &b, 10000) && b.rc == ZKR_OK &&
         zkt_wait_for(is_done, &a, 10000),
     "once the callback returns, the second acquisition gets its lease");
  is(zkr_lease_release(b.l[0]), ZKR_OK, "and releases it");
  pthread_mutex_destroy(&b.mu);
  /* a free from another thread waits for a callback running */
  hold_in = hold_open = 0;
  a.done = 0;
  is(zkr_semaphore_acquire_async(a.sem, 1, 5000, a.l + 1, cb_hold, &a), ZKR_OK,
     "another acquisition whose callback blocks");
  ok(zkt_wait_for(flag_set, &hold_in, 10000) && hold_in == 1,
     "its callback runs and blocks");
  pthread_t fth;
  if (pthread_create(&fth, NULL, do_free, &a) != 0)
    tap_bail("pthread_create");
  usleep(300 * 1000);
  ok(!flag_set(&free_done), "zkr_semaphore_free() from another thread "
                            "waits for the running callback");
  open_hold();
  pthread_join(fth, NULL);
  a.sem = NULL;
  ok(is_done(&a) && a.rc == ZKR_OK, "the callback ended before the free");
  ok(zkt_wait_for(zkt_bg_idle, a.s, 5000) &&
         zkt_children_become(admin, sub(path, "leases"), 0, 5000) &&
         zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "the free released both leases: nothing left");
  who_close(&a);
}

/* With watch_node, a lease node deleted by another client is LOST at
 * once (without it, only a guarded write would find out). */
static void test_watch_node(void) {
  const char *path = zkt_path("watch-node");
  zkt_statelog lg;
  zkt_statelog_init(&lg);
  zkr_semaphore_options o = {0};
  o.watch_node = 1;
  o.state_fn = zkt_state_fn;
  o.state_user_data = &lg;
  who a;
  who_open(&a, path, 2, &o);
  is(zkr_semaphore_acquire(a.sem, 1, 5000, a.l), ZKR_OK, "a lease");
  char node[512];
  zkr_hold_node(zkr_lease_hold(a.l[0]), node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the lease node");
  ok(zkt_wait_for(zkt_lost_seen, &lg, 10000),
     "the state callback says LOST at once");
  is(zkr_lease_state_get(a.l[0]), ZKR_LOCK_LOST, "the lease is LOST");
  is(zkr_lease_release(a.l[0]), ZKR_ELOCKLOST, "its release says so");
  who_close(&a);
}

/* The admission queue as the contenders see it settle: @n nodes under
 * locks/, none of them @gone, and @leases nodes under leases/. */
struct adm_settled {
  const char *locks, *leases, *gone;
  int n, nleases;
};
static int adm_settled(void *arg) {
  struct adm_settled *a = arg;
  char *q[8];
  int n = zkt_queue_order(admin, a->locks, q, 8);
  int ok = n == a->n;
  for (int i = 0; i < n; i++) {
    if (strcmp(q[i], a->gone) == 0)
      ok = 0;
    free(q[i]);
  }
  return ok && zkt_children(admin, a->leases) == a->nleases;
}

/* A third party deletes the admitted contender's node under locks/ while
 * it waits for a lease, twice, with three contenders and a limit of 2.
 * Each time the contender sees it (it watches its admission node), gives
 * its lease node back and queues for admission again, so one contender
 * at a time waits on leases/, and all three get a lease once the holder
 * releases. (Without that watch the next contender was let in beside it;
 * after two deletions three waited on leases/ with three lease nodes, and
 * nobody held: model/README.md, "What modelling found".) */
static void test_admission_deleted(void) {
  const char *path = zkt_path("admission-deleted");
  char locks[512], leases[512];
  snprintf(locks, sizeof locks, "%s", sub(path, "locks"));
  snprintf(leases, sizeof leases, "%s", sub(path, "leases"));
  who h, w[3];
  who_open(&h, path, 2, NULL);
  for (int i = 0; i < 3; i++)
    who_open(&w[i], path, 2, NULL);
  is(zkr_semaphore_acquire(h.sem, 2, 5000, h.l), ZKR_OK, "H holds both leases");
  start_async(&w[0], 1, 60000);
  ok(zkt_children_become(admin, leases, 3, 5000), "A waits admitted");
  start_async(&w[1], 1, 60000);
  start_async(&w[2], 1, 60000);
  ok(zkt_children_become(admin, locks, 3, 5000),
     "B and C wait for admission behind A");
  for (int round = 1; round <= 2; round++) {
    char *q[8], gone[256] = "";
    int n = zkt_queue_order(admin, locks, q, 8);
    if (n > 0)
      snprintf(gone, sizeof gone, "%s", q[0]);
    for (int i = 0; i < n; i++)
      free(q[i]);
    is(n, 3, "deletion %d: three admission nodes", round);
    char node[800];
    snprintf(node, sizeof node, "%s/%s", locks, gone);
    is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
       "deletion %d: another client deletes the admitted node %s", round, gone);
    struct adm_settled st = {locks, leases, gone, 3, 3};
    ok(zkt_wait_for(adm_settled, &st, 10000),
       "deletion %d: its contender queues again (three admission nodes, "
       "one lease waiter)",
       round);
  }
  for (int i = 0; i < 3; i++)
    ok(!is_done(&w[i]), "contender %d still waits", i);
  zkr_lease_release(h.l[0]);
  zkr_lease_release(h.l[1]);
  int released[3] = {0, 0, 0}, left = 3, most = 0;
  int64_t end = zkt_now_ms() + 30000;
  while (left > 0 && zkt_now_ms() < end) {
    int holding = 0;
    for (int i = 0; i < 3; i++)
      if (!released[i] && is_done(&w[i]))
        holding++;
    if (holding > most)
      most = holding;
    for (int i = 0; i < 3; i++)
      if (!released[i] && is_done(&w[i])) {
        released[i] = 1;
        left--;
        if (w[i].rc == ZKR_OK)
          zkr_lease_release(w[i].l[0]);
        else
          tap_diag("contender %d: %s", i, zkr_strerror(w[i].rc));
      }
    usleep(10000);
  }
  is(left, 0, "H releases: all three contenders got through");
  for (int i = 0; i < 3; i++)
    is(w[i].rc, ZKR_OK, "contender %d got a lease", i);
  ok(most <= 2, "no more than two held at once (%d)", most);
  ok(zkt_children_become(admin, leases, 0, 5000) &&
         zkt_children_become(admin, locks, 0, 5000),
     "nothing left");
  who_close(&h);
  for (int i = 0; i < 3; i++)
    who_close(&w[i]);
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  zkt_root("t-semaphore");
  admin = zkt_connect(hosts, 10000);
  test_bad_input();
  test_layout_and_limit();
  test_many_and_cancel();
  test_shared_count();
  test_foreign();
  test_expired_holder();
  test_callback_and_free();
  test_watch_node();
  test_free_in_callback();
  test_close_then_free();
  test_close_while_waiting();
  test_lost_while_admitted();
  test_cancel_while_granted();
  test_admission_deleted();
  test_callback_unlocked();
  zkr_session_close(admin);
  return tap_done();
}
