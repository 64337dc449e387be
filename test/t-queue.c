/* The queue engine itself, against real servers, with test policies: a
 * hold rule with N > 1 and a children-watch wait, two policies on one path
 * (a reader-like rule that only some contenders block), cancel and
 * time-out of a children-watch waiter leaving no node and no watch, one
 * session woken per departure, requeue after a loss, adoption of a node
 * whose create reply was lost (test/zkproxy), also when a cancel cuts the
 * adoption short, the result callback
 * exactly once when the session closes, the errors of creating the
 * queue's parent, and the wait_fn with watch_held turned on later. Each
 * recipe's own tests add only the tests of its rule. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

static zkr_session *connect_s(void) {
  return zkt_connect(hosts, 6000);
}

static int nchildren(const char *path) {
  return zkt_children(admin, path);
}

static int64_t want_watches;

static zkr__queue *mkq_opts(zkr_session *s, const char *path,
                            const zkr__qpolicy *pol, const zkr__qopts *o) {
  zkr__queue *q = NULL;
  int rc = zkr__queue_new(&q, s, path, pol, "t", 1, o);
  if (rc != ZKR_OK)
    tap_bail("zkr__queue_new: %s", zkr_strerror(rc));
  return q;
}

static zkr__queue *mkq(zkr_session *s, const char *path,
                       const zkr__qpolicy *pol) {
  return mkq_opts(s, path, pol, NULL);
}

/* The number of blockers before a waiter (-1: not waiting). */
static int q_ahead(zkr__queue *q) {
  zkr__qinfo i;
  zkr__queue_info(q, &i, NULL, 0);
  return i.ahead;
}

static int q_held(void *arg) {
  return zkr__queue_state(arg) == ZKR__Q_HELD;
}

static int one_ahead(void *arg) {
  return q_ahead(arg) == 1;
}

struct ahead {
  zkr__queue *q;
  int n;
};
static int ahead_is(void *arg) {
  struct ahead *a = arg;
  return q_ahead(a->q) == a->n;
}

struct evc {
  zkr_session *s;
  uint64_t n;
};
static int events_are(void *arg) {
  struct evc *e = arg;
  return zkr__session_node_events(e->s) == e->n;
}

/* ---- policies ---- */

/* N = 2 leases, waiting on the children. */
static int below_two(int blockers, void *ctx) {
  (void)ctx;
  return blockers < 2;
}
static const zkr__qpolicy two_policy = {
    .name = "lease-", .holds = below_two, .wait = ZKR__QWAIT_CHILDREN};

/* count_all: every other child counts, later or unnumbered ones too. */
static const zkr__qpolicy count_all_policy = {.name = "lease-",
                                              .holds = below_two,
                                              .wait = ZKR__QWAIT_CHILDREN,
                                              .count_all = 1};

/* A reader-like rule: only "excl-" contenders block a "shared-" one. */
static int is_excl(const char *name, void *ctx) {
  (void)ctx;
  return strstr(name, "-excl-") != NULL;
}
static const zkr__qpolicy shared_policy = {.name = "shared-",
                                           .blocks = is_excl};
static const zkr__qpolicy excl_policy = {.name = "excl-"};

/* Rejoin the queue after a loss. */
static const zkr__qpolicy requeue_policy = {.name = "latch-",
                                            .on_loss = ZKR__QLOSS_REQUEUE};

static void test_policy_checks(void) {
  static const zkr__qpolicy bad = {.name = "x-", .holds = below_two};
  static const zkr__qpolicy bad2 = {.name = "x-", .count_all = 1};
  zkr__queue *q = NULL;
  is(zkr__queue_new(&q, admin, zkt_path("bad"), &bad2, "", 0, NULL), ZKR_EINVAL,
     "count_all with a nearest-blocker wait is refused");
  is(zkr__queue_new(&q, admin, zkt_path("bad"), &bad, "", 0, NULL), ZKR_EINVAL,
     "a nearest-blocker wait with a custom hold rule is refused");
  is(zkr__queue_new(&q, admin, zkt_path("bad"), NULL, "", 0, NULL), ZKR_EINVAL,
     "no policy: refused");
  /* joining at a fixed number: only the kind the layout says may */
  static const zkr__qpolicy plain = {.name = "x-"};
  static const zkr__qpolicy other = {.name = "x-", .late = "y-"};
  zkr__queue *p = mkq(admin, zkt_path("late"), &plain);
  zkr__queue *o = mkq(admin, zkt_path("late"), &other);
  uint64_t gen = zkr__session_generation(admin, NULL);
  is(zkr__queue_join_at(p, 1, gen, 1000, NULL, NULL), ZKR_EINVAL,
     "a join at a fixed number is refused where the layout lets no kind join");
  is(zkr__queue_join_at(o, 1, gen, 1000, NULL, NULL), ZKR_EINVAL,
     "and where it lets another kind join, not this one");
  is(zkr__queue_state(p), ZKR__Q_UNLOCKED, "and nothing was started");
  zkr__queue_free(p);
  zkr__queue_free(o);
}

