/* The mutex against a real standalone server: API behaviour, bad input,
 * time-outs and cancellation leaving nothing behind, async acquisition,
 * reentrancy, fencing tokens, guarded writes, expiry of a holder. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static const char *root;
static zkr_session *admin;

static zkr_session *connect_s(int timeout_ms) {
  return zkt_connect(hosts, timeout_ms);
}

static int nchildren(const char *path) {
  return zkt_children(admin, path);
}

static int settled_children(zkr_session *s, const char *path) {
  return zkt_settled_children(s, admin, path);
}

static void test_bad_input(zkr_session *s) {
  zkr_mutex *m = (zkr_mutex *)0x1;
  static const char *bad[] = {"relative",     "//",      "/a//b", "/a/",
                              "/a/./b",       "/a/../b", "/",     "/zookeeper",
                              "/zookeeper/x", "/a\nb",   "",      "/a\x01"};
  int before = nchildren(root);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    is(zkr_mutex_new(&m, s, bad[i], NULL), ZKR_EBADPATH,
       "lock path #%zu refused", i);
  char longp[1100];
  longp[0] = '/';
  memset(longp + 1, 'x', sizeof longp - 2);
  longp[sizeof longp - 1] = '\0';
  is(zkr_mutex_new(&m, s, longp, NULL), ZKR_EBADPATH, "over-long path refused");
  is(zkr_mutex_new(&m, s, NULL, NULL), ZKR_EBADPATH, "NULL path refused");
  is(zkr_mutex_new(&m, NULL, "/a", NULL), ZKR_EINVAL, "NULL session");
  is(zkr_mutex_new(NULL, s, "/a", NULL), ZKR_EINVAL, "NULL out");
  ok(m == (zkr_mutex *)0x1, "*out untouched");
  const char *bado = zkt_path("bad-options");
  is(zkr_mutex_new(&m, s, bado, &(zkr_mutex_options){.id = ""}), ZKR_EINVAL,
     "empty id refused");
  is(zkr_mutex_new(&m, s, bado, &(zkr_mutex_options){.id = "a\nb"}), ZKR_EINVAL,
     "control char refused");
  char longid[300];
  memset(longid, 'i', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  is(zkr_mutex_new(&m, s, bado, &(zkr_mutex_options){.id = longid}), ZKR_EINVAL,
     "over-long id refused");
  is(zkr_mutex_new(&m, s, bado, &(zkr_mutex_options){.reserved_[0] = 1}),
     ZKR_EINVAL, "a non-zero reserved byte refused");
  zkr_mutex_options tail = {.reentrant = 1};
  tail.reserved_[sizeof tail.reserved_ - 1] = 1;
  is(zkr_mutex_new(&m, s, bado, &tail), ZKR_EINVAL,
     "a non-zero last reserved byte refused");
  zkr_rwlock *rw = (zkr_rwlock *)0x1;
  is(zkr_rwlock_new(&rw, s, bado, &(zkr_mutex_options){.id = ""}), ZKR_EINVAL,
     "rwlock: empty id refused");
  ok(m == (zkr_mutex *)0x1 && rw == (zkr_rwlock *)0x1, "*out untouched");
  is(zkr_mutex_acquire(NULL, 0), ZKR_EINVAL, "acquire(NULL)");
  is(zkr_mutex_release(NULL), ZKR_EINVAL, "release(NULL)");
  is(zkr_mutex_cancel(NULL), ZKR_EINVAL, "cancel(NULL)");
  is(zkr_mutex_acquire_async(NULL, 0, NULL, NULL), ZKR_EINVAL,
     "acquire_async(NULL)");
  ok(!zkr_mutex_is_held(NULL) && zkr_hold_token(zkr_mutex_hold(NULL)) == 0 &&
         zkr_mutex_hold_count(NULL) == 0,
     "queries on NULL");
  zkr_mutex_free(NULL);
  is(nchildren(root), before, "nothing was created on the server");

  zkr_mutex *ok_m = NULL;
  is(zkr_mutex_new(&ok_m, s, zkt_path("never-used"), NULL), ZKR_OK,
     "a valid mutex");
  is(zkr_mutex_release(ok_m), ZKR_ENOTHELD, "release when not held");
  is(zkr_mutex_cancel(ok_m), ZKR_EINVAL, "cancel with nothing pending");
  is(zkr_mutex_acquire_async(ok_m, 0, NULL, NULL), ZKR_EINVAL,
     "acquire_async without a callback");
  char buf[64];
  is(zkr_hold_node(zkr_mutex_hold(ok_m), buf, sizeof buf), ZKR_ENOTHELD,
     "node: not held");
  zkr_mutex_free(ok_m);
  is(nchildren(zkt_path("never-used")), -1,
     "a mutex sends nothing before it is used");
  is(nchildren(bado), -1, "nothing was created for refused options");
}

/* Options in one expression: a compound literal that dies at once (the
 * id is copied), NULL and an all-zero struct (every default: not
 * reentrant, "host=H pid=P" as the data). */
