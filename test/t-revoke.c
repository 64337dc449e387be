/* Revocation against a real standalone server: a revocable holder (a
 * mutex, a read half, a lease) is told of a request once per hold, with
 * the request's time, and may release from its callback; zkr_revoke()
 * asks exactly the holders (not the waiters), waits for their release,
 * and with a grace period evicts one that does not let go: its node only
 * (the waiter behind it is untouched and holds next, with a larger token),
 * the holder LOST with ZKR_LOST_DELETED; a holder that is not revocable
 * is not told; a creator-only lock refuses a revoker without the
 * credentials (ZKR_ENOAUTH) and admits one with them; in dispatch mode the
 * callback runs in zkr_session_dispatch() only; bad input changes
 * nothing. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

struct holder {
  zkr_mutex *m;
  int release; /* release from the callback */
  atomic_int told;
  _Atomic int64_t requested;
  _Atomic(zkr_hold *) hold;
  atomic_int released_rc;
};

static void on_revoke(zkr_hold *h, int64_t requested_ms, void *ud) {
  struct holder *x = ud;
  atomic_store(&x->hold, h);
  atomic_store(&x->requested, requested_ms);
  if (x->release)
    atomic_store(&x->released_rc, zkr_mutex_release(x->m));
  atomic_fetch_add(&x->told, 1);
}

static int told(void *arg) {
  return atomic_load(&((struct holder *)arg)->told) > 0;
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *node_data(const char *node) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  if (zkr__zk_get(admin, node, zkr__deadline(5000), &r) != ZKR_OK)
    return NULL;
  char *d = r.data;
  r.data = NULL;
  zkr__result_clear(&r);
  return d;
}

static void noop(zkr_mutex *m, int rc, void *ud) {
  (void)m;
  (void)rc;
  (void)ud;
}

static int is_held(void *arg) {
  return zkr_mutex_is_held(arg);
}

static zkr_mutex *revocable(zkr_session *s, const char *path,
                            struct holder *x) {
  zkr_mutex_options o = {0};
  o.revoke_fn = on_revoke;
  o.revoke_user_data = x;
  zkr_mutex *m = NULL;
  if (zkr_mutex_new(&m, s, path, &o) != ZKR_OK)
    tap_bail("mutex");
  x->m = m;
  return m;
}

static void test_release_on_request(void) {
  const char *path = zkt_path("release");
  struct holder x = {0};
  x.release = 1;
  atomic_store(&x.released_rc, 1);
  zkr_mutex *m = revocable(admin, path, &x);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a revocable holder");
  zkr_session *rs = zkt_connect(hosts, 10000);
  zkr_revoke_result r;
  int64_t before = wall_ms();
  is(zkr_revoke(rs, path, 10000, -1, &r), ZKR_OK,
     "zkr_revoke(): the holder released");
  ok(r.holders == 1 && r.released == 1 && r.evicted == 0 && r.held == 0,
     "one holder, released (%d %d %d %d)", r.holders, r.released, r.evicted,
     r.held);
  is(atomic_load(&x.told), 1, "its callback ran once");
  zkr_stats st;
  zkr_mutex_stats(m, &st, sizeof st);
  is((int)st.revocations, 1, "the mutex's figures count one revocation");
  is(atomic_load(&x.released_rc), ZKR_OK, "and released from it");
  int64_t t = atomic_load(&x.requested);
  ok(t > before - 60000 && t < wall_ms() + 60000,
     "with the request's time (%lld)", (long long)t);
  ok(atomic_load(&x.hold) == zkr_mutex_hold(m) || zkr_mutex_hold(m) == NULL,
     "given the mutex's hold");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired again");
  usleep(300 * 1000);
  is(atomic_load(&x.told), 1, "a new hold is not told of the old request");
  zkr_mutex_free(m);
  zkr_session_close(rs);
}

