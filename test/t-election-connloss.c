/* The election's leader when its connection drops, through test/zkproxy,
 * against a real server, under both choices of what SUSPENDED means:
 *   ZKR_ELECTION_SUSPEND_KEEP, a short cut (the client reconnects at once
 *     to the same session): the leader is never told it stopped leading,
 *     keeps its node and token, and its guarded writes still commit; no
 *     one else leads meanwhile;
 *   ZKR_ELECTION_SUSPEND_DROP, a short cut: told 0 at the cut, then 1 again
 *     once reconnected with its node still first (docs/election.md);
 *   both, while suspended (reconnections refused): under DROP no token and
 *     no node, under KEEP the same ones; under both guarded writes send
 *     nothing until the node is confirmed after the reconnection;
 *   ZKR_ELECTION_SUSPEND_KEEP, an outage past the session timeout (the
 *     proxy black-holes every frame): the leader is told 0 when its session
 *     clock declares the session lost, before the other participant is told
 *     it leads; its guarded writes fail; once the connection is back it
 *     queues again at the back with a new node;
 *   zkr_election_free() during an outage: the node goes once the
 *     connection is back, and the next participant leads.
 * Only the order of events is asserted, never how long anything took. */
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
static char via[64];
static zkr_session *admin;
static int n_cut, n_black, n_flow, n_refuse, n_accept; /* the proxy's
                                                         commands done */

static int mode_of(int keep) {
  return keep ? ZKR_ELECTION_SUSPEND_KEEP : ZKR_ELECTION_SUSPEND_DROP;
}

/* The session's events recorded by a zkt_rec. */
static int saw(zkt_rec *r, zkr_session_event ev) {
  return zkt_rec_find(r, ev, NULL, NULL);
}

struct conn_arg {
  zkr_session *s;
};
static int connected(void *arg) {
  return zkr_session_state_get(((struct conn_arg *)arg)->s) ==
         ZKR_STATE_CONNECTED;
}

/* While the cut lasts, is_leader is polled: 1 if it never read 0. */
struct poll_arg {
  zkr_election *e;
  zkr_session *s;
  int always;
  int stop;
  pthread_mutex_t mu;
};
static void *poll_leader(void *arg) {
  struct poll_arg *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stop)
      break;
    if (!zkr_election_is_leader(p->e)) {
      pthread_mutex_lock(&p->mu);
      p->always = 0;
      pthread_mutex_unlock(&p->mu);
    }
    usleep(2000);
  }
  return NULL;
}