static void test_options(zkr_session *s) {
  const char *path = zkt_path("options");
  zkr_mutex *a = NULL, *b = NULL, *c = NULL;
  {
    char id[] = "worker-1";
    is(zkr_mutex_new(&a, s, path,
                     &(zkr_mutex_options){.reentrant = 1, .id = id}),
       ZKR_OK, "a compound literal");
    memset(id, 'x', sizeof id - 1); /* the caller's string changes */
  }
  is(zkr_mutex_new(&b, s, path, NULL), ZKR_OK, "NULL options");
  is(zkr_mutex_new(&c, s, path, &(zkr_mutex_options){0}), ZKR_OK,
     "all-zero options");
  is(zkr_mutex_acquire(a, 5000), ZKR_OK, "a acquires");
  is(zkr_mutex_acquire(a, 5000), ZKR_OK, "... and again: reentrant");
  is(zkr_mutex_hold_count(a), 2, "hold count 2");
  zkr_participant *p = NULL;
  size_t n = 0;
  is(zkr_mutex_participants(s, path, 5000, &p, &n), ZKR_OK, "participants");
  ok(n == 1 && strstr(p[0].data, " id=worker-1") != NULL,
     "the id as given, copied (%s)", n ? p[0].data : "none");
  zkr_participants_free(p, n);
  zkr_mutex_release(a);
  zkr_mutex_release(a);
  is(zkr_mutex_acquire(b, 5000), ZKR_OK, "b (defaults) acquires");
  is(zkr_mutex_acquire(b, 0), ZKR_EBUSY, "... not reentrant: ZKR_EBUSY");
  p = NULL;
  n = 0;
  zkr_mutex_participants(s, path, 5000, &p, &n);
  ok(n == 1 && strstr(p[0].data, " id=") == NULL, "no id by default (%s)",
     n ? p[0].data : "none");
  zkr_participants_free(p, n);
  zkr_mutex_release(b);
  is(zkr_mutex_acquire(c, 5000), ZKR_OK, "c (zeros) acquires");
  is(zkr_mutex_acquire(c, 0), ZKR_EBUSY, "... not reentrant: ZKR_EBUSY");
  zkr_mutex_release(c);
  zkr_mutex_free(a);
  zkr_mutex_free(b);
  zkr_mutex_free(c);
}