/* ---- N > 1 with a children watch ---- */

/* count_all: a node created after ours and a child without a sequence
 * number both count against the limit (Curator's semaphore counts every
 * child of leases/). */
static void test_count_all(void) {
  const char *path = zkt_path("count-all");
  zkr_session *s = connect_s();
  zkr__queue *a = mkq(s, path, &count_all_policy);
  zkr__queue *b = mkq(s, path, &count_all_policy);
  zkr__queue *c = mkq(s, path, &two_policy);
  is(zkr__queue_start(a, -1, NULL, NULL), ZKR_OK, "a: start");
  is(zkr__queue_wait(a), ZKR_OK, "a holds (1 of 2)");
  zkr__result pr;
  memset(&pr, 0, sizeof pr);
  zkr__zk_get(admin, path, zkr__deadline(5000), &pr);
  is(pr.datalen, 0,
     "the parent the engine made has empty data, not null "
     "(Curator's; kazoo fails on null)");
  zkr__result_clear(&pr);
  char other[512];
  snprintf(other, sizeof other, "%s/somebody-else", path);
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_create(admin, other, "", 0, 0, zkr__deadline(5000), &r), ZKR_OK,
     "a child without a sequence number");
  zkr__result_clear(&r);
  is(zkr__queue_start(b, 0, NULL, NULL), ZKR_OK, "b, try once: start");
  is(zkr__queue_wait(b), ZKR_EWOULDBLOCK,
     "b does not hold: the unnumbered child counts");
  ok(zkt_children_become(admin, path, 2, 10000), "b left no node");
  is(zkr__queue_start(c, 0, NULL, NULL), ZKR_OK, "without count_all, c: start");
  is(zkr__queue_wait(c), ZKR_OK, "c holds: only numbered earlier ones count");
  is(zkr__queue_start(b, -1, NULL, NULL), ZKR_OK, "b waits");
  ok(zkt_children_become(admin, path, 4, 10000), "b's node is there");
  zkr__queue_release(c);
  usleep(200000);
  is(zkr__queue_state(b), ZKR__Q_ACQUIRING,
     "b still waits (a and the unnumbered child)");
  zkr__zk_delete(admin, other, -1, zkr__deadline(5000));
  ok(zkt_wait_for(q_held, b, 10000), "the unnumbered child gone: b holds");
  zkr__queue_release(a);
  zkr__queue_release(b);
  zkr__queue_free(a);
  zkr__queue_free(b);
  zkr__queue_free(c);
  zkr_session_close(s);
}

