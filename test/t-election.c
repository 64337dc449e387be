/* Leader election against a real standalone server: bad input, the
 * latch's naming and order, one session woken per change of leader,
 * resign, free, an expired leader and a deleted leader node (each stops
 * leading at once, the next one leads, the old one queues again at the
 * back), a node named as ours but owned by another session (Curator's
 * CURATOR-696: never lead on it), the selector with and without requeue
 * and told when leadership is lost while its function runs, the leader
 * and participants for anyone, and an observer told every change once. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt-who.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

static int is_leader_fn(void *arg) {
  return zkr_election_is_leader(((zkt_who *)arg)->e);
}

/* The participants' nodes in order, as "a b c" by the owner's id. */
static const char *order(const char *path) {
  static char buf[256];
  buf[0] = '\0';
  zkr_participant *p = NULL;
  size_t n = 0;
  if (zkr_election_participants(admin, path, 5000, &p, &n) != ZKR_OK)
    return "?";
  for (size_t i = 0; i < n; i++) {
    const char *id = p[i].data ? strstr(p[i].data, " id=") : NULL;
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "",
             id ? id + 4 : "-");
  }
  zkr_participants_free(p, n);
  return buf;
}

static void test_bad_input(void) {
  const char *path = zkt_path("bad");
  zkr_election *e = NULL;
  is(zkr_election_new(NULL, admin, path, NULL), ZKR_EINVAL, "NULL out");
  is(zkr_election_new(&e, NULL, path, NULL), ZKR_EINVAL, "NULL session");
  is(zkr_election_new(&e, admin, "/", NULL), ZKR_EBADPATH, "path /");
  is(zkr_election_new(&e, admin, "/zookeeper/x", NULL), ZKR_EBADPATH,
     "under /zookeeper");
  is(zkr_election_new(
         &e, admin, path,
         &(zkr_election_options){.suspend = (zkr_election_suspend)7}),
     ZKR_EINVAL, "a bad suspend mode");
  is(zkr_election_new(&e, admin, path, &(zkr_election_options){.id = "a\nb"}),
     ZKR_EINVAL, "an id with a newline");
  is(zkr_election_new(&e, admin, path,
                      &(zkr_election_options){.reserved_[63] = 2}),
     ZKR_EINVAL, "a non-zero reserved byte");
  ok(e == NULL, "*out untouched");
  is(zkr_election_new(
         &e, admin, path,
         &(zkr_election_options){.id = "compound",
                                 .suspend = ZKR_ELECTION_SUSPEND_KEEP}),
     ZKR_OK, "a compound literal");
  zkr_election_free(e);
  e = NULL;
  is(zkr_election_new(&e, admin, path, NULL), ZKR_OK, "new");
  is(zkr_election_await(e, 0), ZKR_ENOTHELD, "await before joining");
  is(zkr_election_resign(e), ZKR_ENOTHELD, "resign before joining");
  is(zkr_election_is_leader(e), 0, "not leader");
  is(zkr_election_run(e, NULL, NULL, 0), ZKR_EINVAL, "run without function");
  is(zkr_hold_token(zkr_election_hold(e)), 0, "no token");
  is(zkt_children(admin, path), -1, "nothing created");
  is(zkr_election_start(e), ZKR_OK, "start");
  is(zkr_election_start(e), ZKR_EBUSY, "start again: EBUSY");
  is(zkr_election_await(e, 5000), ZKR_OK, "the only participant leads");
  zkr_election_free(e);
  ok(zkt_children_become(admin, path, 0, 5000), "free leaves no node");
  zkr_participant l;
  is(zkr_election_leader(admin, path, 5000, &l), ZKR_ENONODE,
     "no leader: ZKR_ENONODE");
}

