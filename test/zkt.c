#include "config.h"

#include "zkt.h"

#include "zkr-private.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char connstr[4096];
static char root[256];

int64_t zkt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int zkt_wait_for(int (*cond)(void *), void *arg, int64_t timeout_ms) {
  int64_t end = zkt_now_ms() + timeout_ms;
  for (;;) {
    if (cond(arg))
      return 1;
    if (zkt_now_ms() >= end)
      return 0;
    usleep(10000);
  }
}

static char *run_capture(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    pclose(p);
    return NULL;
  }
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 2) {
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        break;
      buf = nb;
      cap *= 2;
    }
  }
  buf[len] = '\0';
  int st = pclose(p);
  if (st != 0) {
    free(buf);
    return NULL;
  }
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
    buf[--len] = '\0';
  return buf;
}

char *zkt_sandbox(const char *fmt, ...) {
  const char *sb = getenv("ZKR_SANDBOX");
  if (!sb)
    return NULL;
  char args[1024], cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s", sb, args);
  return run_capture(cmd);
}

const char *zkt_start(int n) {
  const char *sb = getenv("ZKR_SANDBOX");
  if (!sb || !getenv("ZKR_SANDBOX_DIR"))
    tap_skip_all("not run under test/with-zk (ZKR_SANDBOX unset)");
  if (access(sb, X_OK) != 0)
    tap_skip_all("%s is not executable", sb);
  if (access("/usr/share/java/zookeeper.jar", R_OK) != 0)
    tap_skip_all("Debian's zookeeper package is not installed");
  char *cs = zkt_sandbox("start --servers %d", n);
  if (!cs || !cs[0])
    tap_bail("zk-sandbox start --servers %d failed", n);
  snprintf(connstr, sizeof connstr, "%s", cs);
  free(cs);
  return connstr;
}

char *zkt_4lw(int id, const char *cmd) {
  return zkt_sandbox("4lw %d %s", id, cmd);
}

int64_t zkt_mntr(int id, const char *key) {
  char *r = zkt_4lw(id, "mntr");
  if (!r)
    return -1;
  int64_t v = -1;
  size_t kl = strlen(key);
  for (char *line = strtok(r, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, key, kl) == 0 && (line[kl] == '\t' || line[kl] == ' ')) {
      v = strtoll(line + kl + 1, NULL, 10);
      break;
    }
  }
  free(r);
  return v;
}

const char *zkt_root(const char *name) {
  snprintf(root, sizeof root, "/zkr-test/%s-%ld", name, (long)getpid());
  return root;
}

int zkt_watches_of(int id, int64_t sid, char *first, size_t len) {
  char *r = zkt_4lw(id, "wchc");
  if (!r)
    return -1;
  char needle[32];
  snprintf(needle, sizeof needle, "0x%llx", (unsigned long long)sid);
  int n = 0, in = 0;
  if (first && len)
    first[0] = '\0';
  for (char *line = strtok(r, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '0' && line[1] == 'x') {
      in = strcmp(line, needle) == 0;
      continue;
    }
    if (in && (line[0] == '\t' || line[0] == ' ')) {
      if (n == 0 && first && len)
        snprintf(first, len, "%s", line + strspn(line, "\t "));
      n++;
    }
  }
  free(r);
  return n;
}

/* For zkt_wait_for(): @arg's session is off the id it had (lost, or a
 * new session). */
struct off_session {
  zkr_session *s;
  int64_t sid;
};
static int off_session(void *arg) {
  struct off_session *o = arg;
  return zkr_session_id(o->s) != o->sid;
}

/* Expire @s's ZooKeeper session the standard way: a second handle with
 * the same id and password connects and closes the session. If the
 * original client reconnects in between, the close can miss (the session
 * moved); so try again until the session is really gone. A second handle
 * that is told the session has expired means an earlier close did it, and
 * only @s's client has yet to hear of it: on a loaded machine its
 * reconnection can take more than the 5 s each try waits. */
