/* A paused (SIGSTOPped) server: the session clock declares LOST on the
 * client side, before the server could have expired the session, and a
 * new session follows once the server is back. And a connect that is slow
 * because the server is stopped is not mistaken for a pause of this
 * process. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static zkt_rec rec;

static int find_event(zkr_session_event ev, int64_t *at, int64_t *sid) {
  return zkt_rec_find(&rec, ev, at, sid);
}

static int connecting(void *arg) {
  return zkr_session_state_get(arg) == ZKR_STATE_CONNECTING;
}

static void *resume_later(void *arg) {
  usleep((useconds_t)(intptr_t)arg * 1000);
  free(zkt_sandbox("resume 1"));
  return NULL;
}

/* A connect slower than the session timeout (the server is stopped while
 * the client connects) is not a pause of this process: the session that
 * finally connects must be usable, not declared LOST at once. */
static void slow_connect(const char *hosts, int renew) {
  const int T2 = 3000;
  zkt_rec_init(&rec);
  char *out = zkt_sandbox("pause 1");
  ok(out != NULL, "server SIGSTOPped before connecting (renewal %s)",
     renew ? "on" : "off");
  free(out);
  pthread_t th;
  pthread_create(&th, NULL, resume_later, (void *)(intptr_t)(2 * T2));
  zkr_session *s = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = T2;
  o.connect_timeout_ms = 30000;
  o.no_renew = !(renew);
  int64_t t0 = zkt_now_ms();
  int rc = zkr_session_new(&s, hosts, &o);
  pthread_join(th, NULL);
  is(rc, ZKR_OK, "the session connects once the server is back (%lld ms)",
     (long long)(zkt_now_ms() - t0));
  if (!s)
    return;
  zkr_session_add_listener(s, zkt_rec_fn, &rec, NULL);
  int64_t sid = zkr_session_id(s);
  is(zkr_session_state_get(s), ZKR_STATE_CONNECTED, "it is CONNECTED");
  usleep(3 * T2 / 2 * 1000);
  is(zkr_session_state_get(s), ZKR_STATE_CONNECTED,
     "and still CONNECTED %d ms later", 3 * T2 / 2);
  is(zkr_session_id(s), sid, "the same session: it was not declared lost");
  ok(!find_event(ZKR_EV_LOST, NULL, NULL), "no LOST event");
  zkr__result res;
  memset(&res, 0, sizeof res);
  is(zkr__zk_exists(s, "/", zkr__deadline(5000), &res), ZKR_OK,
     "operations work");
  zkr_session_close(s);
}

/* Deadlines while the server does not answer: a waiter's acquisition
 * gives up at its time-out, and zkr_session_close_within(s, 0) does not
 * wait for the deletion of its node, which cannot reach the server (the
 * node is left to the end of its ZooKeeper session). zkr_session_close() would
 * wait up to half the 20 s session timeout; both bounds are far from that. */
static void deadline_while_paused(const char *hosts) {
  zkt_root("t-session-faults");
  const char *path = zkt_path("paused-lock");
  zkr_session *sh = zkt_connect(hosts, 20000), *sw = zkt_connect(hosts, 20000);
  zkr_mutex *mh = NULL, *mw = NULL;
  zkr_mutex_new(&mh, sh, path, NULL);
  zkr_mutex_new(&mw, sw, path, NULL);
  is(zkr_mutex_acquire(mh, 10000), ZKR_OK, "a holder");
  free(zkt_sandbox("pause 1"));
  int64_t t0 = zkt_now_ms();
  is(zkr_mutex_acquire(mw, 2000), ZKR_ETIMEDOUT,
     "a waiter's acquisition while the server is stopped: ZKR_ETIMEDOUT");
  int64_t took = zkt_now_ms() - t0;
  ok(took < 6000, "at its 2000 ms deadline (%lld ms)", (long long)took);
  zkr_mutex_free(mw);
  t0 = zkt_now_ms();
  is(zkr_session_close_within(sw, 0), ZKR_OK, "zkr_session_close_within(0)");
  took = zkt_now_ms() - t0;
  ok(took < 6000,
     "does not wait for deletions that cannot reach the server (%lld ms)",
     (long long)took);
  free(zkt_sandbox("resume 1"));
  zkr_mutex_release(mh);
  zkr_mutex_free(mh);
  zkr_session_close(sh);
}

int main(void) {
  tap_init(180);
  zkt_rec_init(&rec);
  const char *hosts = zkt_start(1);
  const int T = 6000;
  zkr_session *s = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = T;
  is(zkr_session_new(&s, hosts, &o), ZKR_OK, "connect (6 s session timeout)");
  if (!s)
    return tap_done();
  is(zkr_session_timeout(s), T, "negotiated %d ms", T);
  int64_t sid = zkr_session_id(s);
  zkr_session_add_listener(s, zkt_rec_fn, &rec, NULL);

  char *out = zkt_sandbox("pause 1");
  int64_t paused_at = zkt_now_ms();
  ok(out != NULL, "server SIGSTOPped");
  free(out);
  ok(zkt_rec_wait(&rec, ZKR_EV_LOST, 3 * T), "LOST declared while the server "
                                             "is stopped");
  int64_t suspended_at = 0, lost_at = 0, lost_sid = 0;
  int have_susp = find_event(ZKR_EV_SUSPENDED, &suspended_at, NULL);
  ok(have_susp, "SUSPENDED came first (%lld ms after the pause)",
     (long long)(suspended_at - paused_at));
  find_event(ZKR_EV_LOST, &lost_at, &lost_sid);
  is(lost_sid, sid, "LOST names the session");
  ok(lost_at >= suspended_at, "LOST after SUSPENDED");
  /* The client notices the silence 2/3 T after it last heard from the
   * server and declares LOST 0.25 T later: at most 11/12 T after the last
   * contact, so before a server could expire the session (T after the
   * last contact, which was no later than the pause). The ensemble test
   * checks the same against a real server-side expiry. */
  ok(lost_at - paused_at < T,
     "LOST %lld ms after the pause: within the %d ms session timeout",
     (long long)(lost_at - paused_at), T);
  ok(zkt_wait_for(connecting, s, 5000),
     "renewing: CONNECTING while the server is stopped");
  zkr__result res;
  memset(&res, 0, sizeof res);
  is(zkr__zk_exists(s, "/", zkr__deadline(300), &res), ZKR_ETIMEDOUT,
     "operations wait (and time out) meanwhile");

  out = zkt_sandbox("resume 1");
  ok(out != NULL, "server resumed");
  free(out);
  ok(zkt_rec_wait(&rec, ZKR_EV_CONNECTED, 3 * T), "CONNECTED after resume");
  int64_t new_sid = 0;
  find_event(ZKR_EV_CONNECTED, NULL, &new_sid);
  ok(new_sid != 0 && new_sid != sid, "with a new session 0x%llx",
     (unsigned long long)new_sid);
  is(zkr__zk_exists(s, "/", zkr__deadline(5000), &res), ZKR_OK,
     "operations work again");
  /* the old session must never come back */
  int bad_order = zkt_rec_find(&rec, ZKR_EV_RECONNECTED, NULL, NULL);
  ok(!bad_order, "the lost session never reconnects");
  zkr_session_close(s);
  slow_connect(hosts, 0);
  slow_connect(hosts, 1);
  deadline_while_paused(hosts);
  return tap_done();
}