static void test_latch(void) {
  const char *path = zkt_path("latch");
  zkt_who a, b, c;
  zkt_who_open(&a, hosts, path, "a", -1, 10000);
  zkt_who_open(&b, hosts, path, "b", -1, 10000);
  zkt_who_open(&c, hosts, path, "c", -1, 10000);
  is(zkr_election_start(a.e), ZKR_OK, "a joins");
  is(zkr_election_await(a.e, 5000), ZKR_OK, "a leads");
  ok(zkt_who_wait_told(&a, "1", 10000), "a's listener: elected (%s)",
     zkt_who_told(&a));
  is(zkr_election_start(b.e), ZKR_OK, "b joins");
  ok(zkt_children_become(admin, path, 2, 5000), "b queued");
  is(zkr_election_start(c.e), ZKR_OK, "c joins");
  ok(zkt_children_become(admin, path, 3, 5000), "c queued");
  is(zkr_election_await(b.e, 200), ZKR_ETIMEDOUT, "b does not lead");
  char node[512];
  is(zkr_hold_node(zkr_election_hold(a.e), node, sizeof node), ZKR_OK,
     "a's node %s", node);
  const char *name = strrchr(node, '/') + 1;
  ok(strncmp(name, "_c_", 3) == 0 && strlen(name) == 40 + 6 + 10 &&
         strncmp(name + 40, "latch-", 6) == 0,
     "Curator LeaderLatch's name");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_exists(admin, node, zkr__deadline(5000), &r);
  ok(zkr_hold_token(zkr_election_hold(a.e)) == r.stat.czxid,
     "the fencing token is the node's czxid");
  zkr_participant l;
  is(zkr_election_leader(admin, path, 5000, &l), ZKR_OK, "the leader");
  ok(strcmp(l.node, name) == 0 && l.data && strstr(l.data, " id=a") &&
         l.session_id == zkr_session_id(a.s) && l.czxid == r.stat.czxid,
     "is a (%s)", l.data ? l.data : "?");
  is(l.role, ZKR_ROLE_LATCH, "in the role latch");
  free(l.node);
  free(l.data);
  ok(strcmp(order(path), "a b c") == 0, "participants: %s", order(path));
  uint64_t cev = zkr__session_node_events(c.s);
  is(zkr_election_resign(a.e), ZKR_OK, "a resigns");
  is(zkr_election_await(b.e, 5000), ZKR_OK, "b leads");
  ok(zkt_who_wait_told(&a, "1,0", 10000), "a's listener: elected, not (%s)",
     zkt_who_told(&a));
  ok(zkt_who_wait_told(&b, "1", 10000), "b's listener: elected (%s)",
     zkt_who_told(&b));
  ok(zkt_children_become(admin, path, 3, 5000), "a queued again");
  ok(strcmp(order(path), "b c a") == 0, "at the back: %s", order(path));
  is(zkr__session_node_events(c.s), cev, "c was not woken");
  is(zkr_election_is_leader(a.e), 0, "a does not lead");
  zkr_election_free(b.e);
  b.e = NULL;
  is(zkr_election_await(c.e, 5000), ZKR_OK, "b freed: c leads");
  is(zkr__session_node_events(c.s) - cev, 1, "c was woken once");
  ok(strcmp(order(path), "c a") == 0, "b's node is gone: %s", order(path));
  ok(zkt_who_told_is(&b, "1"), "b's listener was not called by free");
  zkt_who_close(&a);
  zkt_who_close(&b);
  zkt_who_close(&c);
  ok(zkt_children_become(admin, path, 0, 5000), "nothing left");
}

static void test_losses(void) {
  const char *path = zkt_path("losses");
  zkt_who a, b;
  zkt_who_open(&a, hosts, path, "a", -1, 4000);
  zkt_who_open(&b, hosts, path, "b", -1, 10000);
  zkr_election_start(a.e);
  is(zkr_election_await(a.e, 5000), ZKR_OK, "a leads");
  zkr_election_start(b.e);
  ok(zkt_children_become(admin, path, 2, 5000), "b queued");
  char old[512];
  zkr_hold_node(zkr_election_hold(a.e), old, sizeof old);
  ok(zkt_expire(hosts, a.s) == 0, "a's session is expired");
  /* (it may be told 0 at the cut of its connection, 1 again when the same
   * session comes back for a moment, and 0 at the expiry: each change
   * once, in order) */
  ok(zkt_who_wait_told(&a, "1,0", 10000) || zkt_who_told_is(&a, "1,0,1,0"),
     "a is told it does not lead (%s)", zkt_who_told(&a));
  is(zkr_election_await(b.e, 10000), ZKR_OK, "b leads");
  ok(zkt_children_become(admin, path, 2, 10000), "a queued again");
  char now[512];
  ok(strcmp(order(path), "b a") == 0, "behind b: %s", order(path));
  is(zkr_election_is_leader(a.e), 0, "a does not lead");
  /* b's node deleted by another client: b stops at once, a leads */
  zkr_hold_node(zkr_election_hold(b.e), now, sizeof now);
  is(zkr__zk_delete(admin, now, -1, zkr__deadline(5000)), ZKR_OK,
     "b's node deleted by another client");
  ok(zkt_who_wait_told(&b, "1,0", 10000), "b is told at once (%s)",
     zkt_who_told(&b));
  is(zkr_election_await(a.e, 10000), ZKR_OK, "a leads");
  ok(zkr_hold_node(zkr_election_hold(a.e), now, sizeof now) == ZKR_OK &&
         strcmp(now, old),
     "on a new node");
  ok(zkt_children_become(admin, path, 2, 10000) &&
         strcmp(order(path), "a b") == 0,
     "b queued again: %s", order(path));
  zkt_who_close(&a);
  zkt_who_close(&b);
}

