/* The maximum hold (max_hold_ms in the options) and the cause of a loss
 * (zkr_hold_lost_cause()) against a real standalone server: a mutex held
 * past its maximum by a holder that never lets go is given up by the
 * holder itself (its node deleted, LOST told, the cause ZKR_LOST_MAX_HOLD,
 * counted under ZKR_FAIL_MAX_HOLD, the lock hook's event says so) and the
 * next contender gets the lock with a larger token; a release before the
 * maximum leaves nothing armed, and each term has its own maximum; a read
 * half and a lease the same; the other causes (node deleted, session
 * closed) and bad options. */
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

/* the lock hook's LOST events, by cause */
static atomic_int hook_lost[8];

static void hook(const zkr_lock_event *ev, void *ud) {
  (void)ud;
  if (ev->type == ZKR_LOCK_EV_LOST && (unsigned)ev->cause < 8)
    atomic_fetch_add(&hook_lost[ev->cause], 1);
}

static int node_exists(const char *node) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  int rc = zkr__zk_exists(admin, node, zkr__deadline(5000), &r);
  return rc == ZKR_OK;
}

static int hook_max_hold(void *arg) {
  (void)arg;
  return atomic_load(&hook_lost[ZKR_FAIL_MAX_HOLD]) > 0;
}

struct waiter {
  zkr_mutex *m;
  int rc;
};

static void *take(void *arg) {
  struct waiter *w = arg;
  w->rc = zkr_mutex_acquire(w->m, 30000);
  return NULL;
}

static void test_options(void) {
  zkr_mutex *m = NULL;
  zkr_mutex_options o = {0};
  o.max_hold_ms = -1;
  is(zkr_mutex_new(&m, admin, zkt_path("bad"), &o), ZKR_EINVAL,
     "a negative max_hold_ms: ZKR_EINVAL");
  ok(m == NULL, "nothing made");
  zkr_rwlock *rw = NULL;
  is(zkr_rwlock_new(&rw, admin, zkt_path("bad"), &o), ZKR_EINVAL,
     "the same for a read-write lock");
  zkr_semaphore *sem = NULL;
  zkr_semaphore_options so = {0};
  so.max_hold_ms = -5;
  is(zkr_semaphore_new(&sem, admin, zkt_path("bad"), 2, &so), ZKR_EINVAL,
     "and for a semaphore");
  is(strcmp(zkr_lost_cause_name(ZKR_LOST_MAX_HOLD), "max-hold"), 0,
     "the cause's name: max-hold");
  is(strcmp(zkr_lost_cause_name(ZKR_LOST_NONE), "none"), 0, "none");
  is(strcmp(zkr_lost_cause_name(ZKR_LOST_SESSION), "session"), 0, "session");
  is(strcmp(zkr_lost_cause_name(ZKR_LOST_DELETED), "deleted"), 0, "deleted");
  is(strcmp(zkr_lost_cause_name((zkr_lost_cause)99), "unknown"), 0, "unknown");
  is((int)zkr_hold_lost_cause(NULL), ZKR_LOST_NONE, "NULL: ZKR_LOST_NONE");
}

/* A holder that never lets go: given up at its maximum, the next one in. */
static void test_wedged_mutex(zkr_session *s) {
  const char *path = zkt_path("wedged");
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_mutex_options o = {0};
  o.max_hold_ms = 700;
  o.state_fn = zkt_state_fn;
  o.state_user_data = &log;
  zkr_mutex *m = NULL, *other = NULL;
  is(zkr_mutex_new(&m, s, path, &o), ZKR_OK, "a mutex with a 0.7 s maximum");
  is(zkr_mutex_new(&other, admin, path, NULL), ZKR_OK, "another contender");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired");
  zkr_hold *h = zkr_mutex_hold(m);
  char node[1100];
  zkr_hold_node(h, node, sizeof node);
  int64_t token = zkr_hold_token(h);
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_NONE, "held: no loss cause");
  struct waiter w = {other, -1};
  pthread_t th;
  pthread_create(&th, NULL, take, &w);
  ok(zkt_wait_for(zkt_lost_seen, &log, 15000), "LOST told, never released");
  is((int)zkr_hold_state(h), ZKR_LOCK_LOST, "the hold is LOST");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_MAX_HOLD,
     "its cause: ZKR_LOST_MAX_HOLD");
  pthread_join(th, NULL);
  is(w.rc, ZKR_OK, "the waiter got the lock");
  ok(zkr_hold_token(zkr_mutex_hold(other)) > token,
     "with a larger token than the given-up hold's");
  ok(!node_exists(node), "the holder deleted its node");
  zkr_stats st;
  is(zkr_mutex_stats(m, &st, sizeof st), ZKR_OK, "figures");
  ok(st.failed[ZKR_FAIL_MAX_HOLD] == 1 && st.failed[ZKR_FAIL_LOST] == 0 &&
         st.hold.count == 1 && st.held == 0,
     "counted once under ZKR_FAIL_MAX_HOLD, not ZKR_FAIL_LOST");
  ok(zkt_wait_for(hook_max_hold, NULL, 5000),
     "the lock hook's LOST event has cause ZKR_FAIL_MAX_HOLD");
  is(zkr_mutex_release(m), ZKR_ELOCKLOST, "the release says it was lost");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_NONE, "released: no cause");
  is(zkr_mutex_release(other), ZKR_OK, "the other releases");

  /* a release before the maximum: nothing fires later */
  zkr_mutex_free(m);
  zkt_statelog log2;
  zkt_statelog_init(&log2);
  o.state_user_data = &log2;
  is(zkr_mutex_new(&m, s, path, &o), ZKR_OK, "a new mutex, the same maximum");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired again");
  is(zkr_mutex_release(m), ZKR_OK, "released at once");
  usleep(1200 * 1000);
  is(zkr_mutex_stats(m, &st, sizeof st), ZKR_OK, "figures");
  ok(st.failed[ZKR_FAIL_MAX_HOLD] == 0 && st.released == 1 &&
         !zkt_lost_seen(&log2),
     "no loss after the release (the maximum's timer went with it)");
  /* each term has its own maximum */
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a new term");
  int64_t t2 = zkr_hold_token(zkr_mutex_hold(m));
  ok(zkt_wait_for(zkt_lost_seen, &log2, 15000), "given up at its maximum too");
  is((int)zkr_hold_lost_cause(zkr_mutex_hold(m)), ZKR_LOST_MAX_HOLD,
     "cause ZKR_LOST_MAX_HOLD (token %lld)", (long long)t2);
  zkr_mutex_free(m);
  zkr_mutex_free(other);
  is(zkt_children_become(admin, path, 0, 5000), 1, "no node left");
}

