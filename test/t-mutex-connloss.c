/* Connection loss during the create, injected with test/zkproxy: the
 * proxy forwards the create to the server (which applies it) and cuts the
 * connection before the reply. No orphan node is left: the acquisition
 * finds its node again by its prefix and succeeds, or, when it gives up
 * meanwhile, the node is deleted once the connection is back. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

int main(void) {
  tap_init(180);
  const char *hosts = zkt_start(1);
  int port = zkt_proxy_start(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  const char *root = zkt_root("t-mutex-connloss");
  char path[512];
  snprintf(path, sizeof path, "%s/lock", root);

  zkr_session *admin = NULL, *s = NULL;
  zkr_session_options o = {0};
  o.session_timeout_ms = 10000;
  is(zkr_session_new(&admin, hosts, NULL), ZKR_OK, "admin session (direct)");
  is(zkr_session_new(&s, via, &o), ZKR_OK, "session through the proxy");
  if (!admin || !s)
    return tap_done();
  int64_t sid = zkr_session_id(s);

  /* A: the lock is free. */
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, path, NULL);
  zkt_create_parents(admin, path, zkr__deadline(5000));
  zkt_proxy_cmd("cut-after-request create2");
  ok(zkt_proxy_wait("done cut-after-request", 1, 5000), "proxy armed");
  is(zkr_mutex_acquire(m, 15000), ZKR_OK,
     "acquire succeeds although the create's reply was cut");
  ok(zkt_proxy_seen("fired create2"), "the proxy cut the connection after the "
                                      "create reached the server");
  is(zkr_session_id(s), sid, "same session after reconnecting");
  is(zkt_children(admin, path), 1, "exactly one node: no orphan");
  char node[600];
  zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_exists(admin, node, zkr__deadline(5000), &r), ZKR_OK,
     "our node is the one on the server");
  ok(r.stat.ephemeralOwner == sid, "owned by our session");
  is(zkr_hold_token(zkr_mutex_hold(m)), r.stat.czxid,
     "the fencing token is its czxid");
  is(zkr_mutex_release(m), ZKR_OK, "release");
  ok(zkt_children_become(admin, path, 0, 10000), "no node left");

  /* B: the lock is held; the acquisition gives up while the connection
   * is down, after its create was applied. */
  zkr_mutex *h = NULL;
  zkr_mutex_new(&h, admin, path, NULL);
  is(zkr_mutex_acquire(h, -1), ZKR_OK, "another session holds the lock");
  zkt_proxy_cmd("cut-after-request create2\nrefuse");
  ok(zkt_proxy_wait("done refuse", 1, 5000), "proxy armed, refusing "
                                             "reconnections");
  is(zkr_mutex_acquire(m, 1500), ZKR_ETIMEDOUT,
     "the acquisition times out while it cannot reconnect");
  ok(zkt_proxy_wait("fired create2", 2, 1000),
     "its create had reached the server");
  is(zkt_children(admin, path), 2,
     "so the server has its node (an orphan, "
     "for now)");
  zkt_proxy_cmd("accept");
  ok(zkt_children_become(admin, path, 1, 8000),
     "once reconnected, the orphan is deleted: only the holder's node");
  is(zkr_session_id(s), sid, "still the same session");
  ok(zkr_mutex_is_held(h), "the holder still holds");
  zkr_mutex_release(h);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "the lock is usable afterwards");
  zkr_mutex_release(m);
  zkr_mutex_free(h);
  zkr_mutex_free(m);
  zkr_session_close(s);
  ok(zkt_children_become(admin, path, 0, 10000), "no node left at the end");
  zkr_session_close(admin);
  is(zkt_proxy_stop(), 0, "proxy exits cleanly");
  return tap_done();
}