static void test_basic(zkr_session *s) {
  const char *path = zkt_path("basic");
  zkr_mutex_options o = {0};
  o.id = "job-7";
  zkr_mutex *a = NULL, *b = NULL;
  is(zkr_mutex_new(&a, s, path, &o), ZKR_OK, "mutex a");
  is(zkr_mutex_new(&b, s, path, NULL), ZKR_OK, "mutex b, same session");
  is(zkr_mutex_state_get(a), ZKR_LOCK_UNLOCKED, "UNLOCKED at first");
  is(zkr_mutex_acquire(a, -1), ZKR_OK, "a acquires (parents created)");
  ok(zkr_mutex_is_held(a), "a is held");
  is(zkr_mutex_state_get(a), ZKR_LOCK_HELD, "state HELD");
  is(zkr_mutex_hold_count(a), 1, "hold count 1");
  int64_t t1 = zkr_hold_token(zkr_mutex_hold(a));
  ok(t1 > 0, "fencing token %lld", (long long)t1);
  char node[512];
  is(zkr_hold_node(zkr_mutex_hold(a), node, sizeof node), ZKR_OK, "node path");
  const char *base = strrchr(node, '/') + 1;
  ok(strncmp(base, "_c_", 3) == 0 && strlen(base) == 3 + 36 + 1 + 5 + 10 &&
         strstr(base, "-lock-") == base + 3 + 36,
     "Curator's naming: %s", base);
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_get(admin, node, zkr__deadline(5000), &r), ZKR_OK, "read node");
  ok(r.data && strstr(r.data, "host=") && strstr(r.data, " pid=") &&
         strstr(r.data, " id=job-7"),
     "node data identifies the contender: %s", r.data ? r.data : "");
  ok(r.stat.ephemeralOwner == zkr_session_id(s) && r.stat.czxid == t1,
     "ephemeral, ours, czxid = token");
  zkr__result_clear(&r);
  is(zkr_mutex_acquire(a, -1), ZKR_EBUSY, "a plain mutex is not reentrant");

  is(zkr_mutex_acquire(b, 0), ZKR_EWOULDBLOCK,
     "b on the same session: try-lock fails (they exclude each other)");
  is(settled_children(s, path), 1, "try-lock left no node");
  int64_t t0 = zkt_now_ms();
  is(zkr_mutex_acquire(b, 300), ZKR_ETIMEDOUT, "b times out");
  int64_t took = zkt_now_ms() - t0;
  ok(took >= 250, "after its deadline (%lld ms)", (long long)took);
  is(settled_children(s, path), 1, "time-out left no node");

  zkr_participant *p = NULL;
  size_t n = 0;
  is(zkr_mutex_participants(s, path, 5000, &p, &n), ZKR_OK, "participants");
  ok(n == 1 && p[0].is_holder && p[0].session_id == zkr_session_id(s) &&
         p[0].czxid == t1 && strstr(p[0].data, "id=job-7"),
     "one participant, the holder");
  ok(n == 1 && p[0].role == ZKR_ROLE_LOCK, "in the role lock (%s)",
     n ? zkr_role_name(p[0].role) : "?");
  zkr_participants_free(p, n);

  is(zkr_mutex_release(a), ZKR_OK, "a releases");
  ok(!zkr_mutex_is_held(a) && zkr_mutex_state_get(a) == ZKR_LOCK_UNLOCKED,
     "a not held");
  is(zkr_mutex_release(a), ZKR_ENOTHELD, "a second release: ZKR_ENOTHELD");
  is(zkr_mutex_acquire(b, 0), ZKR_OK, "b acquires with try-lock");
  int64_t t2 = zkr_hold_token(zkr_mutex_hold(b));
  ok(t2 > t1, "a later acquisition has a larger token (%lld > %lld)",
     (long long)t2, (long long)t1);
  is(zkr_mutex_release(b), ZKR_OK, "b releases");
  is(settled_children(s, path), 0, "no node left");
  zkr_mutex_free(a);
  zkr_mutex_free(b);
}

static void test_cancel_timeout_watches(zkr_session *s) {
  const char *path = zkt_path("cancel");
  zkr_session *s2 = connect_s(10000);
  zkr_mutex *h = NULL, *w = NULL;
  zkr_mutex_new(&h, s, path, NULL);
  zkr_mutex_new(&w, s2, path, NULL);
  is(zkr_mutex_acquire(h, -1), ZKR_OK, "holder acquires");
  int64_t base = zkt_watch_count();
  ok(base >= 0, "server watch count %lld", (long long)base);

  zkt_canceller c = {w, 300};
  pthread_t th;
  pthread_create(&th, NULL, zkt_cancel_later, &c);
  is(zkr_mutex_acquire(w, -1), ZKR_ECANCELED,
     "a waiter cancelled from another thread");
  pthread_join(th, NULL);
  is(settled_children(s2, path), 1, "cancellation left no node");
  usleep(100000);
  is(zkt_watch_count(), base, "and no watch on the server");
  is(zkt_watches_of(1, zkr_session_id(s2), NULL, 0), 0,
     "wchc lists no watch of the waiter's session");

  is(zkr_mutex_acquire(w, 400), ZKR_ETIMEDOUT, "a waiter times out");
  is(settled_children(s2, path), 1, "time-out left no node");
  usleep(100000);
  is(zkt_watch_count(), base, "and no watch");

  /* The holder releases after the cancelled waiter left: the waiter
   * must not get the lock. */
  is(zkr_mutex_release(h), ZKR_OK, "holder releases");
  usleep(200000);
  ok(!zkr_mutex_is_held(w), "the cancelled waiter was never granted it");
  is(zkr_mutex_state_get(w), ZKR_LOCK_UNLOCKED, "it stays UNLOCKED");
  zkr_mutex_free(h);
  zkr_mutex_free(w);
  zkr_session_close(s2);
}