static void test_two_leases(void) {
  const char *path = zkt_path("two");
  zkr_session *s[4];
  zkr__queue *q[4];
  for (int i = 0; i < 4; i++) {
    s[i] = connect_s();
    q[i] = mkq(s[i], path, &two_policy);
  }
  want_watches = zkt_watch_count();
  is(zkr__queue_start(q[0], -1, NULL, NULL), ZKR_OK, "first lease: start");
  is(zkr__queue_wait(q[0]), ZKR_OK, "first lease held");
  is(zkr__queue_start(q[1], -1, NULL, NULL), ZKR_OK, "second lease: start");
  is(zkr__queue_wait(q[1]), ZKR_OK, "second lease held: N = 2 hold together");
  is(zkr__queue_start(q[2], 0, NULL, NULL), ZKR_OK, "third, try once: start");
  is(zkr__queue_wait(q[2]), ZKR_EWOULDBLOCK, "third, try once: refused");
  ok(zkt_children_become(admin, path, 2, 10000), "and it left no node");
  is(zkr__queue_start(q[2], -1, NULL, NULL), ZKR_OK, "third waits");
  struct ahead a2 = {q[2], 2}, a3 = {q[3], 3};
  ok(zkt_wait_for(ahead_is, &a2, 10000), "two ahead of the third");
  is(zkr__queue_start(q[3], -1, NULL, NULL), ZKR_OK, "fourth waits");
  ok(zkt_wait_for(ahead_is, &a3, 10000), "three ahead of the fourth");
  is(zkr__queue_state(q[2]), ZKR__Q_ACQUIRING, "third is waiting");
  /* the fourth's node fired the third's children watch, which its next
   * listing sets again: until that listing is served the count is one
   * short (seen under ThreadSanitizer on a loaded machine) */
  ok(zkt_watch_count_reaches(want_watches + 2, 10000),
     "the waiters wait on child watches (zk_watch_count)");
  is(zkr__queue_release(q[0]), ZKR_OK, "first lease released");
  ok(zkt_wait_for(q_held, q[2], 10000), "the third holds");
  usleep(300000);
  is(zkr__queue_state(q[3]), ZKR__Q_ACQUIRING,
     "the fourth still waits (two leases before it)");
  is(zkr__queue_release(q[1]), ZKR_OK, "second lease released");
  ok(zkt_wait_for(q_held, q[3], 10000), "the fourth holds");
  zkr__queue_release(q[2]);
  zkr__queue_release(q[3]);
  ok(zkt_watch_count_becomes(want_watches, 10000),
     "no watch left on the server once all hold (child watches removed)");

  /* A children-watch waiter that gives up leaves nothing. */
  is(zkr__queue_start(q[0], -1, NULL, NULL), ZKR_OK, "hold one");
  zkr__queue_wait(q[0]);
  is(zkr__queue_start(q[1], -1, NULL, NULL), ZKR_OK, "hold two");
  zkr__queue_wait(q[1]);
  want_watches = zkt_watch_count();
  is(zkr__queue_start(q[2], -1, NULL, NULL), ZKR_OK, "a waiter");
  usleep(300000);
  is(zkr__queue_cancel(q[2]), ZKR_OK, "cancelled");
  is(zkr__queue_wait(q[2]), ZKR_ECANCELED, "it ends ECANCELED");
  ok(zkt_children_become(admin, path, 2, 10000), "its node is gone");
  ok(zkt_watch_count_becomes(want_watches, 10000), "its child watch is gone");
  is(zkr__queue_start(q[3], 400, NULL, NULL), ZKR_OK, "another waiter");
  is(zkr__queue_wait(q[3]), ZKR_ETIMEDOUT, "it times out");
  ok(zkt_children_become(admin, path, 2, 10000), "its node is gone");
  ok(zkt_watch_count_becomes(want_watches, 10000), "its child watch is gone");
  for (int i = 0; i < 4; i++) {
    zkr__queue_free(q[i]);
    zkr_session_close(s[i]);
  }
}

/* ---- two policies on one path; one session woken per departure ---- */

