/* The semaphore and lost connections, injected with test/zkproxy: orphan
 * lease nodes are the peers' chronic bug (CURATOR-315, -335, -462). A
 * create of a lease node or of the admission node whose reply is lost to
 * a cut connection is adopted (the contender ends up with exactly its own
 * node) or, when the acquisition gives up meanwhile, deleted once the
 * connection is back; so are the nodes of a contender that times out or
 * is cancelled inside the admission mutex while the connection is down.
 * Also: a shared count whose re-read is lost to a cut is still followed,
 * and closing the session ends an acquisition that waits for the
 * connection with ZKR_ECLOSED. Node counts are read through a direct
 * admin session. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin, *s; /* direct; through the proxy */
static int64_t sid;

static char *sub(const char *path, const char *child) {
  static char buf[8][512];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", path, child);
  return b;
}

/* An asynchronous acquisition's result. */
typedef struct res {
  pthread_mutex_t mu;
  int done, rc;
  zkr_lease *l[2];
} res;

static void res_init(res *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  r->rc = -1;
}

static void on_done(zkr_semaphore *sem, int rc, zkr_lease **l, int n,
                    void *ud) {
  res *r = ud;
  (void)sem;
  (void)l;
  (void)n;
  pthread_mutex_lock(&r->mu);
  r->done = 1;
  r->rc = rc;
  pthread_mutex_unlock(&r->mu);
}

static int res_done(void *arg) {
  res *r = arg;
  pthread_mutex_lock(&r->mu);
  int d = r->done;
  pthread_mutex_unlock(&r->mu);
  return d;
}

/* Is the only child of @parent owned by session @owner? */
static int only_child_owned_by(const char *parent, int64_t owner) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  if (zkr__zk_children(admin, parent, zkr__deadline(5000), &r) != ZKR_OK)
    return 0;
  int ok = r.names.count == 1;
  char p[600];
  if (ok)
    snprintf(p, sizeof p, "%s/%s", parent, r.names.data[0]);
  zkr__result_clear(&r);
  if (!ok)
    return 0;
  memset(&r, 0, sizeof r);
  ok = zkr__zk_exists(admin, p, zkr__deadline(5000), &r) == ZKR_OK &&
       r.stat.ephemeralOwner == owner;
  zkr__result_clear(&r);
  return ok;
}

/* How many children of @parent session @owner has. */
static int children_of(const char *parent, int64_t owner) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  if (zkr__zk_children(admin, parent, zkr__deadline(5000), &r) != ZKR_OK)
    return -1;
  int n = 0;
  for (int i = 0; i < r.names.count; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", parent, r.names.data[i]);
    zkr__result e;
    memset(&e, 0, sizeof e);
    if (zkr__zk_exists(admin, p, zkr__deadline(5000), &e) == ZKR_OK &&
        e.stat.ephemeralOwner == owner)
      n++;
    zkr__result_clear(&e);
  }
  zkr__result_clear(&r);
  return n;
}

/* Send the proxy @cmd (lines) and wait until it reports "done @last". */
static int proxy_do(const char *cmd, const char *last) {
  char done[620];
  snprintf(done, sizeof done, "done %s", last);
  int n = zkt_proxy_seen(done);
  zkt_proxy_cmd(cmd);
  return zkt_proxy_wait(done, n + 1, 5000);
}

/* Arm a cut after the next request of @type on a path containing @path;
 * returns the number of "fired @type" lines so far. */
static int arm(const char *type, const char *path) {
  char cmd[600], fired[64];
  snprintf(fired, sizeof fired, "fired %s", type);
  int n = zkt_proxy_seen(fired);
  snprintf(cmd, sizeof cmd, "cut-after-request %s %s", type, path);
  if (!proxy_do(cmd, cmd))
    tap_bail("the proxy did not take: %s", cmd);
  return n;
}

static int connected(void *arg) {
  return zkr_session_state_get(arg) == ZKR_STATE_CONNECTED;
}

/* (a), (b): a create whose reply is lost, on a free semaphore and behind
 * a holder; @which is "leases" or "locks". */
