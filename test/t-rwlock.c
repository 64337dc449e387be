/* The read-write lock against a real standalone server: naming, readers
 * sharing, writers excluding, the queue order across kinds, who watches
 * whom (no herd), reentrancy, downgrade with a writer queued in between,
 * refused upgrade, try-once, time-out and cancellation leaving no node and
 * no watch, kazoo's and plain mutex nodes on the same path, an expired
 * holder of each kind, participants, bad input. */
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

/* One contender: its own session (so that watches and wake-ups can be
 * told apart per session) and its own lock object. */
typedef struct who {
  zkr_session *s;
  zkr_rwlock *rw;
  pthread_mutex_t mu;
  int done, rc;
} who;

static void who_open(who *w, const char *path) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  w->s = zkt_connect(hosts, 10000);
  if (zkr_rwlock_new(&w->rw, w->s, path, NULL) != ZKR_OK)
    tap_bail("zkr_rwlock_new");
}

static void who_close(who *w) {
  zkr_rwlock_free(w->rw);
  zkr_session_close(w->s);
  pthread_mutex_destroy(&w->mu);
}

static zkr_mutex *R(who *w) {
  return zkr_rwlock_read_lock(w->rw);
}
static zkr_mutex *W(who *w) {
  return zkr_rwlock_write_lock(w->rw);
}

