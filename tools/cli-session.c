/*
 * The tools' ZooKeeper session (see cli-session.h): connecting as the
 * shared options say, a connection a signal may interrupt, and what a
 * failure is told as: a missing chroot, the node whose ACL refused, the
 * layout found where another recipe's was expected, the exit status.
 *
 * Owns: the connection string of run_session()'s session. Must not touch:
 * the signal mask and the signalfd (cli-signal.c, which it only reads).
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *chroot_of(const char *servers) {
  /* no '/' in the host list: IPv6 addresses hold ':' and brackets only */
  const char *c = servers ? strchr(servers, '/') : NULL;
  return c && c[1] ? c : NULL;
}

/* The connection string of run_session()'s session. */
static const char *session_servers;

int chroot_missing(zkr_session *s, const char *servers, int64_t timeout_ms) {
  if (!servers)
    servers = session_servers;
  if (!s || !chroot_of(servers))
    return 0;
  /* "/" of a session with a chroot is the chroot's node itself */
  char **kids = NULL;
  size_t n = 0;
  int rc = zkr_session_children(s, "/", timeout_ms, &kids, &n);
  if (rc == ZKR_OK)
    zkr_children_free(kids, n);
  return rc == ZKR_ENONODE;
}

const char *chroot_missing_text(const char *servers) {
  const char *c = chroot_of(servers ? servers : session_servers);
  static const char pre[] = "the chroot ",
                    post[] = " of the connection string does not exist";
  size_t len = sizeof pre + strlen(c ? c : "") + sizeof post;
  char *raw = malloc(len);
  if (!raw)
    return "the chroot of the connection string does not exist";
  snprintf(raw, len, "%s%s%s", pre, c ? c : "", post);
  const char *e = esc(raw); /* the chroot may hold anything printable */
  free(raw);
  return e;
}

const char *why_failed(zkr_session *s, int rc) {
  if (rc == ZKR_ENONODE && chroot_missing(s, NULL, 5000))
    return chroot_missing_text(NULL);
  return zkr_strerror(rc);
}

/* Does the node @p exist (its children can be listed, or reading them is
 * refused)? 1, 0, or -1 when that cannot be told. */
static int node_exists(zkr_session *s, const char *p) {
  char **kids = NULL;
  size_t n = 0;
  int rc = zkr_session_children(s, p, 5000, &kids, &n);
  if (rc == ZKR_OK)
    zkr_children_free(kids, n);
  return rc == ZKR_OK || rc == ZKR_ENOAUTH ? 1 : rc == ZKR_ENONODE ? 0 : -1;
}

/* The node whose ACL refused a create below @path (or below @path/@sub):
 * the deepest of them, and of @path's ancestors, that exists. Into @buf;
 * NULL if it cannot be told. */
static const char *refusing_node(zkr_session *s, const char *path,
                                 const char *sub, char *buf, size_t len) {
  if (sub) {
    snprintf(buf, len, "%s/%s", path, sub);
    int e = node_exists(s, buf);
    if (e != 0)
      return e > 0 ? buf : NULL;
  }
  snprintf(buf, len, "%s", path);
  for (;;) {
    int e = node_exists(s, buf);
    if (e != 0)
      return e > 0 ? buf : NULL;
    char *slash = strrchr(buf, '/');
    if (!slash)
      return NULL;
    if (slash == buf) {
      if (!buf[1])
        return NULL;
      buf[1] = '\0'; /* then "/" itself */
    } else {
      *slash = '\0';
    }
  }
}

/* What the children of @path show it holds, for a ZKR_EFOREIGN message. */
static const char *layout_found(zkr_session *s, const char *path, char *buf,
                                size_t len) {
  char **kids = NULL;
  size_t n = 0;
  if (zkr_session_children(s, path, 5000, &kids, &n) != ZKR_OK)
    return NULL;
  const char *what = NULL;
  switch (zkr_layout_of(kids, n)) {
  case ZKR_LAYOUT_SEMAPHORE:
    what = "a semaphore's (children locks and leases)";
    break;
  case ZKR_LAYOUT_KAZOO_SEMAPHORE:
    what = "kazoo's semaphore (lease nodes right under the path)";
    break;
  case ZKR_LAYOUT_RWLOCK:
    what = "a read-write lock's nodes";
    break;
  case ZKR_LAYOUT_LOCK:
    what = "a mutex's nodes";
    break;
  case ZKR_LAYOUT_ELECTION:
    what = "an election's nodes";
    break;
  case ZKR_LAYOUT_NONE:
    what = "kazoo's semaphore (a number in the path's data)";
    break;
  default:
    break;
  }
  if (what)
    snprintf(buf, len, "found %s", what);
  else if (n > 0)
    snprintf(buf, len, "found the node %s", esc(kids[0]));
  zkr_children_free(kids, n);
  return what || n > 0 ? buf : NULL;
}