static void test_evict(void) {
  const char *path = zkt_path("evict");
  struct holder x = {0};
  zkr_mutex *m = revocable(admin, path, &x);
  zkt_statelog log;
  zkt_statelog_init(&log);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a holder that ignores requests");
  zkr_hold *h = zkr_mutex_hold(m);
  int64_t token = zkr_hold_token(h);
  char node[1100];
  zkr_hold_node(h, node, sizeof node);
  zkr_session *ws = zkt_connect(hosts, 10000);
  zkr_mutex *w = NULL;
  is(zkr_mutex_new(&w, ws, path, NULL), ZKR_OK, "a waiter");
  is(zkr_mutex_acquire_async(w, 30000, noop, NULL), ZKR_OK, "queued");
  is(zkt_children_become(admin, path, 2, 5000), 1, "two nodes");
  zkr_session *rs = zkt_connect(hosts, 10000);
  zkr_revoke_result r;
  is(zkr_revoke(rs, path, 600, -1, &r), ZKR_ETIMEDOUT,
     "without grace: ZKR_ETIMEDOUT while it holds on");
  ok(r.holders == 1 && r.held == 1, "one holder asked, still held");
  ok(zkt_wait_for(told, &x, 5000), "the holder was told");
  char *d = node_data(node);
  ok(d && strcmp(d, "__REVOKE__") == 0, "its node's data is the request");
  free(d);
  is(zkr_revoke(rs, path, 300, -1, &r), ZKR_ETIMEDOUT, "asked again");
  usleep(300 * 1000);
  is(atomic_load(&x.told), 1, "told once per hold");
  is(zkr_revoke(rs, path, 10000, 500, &r), ZKR_OK, "with a 0.5 s grace: OK");
  ok(r.holders == 1 && r.evicted == 1 && r.held == 0, "evicted");
  zkr_stats ss;
  zkr_session_stats(rs, &ss, sizeof ss);
  is((int)ss.evictions, 1, "the revoker's session counts the eviction");
  int64_t t0 = zkt_now_ms();
  while (zkr_hold_state(h) != ZKR_LOCK_LOST && zkt_now_ms() - t0 < 5000)
    usleep(10000);
  is((int)zkr_hold_state(h), ZKR_LOCK_LOST, "the evicted holder is LOST");
  is((int)zkr_hold_lost_cause(h), ZKR_LOST_DELETED, "cause ZKR_LOST_DELETED");
  ok(zkt_wait_for(is_held, w, 10000), "the waiter holds next");
  ok(zkr_hold_token(zkr_mutex_hold(w)) > token,
     "with a larger token than the evicted one's");
  zkr_mutex_free(m);
  zkr_mutex_free(w);
  zkr_session_close(ws);
  zkr_session_close(rs);
}

static void test_not_revocable(void) {
  const char *path = zkt_path("plain");
  zkr_mutex *m = NULL;
  is(zkr_mutex_new(&m, admin, path, NULL), ZKR_OK, "a holder not revocable");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "acquired");
  zkr_revoke_result r;
  is(zkr_revoke(admin, path, 300, -1, &r), ZKR_ETIMEDOUT,
     "asked, it holds on (nothing tells it)");
  is(zkr_mutex_release(m), ZKR_OK, "released by itself later");
  zkr_mutex_free(m);
  is(zkr_revoke(admin, path, 1000, -1, &r), ZKR_OK, "nothing held: OK");
  is(r.holders, 0, "no holder");
  is(zkr_revoke(admin, zkt_path("nowhere"), 1000, 0, &r), ZKR_OK,
     "a path that does not exist: OK, nothing held");
}