static void test_shared_and_exclusive(void) {
  const char *path = zkt_path("rw");
  zkr_session *s[4];
  for (int i = 0; i < 4; i++)
    s[i] = connect_s();
  zkr__queue *r1 = mkq(s[0], path, &shared_policy);
  zkr__queue *r2 = mkq(s[1], path, &shared_policy);
  zkr__queue *w = mkq(s[2], path, &excl_policy);
  zkr__queue *r3 = mkq(s[3], path, &shared_policy);
  zkr__queue_start(r1, -1, NULL, NULL);
  is(zkr__queue_wait(r1), ZKR_OK, "shared 1 holds");
  zkr__queue_start(r2, -1, NULL, NULL);
  is(zkr__queue_wait(r2), ZKR_OK, "shared 2 holds with it");
  want_watches = zkt_watch_count() + 2;
  zkr__queue_start(w, -1, NULL, NULL);
  struct ahead aw = {w, 2}, ar3 = {r3, 1};
  ok(zkt_wait_for(ahead_is, &aw, 10000), "the exclusive one waits behind "
                                         "both shared holders");
  zkr__queue_start(r3, -1, NULL, NULL);
  ok(zkt_wait_for(ahead_is, &ar3, 10000),
     "a shared one queued after it waits, blocked by it alone (FIFO across "
     "kinds)");
  ok(zkt_watch_count_becomes(want_watches, 10000), "both watches are set");
  uint64_t ev_w = zkr__session_node_events(s[2]);
  uint64_t ev_r3 = zkr__session_node_events(s[3]);
  zkr__queue_release(r2);
  struct evc ew = {s[2], ev_w + 1};
  ok(zkt_wait_for(events_are, &ew, 10000),
     "the nearest shared holder leaving wakes the exclusive waiter");
  usleep(300000);
  is(zkr__session_node_events(s[2]), ev_w + 1, "once");
  is(zkr__queue_state(w), ZKR__Q_ACQUIRING, "which still waits for the other");
  zkr__queue_release(r1);
  ok(zkt_wait_for(q_held, w, 10000), "the exclusive one holds");
  is(zkr__session_node_events(s[3]), ev_r3,
     "the shared waiter was woken by none of it");
  zkr__queue_release(w);
  ok(zkt_wait_for(q_held, r3, 10000), "then the shared waiter holds");
  is(zkr__session_node_events(s[3]), ev_r3 + 1, "woken once");
  zkr__queue_release(r3);
  zkr__queue_free(r1);
  zkr__queue_free(r2);
  zkr__queue_free(w);
  zkr__queue_free(r3);
  for (int i = 0; i < 4; i++)
    zkr_session_close(s[i]);
}

/* ---- requeue after a loss ---- */

struct slog {
  pthread_mutex_t mu;
  zkr__qstate st[16];
  int n;
};
static void on_state(zkr__queue *q, zkr__qstate st, void *ud) {
  struct slog *l = ud;
  (void)q;
  pthread_mutex_lock(&l->mu);
  if (l->n < 16)
    l->st[l->n++] = st;
  pthread_mutex_unlock(&l->mu);
}
static int slog_n(struct slog *l) {
  pthread_mutex_lock(&l->mu);
  int n = l->n;
  pthread_mutex_unlock(&l->mu);
  return n;
}
static int slog_has2(void *arg) {
  return slog_n(arg) >= 2;
}
static int slog_has3(void *arg) {
  return slog_n(arg) >= 3;
}

static void test_requeue(void) {
  const char *path = zkt_path("latch");
  zkr_session *s1 = connect_s(), *s2 = connect_s();
  struct slog log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
  zkr__qopts ao = {.state_fn = on_state, .state_ud = &log, .watch_held = 1};
  zkr__queue *a = mkq_opts(s1, path, &requeue_policy, &ao);
  zkr__queue *b = mkq(s2, path, &requeue_policy);
  zkr__queue_start(a, -1, NULL, NULL);
  is(zkr__queue_wait(a), ZKR_OK, "first participant holds");
  char old[600];
  zkr__queue_info(a, NULL, old, sizeof old);
  zkr__queue_start(b, -1, NULL, NULL);
  usleep(300000);
  is(zkr_session_state_get(admin), ZKR_STATE_CONNECTED, "admin connected");
  is(zkr__zk_delete(admin, old, -1, zkr__deadline(5000)), ZKR_OK,
     "a third party deletes the holder's node");
  ok(zkt_wait_for(q_held, b, 10000), "the second participant holds");
  ok(zkt_wait_for(slog_has2, &log, 10000), "two state changes told");
  pthread_mutex_lock(&log.mu);
  ok(log.n >= 2 && log.st[0] == ZKR__Q_HELD && log.st[1] == ZKR__Q_LOST,
     "HELD, then LOST, in order");
  pthread_mutex_unlock(&log.mu);
  is(zkr__queue_state(a), ZKR__Q_ACQUIRING,
     "the first queued again by itself (no call)");
  ok(zkt_wait_for(one_ahead, a, 10000), "at the back, behind the new holder");
  is(nchildren(path), 2, "one node each");
  zkr__queue_release(b);
  ok(zkt_wait_for(q_held, a, 10000), "the requeued participant holds again");
  char now[600];
  zkr__queue_info(a, NULL, now, sizeof now);
  ok(strcmp(old, now) != 0, "with a new node, not the old one");
  ok(zkt_wait_for(slog_has3, &log, 10000) && log.st[2] == ZKR__Q_HELD,
     "HELD told again");
  zkr__queue_release(a);
  is(zkr__queue_state(a), ZKR__Q_UNLOCKED,
     "a release is final: no requeue after it");
  zkr__queue_free(a);
  zkr__queue_free(b);
  zkr_session_close(s1);
  zkr_session_close(s2);
}

