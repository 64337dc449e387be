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

static char dir[512];
static pid_t proxy_pid;

static void proxy_cmd(const char *cmd) {
  char tmp[600], ctl[600];
  snprintf(tmp, sizeof tmp, "%s/control.tmp", dir);
  snprintf(ctl, sizeof ctl, "%s/control", dir);
  FILE *f = fopen(tmp, "w");
  if (!f)
    tap_bail("cannot write %s", tmp);
  fprintf(f, "%s\n", cmd);
  fclose(f);
  rename(tmp, ctl);
}

/* Is there a line starting with @prefix in the proxy's event file? */
static int event_seen(const char *prefix) {
  char ev[600], line[512];
  snprintf(ev, sizeof ev, "%s/events", dir);
  FILE *f = fopen(ev, "r");
  if (!f)
    return 0;
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, prefix, strlen(prefix)) == 0)
      found++;
  fclose(f);
  return found;
}

struct evw {
  const char *prefix;
  int n;
};
static int events_at_least(void *arg) {
  struct evw *w = arg;
  return event_seen(w->prefix) >= w->n;
}

static int start_proxy(const char *target) {
  const char *b = getenv("abs_top_builddir");
  char bin[512], portf[600], ctl[600], ev[600];
  snprintf(bin, sizeof bin, "%s/test/zkproxy", b ? b : ".");
  if (access(bin, X_OK) != 0)
    tap_skip_all("test/zkproxy is not built");
  snprintf(portf, sizeof portf, "%s/port", dir);
  snprintf(ctl, sizeof ctl, "%s/control", dir);
  snprintf(ev, sizeof ev, "%s/events", dir);
  proxy_pid = fork();
  if (proxy_pid == 0) {
    if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout))
      _exit(1);
    execl(bin, bin, "--listen", "0", "--target", target, "--port-file", portf,
          "--control-file", ctl, "--event-file", ev, (char *)NULL);
    _exit(127);
  }
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_now_ms() < end) {
    FILE *f = fopen(portf, "r");
    int port = 0;
    if (f) {
      int got = fscanf(f, "%d", &port);
      fclose(f);
      if (got == 1 && port > 0)
        return port;
    }
    usleep(10000);
  }
  tap_bail("the proxy did not start");
}

static int nchildren(zkr_session *s, const char *path) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  int rc = zkr__zk_children(s, path, zkr__deadline(5000), &r);
  int n = rc == ZKR_OK ? r.names.count : -1;
  zkr__result_clear(&r);
  return n;
}

struct nc {
  zkr_session *s;
  const char *path;
  int want;
};
static int children_are(void *arg) {
  struct nc *c = arg;
  return nchildren(c->s, c->path) == c->want;
}

int main(void) {
  tap_init(180);
  const char *hosts = zkt_start(1);
  const char *sd = getenv("ZKR_SANDBOX_DIR");
  snprintf(dir, sizeof dir, "%s/proxy", sd ? sd : "/tmp");
  char mk[600];
  snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
  if (system(mk) != 0)
    tap_bail("mkdir %s", dir);
  int port = start_proxy(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  const char *root = zkt_root("t-mutex-connloss");
  char path[512];
  snprintf(path, sizeof path, "%s/lock", root);

  zkr_session *admin = NULL, *s = NULL;
  zkr_session_opts *o = NULL;
  zkr_session_opts_new(&o);
  zkr_session_opts_set_session_timeout(o, 10000);
  is(zkr_session_new(&admin, hosts, NULL), ZKR_OK, "admin session (direct)");
  is(zkr_session_new(&s, via, o), ZKR_OK, "session through the proxy");
  zkr_session_opts_free(o);
  if (!admin || !s)
    return tap_done();
  int64_t sid = zkr_session_id(s);

  /* A: the lock is free. */
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, path, NULL);
  zkr__zk_create_parents(admin, path, zkr__deadline(5000));
  proxy_cmd("cut-after-request create2");
  struct evw done1 = {"done cut-after-request", 1};
  ok(zkt_wait_for(events_at_least, &done1, 5000), "proxy armed");
  is(zkr_mutex_acquire(m, 15000), ZKR_OK,
     "acquire succeeds although the create's reply was cut");
  ok(event_seen("fired create2"), "the proxy cut the connection after the "
                                  "create reached the server");
  is(zkr_session_id(s), sid, "same session after reconnecting");
  is(nchildren(admin, path), 1, "exactly one node: no orphan");
  char node[600];
  zkr_mutex_node(m, node, sizeof node);
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_exists(admin, node, zkr__deadline(5000), &r), ZKR_OK,
     "our node is the one on the server");
  ok(r.stat.ephemeralOwner == sid, "owned by our session");
  is(zkr_mutex_fencing_token(m), r.stat.czxid,
     "the fencing token is its czxid");
  is(zkr_mutex_release(m), ZKR_OK, "release");
  struct nc none = {admin, path, 0};
  ok(zkt_wait_for(children_are, &none, 10000), "no node left");

  /* B: the lock is held; the acquisition gives up while the connection
   * is down, after its create was applied. */
  zkr_mutex *h = NULL;
  zkr_mutex_new(&h, admin, path, NULL);
  is(zkr_mutex_acquire(h, -1), ZKR_OK, "another session holds the lock");
  proxy_cmd("cut-after-request create2\nrefuse");
  struct evw done2 = {"done refuse", 1};
  ok(zkt_wait_for(events_at_least, &done2, 5000), "proxy armed, refusing "
                                                  "reconnections");
  is(zkr_mutex_acquire(m, 1500), ZKR_ETIMEDOUT,
     "the acquisition times out while it cannot reconnect");
  struct evw fired2 = {"fired create2", 2};
  ok(zkt_wait_for(events_at_least, &fired2, 1000),
     "its create had reached the server");
  is(nchildren(admin, path), 2,
     "so the server has its node (an orphan, "
     "for now)");
  proxy_cmd("accept");
  struct nc one = {admin, path, 1};
  ok(zkt_wait_for(children_are, &one, 8000),
     "once reconnected, the orphan is deleted: only the holder's node");
  is(zkr_session_id(s), sid, "still the same session");
  ok(zkr_mutex_is_held(h), "the holder still holds");
  zkr_mutex_release(h);
  is(zkr_mutex_acquire(m, 5000), ZKR_OK, "the lock is usable afterwards");
  zkr_mutex_release(m);
  zkr_mutex_free(h);
  zkr_mutex_free(m);
  zkr_session_close(s);
  ok(zkt_wait_for(children_are, &none, 10000), "no node left at the end");
  zkr_session_close(admin);
  kill(proxy_pid, SIGTERM);
  int st = 0;
  waitpid(proxy_pid, &st, 0);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "proxy exits cleanly");
  return tap_done();
}
