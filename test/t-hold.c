/* The hold (zkr_hold) of every recipe against a real standalone server: a
 * mutex's from its acquisition to its release (NULL before, UNLOCKED
 * after), a lease's, a leader's per term (an earlier term's stays LOST and
 * its guarded writes are refused, also once the participant leads again),
 * a lease's release that does not free it (zkr_lease_free() does),
 * the state callback given the hold, NULL taken as a hold that does not
 * hold; and zkr_election_await_change(): told a change either way, a
 * time-out without one. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt-who.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

static _Atomic(zkr_hold *) told_hold;

static void on_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  (void)st;
  (void)ud;
  atomic_store(&told_hold, h);
}

static int hold_lost(void *arg) {
  return zkr_hold_state(arg) == ZKR_LOCK_LOST;
}

static void test_mutex(void) {
  const char *path = zkt_path("mutex");
  zkr_mutex_options o = {0};
  o.state_fn = on_state;
  zkr_mutex *m = NULL;
  is(zkr_mutex_new(&m, admin, path, &o), ZKR_OK, "a mutex");
  ok(zkr_mutex_hold(m) == NULL, "no hold before it is acquired");
  ok(zkr_mutex_hold(NULL) == NULL, "no hold of NULL");
  is(zkr_hold_token(NULL), 0, "NULL: token 0");
  is((int)zkr_hold_state(NULL), ZKR_LOCK_UNLOCKED, "NULL: UNLOCKED");
  char node[1100];
  is(zkr_hold_node(NULL, node, sizeof node), ZKR_ENOTHELD,
     "NULL: ZKR_ENOTHELD for the node");
  is(zkr_hold_guarded_set(NULL, path, "x", 1, -1, 1000), ZKR_ENOTHELD,
     "NULL: a guarded write sends nothing");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired");
  zkr_hold *h = zkr_mutex_hold(m);
  ok(h != NULL, "a hold while held");
  ok(zkr_mutex_hold(m) == h, "the same hold on every call");
  is((int)zkr_hold_state(h), ZKR_LOCK_HELD, "HELD");
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr_hold_node(h, node, sizeof node), ZKR_OK, "its node: %s", node);
  zkr__zk_exists(admin, node, zkr__deadline(5000), &r);
  ok(zkr_hold_token(h) == r.stat.czxid && r.stat.czxid > 0,
     "the token is the node's czxid");
  is(zkr_hold_guarded_set(h, path, "w", 1, -1, 5000), ZKR_OK,
     "a guarded write under the hold");
  int64_t t0 = zkt_now_ms();
  while (atomic_load(&told_hold) == NULL && zkt_now_ms() - t0 < 5000)
    usleep(10000);
  ok(atomic_load(&told_hold) == h, "the state callback is given the hold");
  is(zkr_mutex_release(m), ZKR_OK, "released");
  ok(zkr_mutex_hold(m) == NULL, "no hold once released");
  is((int)zkr_hold_state(h), ZKR_LOCK_UNLOCKED,
     "the released hold reports UNLOCKED");
  is(zkr_hold_token(h), 0, "and token 0");
  is(zkr_hold_guarded_set(h, path, "z", 1, -1, 5000), ZKR_ENOTHELD,
     "and its guarded writes send nothing");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired again");
  zkr_hold *h2 = zkr_mutex_hold(m);
  ok(h2 && zkr_hold_token(h2) > r.stat.czxid, "a larger token");
  zkr_hold_node(h2, node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the node");
  is(zkr_hold_guarded_set(h2, path, "y", 1, -1, 5000), ZKR_ELOCKLOST,
     "a guarded write finds it gone: ZKR_ELOCKLOST");
  is((int)zkr_hold_state(h2), ZKR_LOCK_LOST, "the hold is LOST");
  ok(zkr_mutex_hold(m) == h2, "and given until the release");
  is(zkr_mutex_release(m), ZKR_ELOCKLOST, "the release says it was lost");
  ok(zkr_mutex_hold(m) == NULL, "then no hold");
  zkr_mutex_free(m);
}

static void test_lease(void) {
  const char *path = zkt_path("sem");
  zkr_semaphore *sem = NULL;
  is(zkr_semaphore_new(&sem, admin, path, 2, NULL), ZKR_OK, "a semaphore");
  zkr_lease *l[2];
  is(zkr_semaphore_acquire(sem, 2, 5000, l), ZKR_OK, "two leases");
  zkr_hold *a = zkr_lease_hold(l[0]), *b = zkr_lease_hold(l[1]);
  ok(a && b && a != b, "a hold each");
  ok(zkr_lease_hold(NULL) == NULL, "no hold of NULL");
  ok(zkr_hold_token(a) > 0 && zkr_hold_token(b) > zkr_hold_token(a),
     "tokens in the order taken");
  is((int)zkr_hold_state(b), ZKR_LOCK_HELD, "HELD");
  char node[1100];
  is(zkr_hold_node(a, node, sizeof node), ZKR_OK, "a node under leases/");
  ok(strstr(node, "/leases/") != NULL, "%s", node);
  is(zkr_hold_guarded_set(b, path, "v", 1, -1, 5000), ZKR_OK,
     "a guarded write under a lease");
  is(zkr_lease_release(l[1]), ZKR_OK, "a release");
  is(zkr_lease_release(l[0]), ZKR_OK, "another");
  is((int)zkr_lease_state_get(l[0]), ZKR_LOCK_UNLOCKED,
     "does not free the lease: UNLOCKED");
  is((int)zkr_hold_state(a), ZKR_LOCK_UNLOCKED, "its hold too");
  is(zkr_hold_token(a), 0, "token 0");
  is(zkr_lease_release(l[0]), ZKR_ENOTHELD, "a second release: ZKR_ENOTHELD");
  zkr_lease_free(l[0]);
  zkr_lease_free(NULL);
  ok(1, "zkr_lease_free() frees it (and NULL is a no-op)");
  is(zkr_semaphore_acquire(sem, 1, 5000, l), ZKR_OK,
     "its lease can be taken again");
  zkr_lease_free(l[0]); /* (releases it) */
  is(zkt_children_become(admin, zkt_path("sem/leases"), 0, 5000), 1,
     "zkr_lease_free() of a held lease releases it");
  zkr_semaphore_free(sem); /* (frees the lease left, released or not) */
}