/* ---- the result callback exactly once, also when the session closes ---- */

static atomic_int done_calls, done_rc;
static void on_done(zkr__queue *q, int rc, void *ud) {
  (void)q;
  (void)ud;
  atomic_store(&done_rc, rc);
  atomic_fetch_add(&done_calls, 1);
}

static void test_close_while_waiting(void) {
  const char *path = zkt_path("close");
  zkr_session *h = connect_s(), *w = connect_s();
  zkr__queue *hq = mkq(h, path, &excl_policy);
  zkr__queue *wq = mkq(w, path, &excl_policy);
  zkr__queue_start(hq, -1, NULL, NULL);
  is(zkr__queue_wait(hq), ZKR_OK, "held by one session");
  is(zkr__queue_start(wq, -1, on_done, NULL), ZKR_OK, "another waits, async");
  usleep(300000);
  is(atomic_load(&done_calls), 0, "no result yet");
  is(zkr_session_close(w), ZKR_OK, "the waiter's session is closed");
  is(atomic_load(&done_calls), 1, "the result callback ran once, by the close");
  is(atomic_load(&done_rc), ZKR_ECLOSED, "with ZKR_ECLOSED");
  is(zkr__queue_start(wq, -1, on_done, NULL), ZKR_ECLOSED,
     "a start after the close is refused");
  usleep(200000);
  is(atomic_load(&done_calls), 1, "and its callback never runs");
  zkr__queue_free(wq);
  zkr__queue_release(hq);
  zkr__queue_free(hq);
  zkr_session_close(h);
}

/* ---- errors while creating the queue's parent ---- */

static int raw_create(const char *path, struct ACL_vector *acl, int flags) {
  zhandle_t *zh;
  if (zkr__session_get_zh(admin, &zh, NULL) != ZKR_OK)
    return -1;
  int rc = zoo_create(zh, path, "", 0, acl, flags, NULL, 0);
  zkr__session_put_zh(admin);
  return rc;
}

static void test_parent_errors(void) {
  zkr__queue *q;
  /* under another client's ephemeral node */
  const char *eph = zkt_path("eph");
  is(raw_create(eph, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL), ZOK,
     "an ephemeral node");
  char deep[600];
  snprintf(deep, sizeof deep, "%s/a/lock", eph);
  zkr_session *s = connect_s();
  q = mkq(s, deep, &excl_policy);
  zkr__queue_start(q, 5000, NULL, NULL);
  is(zkr__queue_wait(q), ZKR_EEPHEMERAL,
     "a queue under it: ZKR_EEPHEMERAL, not 'no such node'");
  zkr__queue_free(q);
  q = mkq(s, eph, &excl_policy);
  zkr__queue_start(q, 5000, NULL, NULL);
  is(zkr__queue_wait(q), ZKR_EEPHEMERAL, "a queue at it: the same");
  zkr__queue_free(q);
  /* under a node whose ACL refuses create */
  const char *ro = zkt_path("readonly");
  is(raw_create(ro, &ZOO_READ_ACL_UNSAFE, 0), ZOK,
     "a node with world:anyone:r");
  snprintf(deep, sizeof deep, "%s/job", ro);
  q = mkq(s, deep, &excl_policy);
  zkr__queue_start(q, 5000, NULL, NULL);
  is(zkr__queue_wait(q), ZKR_ENOAUTH, "a queue under it: ZKR_ENOAUTH");
  zkr__queue_free(q);
  snprintf(deep, sizeof deep, "%s/job/deeper/still", ro);
  q = mkq(s, deep, &excl_policy);
  zkr__queue_start(q, 5000, NULL, NULL);
  is(zkr__queue_wait(q), ZKR_ENOAUTH, "several levels under it: the same");
  zkr__queue_free(q);
  is(nchildren(ro), 0, "nothing was created under it");
  zkr__zk_delete(admin, ro, -1, zkr__deadline(5000));
  zkr_session_close(s);
}

/* ---- a create whose reply was lost, with a children-watch policy ---- */