int zkt_expire(const char *hosts, zkr_session *s) {
  zhandle_t *zh;
  if (zkr__session_get_zh(s, &zh, NULL) != ZKR_OK)
    return -1;
  clientid_t cid = *zoo_client_id(zh);
  zkr__session_put_zh(s);
  struct off_session off = {s, cid.client_id};
  for (int attempt = 0; attempt < 5; attempt++) {
    zhandle_t *other =
        zookeeper_init2(hosts, NULL, 10000, &cid, NULL, 0, zkr__zk_log_cb);
    if (!other)
      return -1;
    int64_t end = zkt_now_ms() + 10000;
    int st = zoo_state(other);
    while (st != ZOO_CONNECTED_STATE && st != ZOO_EXPIRED_SESSION_STATE &&
           zkt_now_ms() < end) {
      usleep(10000);
      st = zoo_state(other);
    }
    zookeeper_close(other);
    if (st == ZOO_EXPIRED_SESSION_STATE)
      break;
    if (st != ZOO_CONNECTED_STATE) {
      tap_diag("zkt_expire: no server took session 0x%llx in 10 s",
               (unsigned long long)cid.client_id);
      return -1;
    }
    if (zkt_wait_for(off_session, &off, 5000))
      return 0;
  }
  if (zkt_wait_for(off_session, &off, 30000))
    return 0;
  tap_diag("zkt_expire: session 0x%llx is still the client's",
           (unsigned long long)cid.client_id);
  return -1;
}

/* ---- test/zkproxy, driven through its control and event files ---- */

static char proxy_dir[512];
static pid_t proxy_pid;

void zkt_proxy_cmd(const char *cmd) {
  char tmp[600], ctl[600];
  snprintf(tmp, sizeof tmp, "%s/control.tmp", proxy_dir);
  snprintf(ctl, sizeof ctl, "%s/control", proxy_dir);
  FILE *f = fopen(tmp, "w");
  if (!f)
    tap_bail("cannot write %s", tmp);
  fprintf(f, "%s\n", cmd);
  fclose(f);
  rename(tmp, ctl);
}