static void test_lost_create_adopted(const char *which) {
  char name[64];
  snprintf(name, sizeof name, "adopt-%s", which);
  const char *path = zkt_path(name);
  zkr_semaphore *sem = NULL, *hsem = NULL;
  zkr_semaphore_new(&sem, s, path, 1, NULL);
  zkr_semaphore_new(&hsem, admin, path, 1, NULL);
  zkr_lease *l = NULL, *hl = NULL;

  /* free: the acquisition goes through the lost reply */
  int fired = arm("create2", sub(path, which));
  is(zkr_semaphore_acquire(sem, 1, 15000, &l), ZKR_OK,
     "%s: acquired although the create's reply was cut", which);
  ok(zkt_proxy_wait("fired create2", fired + 1, 1000),
     "%s: the proxy cut the connection after that create", which);
  is(zkr_session_id(s), sid, "%s: same session", which);
  ok(only_child_owned_by(sub(path, "leases"), sid),
     "%s: exactly one lease node, ours", which);
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "%s: the admission node is gone", which);
  is(zkr_lease_release(l), ZKR_OK, "%s: release", which);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000),
     "%s: no lease node left", which);

  /* behind a holder: the contender waits with its adopted node only */
  is(zkr_semaphore_acquire(hsem, 1, 5000, &hl), ZKR_OK,
     "%s: a direct session holds the only lease", which);
  fired = arm("create2", sub(path, which));
  res r;
  res_init(&r);
  is(zkr_semaphore_acquire_async(sem, 1, 30000, r.l, on_done, &r), ZKR_OK,
     "%s: acquire behind it", which);
  ok(zkt_proxy_wait("fired create2", fired + 1, 5000),
     "%s: the create's reply was cut", which);
  ok(zkt_wait_for(connected, s, 10000), "%s: reconnected", which);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 10000) &&
         children_of(sub(path, "leases"), sid) == 1,
     "%s: it waits admitted with one lease node of its own", which);
  is(children_of(sub(path, "locks"), sid), 1,
     "%s: and one admission node of its own", which);
  ok(!res_done(&r), "%s: still waiting", which);
  is(zkr_lease_release(hl), ZKR_OK, "%s: the holder releases", which);
  ok(zkt_wait_for(res_done, &r, 10000) && r.rc == ZKR_OK,
     "%s: the contender gets the lease (no orphan counted against it)", which);
  ok(only_child_owned_by(sub(path, "leases"), sid),
     "%s: exactly one lease node, ours", which);
  ok(zkt_children_become(admin, sub(path, "locks"), 0, 5000),
     "%s: the admission mutex was left", which);
  zkr_lease_release(r.l[0]);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000),
     "%s: nothing left after the release", which);
  zkr_semaphore_free(sem);
  zkr_semaphore_free(hsem);
}

/* (a), (b) given up: the create's reply is lost, reconnecting is refused,
 * the acquisition times out; its node is deleted once the connection is
 * back. */
static void test_lost_create_given_up(const char *which) {
  char name[64];
  snprintf(name, sizeof name, "giveup-%s", which);
  const char *path = zkt_path(name);
  zkr_semaphore *sem = NULL, *hsem = NULL;
  zkr_semaphore_new(&sem, s, path, 1, NULL);
  zkr_semaphore_new(&hsem, admin, path, 1, NULL);
  zkr_lease *l = NULL, *hl = NULL;
  is(zkr_semaphore_acquire(hsem, 1, 5000, &hl), ZKR_OK,
     "%s: a direct session holds the only lease", which);
  /* the layout check first, so that the cut hits the create */
  is(zkr_semaphore_acquire(sem, 1, 0, &l), ZKR_EWOULDBLOCK,
     "%s: a try-once does not get it", which);
  int fired = arm("create2", sub(path, which));
  ok(proxy_do("refuse", "refuse"), "%s: armed, refusing reconnections", which);
  is(zkr_semaphore_acquire(sem, 1, 2000, &l), ZKR_ETIMEDOUT,
     "%s: the acquisition times out while it cannot reconnect", which);
  ok(zkt_proxy_wait("fired create2", fired + 1, 1000),
     "%s: its create had reached the server", which);
  is(children_of(sub(path, which), sid), 1,
     "%s: so the server has its node (an orphan, for now)", which);
  ok(proxy_do("accept", "accept"), "%s: accepting again", which);
  ok(zkt_wait_for(connected, s, 10000), "%s: reconnected", which);
  is(zkr_session_id(s), sid, "%s: same session", which);
  ok(zkt_wait_for(zkt_bg_idle, s, 10000), "%s: its deletions are done", which);
  is(children_of(sub(path, "leases"), sid), 0,
     "%s: no lease node of it is left", which);
  is(children_of(sub(path, "locks"), sid), 0,
     "%s: no admission node of it is left", which);
  ok(only_child_owned_by(sub(path, "leases"), zkr_session_id(admin)),
     "%s: the holder's lease is the only one", which);
  zkr_lease_release(hl);
  is(zkr_semaphore_acquire(sem, 1, 5000, &l), ZKR_OK,
     "%s: the semaphore is usable afterwards", which);
  zkr_lease_release(l);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000),
     "%s: nothing left", which);
  zkr_semaphore_free(sem);
  zkr_semaphore_free(hsem);
}