/* ---- async ---- */
struct asy {
  pthread_mutex_t mu;
  int calls;
  int rc;
  int deadlk;
  pthread_t thread;
};

static void on_acquired(zkr_mutex *m, int rc, void *ud) {
  struct asy *a = ud;
  int d = zkr_mutex_acquire(m, 10); /* blocking from a callback */
  pthread_mutex_lock(&a->mu);
  a->calls++;
  a->rc = rc;
  a->deadlk = d;
  a->thread = pthread_self();
  pthread_mutex_unlock(&a->mu);
}

static int asy_called(void *arg) {
  struct asy *a = arg;
  pthread_mutex_lock(&a->mu);
  int c = a->calls;
  pthread_mutex_unlock(&a->mu);
  return c > 0;
}

static void test_async(zkr_session *s) {
  const char *path = zkt_path("async");
  zkr_mutex *h = NULL, *w = NULL;
  zkr_mutex_new(&h, s, path, NULL);
  zkr_mutex_new(&w, s, path, NULL);
  zkr_mutex_acquire(h, -1);
  struct asy a;
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  is(zkr_mutex_acquire_async(w, -1, on_acquired, &a), ZKR_OK,
     "async acquisition started");
  is(zkr_mutex_acquire_async(w, -1, on_acquired, &a), ZKR_EBUSY,
     "a second one on the same object: ZKR_EBUSY");
  usleep(200000);
  ok(!asy_called(&a), "not called while held by another");
  zkr_mutex_release(h);
  ok(zkt_wait_for(asy_called, &a, 5000), "callback after the release");
  is(a.rc, ZKR_OK, "with ZKR_OK");
  is(a.calls, 1, "exactly once");
  ok(!pthread_equal(a.thread, pthread_self()), "on another thread");
  is(a.deadlk, ZKR_EDEADLK, "blocking acquire from the callback: EDEADLK");
  ok(zkr_mutex_is_held(w), "held");
  zkr_mutex_release(w);

  /* async with a deadline, and an async acquisition cancelled: the
   * callback runs once with the error */
  zkr_mutex_acquire(h, -1);
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  zkr_mutex_acquire_async(w, 200, on_acquired, &a);
  ok(zkt_wait_for(asy_called, &a, 5000), "async time-out reported");
  is(a.rc, ZKR_ETIMEDOUT, "ZKR_ETIMEDOUT");
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  zkr_mutex_acquire_async(w, -1, on_acquired, &a);
  usleep(100000);
  is(zkr_mutex_cancel(w), ZKR_OK, "cancel the async acquisition");
  ok(zkt_wait_for(asy_called, &a, 5000), "callback ran");
  is(a.rc, ZKR_ECANCELED, "with ZKR_ECANCELED");
  zkr_mutex_release(h);
  usleep(200000);
  is(a.calls, 1, "and never again");
  ok(!zkr_mutex_is_held(w), "not granted after cancellation");

  /* free with an async acquisition pending: no callback afterwards */
  zkr_mutex_acquire(h, -1);
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  zkr_mutex_acquire_async(w, -1, on_acquired, &a);
  usleep(100000);
  zkr_mutex_free(w);
  zkr_mutex_release(h);
  usleep(300000);
  is(a.calls, 0, "freed while pending: the callback never runs");
  is(settled_children(s, path), 0, "and its node is gone");
  zkr_mutex_free(h);
}

/* ---- reentrancy ---- */
struct other {
  zkr_mutex *m;
  int acq_rc, rel_rc;
};
static void *other_thread(void *arg) {
  struct other *o = arg;
  o->acq_rc = zkr_mutex_acquire(o->m, 0);
  o->rel_rc = zkr_mutex_release(o->m);
  return NULL;
}