static void test_readers_and_leases(void) {
  const char *path = zkt_path("rw");
  struct holder a = {0}, b = {0};
  zkr_mutex_options o = {0};
  o.revoke_fn = on_revoke;
  zkr_rwlock *r1 = NULL, *r2 = NULL, *wr = NULL;
  o.revoke_user_data = &a;
  is(zkr_rwlock_new(&r1, admin, path, &o), ZKR_OK, "reader 1");
  o.revoke_user_data = &b;
  zkr_session *s2 = zkt_connect(hosts, 10000);
  is(zkr_rwlock_new(&r2, s2, path, &o), ZKR_OK, "reader 2");
  a.m = zkr_rwlock_read_lock(r1);
  b.m = zkr_rwlock_read_lock(r2);
  a.release = b.release = 1;
  is(zkr_mutex_acquire(a.m, 5000), ZKR_OK, "reader 1 holds");
  is(zkr_mutex_acquire(b.m, 5000), ZKR_OK, "reader 2 holds");
  struct holder c = {0};
  o.revoke_user_data = &c;
  zkr_session *s3 = zkt_connect(hosts, 10000);
  is(zkr_rwlock_new(&wr, s3, path, &o), ZKR_OK, "a writer");
  c.m = zkr_rwlock_write_lock(wr);
  is(zkr_mutex_acquire_async(c.m, 30000, noop, NULL), ZKR_OK, "waits");
  is(zkt_children_become(admin, path, 3, 5000), 1, "three nodes");
  zkr_revoke_result r;
  is(zkr_revoke(admin, path, 10000, -1, &r), ZKR_OK,
     "both readers released on request");
  is(r.holders, 2, "the two readers were the holders");
  ok(atomic_load(&a.told) == 1 && atomic_load(&b.told) == 1, "each told once");
  ok(zkt_wait_for(is_held, c.m, 10000), "the writer holds");
  is(atomic_load(&c.told), 0, "the writer, a waiter then, was not asked");
  zkr_rwlock_free(r1);
  zkr_rwlock_free(r2);
  zkr_rwlock_free(wr);
  zkr_session_close(s2);
  zkr_session_close(s3);

  /* leases */
  const char *sp = zkt_path("sem");
  struct holder l = {0};
  zkr_semaphore_options so = {0};
  so.revoke_fn = on_revoke;
  so.revoke_user_data = &l;
  zkr_semaphore *sem = NULL;
  is(zkr_semaphore_new(&sem, admin, sp, 2, &so), ZKR_OK, "a semaphore");
  zkr_lease *ls[2];
  is(zkr_semaphore_acquire(sem, 2, 5000, ls), ZKR_OK, "two leases");
  is(zkr_revoke(admin, sp, 400, -1, &r), ZKR_ETIMEDOUT, "both asked");
  is(r.holders, 2, "two holders");
  int64_t t0 = zkt_now_ms();
  while (atomic_load(&l.told) < 2 && zkt_now_ms() - t0 < 5000)
    usleep(10000);
  is(atomic_load(&l.told), 2, "each lease told once");
  zkr_stats sst;
  zkr_semaphore_stats(sem, &sst, sizeof sst);
  is((int)sst.revocations, 2, "the semaphore's figures count both");
  is(zkr_revoke(admin, sp, 5000, 0, &r), ZKR_OK, "evicted at once (grace 0)");
  is(r.evicted, 2, "both");
  t0 = zkt_now_ms();
  while ((zkr_lease_state_get(ls[0]) != ZKR_LOCK_LOST ||
          zkr_lease_state_get(ls[1]) != ZKR_LOCK_LOST) &&
         zkt_now_ms() - t0 < 5000)
    usleep(10000);
  ok(zkr_lease_state_get(ls[0]) == ZKR_LOCK_LOST &&
         zkr_lease_state_get(ls[1]) == ZKR_LOCK_LOST,
     "both leases LOST at once (their watches)");
  zkr_semaphore_free(sem);
}