/* A node named as ours, first in the queue, but owned by another session
 * (what an expired session's node is to its old owner): never lead on
 * it. */
static void test_not_our_node(void) {
  const char *path = zkt_path("not-ours");
  zkt_who h, p;
  zkt_who_open(&h, hosts, path, "h", -1, 10000);
  zkt_who_open(&p, hosts, path, "p", -1, 10000);
  zkr_election_start(h.e);
  is(zkr_election_await(h.e, 5000), ZKR_OK, "h leads");
  zkr_election_start(p.e);
  ok(zkt_children_become(admin, path, 2, 5000), "p queued");
  char *names[4] = {0};
  int n = zkt_queue_order(admin, path, names, 4);
  char pnode[600];
  snprintf(pnode, sizeof pnode, "%s/%s", path, n == 2 ? names[1] : "?");
  /* swap p's node for one of the same name owned by the admin session */
  zkr__result r;
  memset(&r, 0, sizeof r);
  int rc = zkr__zk_delete(admin, pnode, -1, zkr__deadline(5000));
  if (rc == ZKR_OK)
    rc = zkr__zk_create(admin, pnode, "fake", 4, ZOO_EPHEMERAL,
                        zkr__deadline(5000), &r);
  zkr__result_clear(&r);
  is(rc, ZKR_OK, "p's node replaced by a same-named node of another session");
  /* q queues behind the same-named node, so that once h resigns the
   * first node that is not p's old name is q's, whichever of h's and p's
   * new nodes the server numbers first */
  zkt_who q;
  zkt_who_open(&q, hosts, path, "q", -1, 10000);
  zkr_election_start(q.e);
  ok(zkt_children_become(admin, path, 3, 5000), "q queued behind it");
  is(zkr_election_resign(h.e), ZKR_OK,
     "h resigns: the same-named node is first");
  ok(zkt_wait_for(is_leader_fn, &q, 10000),
     "q leads: p gave the same-named node up");
  ok(!zkr_election_is_leader(p.e) && !zkr_election_is_leader(h.e),
     "p did not lead on the node that is not its session's (nor h)");
  memset(&r, 0, sizeof r);
  is(zkr__zk_exists(admin, pnode, zkr__deadline(5000), &r), ZKR_ENONODE,
     "that node (it carries p's random prefix: an old node of p's) was "
     "deleted");
  ok(zkt_children_become(admin, path, 3, 5000) &&
         (strcmp(order(path), "q h p") == 0 ||
          strcmp(order(path), "q p h") == 0),
     "p queued again with a node of its own, behind q: %s", order(path));
  ok(zkt_who_told_is(&p, ""), "p's listener was never told it leads (%s)",
     zkt_who_told(&p));
  zkt_who_close(&q);
  for (int i = 0; i < n; i++)
    free(names[i]);
  zkt_who_close(&h);
  zkt_who_close(&p);
}

/* ---- the selector ---- */

struct term {
  pthread_mutex_t mu;
  int runs[2];
  int inside, overlap, saw_leader_inside, hold_ms, until_lost, lost_seen;
};
struct runner {
  zkt_who w;
  struct term *t;
  int idx;
};

static void work(zkr_election *e, void *ud) {
  struct runner *r = ud;
  struct term *t = r->t;
  pthread_mutex_lock(&t->mu);
  if (t->inside++)
    t->overlap = 1;
  t->runs[r->idx]++;
  if (zkr_election_is_leader(e))
    t->saw_leader_inside++;
  pthread_mutex_unlock(&t->mu);
  if (t->until_lost) {
    while (zkr_election_is_leader(e))
      usleep(10000);
    pthread_mutex_lock(&t->mu);
    t->lost_seen = 1;
    pthread_mutex_unlock(&t->mu);
  } else {
    usleep((useconds_t)t->hold_ms * 1000);
  }
  pthread_mutex_lock(&t->mu);
  t->inside--;
  pthread_mutex_unlock(&t->mu);
}