int zkt_proxy_seen(const char *prefix) {
  char ev[600], line[512];
  snprintf(ev, sizeof ev, "%s/events", proxy_dir);
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

struct seen {
  const char *prefix;
  int n;
};
static int seen_at_least(void *arg) {
  struct seen *w = arg;
  return zkt_proxy_seen(w->prefix) >= w->n;
}

int zkt_proxy_wait(const char *prefix, int n, int64_t timeout_ms) {
  struct seen w = {prefix, n};
  return zkt_wait_for(seen_at_least, &w, timeout_ms);
}

int zkt_proxy_start(const char *target) {
  const char *b = getenv("abs_top_builddir");
  const char *sd = getenv("ZKR_SANDBOX_DIR");
  char bin[512], portf[600], ctl[600], ev[600];
  snprintf(proxy_dir, sizeof proxy_dir, "%s/proxy-%ld", sd ? sd : "/tmp",
           (long)getpid());
  if (mkdir(proxy_dir, 0700) != 0 && errno != EEXIST)
    tap_bail("mkdir %s", proxy_dir);
  snprintf(bin, sizeof bin, "%s/test/zkproxy", b ? b : ".");
  if (access(bin, X_OK) != 0)
    tap_skip_all("test/zkproxy is not built");
  snprintf(portf, sizeof portf, "%s/port", proxy_dir);
  snprintf(ctl, sizeof ctl, "%s/control", proxy_dir);
  snprintf(ev, sizeof ev, "%s/events", proxy_dir);
  /* a proxy started before in this process left its files: its port
   * would be read at once, its events counted */
  unlink(portf);
  unlink(ctl);
  unlink(ev);
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

int zkt_proxy_stop(void) {
  if (proxy_pid <= 0)
    return -1;
  kill(proxy_pid, SIGTERM);
  int st = 0;
  waitpid(proxy_pid, &st, 0);
  proxy_pid = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- sessions, paths, nodes, watches ---- */

zkr_session *zkt_connect(const char *hosts, int session_timeout_ms) {
  zkr_session *s = NULL;
  int rc = zkr_session_new(
      &s, hosts,
      &(zkr_session_options){.session_timeout_ms = session_timeout_ms});
  if (rc != ZKR_OK)
    tap_bail("connect to %s: %s", hosts, zkr_strerror(rc));
  return s;
}

const char *zkt_path(const char *name) {
  static char buf[8][512];
  static int i;
  char *b = buf[i++ % 8];
  snprintf(b, 512, "%s/%s", root, name);
  return b;
}

int zkt_children(zkr_session *s, const char *path) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  int rc = zkr__zk_children(s, path, zkr__deadline(5000), &r);
  int n = rc == ZKR_OK ? r.names.count : -1;
  zkr__result_clear(&r);
  return n;
}

struct chw {
  zkr_session *s;
  const char *path;
  int want;
};
static int children_are(void *arg) {
  struct chw *c = arg;
  return zkt_children(c->s, c->path) == c->want;
}

int zkt_children_become(zkr_session *s, const char *path, int want,
                        int64_t timeout_ms) {
  struct chw c = {s, path, want};
  return zkt_wait_for(children_are, &c, timeout_ms);
}

int zkt_bg_idle(void *arg) {
  return zkr__session_bg_pending(arg) == 0;
}

int zkt_settled_children(zkr_session *owner, zkr_session *reader,
                         const char *path) {
  zkt_wait_for(zkt_bg_idle, owner, 10000);
  return zkt_children(reader, path);
}

int64_t zkt_watch_count(void) {
  return zkt_mntr(1, "zk_watch_count");
}

struct wcw {
  int64_t want;
};
static int watch_count_is(void *arg) {
  return zkt_watch_count() == ((struct wcw *)arg)->want;
}

int zkt_watch_count_becomes(int64_t want, int64_t timeout_ms) {
  struct wcw w = {want};
  return zkt_wait_for(watch_count_is, &w, timeout_ms);
}

static int watch_count_reached(void *arg) {
  return zkt_watch_count() >= ((struct wcw *)arg)->want;
}

int zkt_watch_count_reaches(int64_t least, int64_t timeout_ms) {
  struct wcw w = {least};
  return zkt_wait_for(watch_count_reached, &w, timeout_ms);
}

int zkt_watches_become(zkr_session *s, const char *path, int want,
                       int64_t timeout_ms) {
  int64_t end = zkt_now_ms() + timeout_ms;
  do {
    char first[512] = "";
    int n = zkt_watches_of(1, zkr_session_id(s), first, sizeof first);
    if (n == want && (want != 1 || !path || strcmp(first, path) == 0))
      return 1;
    usleep(20000);
  } while (zkt_now_ms() < end);
  return 0;
}

int zkt_queue_order(zkr_session *s, const char *path, char **out, int max) {
  zkr__result r;
  memset(&r, 0, sizeof r);
  int n = 0;
  if (zkr__zk_children(s, path, zkr__deadline(5000), &r) == ZKR_OK)
    for (int i = 0; i < r.names.count && n < max; i++)
      out[n++] = zkr__strdup(r.names.data[i]);
  zkr__result_clear(&r);
  for (int i = 1; i < n; i++) /* insertion sort by sequence number */
    for (int j = i; j > 0; j--) {
      int32_t a = 0, b = 0;
      zkr__seq_parse(out[j - 1], &a);
      zkr__seq_parse(out[j], &b);
      if (zkr__seq_cmp(a, b) <= 0)
        break;
      char *t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* ---- a session listener that records events ---- */

void zkt_rec_init(zkt_rec *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  r->blocking_rc = 1;
}

void zkt_rec_fn(zkr_session *s, zkr_session_event ev, int64_t sid, void *ud) {
  zkt_rec *r = ud;
  int rc = r->probe_blocking ? zkr_session_wait_connected(s, 1000) : 1;
  pthread_mutex_lock(&r->mu);
  if (r->n < ZKT_MAXEV) {
    r->ev[r->n] = ev;
    r->sid[r->n] = sid;
    r->at[r->n] = zkt_now_ms();
    r->n++;
  }
  if (r->probe_blocking)
    r->blocking_rc = rc;
  pthread_mutex_unlock(&r->mu);
}

int zkt_rec_count(zkt_rec *r) {
  pthread_mutex_lock(&r->mu);
  int n = r->n;
  pthread_mutex_unlock(&r->mu);
  return n;
}

int zkt_rec_find(zkt_rec *r, zkr_session_event ev, int64_t *at, int64_t *sid) {
  pthread_mutex_lock(&r->mu);
  int found = 0;
  for (int i = 0; i < r->n && !found; i++)
    if (r->ev[i] == ev) {
      found = 1;
      if (at)
        *at = r->at[i];
      if (sid)
        *sid = r->sid[i];
    }
  pthread_mutex_unlock(&r->mu);
  return found;
}

struct recw {
  zkt_rec *r;
  zkr_session_event ev;
  int n;
};
static int rec_seen(void *arg) {
  struct recw *w = arg;
  return zkt_rec_find(w->r, w->ev, NULL, NULL);
}
static int rec_have_n(void *arg) {
  struct recw *w = arg;
  return zkt_rec_count(w->r) >= w->n;
}

int zkt_rec_wait(zkt_rec *r, zkr_session_event ev, int64_t timeout_ms) {
  struct recw w = {r, ev, 0};
  return zkt_wait_for(rec_seen, &w, timeout_ms);
}

int zkt_rec_wait_n(zkt_rec *r, int n, int64_t timeout_ms) {
  struct recw w = {r, ZKR_EV_CONNECTED, n};
  return zkt_wait_for(rec_have_n, &w, timeout_ms);
}

void zkt_rec_str(zkt_rec *r, char *buf, size_t len) {
  pthread_mutex_lock(&r->mu);
  buf[0] = '\0';
  for (int i = 0; i < r->n; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, len - l, "%s%s", i ? "," : "",
             zkr_session_event_name(r->ev[i]));
  }
  pthread_mutex_unlock(&r->mu);
}

/* Create @path and its missing ancestors as container nodes (a test
 * fixture: the recipes create their parents asynchronously, in queue.c). */
int zkt_create_parents(zkr_session *s, const char *path, int64_t deadline_ms) {
  int rc = zkr__path_check(path);
  if (rc != ZKR_OK)
    return rc;
  if (strcmp(path, "/") == 0)
    return ZKR_OK;
  rc = zkr__zk_create(s, path, NULL, -1, ZOO_CONTAINER, deadline_ms, NULL);
  if (rc == ZKR_OK || rc == ZKR_EEXISTS)
    return ZKR_OK;
  if (rc != ZKR_ENONODE)
    return rc;
  /* Create the ancestors, then try again. */
  char *parent = zkr__strdup(path);
  if (!parent)
    return ZKR_ENOMEM;
  char *slash = strrchr(parent, '/');
  if (slash == parent)
    slash[1] = '\0';
  else
    *slash = '\0';
  rc = zkt_create_parents(s, parent, deadline_ms);
  free(parent);
  if (rc != ZKR_OK)
    return rc;
  rc = zkr__zk_create(s, path, NULL, -1, ZOO_CONTAINER, deadline_ms, NULL);
  return rc == ZKR_EEXISTS ? ZKR_OK : rc;
}

void zkt_statelog_init(zkt_statelog *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
}

void zkt_state_fn(zkr_hold *lock, zkr_lock_state st, void *ud) {
  zkt_statelog *l = ud;
  (void)lock;
  pthread_mutex_lock(&l->mu);
  l->last = st;
  if (st == ZKR_LOCK_LOST)
    l->lost++;
  pthread_mutex_unlock(&l->mu);
}

int zkt_lost_seen(void *arg) {
  zkt_statelog *l = arg;
  pthread_mutex_lock(&l->mu);
  int v = l->lost;
  pthread_mutex_unlock(&l->mu);
  return v > 0;
}

void *zkt_cancel_later(void *arg) {
  zkt_canceller *c = arg;
  usleep((useconds_t)c->delay_ms * 1000);
  zkr_mutex_cancel(c->m);
  return NULL;
}