/* (c): timed out or cancelled inside the admission mutex while the
 * connection is down. */
static void test_inside_while_down(int cancel) {
  const char *how = cancel ? "cancelled" : "timed out";
  const char *path = zkt_path(cancel ? "down-cancel" : "down-timeout");
  zkr_semaphore *sem = NULL, *hsem = NULL;
  zkr_semaphore_new(&sem, s, path, 1, NULL);
  zkr_semaphore_new(&hsem, admin, path, 1, NULL);
  zkr_lease *hl = NULL;
  is(zkr_semaphore_acquire(hsem, 1, 5000, &hl), ZKR_OK,
     "%s: a direct session holds the only lease", how);
  res r;
  res_init(&r);
  is(zkr_semaphore_acquire_async(sem, 1, cancel ? -1 : 3000, r.l, on_done, &r),
     ZKR_OK, "%s: acquire behind it", how);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000) &&
         zkt_children_become(admin, sub(path, "locks"), 1, 5000),
     "%s: it waits admitted", how);
  ok(proxy_do("refuse\ncut-all", "cut-all"),
     "%s: the connection is cut, reconnections refused", how);
  if (cancel)
    is(zkr_semaphore_cancel(sem), ZKR_OK, "cancel while disconnected");
  ok(zkt_wait_for(res_done, &r, 10000) &&
         r.rc == (cancel ? ZKR_ECANCELED : ZKR_ETIMEDOUT),
     "%s: the acquisition ends (ZKR_E%s)", how,
     cancel ? "CANCELED" : "TIMEDOUT");
  is(children_of(sub(path, "leases"), sid) +
         children_of(sub(path, "locks"), sid),
     2, "%s: its two nodes are still on the server (the session lives)", how);
  ok(proxy_do("accept", "accept"), "%s: accepting again", how);
  ok(zkt_wait_for(connected, s, 10000), "%s: reconnected", how);
  is(zkr_session_id(s), sid, "%s: same session", how);
  ok(zkt_wait_for(zkt_bg_idle, s, 10000), "%s: its deletions are done", how);
  is(zkt_children(admin, sub(path, "locks")), 0,
     "%s: no admission node is left", how);
  ok(only_child_owned_by(sub(path, "leases"), zkr_session_id(admin)),
     "%s: only the holder's lease node is left", how);
  zkr_lease_release(hl);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000),
     "%s: nothing left after the release", how);
  zkr_semaphore_free(sem);
  zkr_semaphore_free(hsem);
}

static int set_count(const char *path, int32_t v) {
  char b[4] = {(char)((uint32_t)v >> 24), (char)((uint32_t)v >> 16),
               (char)((uint32_t)v >> 8), (char)v};
  return zkr__zk_set(admin, path, b, 4, -1, zkr__deadline(5000));
}

/* The shared count's re-read (after its watch fired) is lost to a cut:
 * the new value must still be followed. */
static void test_count_read_cut(void) {
  const char *path = zkt_path("counted");
  const char *cpath = zkt_path("counted-limit");
  zkr__result cr;
  memset(&cr, 0, sizeof cr);
  char one[4] = {0, 0, 0, 1};
  zkr__zk_create(admin, cpath, one, 4, 0, zkr__deadline(5000), &cr);
  zkr__result_clear(&cr);
  zkr_semaphore_options o = {0};
  o.count_path = cpath;
  zkr_semaphore *sem = NULL, *hsem = NULL;
  zkr_semaphore_new(&sem, s, path, 0, &o);
  zkr_semaphore_new(&hsem, admin, path, 0, &o);
  zkr_lease *hl = NULL;
  is(zkr_semaphore_acquire(hsem, 1, 5000, &hl), ZKR_OK,
     "count 1: a direct session holds the lease");
  res r;
  res_init(&r);
  is(zkr_semaphore_acquire_async(sem, 1, 30000, r.l, on_done, &r), ZKR_OK,
     "acquire behind it");
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "it waits admitted");
  int fired = arm("getdata", cpath);
  is(set_count(cpath, 1), ZKR_OK, "the count is written (same value)");
  ok(zkt_proxy_wait("fired getdata", fired + 1, 5000),
     "the count's re-read was cut before its reply");
  ok(zkt_wait_for(connected, s, 10000), "reconnected");
  is(zkr_session_id(s), sid, "same session");
  is(set_count(cpath, 2), ZKR_OK, "the count is raised to 2");
  ok(zkt_wait_for(res_done, &r, 10000) && r.rc == ZKR_OK,
     "the waiter is admitted: the count is still followed");
  is(zkr_semaphore_limit(sem), 2, "its limit is 2");
  if (r.rc == ZKR_OK)
    zkr_lease_release(r.l[0]);
  zkr_lease_release(hl);
  ok(zkt_children_become(admin, sub(path, "leases"), 0, 5000), "nothing left");
  zkr_semaphore_free(sem);
  zkr_semaphore_free(hsem);
}