/* A session with @timeout_ms through a new test/zkproxy (NULL if none). */
static zkr_session *proxied_session(int timeout_ms) {
  int port = zkt_proxy_start(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  zkr_session *s = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = timeout_ms;
  is(zkr_session_new(&s, via, &o), ZKR_OK, "a session through the proxy");
  return s;
}

/* Close @s, check that @path is left empty and stop the proxy. */
static void proxied_session_end(zkr_session *s, const char *path) {
  zkr_session_close(s);
  ok(zkt_children_become(admin, path, 0, 10000), "no node left");
  is(zkt_proxy_stop(), 0, "proxy exits cleanly");
}

static void test_lost_reply(void) {
  const char *path = zkt_path("adopt");
  zkr_session *s = proxied_session(10000);
  if (!s)
    return;
  int64_t sid = zkr_session_id(s);
  zkr__queue *h1 = mkq(admin, path, &two_policy);
  zkr__queue *q = mkq(s, path, &two_policy);
  zkr__queue_start(h1, -1, NULL, NULL);
  is(zkr__queue_wait(h1), ZKR_OK, "one lease held by another session");
  zkt_proxy_cmd("cut-after-request create2");
  ok(zkt_proxy_wait("done cut-after-request", 1, 5000), "proxy armed");
  zkr__queue_start(q, 15000, NULL, NULL);
  is(zkr__queue_wait(q), ZKR_OK,
     "the second lease is held although its create's reply was cut");
  ok(zkt_proxy_seen("fired create2"), "the create had reached the server");
  is(zkr_session_id(s), sid, "same session after reconnecting");
  is(nchildren(path), 2, "two nodes: the holder's and ours, no orphan");
  char node[600];
  zkr__qinfo qi;
  zkr__queue_info(q, &qi, node, sizeof node);
  int64_t token = qi.czxid;
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_exists(admin, node, zkr__deadline(5000), &r), ZKR_OK,
     "the adopted node is the one on the server");
  ok(r.stat.ephemeralOwner == sid && token == r.stat.czxid,
     "owned by our session, its czxid the fencing token");
  zkr__queue_release(q);
  zkr__queue_release(h1);
  zkr__queue_free(q);
  zkr__queue_free(h1);
  proxied_session_end(s, path);
}

/* ---- an adoption cut short by a cancel leaves nothing behind ----
 * The create's reply is cut, so the next attempt verifies the node it
 * finds by its prefix (an exists); that exists gets no answer and the
 * acquisition is cancelled meanwhile. The next acquisition of the same
 * object must wait on its children watch again: the adoption of the
 * cancelled attempt once stayed marked, and the waiter then listed without
 * the watch and waited forever. */

static void test_adopt_cancelled(void) {
  const char *path = zkt_path("adopt-cancel");
  zkr_session *s = proxied_session(20000);
  if (!s)
    return;
  zkr__queue *h1 = mkq(admin, path, &two_policy);
  zkr__queue *h2 = mkq(admin, path, &two_policy);
  zkr__queue *q = mkq(s, path, &two_policy);
  zkr__queue_start(h1, -1, NULL, NULL);
  zkr__queue_start(h2, -1, NULL, NULL);
  ok(zkr__queue_wait(h1) == ZKR_OK && zkr__queue_wait(h2) == ZKR_OK,
     "both leases held by another session");
  /* the reconnection waits until the exists is armed */
  zkt_proxy_cmd("refuse\ncut-after-request create2");
  ok(zkt_proxy_wait("done cut-after-request", 1, 5000), "proxy armed");
  zkr__queue_start(q, -1, NULL, NULL);
  ok(zkt_proxy_wait("fired create2", 1, 10000), "the create's reply is cut");
  char cmd[700];
  snprintf(cmd, sizeof cmd, "blackhole-after-request exists %s\naccept", path);
  zkt_proxy_cmd(cmd);
  ok(zkt_proxy_wait("done accept", 1, 5000), "reconnections accepted");
  ok(zkt_proxy_wait("fired exists", 1, 15000),
     "the node found by its prefix is checked, and that gets no answer");
  is(zkr__queue_cancel(q), ZKR_OK, "the acquisition is cancelled meanwhile");
  is(zkr__queue_wait(q), ZKR_ECANCELED, "it ends ECANCELED");
  /* the unanswered requests fail with the connection */
  zkt_proxy_cmd("flow\ncut-all");
  ok(zkt_proxy_wait("done cut-all", 1, 5000), "the connection is cut");
  ok(zkt_children_become(admin, path, 2, 20000),
     "the cancelled attempt's node is removed");
  is(zkr__queue_start(q, 30000, NULL, NULL), ZKR_OK,
     "the same object queues again");
  struct ahead a2 = {q, 2};
  ok(zkt_wait_for(ahead_is, &a2, 20000), "it waits behind the two leases");
  is(zkr__queue_release(h1), ZKR_OK, "a lease is given back");
  ok(zkt_wait_for(q_held, q, 10000),
     "the waiter is woken by its children watch and holds");
  zkr__queue_release(q);
  zkr__queue_release(h2);
  zkr__queue_free(q);
  zkr__queue_free(h1);
  zkr__queue_free(h2);
  proxied_session_end(s, path);
}