static void test_reentrant(zkr_session *s) {
  const char *path = zkt_path("reentrant");
  zkr_mutex_options o = {0};
  o.reentrant = 1;
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, path, &o);
  is(zkr_mutex_acquire(m, -1), ZKR_OK, "reentrant: first acquire");
  int64_t t = zkr_hold_token(zkr_mutex_hold(m));
  is(zkr_mutex_acquire(m, -1), ZKR_OK, "second acquire by the same thread");
  is(zkr_mutex_acquire(m, 0), ZKR_OK, "third (try-lock)");
  is(zkr_mutex_hold_count(m), 3, "hold count 3");
  is(zkr_hold_token(zkr_mutex_hold(m)), t, "same node, same token");
  is(nchildren(path), 1, "one node");
  struct other ot = {m, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, other_thread, &ot);
  pthread_join(th, NULL);
  is(ot.acq_rc, ZKR_EBUSY, "another thread cannot reenter");
  is(ot.rel_rc, ZKR_EBUSY, "nor release");
  is(zkr_mutex_release(m), ZKR_OK, "release 1");
  is(zkr_mutex_release(m), ZKR_OK, "release 2");
  ok(zkr_mutex_is_held(m) && zkr_mutex_hold_count(m) == 1, "still held once");
  is(zkr_mutex_release(m), ZKR_OK, "release 3");
  ok(!zkr_mutex_is_held(m) && zkr_mutex_hold_count(m) == 0, "released");
  is(settled_children(s, path), 0, "node gone");
  zkr_mutex_free(m);
}

/* ---- guarded writes and a holder whose session expires ---- */

static int held_by(void *arg) {
  return zkr_mutex_is_held(arg);
}

static void test_guarded_and_expiry(void) {
  const char *path = zkt_path("guarded");
  char res[512];
  snprintf(res, sizeof res, "%s/resource", root);
  zkr__zk_create(admin, res, "0", 1, 0, zkr__deadline(5000), NULL);
  zkr_session *s1 = connect_s(6000), *s2 = connect_s(6000);
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_mutex_options o = {0};
  o.state_fn = zkt_state_fn;
  o.state_user_data = &log;
  zkr_mutex *m1 = NULL, *m2 = NULL;
  zkr_mutex_new(&m1, s1, path, &o);
  zkr_mutex_new(&m2, s2, path, NULL);
  is(zkr_mutex_acquire(m1, -1), ZKR_OK, "holder 1 acquires");
  is(zkr_hold_guarded_set(zkr_mutex_hold(m1), res, "1", 1, -1, 5000), ZKR_OK,
     "guarded write while holding");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_get(admin, res, zkr__deadline(5000), &r);
  ok(r.data && strcmp(r.data, "1") == 0, "applied");
  zkr__result_clear(&r);
  is(zkr_hold_guarded_set(zkr_mutex_hold(m2), res, "x", 1, -1, 5000),
     ZKR_ENOTHELD, "guarded write without the lock: refused, nothing sent");
  is(zkr_hold_guarded_set(zkr_mutex_hold(m1), "/no-such-node-zkr", "x", 1, -1,
                          5000),
     ZKR_ENONODE, "a failing op of the caller: its error");
  ok(zkr_mutex_is_held(m1), "still held after a failed guarded write");

  struct asy a2;
  memset(&a2, 0, sizeof a2);
  pthread_mutex_init(&a2.mu, NULL);
  zkr_mutex_acquire_async(m2, -1, on_acquired, &a2);
  is(zkt_expire(hosts, s1), 0, "holder 1's session expired");
  ok(zkt_wait_for(zkt_lost_seen, &log, 15000), "LOST callback");
  ok(!zkr_mutex_is_held(m1), "is_held() false");
  is(zkr_mutex_state_get(m1), ZKR_LOCK_LOST, "state LOST");
  ok(zkt_wait_for(held_by, m2, 15000), "the next waiter acquires");
  is(zkr_hold_guarded_set(zkr_mutex_hold(m1), res, "2", 1, -1, 5000),
     ZKR_ELOCKLOST, "old holder's guarded write refused");
  memset(&r, 0, sizeof r);
  zkr__zk_get(admin, res, zkr__deadline(5000), &r);
  ok(r.data && strcmp(r.data, "1") == 0, "the resource is untouched");
  zkr__result_clear(&r);
  is(zkr_mutex_release(m1), ZKR_ELOCKLOST, "releasing a lost lock says so");
  is(zkr_mutex_release(m1), ZKR_ENOTHELD, "once");

  /* A holder whose node is deleted by someone else: the guarded write
   * finds out. */
  char node[512];
  zkr_hold_node(zkr_mutex_hold(m2), node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "admin deletes holder 2's node");
  is(zkr_hold_guarded_set(zkr_mutex_hold(m2), res, "3", 1, -1, 5000),
     ZKR_ELOCKLOST, "guarded write: ZKR_ELOCKLOST");
  is(zkr_mutex_state_get(m2), ZKR_LOCK_LOST, "state LOST");
  zkr_mutex_free(m1);
  zkr_mutex_free(m2);
  zkr_session_close(s1);
  zkr_session_close(s2);
  zkr__zk_delete(admin, res, -1, zkr__deadline(5000));
}