/* Closing the session while acquisitions wait: one for the connection
 * (its layout check cannot be sent), one admitted, one for admission:
 * every one ends with ZKR_ECLOSED. */
struct blocking {
  zkr_semaphore *sem;
  int rc;
  zkr_lease *l;
};
static void *acquire_thread(void *arg) {
  struct blocking *b = arg;
  b->rc = zkr_semaphore_acquire(b->sem, 1, -1, &b->l);
  return NULL;
}

static void test_close_while_pending(void) {
  const char *path = zkt_path("close");
  zkr_semaphore *fresh = NULL, *waiting = NULL, *queued = NULL, *hsem = NULL;
  zkr_semaphore_new(&hsem, admin, path, 1, NULL);
  zkr_semaphore_new(&waiting, s, path, 1, NULL);
  zkr_semaphore_new(&queued, s, path, 1, NULL);
  zkr_semaphore_new(&fresh, s, zkt_path("close-fresh"), 1, NULL);
  zkr_lease *hl = NULL;
  is(zkr_semaphore_acquire(hsem, 1, 5000, &hl), ZKR_OK,
     "close: a direct session holds the only lease");
  res rw, rq;
  res_init(&rw);
  res_init(&rq);
  zkr_semaphore_acquire_async(waiting, 1, -1, rw.l, on_done, &rw);
  ok(zkt_children_become(admin, sub(path, "leases"), 2, 5000),
     "close: one waits admitted");
  zkr_semaphore_acquire_async(queued, 1, -1, rq.l, on_done, &rq);
  ok(zkt_children_become(admin, sub(path, "locks"), 2, 5000),
     "close: one waits for admission");
  ok(proxy_do("refuse\ncut-all", "cut-all"), "close: the connection is cut");
  struct blocking b = {fresh, -1, NULL};
  pthread_t t;
  pthread_create(&t, NULL, acquire_thread, &b);
  usleep(300 * 1000); /* let it start; either way it must end ECLOSED */
  is(zkr_session_close(s), ZKR_OK, "close: the session is closed");
  s = NULL;
  pthread_join(t, NULL);
  is(b.rc, ZKR_ECLOSED,
     "close: the acquisition waiting for the connection "
     "ends with ZKR_ECLOSED");
  ok(zkt_wait_for(res_done, &rw, 5000) && rw.rc == ZKR_ECLOSED,
     "close: so does the admitted one");
  ok(zkt_wait_for(res_done, &rq, 5000) && rq.rc == ZKR_ECLOSED,
     "close: and the one waiting for admission");
  zkr_semaphore_free(fresh);
  zkr_semaphore_free(waiting);
  zkr_semaphore_free(queued);
  proxy_do("accept", "accept");
  /* the closed session's nodes go once the server expires it */
  zkr_lease_release(hl);
  zkr_semaphore_free(hsem);
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  int port = zkt_proxy_start(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  zkt_root("t-semaphore-connloss");
  admin = zkt_connect(hosts, 10000);
  /* declared lost only after 8 s without a connection (default 2.5 s),
   * so that the cuts below keep the same session */
  zkr_session_options o = {0};
  o.session_timeout_ms = 10000;
  o.lost_fraction = 0.8;
  if (zkr_session_new(&s, via, &o) != ZKR_OK)
    tap_bail("cannot connect through the proxy");
  sid = zkr_session_id(s);

  test_lost_create_adopted("leases");
  test_lost_create_adopted("locks");
  test_lost_create_given_up("leases");
  test_lost_create_given_up("locks");
  test_inside_while_down(0);
  test_inside_while_down(1);
  test_count_read_cut();
  test_close_while_pending();

  zkr_session_close(admin);
  is(zkt_proxy_stop(), 0, "the proxy exits cleanly");
  return tap_done();
}