static void short_cut(const char *path, int keep) {
  const char *mode = keep ? "KEEP" : "DROP";
  zkt_who a, b;
  zkt_who_open(&a, via, path, "a", mode_of(keep), 8000);
  zkt_who_open(&b, hosts, path, "b", mode_of(keep), 8000);
  zkt_rec r;
  zkt_rec_init(&r);
  zkr_session_add_listener(a.s, zkt_rec_fn, &r, NULL);
  zkr_election_start(a.e);
  is(zkr_election_await(a.e, 10000), ZKR_OK, "%s: a leads", mode);
  zkr_election_start(b.e);
  ok(zkt_children_become(admin, path, 2, 10000), "%s: b queued behind it",
     mode);
  char node[600], data[600];
  zkr_hold_node(zkr_election_hold(a.e), node, sizeof node);
  int64_t token = zkr_hold_token(zkr_election_hold(a.e));
  snprintf(data, sizeof data, "%s-data", path);
  zkr__zk_create(admin, data, "0", 1, 0, zkr__deadline(5000), NULL);

  struct poll_arg pa = {a.e, a.s, 1, 0, PTHREAD_MUTEX_INITIALIZER};
  pthread_t th;
  pthread_create(&th, NULL, poll_leader, &pa);
  zkt_proxy_cmd("cut-all");
  ok(zkt_proxy_wait("done cut-all", ++n_cut, 5000), "%s: a's connection cut",
     mode);
  ok(zkt_rec_wait(&r, ZKR_EV_RECONNECTED, 20000),
     "%s: a's session reconnects (the same session)", mode);
  struct conn_arg ca = {a.s};
  zkt_wait_for(connected, &ca, 10000);
  if (keep) {
    /* give a DROP-style report the time to arrive, if it were coming */
    usleep(500000);
    pthread_mutex_lock(&pa.mu);
    pa.stop = 1;
    pthread_mutex_unlock(&pa.mu);
    pthread_join(th, NULL);
    ok(saw(&r, ZKR_EV_SUSPENDED), "KEEP: the session was suspended");
    is(strcmp(zkt_who_told(&a), "1"), 0,
       "KEEP: a's listener was told 1 only, never 0 (%s)", zkt_who_told(&a));
    ok(pa.always, "KEEP: is_leader read 1 throughout the cut");
    char node2[600];
    zkr_hold_node(zkr_election_hold(a.e), node2, sizeof node2);
    is(strcmp(node, node2), 0, "KEEP: the same node");
    is(zkr_hold_token(zkr_election_hold(a.e)), token, "KEEP: the same token");
    is(zkr_hold_guarded_set(zkr_election_hold(a.e), data, "1", 1, -1, 10000),
       ZKR_OK, "KEEP: its guarded write commits after the reconnection");
  } else {
    pthread_mutex_lock(&pa.mu);
    pa.stop = 1;
    pthread_mutex_unlock(&pa.mu);
    pthread_join(th, NULL);
    ok(zkt_who_wait_told(&a, "1,0,1", 20000),
       "DROP: a is told 0 at the cut, then 1 again: its node is still first "
       "(%s)",
       zkt_who_told(&a));
    /* (is_leader is 0 only between SUSPENDED and RECONNECTED, which on
     * loopback can be shorter than any polling period: the listener's
     * record above is the evidence) */
    ok(zkr_election_is_leader(a.e), "DROP: a leads again");
    is(zkr_hold_guarded_set(zkr_election_hold(a.e), data, "1", 1, -1, 10000),
       ZKR_OK, "DROP: and its guarded write commits");
  }
  is(strcmp(zkt_who_told(&b), ""), 0, "%s: b was never told it leads (%s)",
     mode, zkt_who_told(&b));
  zkr__zk_delete(admin, data, -1, zkr__deadline(5000));
  zkt_who_close(&a);
  ok(zkt_who_wait_told(&b, "1", 10000), "%s: once a leaves, b leads", mode);
  zkt_who_close(&b);
  ok(zkt_children_become(admin, path, 0, 10000), "%s: nothing left", mode);
}

/* While suspended (the connection cut, every reconnection refused, the
 * session still alive): what the leader reads. Under DROP it does not
 * lead, so no token and no node; under KEEP it leads, with its token and
 * node, but its guarded writes send nothing until the connection is back
 * and its node confirmed (docs/election.md). */