/* Wait until session @s holds @want data watches on server 1 (from wchc),
 * the first on @path when @want is 1 and @path is not NULL. A timeout of
 * 0 looks once. */
/* ---- the queue changing under a waiter ---- */
static int asy_rc(struct asy *a, int *calls) {
  pthread_mutex_lock(&a->mu);
  int rc = a->rc;
  *calls = a->calls;
  pthread_mutex_unlock(&a->mu);
  return rc;
}

/* A waiter whose watched node goes while other nodes it listed may still
 * be there must look again, never hold on the event alone: a node deleted
 * by a third party (as an expired waiter's is), a setData on the node it
 * watches, and a waiter in front of it that gives up. The waiters watch
 * their own node (watch_node), so B, whose node was deleted under it,
 * queues again instead of being granted the lock. */
static void test_queue_changes(zkr_session *s) {
  const char *path = zkt_path("middle");
  enum { W = 4 }; /* waiters A B C D behind the holder H */
  zkr_session *ws[W];
  zkr_mutex *h = NULL, *m[W];
  struct asy a[W];
  char *names[W + 2] = {0};
  zkr_mutex_options o = {0};
  o.watch_node = 1;
  zkr_mutex_new(&h, s, path, NULL);
  is(zkr_mutex_acquire(h, -1), ZKR_OK, "H holds");
  int queued = 1;
  for (int i = 0; i < W; i++) {
    ws[i] = connect_s(10000);
    m[i] = NULL;
    zkr_mutex_new(&m[i], ws[i], path, &o);
    memset(&a[i], 0, sizeof a[i]);
    pthread_mutex_init(&a[i].mu, NULL);
    zkr_mutex_acquire_async(m[i], -1, on_acquired, &a[i]);
    queued &= zkt_watches_become(ws[i], NULL, 1, 5000);
  }
  ok(queued, "A, B, C, D queued behind H, one watch each");
  int n = zkt_queue_order(admin, path, names, W + 2);
  is(n, W + 1, "five nodes, in queue order");
  if (n != W + 1) {
    tap_bail("queue not as expected");
  }
  char want[512]; /* the node C should watch */
  snprintf(want, sizeof want, "%s/%s", path, names[2]);
  ok(zkt_watches_become(ws[2], want, 1, 0),
     "C watches B, the node just before its own");

  /* B's node deleted by a third party: C has H and A left of its list */
  char *bpath = zkr__path_join(path, names[2]);
  is(zkr__zk_delete(admin, bpath, -1, zkr__deadline(5000)), ZKR_OK,
     "a third party deletes B's node (as B's expiry would)");
  snprintf(want, sizeof want, "%s/%s", path, names[1]);
  ok(zkt_watches_become(ws[2], want, 1, 5000),
     "C looks again and now watches A");
  int calls;
  asy_rc(&a[2], &calls);
  is(calls, 0, "C is not granted the lock while H holds");

  /* setData on A's node: C's watch fires, C watches A again */
  char *apath = zkr__path_join(path, names[1]);
  is(zkr__zk_set(admin, apath, "x", 1, -1, zkr__deadline(5000)), ZKR_OK,
     "a third party sets data on A's node");
  usleep(300000);
  ok(zkt_watches_become(ws[2], want, 1, 0), "C still watches A");
  int64_t p0 = zkt_mntr(1, "zk_packets_received");
  usleep(300000);
  int64_t p1 = zkt_mntr(1, "zk_packets_received");
  ok(p0 >= 0 && p1 - p0 < 20,
     "with one watch again, not a loop of re-watching (%lld requests "
     "in 0.3 s)",
     (long long)(p1 - p0));
  asy_rc(&a[2], &calls);
  is(calls, 0, "and is still not granted the lock");

  /* A gives up: C has H left of its list */
  is(zkr_mutex_cancel(m[0]), ZKR_OK, "A cancels");
  snprintf(want, sizeof want, "%s/%s", path, names[0]);
  ok(zkt_watches_become(ws[2], want, 1, 5000), "C now watches H");
  is(calls, 0, "still not granted while H holds");
  int rc = asy_rc(&a[0], &calls);
  ok(calls == 1 && rc == ZKR_ECANCELED, "A was told ZKR_ECANCELED");

  is(zkr_mutex_release(h), ZKR_OK, "H releases");
  ok(zkt_wait_for(asy_called, &a[2], 5000), "C is granted the lock");
  rc = asy_rc(&a[2], &calls);
  is(rc, ZKR_OK, "with ZKR_OK");
  asy_rc(&a[3], &calls);
  int dcalls = calls;
  asy_rc(&a[1], &calls);
  ok(dcalls == 0 && calls == 0, "D and B (queued again at the end) wait");
  is(zkr_mutex_release(m[2]), ZKR_OK, "C releases");
  ok(zkt_wait_for(asy_called, &a[3], 5000), "D is granted the lock next");
  asy_rc(&a[1], &calls);
  is(calls, 0, "B still waits");
  is(zkr_mutex_release(m[3]), ZKR_OK, "D releases");
  ok(zkt_wait_for(asy_called, &a[1], 5000), "B, requeued, gets it last");
  is(zkr_mutex_release(m[1]), ZKR_OK, "B releases");
  for (int i = 0; i < W; i++)
    zkt_wait_for(zkt_bg_idle, ws[i], 10000);
  is(settled_children(s, path), 0, "no node left");
  free(apath);
  free(bpath);
  for (int i = 0; i < W + 2; i++)
    free(names[i]);
  for (int i = 0; i < W; i++) {
    zkr_mutex_free(m[i]);
    zkr_session_close(ws[i]);
    pthread_mutex_destroy(&a[i].mu);
  }
  zkr_mutex_free(h);
}