static void test_acl(void) {
  const char *path = zkt_path("acl");
  zkr_auth auth = {"digest", "owner:secret"};
  zkr_session_options o = {0};
  o.auth = &auth;
  o.auth_count = 1;
  o.acl = ZKR_ACL_CREATOR;
  zkr_session *os = NULL;
  if (zkr_session_new(&os, hosts, &o) != ZKR_OK ||
      zkr_session_wait_connected(os, 10000) != ZKR_OK)
    tap_bail("creator session");
  zkr_mutex *m = NULL;
  is(zkr_mutex_new(&m, os, path, NULL), ZKR_OK, "a creator-only lock");
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "held");
  char node[1100];
  zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
  zkr_revoke_result r;
  is(zkr_revoke(admin, path, 1000, 0, &r), ZKR_ENOAUTH,
     "a revoker without the credentials: ZKR_ENOAUTH");
  ok(r.refused == 1 && r.held == 1, "refused, still held");
  char *d = node_data(node);
  ok(d && strcmp(d, "__REVOKE__") != 0, "the node is untouched");
  free(d);
  o.acl = ZKR_ACL_OPEN;
  zkr_session *cs = NULL;
  if (zkr_session_new(&cs, hosts, &o) != ZKR_OK ||
      zkr_session_wait_connected(cs, 10000) != ZKR_OK)
    tap_bail("credential session");
  is(zkr_revoke(cs, path, 5000, 0, &r), ZKR_OK,
     "with the credentials: evicted");
  is(r.evicted, 1, "one eviction");
  zkr_mutex_free(m);
  zkr_session_close(cs);
  zkr_session_close(os);
}

static void test_dispatch(void) {
  const char *path = zkt_path("dispatch");
  zkr_session *ds = NULL;
  zkr_session_options o = {0};
  o.dispatch = 1;
  if (zkr_session_new(&ds, hosts, &o) != ZKR_OK ||
      zkr_session_wait_connected(ds, 10000) != ZKR_OK)
    tap_bail("dispatch session");
  struct holder x = {0};
  zkr_mutex *m = revocable(ds, path, &x);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a holder in dispatch mode");
  zkr_revoke_result r;
  is(zkr_revoke(admin, path, 500, -1, &r), ZKR_ETIMEDOUT, "asked");
  usleep(300 * 1000);
  is(atomic_load(&x.told), 0, "not told outside zkr_session_dispatch()");
  int64_t t0 = zkt_now_ms();
  while (atomic_load(&x.told) == 0 && zkt_now_ms() - t0 < 5000) {
    zkr_session_dispatch(ds, 0);
    usleep(10000);
  }
  is(atomic_load(&x.told), 1, "told by zkr_session_dispatch()");
  zkr_mutex_free(m);
  zkr_session_close(ds);
}

static void test_bad_input(void) {
  zkr_revoke_result r;
  memset(&r, 0x55, sizeof r);
  is(zkr_revoke(NULL, zkt_path("x"), 1000, -1, &r), ZKR_EINVAL, "NULL session");
  is(r.holders, 0, "the result is cleared");
  is(zkr_revoke(admin, zkt_path("x"), -1, -1, &r), ZKR_EINVAL,
     "a negative timeout");
  is(zkr_revoke(admin, "relative", 1000, -1, &r), ZKR_EBADPATH, "a bad path");
  is(zkr_revoke(admin, "/", 1000, -1, NULL), ZKR_EBADPATH, "\"/\"");
  zkr_mutex_options o = {0};
  o.max_hold_ms = 0;
  o.revoke_fn = on_revoke;
  o.reserved_[0] = 1;
  zkr_mutex *m = NULL;
  is(zkr_mutex_new(&m, admin, zkt_path("x"), &o), ZKR_EINVAL,
     "reserved_ still checked after the new fields");
}

int main(void) {
  tap_init(120);
  hosts = zkt_start(1);
  zkt_root("t-revoke");
  admin = zkt_connect(hosts, 10000);
  zkt_create_parents(admin, zkt_path("x"), zkr__deadline(5000));
  test_bad_input();
  test_release_on_request();
  test_evict();
  test_not_revocable();
  test_readers_and_leases();
  test_acl();
  test_dispatch();
  zkr_session_close(admin);
  return tap_done();
}