/* ---- the wait_fn and watch_held turned on later ---- */

static int q_lost(void *arg) {
  return zkr__queue_state(arg) == ZKR__Q_LOST;
}

static atomic_int waits_told;
static void count_wait(zkr__queue *q, int rc, void *ud) {
  (void)q;
  (void)ud;
  if (rc == ZKR_OK)
    atomic_fetch_add(&waits_told, 1);
}
static int told_once(void *arg) {
  (void)arg;
  return atomic_load(&waits_told) == 1;
}

/* The wait_fn runs once when an acquisition first has to wait (not for
 * one that holds at once, not again when the waiter counts again);
 * zkr__queue_watch_held turned on for a held node watches it at once, so
 * its deletion by another client makes it LOST. */
static void test_wait_fn(void) {
  const char *path = zkt_path("wait-fn");
  zkr_session *s[4];
  zkr__queue *q[4];
  for (int i = 0; i < 4; i++) {
    s[i] = connect_s();
    zkr__qopts wo = {.wait_fn = count_wait};
    q[i] = mkq_opts(s[i], path, &two_policy, &wo);
  }
  is(zkr__queue_start(q[0], -1, NULL, NULL), ZKR_OK, "first: start");
  is(zkr__queue_wait(q[0]), ZKR_OK, "first holds");
  is(zkr__queue_start(q[1], -1, NULL, NULL), ZKR_OK, "second: start");
  is(zkr__queue_wait(q[1]), ZKR_OK, "second holds");
  usleep(200000);
  is(atomic_load(&waits_told), 0, "holding at once tells no wait");
  is(zkr__queue_start(q[2], -1, NULL, NULL), ZKR_OK, "third waits");
  struct ahead a2 = {q[2], 2};
  ok(zkt_wait_for(ahead_is, &a2, 10000) && zkt_wait_for(told_once, NULL, 5000),
     "its first wait is told");
  is(zkr__queue_start(q[3], 0, NULL, NULL), ZKR_OK, "fourth tries once");
  is(zkr__queue_wait(q[3]), ZKR_EWOULDBLOCK, "and is refused");
  zkr__queue_reevaluate(q[2]); /* counts again, still waits */
  usleep(300000);
  is(atomic_load(&waits_told), 1,
     "counting again, or a refused try, tells nothing more");

  char node[512];
  zkr__queue_info(q[0], NULL, node, sizeof node);
  zkr__queue_watch_held(q[0], 1);
  ok(zkt_watches_become(s[0], node, 1, 5000),
     "watch_held turned on: it watches its node");
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes the first's node");
  ok(zkt_wait_for(q_lost, q[0], 5000), "watched from then on: LOST at once");
  ok(zkt_wait_for(q_held, q[2], 10000), "and the third holds");
  for (int i = 0; i < 4; i++) {
    zkr__queue_free(q[i]);
    zkr_session_close(s[i]);
  }
}

int main(void) {
  tap_init(240);
  hosts = zkt_start(1);
  zkt_root("t-queue");
  admin = connect_s();
  test_policy_checks();
  test_two_leases();
  test_count_all();
  test_shared_and_exclusive();
  test_requeue();
  test_close_while_waiting();
  test_parent_errors();
  test_lost_reply();
  test_adopt_cancelled();
  test_wait_fn();
  zkr_session_close(admin);
  return tap_done();
}