/* zkr_mutex_options.watch_node: a deletion by another client is LOST at
 * once, with the callback, without any call on the mutex; release after
 * that says so; with the option and no deletion, release is plain. */
static void test_watch_node(zkr_session *s) {
  zkt_statelog log;
  zkt_statelog_init(&log);
  zkr_mutex_options o = {0};
  o.watch_node = 1;
  o.state_fn = zkt_state_fn;
  o.state_user_data = &log;
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, zkt_path("watched"), &o);
  is(zkr_mutex_acquire(m, -1), ZKR_OK, "watched holder acquires");
  char node[512];
  zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
  ok(zkt_watches_become(s, node, 1, 5000), "one watch on our own node");
  is(zkr__zk_set(admin, node, "__REVOKE__", 10, -1, zkr__deadline(5000)),
     ZKR_OK, "admin writes to the holder's node (a revocation request)");
  usleep(300000);
  ok(zkr_mutex_is_held(m), "still held: a data change is not a loss");
  ok(zkt_watches_become(s, node, 1, 5000), "the watch is set again");
  int64_t p0 = zkt_mntr(1, "zk_packets_received");
  usleep(300000);
  int64_t p1 = zkt_mntr(1, "zk_packets_received");
  ok(p0 >= 0 && p1 - p0 < 20, "once, not in a loop (%lld requests in 0.3 s)",
     (long long)(p1 - p0));
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "admin deletes the holder's node");
  ok(zkt_wait_for(zkt_lost_seen, &log, 5000), "LOST callback without a call");
  ok(!zkr_mutex_is_held(m), "is_held() false");
  is(zkr_mutex_release(m), ZKR_ELOCKLOST, "release says the lock was lost");
  is(zkr_mutex_acquire(m, -1), ZKR_OK, "acquires again");
  zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
  ok(zkt_watches_become(s, node, 1, 5000), "watching the new node");
  is(zkr_mutex_release(m), ZKR_OK, "plain release");
  ok(zkt_watches_become(s, node, 0, 5000), "no watch left once released");
  is(log.lost, 1, "LOST reported once");
  zkr_mutex_free(m);
}