static void on_acquired(zkr_mutex *lock, int rc, void *ud) {
  who *w = ud;
  (void)lock;
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

/* Start an async acquisition of @half and wait until its node is queued
 * (the children of @path become @n), so the queue order is the order of
 * the calls. */
static void queue_async(who *w, zkr_mutex *half, const char *path, int n) {
  w->done = 0;
  w->rc = -1;
  if (zkr_mutex_acquire_async(half, -1, on_acquired, w) != ZKR_OK)
    tap_bail("acquire_async");
  if (!zkt_children_become(admin, path, n, 5000))
    tap_bail("the node did not appear");
}

/* The path session @w watches on server 1 ("" if none; "?" if several). */
static const char *watched(who *w, char *buf, size_t len) {
  int n = zkt_watches_of(1, zkr_session_id(w->s), buf, len);
  if (n == 0)
    snprintf(buf, len, "%s", "");
  else if (n != 1)
    snprintf(buf, len, "?%d", n);
  return buf;
}

static const char *base(const char *p) {
  const char *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

static void node_of(zkr_mutex *m, char *buf, size_t len) {
  if (zkr_hold_node(zkr_mutex_hold(m), buf, len) != ZKR_OK)
    snprintf(buf, len, "%s", "(none)");
}

static void test_bad_input(void) {
  zkr_rwlock *rw = (zkr_rwlock *)0x1;
  is(zkr_rwlock_new(&rw, admin, "relative", NULL), ZKR_EBADPATH,
     "relative path refused");
  is(zkr_rwlock_new(&rw, admin, "/zookeeper/x", NULL), ZKR_EBADPATH,
     "path under /zookeeper refused");
  is(zkr_rwlock_new(&rw, admin, "/", NULL), ZKR_EBADPATH, "/ refused");
  is(zkr_rwlock_new(&rw, admin, NULL, NULL), ZKR_EBADPATH, "NULL path");
  is(zkr_rwlock_new(&rw, NULL, "/a", NULL), ZKR_EINVAL, "NULL session");
  is(zkr_rwlock_new(NULL, admin, "/a", NULL), ZKR_EINVAL, "NULL out");
  ok(rw == (zkr_rwlock *)0x1, "*out untouched");
  ok(zkr_rwlock_read_lock(NULL) == NULL && zkr_rwlock_write_lock(NULL) == NULL,
     "halves of NULL are NULL");
  zkr_rwlock_free(NULL);
  zkr_participant *p = NULL;
  size_t n = 0;
  is(zkr_rwlock_participants(admin, "bad", 1000, &p, &n), ZKR_EBADPATH,
     "participants of a bad path");
  is(zkr_rwlock_participants(NULL, "/a", 1000, &p, &n), ZKR_EINVAL,
     "participants without a session");
  const char *path = zkt_path("bad-unused");
  is(zkr_rwlock_new(&rw, admin, path, NULL), ZKR_OK, "a valid lock");
  zkr_mutex_free(zkr_rwlock_read_lock(rw)); /* refused, logged */
  is(zkr_mutex_release(zkr_rwlock_read_lock(rw)), ZKR_ENOTHELD,
     "zkr_mutex_free() on a half is refused: the half still works");
  zkr_rwlock_free(rw);
  is(zkt_children(admin, path), -1, "a lock sends nothing before it is used");
}

static void test_naming_and_sharing(void) {
  const char *path = zkt_path("share");
  who r[3], w;
  for (int i = 0; i < 3; i++)
    who_open(&r[i], path);
  who_open(&w, path);
  int all = 1;
  for (int i = 0; i < 3; i++)
    all &= zkr_mutex_acquire(R(&r[i]), 0) == ZKR_OK;
  ok(all, "three readers in three sessions all take the read lock at once");
  int held = 0;
  for (int i = 0; i < 3; i++)
    held += zkr_mutex_is_held(R(&r[i]));
  is(held, 3, "all three hold it at the same moment");
  char node[512];
  node_of(R(&r[0]), node, sizeof node);
  const char *b = base(node);
  ok(strncmp(b, "_c_", 3) == 0 && strlen(b) == 3 + 36 + 1 + 8 + 10 &&
         strncmp(b + 3 + 36 + 1, "__READ__", 8) == 0,
     "a reader's node is Curator's _c_<uuid>-__READ__<seq>: %s", b);
  ok(zkr_hold_token(zkr_mutex_hold(R(&r[0]))) > 0,
     "a reader has a fencing token");
  is(zkr_mutex_acquire(W(&w), 0), ZKR_EWOULDBLOCK,
     "a writer trying once while readers hold: ZKR_EWOULDBLOCK");
  ok(zkt_settled_children(w.s, admin, path) == 3, "and it left no node");
  is(zkr_mutex_acquire(W(&w), 300), ZKR_ETIMEDOUT,
     "a writer waiting 300 ms: ZKR_ETIMEDOUT");
  ok(zkt_settled_children(w.s, admin, path) == 3,
     "the timed-out writer left no node");
  ok(zkt_watches_become(w.s, NULL, 0, 5000), "and no watch on the server");

  zkr_participant *p = NULL;
  size_t n = 0;
  is(zkr_rwlock_participants(admin, path, 5000, &p, &n), ZKR_OK,
     "participants");
  int holders = 0, readers = 0;
  for (size_t i = 0; i < n; i++) {
    holders += p[i].is_holder;
    readers += p[i].role == ZKR_ROLE_READ;
  }
  ok(n == 3 && holders == 3, "three participants, all holders (%zu, %d)", n,
     holders);
  is(readers, 3, "each in the role read");
  zkr_participants_free(p, n);

  for (int i = 0; i < 3; i++)
    is(zkr_mutex_release(R(&r[i])), ZKR_OK, "reader %d releases", i);
  is(zkr_mutex_acquire(W(&w), 5000), ZKR_OK, "then the writer holds");
  node_of(W(&w), node, sizeof node);
  b = base(node);
  ok(strlen(b) == 3 + 36 + 1 + 8 + 10 &&
         strncmp(b + 3 + 36 + 1, "__WRIT__", 8) == 0,
     "a writer's node is _c_<uuid>-__WRIT__<seq>: %s", b);
  is(zkr_mutex_acquire(R(&r[0]), 0), ZKR_EWOULDBLOCK,
     "a reader trying once while a writer holds: ZKR_EWOULDBLOCK");
  is(zkr_mutex_release(W(&w)), ZKR_OK, "writer releases");
  for (int i = 0; i < 3; i++)
    who_close(&r[i]);
  who_close(&w);
  is(zkt_children(admin, path), 0, "nothing left");
}

/* W1 holds; R1, R2, W2, R3 queue in this order. */
static void test_order_and_watches(void) {
  const char *path = zkt_path("order");
  who w1, r1, r2, w2, r3;
  who_open(&w1, path);
  who_open(&r1, path);
  who_open(&r2, path);
  who_open(&w2, path);
  who_open(&r3, path);
  is(zkr_mutex_acquire(W(&w1), 5000), ZKR_OK, "W1 holds");
  queue_async(&r1, R(&r1), path, 2);
  queue_async(&r2, R(&r2), path, 3);
  queue_async(&w2, W(&w2), path, 4);
  queue_async(&r3, R(&r3), path, 5);
  char w1n[512], r2n[512], w2n[512], buf[512];
  node_of(W(&w1), w1n, sizeof w1n);
  ok(zkt_watches_become(r1.s, w1n, 1, 5000), "R1 watches W1 only");
  ok(zkt_watches_become(r2.s, w1n, 1, 5000),
     "R2 watches W1 (the nearest writer), not R1");
  ok(zkt_watches_become(r3.s, NULL, 1, 5000) &&
         strstr(watched(&r3, buf, sizeof buf), "__WRIT__") != NULL,
     "R3 watches a writer: %s", base(buf));
  ok(zkt_watches_become(w2.s, NULL, 1, 5000) &&
         strstr(watched(&w2, buf, sizeof buf), "__READ__") != NULL,
     "W2 watches the reader just before it: %s", base(buf));
  snprintf(r2n, sizeof r2n, "%s", buf);
  snprintf(w2n, sizeof w2n, "%s", watched(&r3, buf, sizeof buf));
  ok(strcmp(base(w2n), base(r2n)) != 0, "R3's writer is W2, not W1");
  ok(!is_done(&r1) && !is_done(&r2) && !is_done(&w2) && !is_done(&r3),
     "nobody else holds while W1 does");

  is(zkr_mutex_release(W(&w1)), ZKR_OK, "W1 releases");
  ok(zkt_wait_for(is_done, &r1, 5000) && zkt_wait_for(is_done, &r2, 5000),
     "R1 and R2 hold after W1");
  ok(r1.rc == ZKR_OK && r2.rc == ZKR_OK && zkr_mutex_is_held(R(&r1)) &&
         zkr_mutex_is_held(R(&r2)),
     "both at the same time");
  usleep(300 * 1000);
  ok(!is_done(&w2) && !is_done(&r3), "W2 and R3 still wait");
  ok(zkt_watches_become(r3.s, NULL, 1, 5000),
     "R3 was not woken: it still watches W2 alone");

  is(zkr_mutex_release(R(&r2)), ZKR_OK, "R2 releases (R1 still holds)");
  ok(zkt_watches_become(w2.s, NULL, 1, 5000), "W2 watches again (R1 now)");
  ok(strstr(watched(&w2, buf, sizeof buf), "__READ__") != NULL &&
         strcmp(base(buf), base(r2n)) != 0,
     "W2 moved to the remaining reader: %s", base(buf));
  ok(!is_done(&w2), "W2 still waits");
  is(zkr_mutex_release(R(&r1)), ZKR_OK, "R1 releases");
  ok(zkt_wait_for(is_done, &w2, 5000) && w2.rc == ZKR_OK,
     "W2 holds after both readers");
  usleep(200 * 1000);
  ok(!is_done(&r3), "R3 waits for W2");
  is(zkr_mutex_release(W(&w2)), ZKR_OK, "W2 releases");
  ok(zkt_wait_for(is_done, &r3, 5000) && r3.rc == ZKR_OK, "R3 holds last");
  zkr_mutex_release(R(&r3));
  who_close(&w1);
  who_close(&r1);
  who_close(&r2);
  who_close(&w2);
  who_close(&r3);
  is(zkt_children(admin, path), 0, "nothing left");
}

static void test_reentrancy_downgrade_upgrade(void) {
  const char *path = zkt_path("downgrade");
  who a, wq, rq;
  who_open(&a, path);
  who_open(&wq, path);
  who_open(&rq, path);
  is(zkr_mutex_acquire(W(&a), 5000), ZKR_OK, "A takes the write lock");
  is(zkr_mutex_acquire(W(&a), 0), ZKR_OK, "and again (reentrant)");
  is(zkr_mutex_hold_count(W(&a)), 2, "write hold count 2");
  queue_async(&wq, W(&wq), path, 2);
  queue_async(&rq, R(&rq), path, 3);
  char wn[512], rn[512];
  node_of(W(&a), wn, sizeof wn);
  is(zkr_mutex_acquire(R(&a), 0), ZKR_OK,
     "A, holding the write lock, takes the read lock at once (downgrade)");
  node_of(R(&a), rn, sizeof rn);
  const char *ws = base(wn) + strlen(base(wn)) - 10;
  const char *rs = base(rn) + strlen(base(rn)) - 10;
  ok(strstr(base(rn), "__READ__") && strcmp(ws, rs) == 0,
     "its read node carries the write node's number (%s, %s)", base(rn),
     base(wn));
  zkr__result res;
  memset(&res, 0, sizeof res);
  is(zkr__zk_exists(admin, rn, zkr__deadline(5000), &res), ZKR_OK,
     "the read node exists");
  ok(res.stat.ephemeralOwner == zkr_session_id(a.s),
     "ephemeral, owned by A's session");
  zkr__result_clear(&res);
  is(zkr_mutex_release(W(&a)), ZKR_OK, "write released once");
  ok(zkr_mutex_is_held(W(&a)), "still held (count 1)");
  is(zkr_mutex_release(W(&a)), ZKR_OK, "write released fully");
  ok(!zkr_mutex_is_held(W(&a)) && zkr_mutex_is_held(R(&a)),
     "A now holds only the read lock");
  ok(zkt_children_become(admin, path, 3, 5000),
     "the write node is gone (read node, queued writer, queued reader)");
  usleep(300 * 1000);
  ok(!is_done(&wq), "the writer queued in between did not slip in");
  ok(!is_done(&rq), "the reader queued after it waits for it (FIFO)");
  zkr_participant *p = NULL;
  size_t n = 0;
  is(zkr_rwlock_participants(admin, path, 5000, &p, &n), ZKR_OK,
     "participants");
  ok(n == 3 && p[0].is_holder && strstr(p[0].node, "__READ__") &&
         !p[1].is_holder && !p[2].is_holder,
     "only the downgraded reader holds");
  zkr_participants_free(p, n);

  is(zkr_mutex_acquire(W(&a), 0), ZKR_EUPGRADE,
     "A, holding the read lock, may not take the write lock: ZKR_EUPGRADE");
  is(zkr_mutex_acquire(W(&a), -1), ZKR_EUPGRADE,
     "not even waiting (it would wait for itself)");
  is(zkt_children(admin, path), 3, "the refused upgrade created nothing");
  ok(strlen(zkr_strerror(ZKR_EUPGRADE)) > 10 &&
         strcmp(zkr_err_name(ZKR_EUPGRADE), "ZKR_EUPGRADE") == 0,
     "ZKR_EUPGRADE: %s", zkr_strerror(ZKR_EUPGRADE));
  is(zkr_mutex_acquire(R(&a), 0), ZKR_OK, "the read lock again (reentrant)");
  is(zkr_mutex_hold_count(R(&a)), 2, "read hold count 2");
  is(zkr_mutex_release(R(&a)), ZKR_OK, "read released once");
  ok(!is_done(&wq), "the writer still waits");
  is(zkr_mutex_release(R(&a)), ZKR_OK, "read released fully");
  ok(zkt_wait_for(is_done, &wq, 5000) && wq.rc == ZKR_OK,
     "now the queued writer holds");
  usleep(200 * 1000);
  ok(!is_done(&rq), "and the reader after it still waits");
  zkr_mutex_release(W(&wq));
  ok(zkt_wait_for(is_done, &rq, 5000) && rq.rc == ZKR_OK,
     "then the reader holds");
  zkr_mutex_release(R(&rq));

  /* a downgrade that keeps the write lock: both held, then released in
   * the other order */
  is(zkr_mutex_acquire(W(&a), 5000), ZKR_OK, "A writes again");
  is(zkr_mutex_acquire(R(&a), 0), ZKR_OK, "and reads (downgrade)");
  is(zkr_mutex_release(R(&a)), ZKR_OK, "read released first");
  ok(zkr_mutex_is_held(W(&a)), "the write lock is still held");
  is(zkr_mutex_release(W(&a)), ZKR_OK, "write released");
  who_close(&a);
  who_close(&wq);
  who_close(&rq);
  is(zkt_children(admin, path), 0, "nothing left");
}

static void test_cancel_and_foreign_nodes(void) {
  const char *path = zkt_path("foreign");
  who r, w;
  who_open(&r, path);
  who_open(&w, path);
  /* kazoo's reader and writer nodes, made by the admin session */
  char kr[600], kw[600];
  snprintf(kr, sizeof kr, "%s/0f1e2d3c4b5a__rlock__", path);
  snprintf(kw, sizeof kw, "%s/0f1e2d3c4b5a__lock__", path);
  zkt_create_parents(admin, path, zkr__deadline(5000));
  zkr__result a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  is(zkr__zk_create(admin, kr, NULL, -1, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                    zkr__deadline(5000), &a),
     ZKR_OK, "a kazoo read node queued first");
  is(zkr_mutex_acquire(R(&r), 0), ZKR_OK,
     "a zkr reader shares with kazoo's reader");
  is(zkr_mutex_acquire(W(&w), 0), ZKR_EWOULDBLOCK,
     "a zkr writer does not (try once)");
  zkr_mutex_release(R(&r));
  is(zkr__zk_create(admin, kw, NULL, -1, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                    zkr__deadline(5000), &b),
     ZKR_OK, "a kazoo write node queued");
  is(zkr_mutex_acquire(R(&r), 0), ZKR_EWOULDBLOCK,
     "a zkr reader behind kazoo's writer waits");

  zkt_canceller c = {W(&w), 300};
  pthread_t th;
  pthread_create(&th, NULL, zkt_cancel_later, &c);
  is(zkr_mutex_acquire(W(&w), -1), ZKR_ECANCELED,
     "a waiting writer cancelled from another thread: ZKR_ECANCELED");
  pthread_join(th, NULL);
  zkt_wait_for(zkt_bg_idle, r.s, 10000);
  if (!is(zkt_settled_children(w.s, admin, path), 2,
          "the cancelled writer left no node")) {
    char *names[8];
    int k = zkt_queue_order(admin, path, names, 8);
    for (int i = 0; i < k; i++) {
      tap_diag("left: %s", names[i]);
      free(names[i]);
    }
  }
  ok(zkt_watches_become(w.s, NULL, 0, 5000), "and no watch");
  is(zkr__zk_delete(admin, b.path, -1, zkr__deadline(5000)), ZKR_OK,
     "kazoo's writer leaves");
  is(zkr_mutex_acquire(R(&r), 5000), ZKR_OK,
     "now the zkr reader holds beside kazoo's reader");
  zkr_mutex_release(R(&r));
  zkr__zk_delete(admin, a.path, -1, zkr__deadline(5000));
  zkr__result_clear(&a);
  zkr__result_clear(&b);

  /* a plain mutex on the same path is a writer to the read-write lock,
   * and the read-write lock's nodes block the mutex */
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, admin, path, NULL);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "a plain mutex holds the path");
  is(zkr_mutex_acquire(R(&r), 0), ZKR_EWOULDBLOCK,
     "a reader does not share with it");
  zkr_mutex_release(m);
  is(zkr_mutex_acquire(R(&r), 5000), ZKR_OK, "a reader holds");
  is(zkr_mutex_acquire(m, 0), ZKR_EWOULDBLOCK,
     "the plain mutex does not share with the reader");
  zkr_mutex_release(R(&r));
  zkr_mutex_free(m);
  who_close(&r);
  who_close(&w);
}