static void test_read_half(void) {
  const char *path = zkt_path("rw");
  zkr_mutex_options o = {0};
  o.max_hold_ms = 500;
  zkr_rwlock *rw = NULL;
  is(zkr_rwlock_new(&rw, admin, path, &o), ZKR_OK, "a read-write lock");
  zkr_mutex *r = zkr_rwlock_read_lock(rw);
  is(zkr_mutex_acquire(r, 5000), ZKR_OK, "its read half acquired");
  zkr_hold *h = zkr_mutex_hold(r);
  int lost = 0;
  for (int i = 0; i < 150 && !lost; i++, usleep(100000))
    lost = zkr_hold_state(h) == ZKR_LOCK_LOST;
  ok(lost, "the read hold is given up at its maximum");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_MAX_HOLD, "cause ZKR_LOST_MAX_HOLD");
  is(zkt_children_become(admin, path, 0, 5000), 1, "its node deleted");
  zkr_rwlock_free(rw);
}

static void test_lease(void) {
  const char *path = zkt_path("sem");
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_semaphore_options so = {0};
  so.max_hold_ms = 500;
  so.state_fn = zkt_state_fn;
  so.state_user_data = &log;
  zkr_semaphore *sem = NULL;
  is(zkr_semaphore_new(&sem, admin, path, 1, &so), ZKR_OK,
     "a semaphore with a 0.5 s maximum");
  zkr_lease *l[1];
  is(zkr_semaphore_acquire(sem, 1, 5000, l), ZKR_OK, "a lease");
  zkr_hold *h = zkr_lease_hold(l[0]);
  ok(zkt_wait_for(zkt_lost_seen, &log, 15000), "LOST told");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_MAX_HOLD,
     "the lease's cause: ZKR_LOST_MAX_HOLD");
  is(zkt_children_become(admin, zkt_path("sem/leases"), 0, 5000), 1,
     "its node deleted");
  zkr_stats st;
  is(zkr_semaphore_stats(sem, &st, sizeof st), ZKR_OK, "figures");
  ok(st.failed[ZKR_FAIL_MAX_HOLD] == 1 && st.failed[ZKR_FAIL_LOST] == 0,
     "counted under ZKR_FAIL_MAX_HOLD");
  zkr_lease *l2[1];
  is(zkr_semaphore_acquire(sem, 1, 0, l2), ZKR_OK,
     "the lease is free again at once");
  zkr_lease_free(l2[0]);
  zkr_lease_free(l[0]);
  zkr_semaphore_free(sem);
}

/* The other causes. */
static void test_causes(void) {
  const char *path = zkt_path("causes");
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_mutex_options o = {0};
  o.watch_node = 1;
  o.state_fn = zkt_state_fn;
  o.state_user_data = &log;
  zkr_mutex *m = NULL;
  is(zkr_mutex_new(&m, admin, path, &o), ZKR_OK, "a mutex watching its node");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired");
  zkr_hold *h = zkr_mutex_hold(m);
  char node[1100];
  zkr_hold_node(h, node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the node");
  ok(zkt_wait_for(zkt_lost_seen, &log, 10000), "LOST told");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_DELETED, "cause ZKR_LOST_DELETED");
  zkr_mutex_free(m);

  zkr_session *s = zkt_connect(hosts, 10000);
  is(zkr_mutex_new(&m, s, path, NULL), ZKR_OK, "a mutex on its own session");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired");
  h = zkr_mutex_hold(m);
  zkr_session_close(s);
  is((int)zkr_hold_state(h), ZKR_LOCK_LOST, "its session closed: LOST");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_SESSION, "cause ZKR_LOST_SESSION");
  zkr_mutex_free(m);
}

int main(void) {
  tap_init(60);
  hosts = zkt_start(1);
  zkt_root("t-max-hold");
  admin = zkt_connect(hosts, 10000);
  zkt_create_parents(admin, zkt_path("x"), zkr__deadline(5000));
  zkr_session *s = NULL;
  zkr_session_options so = {0};
  so.lock_hook = hook;
  if (zkr_session_new(&s, hosts, &so) != ZKR_OK ||
      zkr_session_wait_connected(s, 10000) != ZKR_OK)
    tap_bail("no session");
  test_options();
  test_wedged_mutex(s);
  test_read_half();
  test_lease();
  test_causes();
  zkr_session_close(s);
  zkr_session_close(admin);
  return tap_done();
}