/* zkr_session_children: sorted names, missing node, bad input. */
static void test_children(zkr_session *s) {
  char dir[512], p[600];
  snprintf(dir, sizeof dir, "%s/kids", root);
  zkr__zk_create(admin, dir, NULL, -1, 0, zkr__deadline(5000), NULL);
  const char *names[] = {"b", "a", "c"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    zkr__zk_create(admin, p, NULL, -1, 0, zkr__deadline(5000), NULL);
  }
  char **kids = NULL;
  size_t n = 99;
  is(zkr_session_children(s, dir, 5000, &kids, &n), ZKR_OK, "children");
  ok(n == 3 && strcmp(kids[0], "a") == 0 && strcmp(kids[1], "b") == 0 &&
         strcmp(kids[2], "c") == 0,
     "three names, sorted");
  zkr_children_free(kids, n);
  snprintf(p, sizeof p, "%s/none", dir);
  kids = (char **)1;
  is(zkr_session_children(s, p, 5000, &kids, &n), ZKR_ENONODE,
     "missing node: ZKR_ENONODE");
  ok(kids == NULL && n == 0, "with an empty result");
  is(zkr_session_children(s, "rel", 5000, &kids, &n), ZKR_EBADPATH,
     "relative path: ZKR_EBADPATH");
  is(zkr_session_children(NULL, dir, 5000, &kids, &n), ZKR_EINVAL,
     "NULL session: ZKR_EINVAL");
  is(zkr_session_children(s, dir, 5000, NULL, &n), ZKR_EINVAL,
     "NULL out: ZKR_EINVAL");
  zkr_children_free(NULL, 0);
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    zkr__zk_delete(admin, p, -1, zkr__deadline(5000));
  }
  zkr__zk_delete(admin, dir, -1, zkr__deadline(5000));
}

static void test_closed(void) {
  zkr_session *s = connect_s(6000);
  zkr_mutex *h = NULL, *w = NULL;
  zkr_mutex_new(&h, admin, zkt_path("closed"), NULL);
  zkr_mutex_new(&w, s, zkt_path("closed"), NULL);
  zkr_mutex_acquire(h, -1);
  struct asy a;
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  zkr_mutex_acquire_async(w, -1, on_acquired, &a);
  usleep(100000);
  is(zkr_session_close(s), ZKR_OK,
     "close the session with a mutex still waiting on it");
  ok(zkt_wait_for(asy_called, &a, 5000), "the waiter is told");
  is(a.rc, ZKR_ECLOSED, "ZKR_ECLOSED");
  is(zkr_mutex_acquire(w, 0), ZKR_ECLOSED, "acquire on a closed session");
  zkr_mutex_free(w); /* the session's memory goes with it */
  zkr_mutex_release(h);
  zkr_mutex_free(h);
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  root = zkt_root("t-mutex");
  if (getenv("ZKR_TEST_LOG"))
    zkr_set_log_hook(zkr_log_stderr, ZKR_LOG_INFO, NULL);
  admin = connect_s(10000);
  if (nchildren(root) >= 0)
    tap_bail("%s exists already: refusing to run", root);
  ok(zkt_create_parents(admin, root, zkr__deadline(5000)) == ZKR_OK,
     "private root %s", root);
  zkr_session *s = connect_s(10000);
  test_bad_input(s);
  test_basic(s);
  test_options(s);
  test_cancel_timeout_watches(s);
  test_async(s);
  test_reentrant(s);
  test_guarded_and_expiry();
  test_queue_changes(s);
  test_watch_node(s);
  test_children(s);
  test_closed();
  zkr_session_close(s);
  /* the lock paths are containers: removed by the server once empty;
   * remove them now so the root can go */
  zkr__result r;
  memset(&r, 0, sizeof r);
  if (zkr__zk_children(admin, root, zkr__deadline(5000), &r) == ZKR_OK)
    for (int i = 0; i < r.names.count; i++) {
      char *p = zkr__path_join(root, r.names.data[i]);
      zkr__zk_delete(admin, p, -1, zkr__deadline(5000));
      free(p);
    }
  zkr__result_clear(&r);
  is(zkr__zk_delete(admin, root, -1, zkr__deadline(5000)), ZKR_OK,
     "private root removed (nothing left under it)");
  zkr_session_close(admin);
  return tap_done();
}