static void suspended(const char *path, int keep) {
  const char *mode = keep ? "KEEP" : "DROP";
  zkt_who a, b;
  zkt_who_open(&a, via, path, "a", mode_of(keep), 20000);
  zkt_who_open(&b, hosts, path, "b", mode_of(keep), 20000);
  zkt_rec r;
  zkt_rec_init(&r);
  zkr_session_add_listener(a.s, zkt_rec_fn, &r, NULL);
  zkr_election_start(a.e);
  is(zkr_election_await(a.e, 10000), ZKR_OK, "%s suspended: a leads", mode);
  zkr_election_start(b.e);
  ok(zkt_children_become(admin, path, 2, 10000),
     "%s suspended: b queued behind it", mode);
  char node[600], node2[600], data[600];
  is(zkr_hold_node(zkr_election_hold(a.e), node, sizeof node), ZKR_OK,
     "%s suspended: a's node", mode);
  int64_t token = zkr_hold_token(zkr_election_hold(a.e));
  ok(token > 0, "%s suspended: a's token", mode);
  snprintf(data, sizeof data, "%s-data", path);
  zkr__zk_create(admin, data, "0", 1, 0, zkr__deadline(5000), NULL);

  zkt_proxy_cmd("refuse");
  ok(zkt_proxy_wait("done refuse", ++n_refuse, 5000),
     "%s suspended: the proxy refuses new connections", mode);
  zkt_proxy_cmd("cut-all");
  ok(zkt_proxy_wait("done cut-all", ++n_cut, 5000),
     "%s suspended: a's connection cut", mode);
  ok(zkt_rec_wait(&r, ZKR_EV_SUSPENDED, 20000),
     "%s suspended: a's session is suspended", mode);
  if (keep) {
    ok(zkr_election_is_leader(a.e), "KEEP suspended: a still leads");
    is(zkr_hold_token(zkr_election_hold(a.e)), token,
       "KEEP suspended: its token is readable");
    is(zkr_hold_node(zkr_election_hold(a.e), node2, sizeof node2), ZKR_OK,
       "KEEP suspended: its node is readable");
    is(strcmp(node, node2), 0, "KEEP suspended: the same node");
  } else {
    ok(zkt_who_wait_told(&a, "1,0", 10000), "DROP suspended: a was told 0 (%s)",
       zkt_who_told(&a));
    ok(!zkr_election_is_leader(a.e), "DROP suspended: a does not lead");
    is(zkr_hold_token(zkr_election_hold(a.e)), 0, "DROP suspended: no token");
    is(zkr_hold_node(zkr_election_hold(a.e), node2, sizeof node2), ZKR_ENOTHELD,
       "DROP suspended: no node (ZKR_ENOTHELD)");
    is(strcmp(node2, ""), 0, "DROP suspended: the buffer is emptied");
  }
  is(zkr_hold_guarded_set(zkr_election_hold(a.e), data, "a", 1, -1, 2000),
     ZKR_ENOTHELD, "%s suspended: a guarded write sends nothing (ZKR_ENOTHELD)",
     mode);
  is(zkt_children(admin, path), 2, "%s suspended: both nodes stay", mode);
  is(strcmp(zkt_who_told(&b), ""), 0,
     "%s suspended: b is not told it leads (%s)", mode, zkt_who_told(&b));

  zkt_proxy_cmd("accept");
  ok(zkt_proxy_wait("done accept", ++n_accept, 5000),
     "%s suspended: the proxy accepts again", mode);
  ok(zkt_rec_wait(&r, ZKR_EV_RECONNECTED, 30000),
     "%s suspended: a's session reconnects (the same session)", mode);
  ok(zkt_who_wait_told(&a, keep ? "1" : "1,0,1", 20000),
     "%s suspended: a was told %s (%s)", mode, keep ? "1 only" : "1,0,1",
     zkt_who_told(&a));
  struct conn_arg ca = {a.s};
  zkt_wait_for(connected, &ca, 10000);
  is(zkr_hold_token(zkr_election_hold(a.e)), token,
     "%s suspended: then the same token", mode);
  int rc = ZKR_ENOTHELD;
  for (int i = 0; i < 100 && rc == ZKR_ENOTHELD; i++) {
    rc = zkr_hold_guarded_set(zkr_election_hold(a.e), data, "1", 1, -1, 10000);
    if (rc == ZKR_ENOTHELD)
      usleep(100000); /* its node not yet confirmed */
  }
  is(rc, ZKR_OK, "%s suspended: its guarded write commits once confirmed",
     mode);
  zkr__zk_delete(admin, data, -1, zkr__deadline(5000));
  zkt_who_close(&a);
  ok(zkt_who_wait_told(&b, "1", 10000), "%s suspended: once a leaves, b leads",
     mode);
  zkt_who_close(&b);
  ok(zkt_children_become(admin, path, 0, 10000), "%s suspended: nothing left",
     mode);
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  int port = zkt_proxy_start(hosts);
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  zkt_root("t-election-connloss");
  admin = zkt_connect(hosts, 10000);

  short_cut(zkt_path("keep"), 1);
  short_cut(zkt_path("drop"), 0);
  suspended(zkt_path("keep-suspended"), 1);
  suspended(zkt_path("drop-suspended"), 0);

  /* ---- KEEP, an outage past the session timeout ---- */
  {
    const char *path = zkt_path("outage");
    zkt_who a, b;
    zkt_who_open(&a, via, path, "a", ZKR_ELECTION_SUSPEND_KEEP, 4000);
    zkt_who_open(&b, hosts, path, "b", ZKR_ELECTION_SUSPEND_KEEP, 10000);
    zkr_election_start(a.e);
    is(zkr_election_await(a.e, 10000), ZKR_OK, "outage: a leads");
    zkr_election_start(b.e);
    ok(zkt_children_become(admin, path, 2, 10000), "outage: b queued");
    char node[600], data[600];
    zkr_hold_node(zkr_election_hold(a.e), node, sizeof node);
    snprintf(data, sizeof data, "%s-data", path);
    zkr__zk_create(admin, data, "0", 1, 0, zkr__deadline(5000), NULL);
    zkt_proxy_cmd("blackhole");
    ok(zkt_proxy_wait("done blackhole", ++n_black, 5000),
       "outage: a's connection black-holed");
    ok(zkt_who_wait_told(&b, "1", 30000),
       "outage: the server expires a's session and b leads");
    ok(zkt_who_wait_told(&a, "1,0", 5000), "outage: a was told 0 (%s)",
       zkt_who_told(&a));
    int64_t a0 = zkt_who_told_at(&a, 0, 0), b1 = zkt_who_told_at(&b, 1, 0);
    ok(a0 >= 0 && b1 >= 0 && a0 <= b1,
       "outage: a was told 0 before b was told 1 (a's session clock)");
    ok(!zkr_election_is_leader(a.e), "outage: a does not lead");
    ok(zkr_hold_guarded_set(zkr_election_hold(a.e), data, "a", 1, -1, 2000) !=
           ZKR_OK,
       "outage: a's guarded write fails");
    zkt_proxy_cmd("flow");
    ok(zkt_proxy_wait("done flow", ++n_flow, 5000),
       "outage: the connection flows");
    ok(zkt_children_become(admin, path, 2, 30000),
       "outage: a queued again (two nodes: b's and a's new one)");
    struct conn_arg ca = {a.s};
    zkt_wait_for(connected, &ca, 30000);
    zkr__result res;
    memset(&res, 0, sizeof res);
    ok(zkr__zk_exists(admin, node, zkr__deadline(5000), &res) != ZKR_OK,
       "outage: its old node is gone (the new one is another)");
    ok(zkr_election_is_leader(b.e) && !zkr_election_is_leader(a.e),
       "outage: b leads, a waits behind it");
    is(strcmp(zkt_who_told(&b), "1"), 0, "outage: b was told once (%s)",
       zkt_who_told(&b));
    zkr__zk_delete(admin, data, -1, zkr__deadline(5000));
    zkt_who_close(&b);
    ok(zkt_who_wait_told(&a, "1,0,1", 10000), "outage: then a leads again (%s)",
       zkt_who_told(&a));
    zkt_who_close(&a);
    ok(zkt_children_become(admin, path, 0, 10000), "outage: nothing left");
  }

  /* ---- free during an outage ---- */
  {
    const char *path = zkt_path("free");
    zkt_who a, b;
    zkt_who_open(&a, via, path, "a", ZKR_ELECTION_SUSPEND_DROP, 10000);
    zkt_who_open(&b, hosts, path, "b", ZKR_ELECTION_SUSPEND_DROP, 10000);
    zkr_election_start(a.e);
    is(zkr_election_await(a.e, 10000), ZKR_OK, "free: a leads");
    zkr_election_start(b.e);
    ok(zkt_children_become(admin, path, 2, 10000), "free: b queued");
    zkt_proxy_cmd("blackhole");
    ok(zkt_proxy_wait("done blackhole", ++n_black, 5000),
       "free: a's connection black-holed");
    zkr_election_free(a.e);
    a.e = NULL;
    ok(1, "free: a freed while its connection is down");
    is(zkt_children(admin, path), 2, "free: its node is still there");
    zkt_proxy_cmd("flow");
    ok(zkt_proxy_wait("done flow", ++n_flow, 5000),
       "free: the connection flows");
    ok(zkt_who_wait_told(&b, "1", 20000),
       "free: once the connection is back its node goes and b leads");
    ok(zkt_settled_children(a.s, admin, path) == 1,
       "free: only b's node is left");
    zkt_who_close(&a);
    zkt_who_close(&b);
    ok(zkt_children_become(admin, path, 0, 10000), "free: nothing left");
  }

  zkr_session_close(admin);
  is(zkt_proxy_stop(), 0, "the proxy exits cleanly");
  return tap_done();
}