static int both_ran_twice(void *arg) {
  struct term *t = arg;
  pthread_mutex_lock(&t->mu);
  int k = t->runs[0] >= 2 && t->runs[1] >= 2;
  pthread_mutex_unlock(&t->mu);
  return k;
}
static int lost_seen(void *arg) {
  struct term *t = arg;
  pthread_mutex_lock(&t->mu);
  int k = t->lost_seen;
  pthread_mutex_unlock(&t->mu);
  return k;
}

static void test_selector(void) {
  const char *path = zkt_path("selector");
  struct term t;
  memset(&t, 0, sizeof t);
  pthread_mutex_init(&t.mu, NULL);
  t.hold_ms = 50;
  struct runner r[2];
  for (int i = 0; i < 2; i++) {
    zkt_who_open(&r[i].w, hosts, path, i ? "s1" : "s0", -1, 10000);
    r[i].t = &t;
    r[i].idx = i;
  }
  is(zkr_election_run(r[0].w.e, work, &r[0], 1), ZKR_OK, "selector 0 runs");
  is(zkr_election_run(r[1].w.e, work, &r[1], 1), ZKR_OK, "selector 1 runs");
  is(zkr_election_start(r[0].w.e), ZKR_EBUSY, "and cannot start a latch");
  int twice = zkt_wait_for(both_ran_twice, &t, 10000);
  pthread_mutex_lock(&t.mu); /* (the functions still run) */
  ok(twice, "with requeue, each led at least twice (%d, %d)", t.runs[0],
     t.runs[1]);
  ok(!t.overlap, "never two functions at once");
  ok(t.saw_leader_inside == t.runs[0] + t.runs[1] ||
         t.saw_leader_inside >= t.runs[0] + t.runs[1] - 1,
     "is_leader inside the function");
  pthread_mutex_unlock(&t.mu);
  zkr_participant *p = NULL;
  size_t n = 0;
  zkr_election_participants(admin, path, 5000, &p, &n);
  ok(n >= 1 && strstr(p[0].node, "-lock-") != NULL,
     "selector nodes are Curator LeaderSelector's (mutex) nodes");
  ok(n >= 1 && p[0].role == ZKR_ROLE_SELECTOR, "in the role selector (%s)",
     n ? zkr_role_name(p[0].role) : "?");
  zkr_participants_free(p, n);
  zkt_who_close(&r[0].w);
  zkt_who_close(&r[1].w);
  ok(zkt_children_become(admin, path, 0, 5000), "freed: nothing left");

  /* lost while the function runs: told, and it returns */
  memset(&t, 0, sizeof t);
  pthread_mutex_init(&t.mu, NULL);
  t.until_lost = 1;
  zkt_who_open(&r[0].w, hosts, path, "s0", -1, 4000);
  r[0].t = &t;
  r[0].idx = 0;
  is(zkr_election_run(r[0].w.e, work, &r[0], 0), ZKR_OK, "a selector");
  ok(zkt_wait_for(is_leader_fn, &r[0].w, 5000), "leads");
  ok(zkt_expire(hosts, r[0].w.s) == 0, "its session is expired");
  ok(zkt_wait_for(lost_seen, &t, 10000),
     "its function sees is_leader 0 and returns");
  ok(zkt_who_wait_told(&r[0].w, "1,0", 10000) ||
         zkt_who_told_is(&r[0].w, "1,0,1,0"),
     "its listener: elected, not (%s)", zkt_who_told(&r[0].w));
  is(zkr_election_await(r[0].w.e, 0), ZKR_ENOTHELD,
     "without requeue it is done");
  zkt_who_close(&r[0].w);
}

/* ---- observer ---- */

struct seen {
  pthread_mutex_t mu;
  char log[512];
  int n;
};
static void observed(zkr_election_observer *o, const zkr_participant *l,
                     void *ud) {
  struct seen *s = ud;
  (void)o;
  const char *id = l && l->data ? strstr(l->data, " id=") : NULL;
  pthread_mutex_lock(&s->mu);
  snprintf(s->log + strlen(s->log), sizeof s->log - strlen(s->log), "%s%s",
           s->n++ ? " " : "", l ? (id ? id + 4 : "?") : "none");
  pthread_mutex_unlock(&s->mu);
}
struct seen_arg {
  struct seen *s;
  const char *want;
};
static int seen_is(void *arg) {
  struct seen_arg *a = arg;
  pthread_mutex_lock(&a->s->mu);
  int k = strcmp(a->s->log, a->want) == 0;
  pthread_mutex_unlock(&a->s->mu);
  return k;
}