/* Guarded writes through either half: they commit only while that half's
 * node exists. */
static void test_guarded_writes(void) {
  const char *path = zkt_path("guarded");
  const char *res = zkt_path("guarded-resource");
  zkr__zk_create(admin, res, "0", 1, 0, zkr__deadline(5000), NULL);
  who a;
  who_open(&a, path);
  is(zkr_mutex_acquire(W(&a), 5000), ZKR_OK, "a writer holds");
  is(zkr_hold_guarded_set(zkr_mutex_hold(W(&a)), res, "w", 1, -1, 5000), ZKR_OK,
     "a guarded write through the write half commits");
  is(zkr_hold_guarded_set(zkr_mutex_hold(R(&a)), res, "x", 1, -1, 5000),
     ZKR_ENOTHELD, "through the read half, not held: refused");
  is(zkr_mutex_acquire(R(&a), 0), ZKR_OK, "downgrade");
  is(zkr_mutex_release(W(&a)), ZKR_OK, "write half released");
  is(zkr_hold_guarded_set(zkr_mutex_hold(R(&a)), res, "r", 1, -1, 5000), ZKR_OK,
     "a guarded write through the (downgraded) read half commits");
  char node[512];
  node_of(R(&a), node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the read node");
  is(zkr_hold_guarded_set(zkr_mutex_hold(R(&a)), res, "z", 1, -1, 5000),
     ZKR_ELOCKLOST,
     "the next guarded write finds the lock lost and writes nothing");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_get(admin, res, zkr__deadline(5000), &r);
  ok(r.data && strcmp(r.data, "r") == 0,
     "the resource holds the last "
     "committed write (%s)",
     r.data ? r.data : "?");
  zkr__result_clear(&r);
  is(zkr_mutex_state_get(R(&a)), ZKR_LOCK_LOST, "the read half is LOST");
  is(zkr_mutex_release(R(&a)), ZKR_ELOCKLOST, "its release reports it");
  who_close(&a);
}

static void test_expired_holders(void) {
  const char *path = zkt_path("expire");
  for (int kind = 0; kind < 2; kind++) {
    zkt_statelog l;
    zkt_statelog_init(&l);
    zkr_mutex_options o = {0};
    o.state_fn = zkt_state_fn;
    o.state_user_data = &l;
    zkr_session *hs = zkt_connect(hosts, 4000);
    zkr_rwlock *h = NULL;
    zkr_rwlock_new(&h, hs, path, &o);
    zkr_mutex *hh = kind ? zkr_rwlock_write_lock(h) : zkr_rwlock_read_lock(h);
    is(zkr_mutex_acquire(hh, 5000), ZKR_OK, "a %s holds",
       kind ? "writer" : "reader");
    who w;
    who_open(&w, path);
    queue_async(&w, W(&w), path, 2);
    ok(zkt_expire(hosts, hs) == 0, "its session is expired");
    ok(zkt_wait_for(zkt_lost_seen, &l, 10000), "its state callback says LOST");
    is(zkr_mutex_state_get(hh), ZKR_LOCK_LOST, "state LOST");
    ok(zkt_wait_for(is_done, &w, 10000) && w.rc == ZKR_OK,
       "the waiting writer gets the lock");
    is(zkr_mutex_release(hh), ZKR_ELOCKLOST, "release reports the loss");
    zkr_mutex_release(W(&w));
    who_close(&w);
    zkr_rwlock_free(h);
    zkr_session_close(hs);
  }
  is(zkt_children(admin, path), 0, "nothing left");
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  zkt_root("t-rwlock");
  admin = zkt_connect(hosts, 10000);
  test_bad_input();
  test_naming_and_sharing();
  test_order_and_watches();
  test_reentrancy_downgrade_upgrade();
  test_cancel_and_foreign_nodes();
  test_guarded_writes();
  test_expired_holders();
  zkr_session_close(admin);
  return tap_done();
}