const char *why_acquire_failed(zkr_session *s, int rc, const char *path,
                               int semaphore) {
  static char out[2600];
  char buf[1200];
  if (rc == ZKR_ENOAUTH) {
    /* a semaphore queues its contenders in a child of @path: the one
     * whose role the library says is admission */
    char **kids = NULL;
    size_t nk = 0;
    const char *sub = NULL;
    if (semaphore && zkr_session_children(s, path, 5000, &kids, &nk) == ZKR_OK)
      for (size_t i = 0; i < nk && !sub; i++)
        if (zkr_role_of(kids[i], ZKR_LAYOUT_SEMAPHORE) == ZKR_ROLE_ADMISSION)
          sub = kids[i];
    const char *node = refusing_node(s, path, sub, buf, sizeof buf);
    zkr_children_free(kids, nk);
    if (node) {
      snprintf(out, sizeof out,
               "not authorized by the ACL of %s (it refused a node under it)",
               esc(node));
      return out;
    }
  } else if (rc == ZKR_EFOREIGN) {
    const char *found = layout_found(s, path, buf, sizeof buf);
    if (found) {
      snprintf(out, sizeof out, "%s: %s", zkr_strerror(rc), found);
      return out;
    }
  }
  return why_failed(s, rc);
}

int exit_for(int rc) {
  if (rc == ZKR_ESESSIONLOST || rc == ZKR_ECONNLOSS)
    return EX_TEMPFAIL;
  if (rc == ZKR_ENOAUTH || rc == ZKR_ENONODE || rc == ZKR_EZK ||
      rc == ZKR_EEPHEMERAL || rc == ZKR_EFOREIGN)
    return EX_UNAVAILABLE;
  return EX_SOFTWARE;
}

static void on_session(zkr_session *s, zkr_session_event ev, int64_t sid,
                       void *ud) {
  (void)s;
  (void)ud;
  if (ev != ZKR_EV_CLOSED)
    msg("ZooKeeper session 0x%llx: %s", (unsigned long long)sid,
        zkr_session_event_name(ev));
}

/* A connection being made on a thread of its own. */
struct connecting {
  zkr_session *s;
  const char *servers;
  const zkr_session_options *so;
  int rc;
  atomic_int done;
};

static void *connect_main(void *arg) {
  struct connecting *c = arg;
  c->rc = zkr_session_new(&c->s, c->servers, c->so);
  atomic_store(&c->done, 1);
  return NULL;
}

int session_new_interruptible(zkr_session **s, const char *servers,
                              const zkr_session_options *so,
                              int (*wait_signal)(void *), void *ud, int *sig) {
  static struct connecting c; /* outlives us if a signal comes first */
  c.s = NULL;
  c.servers = servers;
  c.so = so;
  c.rc = ZKR_ESYS;
  atomic_store(&c.done, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, connect_main, &c) != 0)
    return zkr_session_new(s, servers, so);
  while (!atomic_load(&c.done)) {
    int got = wait_signal(ud);
    if (got > 0) {
      *sig = got;
      pthread_detach(t);
      return ZKR_ECANCELED;
    }
  }
  pthread_join(t, NULL);
  *s = c.s;
  return c.rc;
}

int session_signal;

/* For session_new_interruptible(): a signal from signals_setup()'s
 * signalfd within 50 ms, or 0. */
static int signalfd_wait(void *ud) {
  (void)ud;
  int sfd = cli_signal_fd();
  struct pollfd pf = {sfd, POLLIN, 0};
  if (poll(&pf, 1, 50) > 0 && (pf.revents & POLLIN))
    return take_signal(sfd);
  return 0;
}

int run_session(const struct run_opts *o, int renew, zkr_session **out) {
  if (verbose > 1)
    zkr_set_log_hook(zkr_log_stderr, verbose > 2 ? ZKR_LOG_INFO : ZKR_LOG_WARN,
                     NULL);
  if (o->acl_creator && !o->auth)
    usage_error("--acl creator needs --auth USER:PASSWORD: the nodes get "
                "every right for those credentials only");
  /* static: a connecting thread a signal leaves behind still reads them */
  static zkr_auth auth;
  static zkr_session_options so;
  auth = (zkr_auth){.scheme = "digest", .cred = o->auth};
  so = (zkr_session_options){.session_timeout_ms = (int)o->session_ms,
                             .connect_timeout_ms = (int)o->connect_ms,
                             .no_renew = !renew,
                             .auth = o->auth ? &auth : NULL,
                             .auth_count = o->auth ? 1 : 0,
                             .acl = o->acl_creator ? ZKR_ACL_CREATOR
                                                   : ZKR_ACL_OPEN};
  *out = NULL;
  session_servers = o->servers;
  int rc = cli_signal_fd() < 0
               ? zkr_session_new(out, o->servers, &so)
               : session_new_interruptible(out, o->servers, &so, signalfd_wait,
                                           NULL, &session_signal);
  if (rc == ZKR_ECANCELED)
    return 128 + session_signal;
  if (rc == ZKR_EINVAL) { /* (the options: checked by run_opt(), never) */
    msg("%s", zkr_strerror(rc));
    return EX_SOFTWARE;
  }
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(o->servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    msg("cannot reach ZooKeeper at %s: %s", o->servers, zkr_strerror(rc));
    return rc == ZKR_ENOMEM ? EX_SOFTWARE : EX_UNAVAILABLE;
  }
  if (verbose)
    zkr_session_add_listener(*out, on_session, NULL, NULL);
  return 0;
}
