/* The session on a three-server ensemble: failover keeps the session;
 * a partitioned client declares LOST before the ensemble expires it. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

/* Which server (1..3) serves session @sid, from each server's "cons". */
static int server_of(int64_t sid) {
  char needle[64];
  snprintf(needle, sizeof needle, "sid=0x%llx", (unsigned long long)sid);
  for (int id = 1; id <= 3; id++) {
    char *c = zkt_4lw(id, "cons");
    int hit = c && strstr(c, needle);
    free(c);
    if (hit)
      return id;
  }
  return 0;
}

static void test_failover(const char *hosts) {
  zkr_session *s = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = 20000;
  o.lost_fraction = 0.9;
  is(zkr_session_new(&s, hosts, &o), ZKR_OK, "connect to the ensemble");
  if (!s)
    return;
  zkt_rec r;
  zkt_rec_init(&r);
  zkr_session_add_listener(s, zkt_rec_fn, &r, NULL);
  int64_t sid = zkr_session_id(s);
  int id = server_of(sid);
  ok(id > 0, "session served by server %d", id);
  char *out = zkt_sandbox("kill %d", id);
  ok(out != NULL, "SIGKILL server %d", id);
  free(out);
  ok(zkt_rec_wait(&r, ZKR_EV_RECONNECTED, 30000), "RECONNECTED");
  ok(zkt_rec_find(&r, ZKR_EV_SUSPENDED, NULL, NULL), "after SUSPENDED");
  ok(!zkt_rec_find(&r, ZKR_EV_LOST, NULL, NULL), "never LOST");
  is(zkr_session_id(s), sid, "same session id");
  int id2 = server_of(sid);
  ok(id2 > 0 && id2 != id, "now served by server %d", id2);
  zkr__result res;
  memset(&res, 0, sizeof res);
  is(zkr__zk_exists(s, "/", zkr__deadline(10000), &res), ZKR_OK,
     "operations work");
  out = zkt_sandbox("start-server %d", id);
  ok(out != NULL, "server %d back", id);
  free(out);
  zkr_session_close(s);
}

static void test_partition(const char *root) {
  /* Our client talks only to a follower; an observer talks to the
   * leader and watches our ephemeral node. */
  char *l = zkt_sandbox("leader");
  int leader = l ? (int)strtol(l, NULL, 10) : 0; /* "1".."3" or 0 */
  free(l);
  ok(leader >= 1 && leader <= 3, "leader is server %d", leader);
  int follower = leader == 1 ? 2 : 1;
  char *fp = zkt_sandbox("port %d", follower);
  char *lp = zkt_sandbox("port %d", leader);
  char fhost[64], lhost[64];
  snprintf(fhost, sizeof fhost, "127.0.0.1:%s", fp ? fp : "1");
  snprintf(lhost, sizeof lhost, "127.0.0.1:%s", lp ? lp : "1");
  free(fp);
  free(lp);

  const int T = 4000;
  zkr_session *s = NULL, *obs = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = T;
  is(zkr_session_new(&s, fhost, &o), ZKR_OK, "client on follower %d", follower);
  is(zkr_session_new(&obs, lhost, NULL), ZKR_OK, "observer on leader %d",
     leader);
  if (!s || !obs)
    return;
  zkt_rec r;
  zkt_rec_init(&r);
  zkr_session_add_listener(s, zkt_rec_fn, &r, NULL);
  char node[512];
  snprintf(node, sizeof node, "%s/ephemeral", root);
  is(zkr__zk_create(s, node, "", 0, ZOO_EPHEMERAL, zkr__deadline(10000), NULL),
     ZKR_OK, "ephemeral node created by the client");

  char *out = zkt_sandbox("pause %d", follower);
  int64_t paused_at = zkt_now_ms();
  free(out);
  /* Poll the node from the observer until the ensemble deletes it. */
  int64_t deleted_at = 0, end = paused_at + 6 * T;
  zkr__result res;
  memset(&res, 0, sizeof res);
  while (zkt_now_ms() < end) {
    int rc = zkr__zk_exists(obs, node, zkr__deadline(2000), &res);
    if (rc == ZKR_ENONODE) {
      deleted_at = zkt_now_ms();
      break;
    }
    usleep(20000);
  }
  ok(deleted_at > 0,
     "the ensemble expired the session %lld ms after the "
     "pause",
     (long long)(deleted_at - paused_at));
  int64_t lost_at = 0;
  int have_lost = zkt_rec_find(&r, ZKR_EV_LOST, &lost_at, NULL);
  ok(have_lost, "the client declared LOST %lld ms after the pause",
     (long long)(lost_at - paused_at));
  ok(lost_at > 0 && deleted_at > 0 && lost_at < deleted_at,
     "LOST on the client before the ensemble expired the session");
  out = zkt_sandbox("resume %d", follower);
  free(out);
  zkr_session_close(obs);
  zkr_session_close(s);
}

int main(void) {
  tap_init(240);
  const char *hosts = zkt_start(3);
  const char *root = zkt_root("t-session-ensemble");
  zkr_session *admin = NULL;
  if (zkr_session_new(&admin, hosts, NULL) != ZKR_OK)
    tap_bail("admin session");
  ok(zkt_create_parents(admin, root, zkr__deadline(10000)) == ZKR_OK,
     "private root %s", root);
  test_failover(hosts);
  zkr_session_wait_connected(admin, 30000);
  test_partition(root);
  zkr_session_wait_connected(admin, 30000);
  is(zkr__zk_delete(admin, root, -1, zkr__deadline(10000)), ZKR_OK,
     "private root removed");
  zkr_session_close(admin);
  return tap_done();
}