static void test_election(void) {
  const char *path = zkt_path("elect");
  zkt_who x, y;
  zkt_who_open(&x, hosts, path, "x", -1, 10000);
  zkt_who_open(&y, hosts, path, "y", -1, 10000);
  ok(zkr_election_hold(x.e) == NULL, "no hold before joining");
  is(zkr_election_await_change(x.e, 0), ZKR_ETIMEDOUT,
     "await_change with 0: no change");
  is(zkr_election_await_change(NULL, 0), ZKR_EINVAL, "await_change of NULL");
  is(zkr_election_start(x.e), ZKR_OK, "x joins");
  is(zkr_election_await_change(x.e, 10000), ZKR_OK,
     "await_change: x starts leading");
  ok(zkr_election_is_leader(x.e), "x leads");
  zkr_hold *t1 = zkr_election_hold(x.e);
  ok(t1 != NULL && zkr_election_hold(x.e) == t1, "one hold for the term");
  int64_t tok1 = zkr_hold_token(t1);
  ok(tok1 > 0, "with a token");
  is(zkr_hold_guarded_set(t1, path, "1", 1, -1, 5000), ZKR_OK,
     "a guarded write in the first term");
  is(zkr_election_start(y.e), ZKR_OK, "y joins");
  is(zkr_election_await_change(x.e, 300), ZKR_ETIMEDOUT,
     "no change for x while y queues");
  is(zkr_election_resign(x.e), ZKR_OK, "x resigns (and queues again)");
  ok(zkt_wait_for(hold_lost, t1, 5000), "the first term's hold is LOST");
  is(zkr_hold_token(t1), 0, "token 0");
  is(zkr_hold_guarded_set(t1, path, "2", 1, -1, 5000), ZKR_ELOCKLOST,
     "its guarded writes are refused");
  ok(zkr_election_hold(x.e) == NULL, "x has no hold while it does not lead");
  zkt_who_close(&y); /* y leads, then leaves */
  is(zkr_election_await(x.e, 10000), ZKR_OK, "x leads again");
  zkr_hold *t2 = zkr_election_hold(x.e);
  ok(t2 && t2 != t1 && zkr_hold_token(t2) > tok1, "a new term, a new hold");
  is((int)zkr_hold_state(t1), ZKR_LOCK_LOST, "the first term's stays LOST");
  is(zkr_hold_guarded_set(t1, path, "3", 1, -1, 5000), ZKR_ELOCKLOST,
     "and cannot write for the new term");
  is(zkr_hold_guarded_set(t2, path, "4", 1, -1, 5000), ZKR_OK,
     "the new term's can");
  zkt_who_close(&x);
}

/* A thread that waits for a change while the main thread resigns. */
struct waiter {
  zkr_election *e;
  atomic_int rc, done;
};
static void *wait_change(void *arg) {
  struct waiter *w = arg;
  atomic_store(&w->rc, zkr_election_await_change(w->e, 20000));
  atomic_store(&w->done, 1);
  return NULL;
}
static int waiter_done(void *arg) {
  return atomic_load(&((struct waiter *)arg)->done);
}

static void test_await_change(void) {
  const char *path = zkt_path("change");
  zkt_who x;
  zkt_who_open(&x, hosts, path, "x", -1, 10000);
  is(zkr_election_start(x.e), ZKR_OK, "x joins");
  is(zkr_election_await(x.e, 10000), ZKR_OK, "x leads");
  struct waiter w = {.e = x.e};
  pthread_t th;
  pthread_create(&th, NULL, wait_change, &w);
  usleep(200000);
  ok(!atomic_load(&w.done), "a waiter waits while x leads");
  zkr_hold *h = zkr_election_hold(x.e);
  char node[1100];
  zkr_hold_node(h, node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the leader's node");
  ok(zkt_wait_for(waiter_done, &w, 10000), "the waiter wakes");
  is(atomic_load(&w.rc), ZKR_OK, "with ZKR_OK: the leadership changed");
  pthread_join(th, NULL);
  zkt_who_close(&x);
}

int main(void) {
  tap_init(120);
  hosts = zkt_start(1);
  zkt_root("t-hold");
  admin = zkt_connect(hosts, 10000);
  {
    zkr__result r;
    memset(&r, 0, sizeof r);
    zkt_create_parents(admin, zkt_path("x"), zkr__deadline(5000));
    zkr__zk_create(admin, zkt_path("mutex"), "", 0, 0, zkr__deadline(5000), &r);
    zkr__result_clear(&r);
  }
  test_mutex();
  test_lease();
  test_election();
  test_await_change();
  zkr_session_close(admin);
  return tap_done();
}