static void test_observe(void) {
  const char *path = zkt_path("observed");
  struct seen s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.mu, NULL);
  zkr_election_observer *o = NULL;
  is(zkr_election_observe(admin, path, NULL, &s, &o), ZKR_EINVAL,
     "observe without a function");
  is(zkr_election_observe(admin, path, observed, &s, &o), ZKR_OK, "observe");
  struct seen_arg w1 = {&s, "none"};
  ok(zkt_wait_for(seen_is, &w1, 5000), "no path: told none (%s)", s.log);
  zkt_who a, b;
  zkt_who_open(&a, hosts, path, "a", -1, 10000);
  zkt_who_open(&b, hosts, path, "b", -1, 10000);
  zkr_election_start(a.e);
  zkr_election_await(a.e, 5000);
  struct seen_arg w2 = {&s, "none a"};
  ok(zkt_wait_for(seen_is, &w2, 5000), "a leads: told a (%s)", s.log);
  zkr_election_start(b.e);
  ok(zkt_children_become(admin, path, 2, 5000), "b queued");
  usleep(300000);
  ok(strcmp(s.log, "none a") == 0, "b queued: no change of leader told");
  zkr_election_free(a.e);
  a.e = NULL;
  struct seen_arg w3 = {&s, "none a b"};
  ok(zkt_wait_for(seen_is, &w3, 5000), "a leaves: told b (%s)", s.log);
  zkr_election_free(b.e);
  b.e = NULL;
  struct seen_arg w4 = {&s, "none a b none"};
  ok(zkt_wait_for(seen_is, &w4, 5000), "b leaves: told none (%s)", s.log);
  zkr_election_observer_free(o);
  zkt_who_close(&a);
  zkt_who_close(&b);
  is(zkt_children(admin, path) <= 0, 1, "an observer created nothing");
}

/* Free and resign right after joining, while the create is under way: no
 * node left behind, exactly one node per participant (CURATOR-18 left a
 * latch node forever when closed during its create). */
static int no_nodes(void *arg) {
  return zkt_children(admin, arg) <= 0; /* (-1: the path is not there) */
}

static void test_close_during_create(void) {
  const char *path = zkt_path("close-early");
  zkr_session *s = zkt_connect(hosts, 10000);
  int bad = 0;
  for (int i = 0; i < 20; i++) {
    zkr_election *e = NULL;
    if (zkr_election_new(&e, s, path, NULL) != ZKR_OK ||
        zkr_election_start(e) != ZKR_OK)
      bad++;
    zkr_election_free(e); /* the create's reply has not come yet */
  }
  is(bad, 0, "20 participants joined and were freed at once");
  ok(zkt_wait_for(zkt_bg_idle, s, 10000), "their deletions are done");
  ok(zkt_wait_for(no_nodes, (void *)path, 10000), "no node left behind (%d)",
     zkt_children(admin, path));
  zkt_who a;
  zkt_who_open(&a, hosts, path, "a", -1, 10000);
  for (int i = 0; i < 5; i++) {
    zkr_election_start(a.e);
    zkr_election_resign(a.e); /* again while its create is under way */
  }
  is(zkr_election_await(a.e, 10000), ZKR_OK,
     "resigned during its create, "
     "it leads in the end");
  ok(zkt_wait_for(zkt_bg_idle, a.s, 10000) &&
         zkt_children_become(admin, path, 1, 10000),
     "with exactly one node (%d)", zkt_children(admin, path));
  zkt_who_close(&a);
  zkr_session_close(s);
  ok(zkt_wait_for(no_nodes, (void *)path, 10000), "nothing left");
}

int main(void) {
  tap_init(240);
  hosts = zkt_start(1);
  zkt_root("t-election");
  admin = zkt_connect(hosts, 10000);
  test_bad_input();
  test_latch();
  test_losses();
  test_not_our_node();
  test_selector();
  test_observe();
  test_close_during_create();
  zkr_session_close(admin);
  return tap_done();
}
