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

/* Expire @s's ZooKeeper session the standard way: a second handle with
 * the same id and password connects and closes the session. If the
 * original client reconnects in between, the close can miss (the session
 * moved); so try again until the session is really gone. */
int zkt_expire(const char *hosts, zkr_session *s) {
  zhandle_t *zh;
  if (zkr__session_get_zh(s, &zh, NULL) != ZKR_OK)
    return -1;
  clientid_t cid = *zoo_client_id(zh);
  zkr__session_put_zh(s);
  for (int attempt = 0; attempt < 5; attempt++) {
    zhandle_t *other =
        zookeeper_init2(hosts, NULL, 10000, &cid, NULL, 0, zkr__zk_log_cb);
    if (!other)
      return -1;
    int64_t end = zkt_now_ms() + 10000;
    while (zoo_state(other) != ZOO_CONNECTED_STATE && zkt_now_ms() < end)
      usleep(10000);
    int connected = zoo_state(other) == ZOO_CONNECTED_STATE;
    zookeeper_close(other);
    if (!connected)
      return -1; /* the session is gone already, or no server */
    end = zkt_now_ms() + 5000;
    while (zkt_now_ms() < end) {
      int64_t id = zkr_session_id(s);
      if (id != cid.client_id)
        return 0; /* lost, or a new session */
      usleep(10000);
    }
  }
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
