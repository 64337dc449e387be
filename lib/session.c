/*
 * The shared session manager.
 *
 * One zkr_session owns one ZooKeeper handle at a time. Three kinds of
 * threads touch it:
 *   - the ZooKeeper client's completion thread runs the global watcher
 *     (session events and node watches) and operation completions;
 *   - the session's manager thread runs the client-side session clock and
 *     replaces the handle after a loss (zookeeper_close/zookeeper_init are
 *     never called from a ZooKeeper callback);
 *   - the session's event thread runs every user callback, one at a time.
 * Everything mutable is guarded by s->mu. A handle is swapped only when no
 * thread is inside a zoo_a* call on it (s->zh_users == 0).
 *
 * Owns: the handle and its replacement, the session states, the session
 * clock (pause detection, the lost fraction), listeners, the life of
 * struct zkr_session. The event queue and thread (event.c), internal
 * state hooks (hooks.c), watch registry (watch.c), timers (timer.c),
 * background deletions (bgdelete.c) and options (sessopts.c) are parts of
 * their own (see
 * session-int.h); this file must not touch their lists except to free
 * them.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"

/* ------------------------------------------------------------------ */
/* names */

const char *zkr_session_state_name(zkr_session_state state) {
  switch (state) {
  case ZKR_STATE_CONNECTING:
    return "CONNECTING";
  case ZKR_STATE_CONNECTED:
    return "CONNECTED";
  case ZKR_STATE_SUSPENDED:
    return "SUSPENDED";
  case ZKR_STATE_LOST:
    return "LOST";
  case ZKR_STATE_CLOSED:
    return "CLOSED";
  }
  return "UNKNOWN";
}

const char *zkr_session_event_name(zkr_session_event ev) {
  switch (ev) {
  case ZKR_EV_CONNECTED:
    return "CONNECTED";
  case ZKR_EV_SUSPENDED:
    return "SUSPENDED";
  case ZKR_EV_RECONNECTED:
    return "RECONNECTED";
  case ZKR_EV_LOST:
    return "LOST";
  case ZKR_EV_CLOSED:
    return "CLOSED";
  }
  return "UNKNOWN";
}

/* ------------------------------------------------------------------ */
/* references */

static void session_free(zkr_session *s) {
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->listeners) {
    free(zkr__list_entry(n, struct listener, link));
  }
  zkr__list_for_each_safe(n, tmp, &s->hooks) {
    free(zkr__list_entry(n, struct zkr__hook, link));
  }
  zkr__list_for_each_safe(n, tmp, &s->watches) {
    struct watch *w = zkr__list_entry(n, struct watch, link);
    free(w->path);
    free(w);
  }
  zkr__timers_free(&s->timers);
  zkr__list_for_each_safe(n, tmp, &s->bgdels) {
    zkr__bg_free(zkr__list_entry(n, struct bgdel, link));
  }
  zkr__list_for_each_safe(n, tmp, &s->evq) {
    free(zkr__list_entry(n, struct event, link));
  }
  if (s->dfd >= 0)
    close(s->dfd); /* (a session that never got its threads) */
  zkr__opts_clear(&s->opts);
  free(s->hosts);
  zkr__alerts_destroy(s);
  pthread_cond_destroy(&s->cv);
  pthread_cond_destroy(&s->mcv);
  pthread_cond_destroy(&s->ecv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void zkr__session_ref(zkr_session *s) {
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void zkr__session_unref(zkr_session *s) {
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
    session_free(s);
}

/* ------------------------------------------------------------------ */
/* listener events (the event queue itself is event.c's) */

/* Queue a listener event. Allocation failure drops the event for the
 * user's listeners only; internal hooks are called regardless. */
static void push_state_event(zkr_session *s, zkr_session_event ev,
                             int64_t sid) {
  zkr__stats_session_event(s, ev);
  if (zkr__list_empty(&s->listeners))
    return; /* (one added later is not told of it) */
  struct event *e = calloc(1, sizeof *e);
  if (!e) {
    zkr__log(ZKR_LOG_ERROR, "out of memory: %s event not delivered",
             zkr_session_event_name(ev));
    return;
  }
  e->ev = ev;
  e->sid = sid;
  e->user = 1;
  e->seq = ++s->ev_seq;
  zkr__event_push_locked(s, e);
}

/* ------------------------------------------------------------------ */
/* state machine */

/* Under s->mu: the session is gone; returns the lost id. */
static int64_t mark_lost(zkr_session *s) {
  int64_t sid = s->session_id;
  s->state = ZKR_STATE_LOST;
  s->session_id = 0;
  s->suspended_at = 0;
  s->gen++;
  s->need_renew = 1;
  s->renew_at = 0;
  push_state_event(s, ZKR_EV_LOST, sid);
  pthread_cond_broadcast(&s->cv);
  pthread_cond_signal(&s->mcv);
  return sid;
}

/* The session timeout every zkr timer uses: the one negotiated, but never
 * more than the one asked for (a server may raise it to its minimum; a
 * broken handshake may claim anything). */
static int effective_timeout(const zkr_session *s, zhandle_t *zh) {
  int t = zoo_recv_timeout(zh);
  return t > 0 && t < s->opts.session_timeout ? t : s->opts.session_timeout;
}

static void on_session_event(zkr_session *s, struct hctx *hc, zhandle_t *zh,
                             int zstate);

/* The reply to the first request on a new handle (on the completion
 * thread): a server's answer of any kind verifies the connection, which
 * is then taken as up; a lost connection waits for the next one. */
static void probe_done(int rc, const struct Stat *stat, const void *data) {
  struct hctx *hc = (struct hctx *)data;
  zkr_session *s = hc->s;
  (void)stat;
  pthread_mutex_lock(&s->mu);
  int current = hc->gen == s->gen && !s->closing;
  hc->probing = 0;
  int answered = rc == ZOK || rc == ZNONODE || rc == ZNOAUTH;
  if (current && answered)
    hc->verified = 1;
  zhandle_t *zh = current ? s->zh : NULL;
  pthread_mutex_unlock(&s->mu);
  if (!zh)
    return;
  /* (not answered: the connection was lost meanwhile, and the next one
   * sends the request again) */
  int zstate = zoo_state(zh);
  if (answered &&
      (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE)) {
    zkr__tls_in_callback++;
    on_session_event(s, hc, zh, zstate);
    zkr__tls_in_callback--;
  }
}

static void on_session_event(zkr_session *s, struct hctx *hc, zhandle_t *zh,
                             int zstate) {
  int have_ev = 0;
  zkr_session_event ev = ZKR_EV_CONNECTED;
  int64_t sid = 0;
  pthread_mutex_lock(&s->mu);
  if (hc->gen != s->gen || s->closing) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  if ((zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) &&
      !hc->verified) {
    /* A handshake was answered, but anything that answers a connect with
     * enough bytes passes for one (an HTTP server's "400 Bad Request" on
     * a mistyped port gives the session id " Bad Req" and a timeout of
     * days). The connection counts as up once a request is answered. */
    if (!hc->probing) {
      hc->probing = 1;
      pthread_mutex_unlock(&s->mu);
      if (zoo_aexists(zh, "/", 0, probe_done, hc) != ZOK) {
        pthread_mutex_lock(&s->mu);
        hc->probing = 0; /* sent again at the next connection */
        pthread_mutex_unlock(&s->mu);
      }
      return;
    }
  } else if (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) {
    const clientid_t *cid = zoo_client_id(zh);
    sid = cid ? cid->client_id : 0;
    ev = hc->connected_once ? ZKR_EV_RECONNECTED : ZKR_EV_CONNECTED;
    hc->connected_once = 1;
    s->state = ZKR_STATE_CONNECTED;
    s->session_id = sid;
    s->timeout_ms = effective_timeout(s, zh);
    s->suspended_at = 0;
    if (ev == ZKR_EV_CONNECTED)
      s->tick_at = zkr__now_ms(); /* a new session: no pause can have cost
                                     it; the next tick is timed from here
                                     (its negotiated timeout may be shorter
                                     than the one the ticks used so far) */
    have_ev = 1;
    zkr__log(ZKR_LOG_INFO, "session 0x%llx %s (timeout %d ms)",
             (unsigned long long)sid,
             ev == ZKR_EV_CONNECTED ? "established" : "reconnected",
             s->timeout_ms);
    push_state_event(s, ev, sid);
    zkr__bg_kick_locked(s);
    pthread_cond_broadcast(&s->cv);
    pthread_cond_signal(&s->mcv);
  } else if (zstate == ZOO_EXPIRED_SESSION_STATE ||
             zstate == ZOO_AUTH_FAILED_STATE) {
    if (zstate == ZOO_AUTH_FAILED_STATE) {
      s->auth_failed = 1;
      s->renew_enabled = 0; /* the same credentials would fail again */
    }
    zkr__log(ZKR_LOG_WARN, "session 0x%llx %s",
             (unsigned long long)s->session_id,
             zstate == ZOO_EXPIRED_SESSION_STATE ? "expired"
                                                 : "authentication failed");
    ev = ZKR_EV_LOST;
    sid = mark_lost(s);
    have_ev = 1;
  } else if (s->state == ZKR_STATE_CONNECTED) {
    /* ZOO_CONNECTING_STATE / ZOO_ASSOCIATING_STATE: disconnected */
    s->state = ZKR_STATE_SUSPENDED;
    s->suspended_at = zkr__now_ms();
    sid = s->session_id;
    ev = ZKR_EV_SUSPENDED;
    have_ev = 1;
    zkr__log(ZKR_LOG_INFO, "session 0x%llx suspended (disconnected)",
             (unsigned long long)sid);
    push_state_event(s, ev, sid);
    pthread_cond_broadcast(&s->cv);
    pthread_cond_signal(&s->mcv);
  }
  pthread_mutex_unlock(&s->mu);
  if (have_ev)
    zkr__hooks_call(s, ev, sid);
}

static void global_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  struct hctx *hc = ctx;
  if (!hc)
    return;
  zkr__tls_in_callback++;
  if (type == ZOO_SESSION_EVENT)
    on_session_event(hc->s, hc, zh, state);
  else if (path && path[0])
    zkr__watch_dispatch(hc->s, hc, type, path);
  zkr__tls_in_callback--;
}

/* The reply to zoo_add_auth (on the completion thread). A failure also
 * shows as ZOO_AUTH_FAILED_STATE; this only counts the replies so that
 * zkr_session_new() can wait for the verdict. */
static void auth_done(int rc, const void *data) {
  struct hctx *hc = (struct hctx *)data;
  zkr_session *s = hc->s;
  pthread_mutex_lock(&s->mu);
  if (hc->gen == s->gen) {
    if (s->auth_pending > 0)
      s->auth_pending--;
    if (rc == ZAUTHFAILED) {
      s->auth_failed = 1;
      s->renew_enabled = 0;
    }
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
}

/* Under s->mu: open a ZooKeeper handle for the current generation. */
static int open_handle(zkr_session *s) {
  struct hctx *hc = calloc(1, sizeof *hc);
  if (!hc)
    return ZKR_ENOMEM;
  hc->s = s;
  hc->gen = s->gen;
  char *client_hosts = zkr__hosts_client(s->hosts);
  if (!client_hosts) {
    free(hc);
    return ZKR_ENOMEM;
  }
  errno = 0;
  zhandle_t *zh =
      zookeeper_init2(client_hosts, global_watcher, s->opts.session_timeout,
                      NULL, hc, 0, zkr__zk_log_cb);
  int init_errno = errno;
  free(client_hosts); /* the client keeps a copy */
  errno = init_errno;
  if (!zh) {
    int e = errno;
    free(hc);
    zkr__log(ZKR_LOG_ERROR, "zookeeper_init(%s) failed: %s", s->hosts,
             strerror(e ? e : EINVAL));
    return e == ENOMEM ? ZKR_ENOMEM : ZKR_ECONNECT;
  }
  /* By default the client resolves the server list again every time it
   * polls its socket (a getaddrinfo, a netlink query and a shuffle per
   * request or so). Once a second is plenty: a lost connection resolves
   * again anyway. */
  zoo_set_servers_resolution_delay(zh, 1000);
  s->auth_pending = 0;
  for (struct auth *a = s->opts.auth; a; a = a->next) {
    int rc = zoo_add_auth(zh, a->scheme, a->cred, (int)strlen(a->cred),
                          auth_done, hc);
    if (rc == ZOK)
      s->auth_pending++;
    else
      zkr__log(ZKR_LOG_ERROR, "zoo_add_auth(%s) failed: %s", a->scheme,
               zerror(rc));
  }
  s->zh = zh;
  s->hctx = hc;
  s->state = ZKR_STATE_CONNECTING;
  return ZKR_OK;
}

/* Under s->mu: detach the current handle, wait until nobody uses it, and
 * close it with s->mu released. Returns with s->mu held. */
static void drop_handle(zkr_session *s) {
  zhandle_t *zh = s->zh;
  struct hctx *hc = s->hctx;
  s->zh = NULL;
  s->hctx = NULL;
  while (s->zh_users > 0)
    pthread_cond_wait(&s->cv, &s->mu);
  if (!zh)
    return;
  pthread_mutex_unlock(&s->mu);
  zookeeper_close(zh); /* joins the client's threads: no more callbacks */
  free(hc);
  pthread_mutex_lock(&s->mu);
}

/* The manager ticks every sixth of the session timeout, in every state. A
 * longer gap while a session is open means the whole process was paused
 * (SIGSTOP, swap, a stalled VM): the ZooKeeper client's I/O thread was stopped
 * too and could not notice anything, so the session may have expired meanwhile.
 */
static int64_t tick_interval(const zkr_session *s) {
  int t = s->timeout_ms > 0 ? s->timeout_ms : s->opts.session_timeout;
  return t / 6 > 0 ? t / 6 : 1;
}

/* The session clock's one rule, under s->mu (stated for users in
 * zkr_session_options.lost_fraction): an open ZooKeeper session is
 * taken as lost at @now
 *   - when the manager thread, which ticks every sixth of the session
 *     timeout, last ticked more than 2/3 of the timeout ago: the whole
 *     process was paused (SIGSTOP, swap, a stalled VM), the client's I/O
 *     thread with it, and a server may have expired the session meanwhile;
 *   - or when the connection has been down for the lost fraction of the
 *     timeout.
 * Returns why (for the log), or NULL while the session stands. */
static const char *clock_verdict_locked(const zkr_session *s, int64_t now) {
  if ((s->state != ZKR_STATE_CONNECTED && s->state != ZKR_STATE_SUSPENDED) ||
      s->timeout_ms <= 0)
    return NULL;
  if (now - s->tick_at > 2 * (int64_t)s->timeout_ms / 3)
    return "the process was paused";
  if (s->state == ZKR_STATE_SUSPENDED &&
      now >= s->suspended_at + (int64_t)(s->opts.lost_fraction * s->timeout_ms))
    return "disconnected for too long";
  return NULL;
}

static void *manager_main(void *arg) {
  zkr_session *s = arg;
  pthread_mutex_lock(&s->mu);
  s->tick_at = zkr__now_ms();
  s->mgr_sleep_until = -1;
  while (!s->closing) {
    int64_t now = zkr__now_ms();
    int64_t last = s->tick_at;
    const char *why = clock_verdict_locked(s, now);
    s->tick_at = now;
    if (why) {
      zkr__log(ZKR_LOG_WARN,
               "session 0x%llx declared lost: %s (%lld ms since the last "
               "tick, disconnected for %lld ms; session timeout %d ms, lost "
               "fraction %.2f)",
               (unsigned long long)s->session_id, why, (long long)(now - last),
               s->state == ZKR_STATE_SUSPENDED
                   ? (long long)(now - s->suspended_at)
                   : 0LL,
               s->timeout_ms, s->opts.lost_fraction);
      int64_t sid = mark_lost(s);
      pthread_mutex_unlock(&s->mu);
      zkr__hooks_call(s, ZKR_EV_LOST, sid);
      pthread_mutex_lock(&s->mu);
      continue;
    }
    if (s->need_renew && now >= s->renew_at) {
      s->need_renew = 0;
      drop_handle(s);
      if (s->closing)
        break;
      if (!s->renew_enabled) {
        continue; /* stays LOST */
      }
      if (open_handle(s) != ZKR_OK) {
        s->need_renew = 1; /* try again shortly */
        s->renew_at = zkr__now_ms() + 1000;
      }
      pthread_cond_broadcast(&s->cv);
      continue;
    }
    int64_t deadline = -1;
    if (s->need_renew)
      deadline = s->renew_at;
    /* Due timers go to the event thread. */
    int64_t next_timer = zkr__timers_fire_locked(s, now);
    if (next_timer >= 0 && (deadline < 0 || next_timer < deadline))
      deadline = next_timer;
    /* Tick in every state: a tick that stopped while connecting would
     * make the first tick after a slow connect look like a pause. */
    int64_t tick = now + tick_interval(s);
    if (deadline < 0 || tick < deadline)
      deadline = tick;
    if (s->state == ZKR_STATE_SUSPENDED && s->timeout_ms > 0) {
      /* wake when the lost fraction has passed (the rule above) */
      int64_t lost_at =
          s->suspended_at + (int64_t)(s->opts.lost_fraction * s->timeout_ms);
      if (deadline < 0 || lost_at < deadline)
        deadline = lost_at;
    }
    s->mgr_sleep_until = deadline;
    zkr__cond_wait_until(&s->mcv, &s->mu, deadline);
    s->mgr_sleep_until = -1;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* ZKR_ACL_CREATOR: every right for the session's own identities (the
 * "auth" scheme), reading for anyone. The rights are ZooKeeper's protocol
 * values (ZOO_PERM_ALL 31, ZOO_PERM_READ 1; the client library declares
 * them as variables, which a static initializer cannot use). */
static struct ACL creator_acl[] = {{31, {"auth", ""}},
                                   {1, {"world", "anyone"}}};
static struct ACL_vector creator_acl_vector = {2, creator_acl};

struct ACL_vector *zkr__session_acl(zkr_session *s) {
  return s->opts.acl == ZKR_ACL_CREATOR ? &creator_acl_vector
                                        : &ZOO_OPEN_ACL_UNSAFE;
}

/* public API */

int zkr_session_new(zkr_session **out, const char *hosts,
                    const zkr_session_options *opts) {
  if (!out || !hosts)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  int rc = zkr__hosts_check(hosts);
  if (rc != ZKR_OK)
    return rc;
  zkr_session *s = calloc(1, sizeof *s);
  if (!s)
    return ZKR_ENOMEM;
  if ((rc = zkr__opts_from(&s->opts, opts)) != ZKR_OK) {
    free(s);
    return rc;
  }
  s->hosts = zkr__strdup(hosts);
  if (!s->hosts) {
    zkr__opts_clear(&s->opts);
    free(s);
    return ZKR_ENOMEM;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->alert_mu, NULL);
  pthread_mutex_init(&s->held_mu, NULL);
  zkr__list_init(&s->held);
  pthread_cond_init(&s->alert_cv, NULL);
  zkr__cond_init(&s->cv);
  zkr__cond_init(&s->mcv);
  zkr__cond_init(&s->ecv);
  atomic_init(&s->refs, 1);
  zkr__list_init(&s->hooks);
  zkr__list_init(&s->listeners);
  zkr__list_init(&s->evq);
  zkr__list_init(&s->watches);
  if (zkr__dispatch_open(s) != ZKR_OK) {
    zkr__opts_clear(&s->opts);
    free(s->hosts);
    free(s);
    return ZKR_ESYS;
  }
  zkr__list_init(&s->bgdels);
  zkr__list_init(&s->alert_jobs);
  s->renew_enabled = s->opts.renew;
  s->gen = 1;

  pthread_mutex_lock(&s->mu);
  rc = open_handle(s);
  pthread_mutex_unlock(&s->mu);
  if (rc != ZKR_OK) {
    session_free(s);
    return rc;
  }
  if (pthread_create(&s->event_thread, NULL, zkr__event_main, s) != 0) {
    pthread_mutex_lock(&s->mu);
    drop_handle(s);
    pthread_mutex_unlock(&s->mu);
    session_free(s);
    return ZKR_ESYS;
  }
  if (pthread_create(&s->manager_thread, NULL, manager_main, s) != 0) {
    pthread_mutex_lock(&s->mu);
    s->ev_stop = 1;
    pthread_cond_signal(&s->ecv);
    drop_handle(s);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->event_thread, NULL);
    session_free(s);
    return ZKR_ESYS;
  }
  s->threads_started = 1;
  if (zkr__alerts_start(s) != ZKR_OK) {
    zkr_session_close(s);
    return ZKR_ESYS;
  }

  /* Wait for the first session and the verdict on its credentials. */
  int64_t deadline = zkr__deadline(s->opts.connect_timeout);
  pthread_mutex_lock(&s->mu);
  while ((s->state != ZKR_STATE_CONNECTED || s->auth_pending > 0) &&
         !s->auth_failed) {
    if (zkr__cond_wait_until(&s->cv, &s->mu, deadline) == ETIMEDOUT)
      break;
  }
  int ok = s->state == ZKR_STATE_CONNECTED && s->auth_pending == 0 &&
           !s->auth_failed;
  int auth_failed = s->auth_failed;
  pthread_mutex_unlock(&s->mu);
  if (!ok) {
    if (auth_failed)
      zkr__log(ZKR_LOG_ERROR, "%s refused the credentials", hosts);
    else
      zkr__log(ZKR_LOG_ERROR, "no ZooKeeper session with %s within %d ms",
               hosts, s->opts.connect_timeout);
    zkr_session_close(s);
    return auth_failed ? ZKR_EAUTH : ZKR_ECONNECT;
  }
  *out = s;
  return ZKR_OK;
}

int zkr_session_close(zkr_session *s) {
  return zkr_session_close_within(s, -1);
}

int zkr_session_close_within(zkr_session *s, int64_t wait_ms) {
  if (!s)
    return ZKR_OK;
  if (zkr__tls_in_callback)
    return ZKR_EDEADLK;
  pthread_mutex_lock(&s->mu);
  if (s->closing) {
    pthread_mutex_unlock(&s->mu);
    return ZKR_ECLOSED;
  }
  /* Let releases still on their way reach the server first: a closed
   * session's nodes go at once only if closeSession arrives, and a node
   * left behind blocks the next contender until the session expires.
   * Bounded by half the session timeout, or by the caller. */
  int64_t wait = s->timeout_ms / 2;
  if (wait_ms >= 0 && wait_ms < wait)
    wait = wait_ms;
  int64_t until = zkr__now_ms() + wait;
  while (!s->closing && zkr__bg_pending_locked(s) &&
         (s->state == ZKR_STATE_CONNECTED || s->state == ZKR_STATE_SUSPENDED) &&
         zkr__now_ms() < until)
    zkr__cond_wait_until(&s->cv, &s->mu, until);
  if (s->closing) {
    pthread_mutex_unlock(&s->mu);
    return ZKR_ECLOSED;
  }
  s->closing = 1;
  int64_t sid = s->session_id;
  s->state = ZKR_STATE_CLOSED;
  s->session_id = 0;
  s->gen++;
  pthread_cond_broadcast(&s->cv);
  pthread_cond_signal(&s->mcv);
  pthread_mutex_unlock(&s->mu);

  zkr__alerts_stop(s); /* (one in progress finishes first) */
  pthread_join(s->manager_thread, NULL);

  pthread_mutex_lock(&s->mu);
  drop_handle(s);
  pthread_mutex_unlock(&s->mu);

  zkr__hooks_call(s, ZKR_EV_CLOSED, sid);

  pthread_mutex_lock(&s->mu);
  zkr__timers_fire_locked(s, INT64_MAX); /* each still runs */
  push_state_event(s, ZKR_EV_CLOSED, sid);
  s->ev_stop = 1;
  pthread_cond_signal(&s->ecv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->event_thread, NULL);
  zkr__dispatch_close(s);

  zkr__session_unref(s);
  return ZKR_OK;
}

zkr_session_state zkr_session_state_get(const zkr_session *cs) {
  if (!cs)
    return ZKR_STATE_CLOSED;
  zkr_session *s = (zkr_session *)cs;
  pthread_mutex_lock(&s->mu);
  zkr_session_state st = s->state;
  pthread_mutex_unlock(&s->mu);
  return st;
}

int64_t zkr_session_id(const zkr_session *cs) {
  if (!cs)
    return 0;
  zkr_session *s = (zkr_session *)cs;
  pthread_mutex_lock(&s->mu);
  int64_t sid =
      s->state == ZKR_STATE_CONNECTED || s->state == ZKR_STATE_SUSPENDED
          ? s->session_id
          : 0;
  pthread_mutex_unlock(&s->mu);
  return sid;
}

int zkr_session_timeout(const zkr_session *cs) {
  if (!cs)
    return 0;
  zkr_session *s = (zkr_session *)cs;
  pthread_mutex_lock(&s->mu);
  int t = s->timeout_ms;
  pthread_mutex_unlock(&s->mu);
  return t;
}

int zkr__session_wait_usable(zkr_session *s, int64_t deadline_ms) {
  zkr__session_ref(s); /* a concurrent close must not free s under us */
  pthread_mutex_lock(&s->mu);
  int rc = ZKR_OK;
  for (;;) {
    if (s->closing) {
      rc = ZKR_ECLOSED;
      break;
    }
    if (s->state == ZKR_STATE_CONNECTED)
      break;
    if (s->state == ZKR_STATE_LOST && !s->renew_enabled) {
      rc = ZKR_ESESSIONLOST;
      break;
    }
    if (zkr__cond_wait_until(&s->cv, &s->mu, deadline_ms) == ETIMEDOUT) {
      rc = s->state == ZKR_STATE_CONNECTED ? ZKR_OK : ZKR_ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  zkr__session_unref(s);
  return rc;
}

int zkr_session_wait_connected(zkr_session *s, int64_t timeout_ms) {
  if (!s)
    return ZKR_EINVAL;
  if (zkr__tls_in_callback && timeout_ms != 0)
    return ZKR_EDEADLK;
  return zkr__session_wait_usable(s, zkr__deadline(timeout_ms));
}

int zkr__session_get_zh(zkr_session *s, zhandle_t **zh, uint64_t *gen) {
  pthread_mutex_lock(&s->mu);
  int rc = ZKR_OK;
  if (s->closing)
    rc = ZKR_ECLOSED;
  else if (!s->zh || s->state == ZKR_STATE_LOST)
    rc = s->renew_enabled ? ZKR_ECONNLOSS : ZKR_ESESSIONLOST;
  else {
    s->zh_users++;
    *zh = s->zh;
    if (gen)
      *gen = s->gen;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void zkr__session_put_zh(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
  if (--s->zh_users == 0)
    pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

uint64_t zkr__session_generation(zkr_session *s, int64_t *session_id) {
  pthread_mutex_lock(&s->mu);
  uint64_t g = s->gen;
  if (session_id)
    *session_id = s->session_id;
  pthread_mutex_unlock(&s->mu);
  return g;
}

int zkr_session_add_listener(zkr_session *s, zkr_session_listener_fn fn,
                             void *user_data, uint64_t *id_out) {
  if (!s || !fn)
    return ZKR_EINVAL;
  struct listener *l = calloc(1, sizeof *l);
  if (!l)
    return ZKR_ENOMEM;
  l->fn = fn;
  l->ud = user_data;
  pthread_mutex_lock(&s->mu);
  if (s->closing) {
    pthread_mutex_unlock(&s->mu);
    free(l);
    return ZKR_ECLOSED;
  }
  l->id = ++s->next_id;
  l->since = s->ev_seq;
  zkr__list_push_back(&s->listeners, &l->link);
  if (id_out)
    *id_out = l->id;
  pthread_mutex_unlock(&s->mu);
  return ZKR_OK;
}

int zkr_session_remove_listener(zkr_session *s, uint64_t id) {
  if (!s)
    return ZKR_EINVAL;
  int found = 0;
  pthread_mutex_lock(&s->mu);
  zkr__list *n, *tmp;
  zkr__list_for_each_safe(n, tmp, &s->listeners) {
    struct listener *l = zkr__list_entry(n, struct listener, link);
    if (l->id == id) {
      zkr__list_remove(&l->link);
      free(l);
      found = 1;
      break;
    }
  }
  while (found && s->running_listener == id &&
         !pthread_equal(pthread_self(), s->running_listener_thread))
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  return found ? ZKR_OK : ZKR_EINVAL;
}

/* ------------------------------------------------------------------ */
/* helpers for operation waiters (zkops.c) */

void zkr__session_lock(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
}

void zkr__session_unlock(zkr_session *s) {
  pthread_mutex_unlock(&s->mu);
}

int zkr__session_wait_locked(zkr_session *s, int64_t deadline_ms) {
  return zkr__cond_wait_until(&s->cv, &s->mu, deadline_ms);
}

void zkr__session_broadcast_locked(zkr_session *s) {
  pthread_cond_broadcast(&s->cv);
}

int zkr__session_closing_locked(zkr_session *s) {
  return s->closing;
}

int zkr__session_renews(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
  int r = s->renew_enabled && !s->closing;
  pthread_mutex_unlock(&s->mu);
  return r;
}

int zkr__session_alive(zkr_session *s, uint64_t gen) {
  pthread_mutex_lock(&s->mu);
  int alive = gen == s->gen && s->state != ZKR_STATE_LOST &&
              s->state != ZKR_STATE_CLOSED &&
              !clock_verdict_locked(s, zkr__now_ms());
  if (!alive)
    pthread_cond_signal(&s->mcv); /* the manager declares it (listeners,
                                     hooks) as soon as it runs */
  pthread_mutex_unlock(&s->mu);
  return alive;
}

int zkr__session_fresh(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
  int64_t now = zkr__now_ms();
  /* Connected, and the manager ran recently: the process was not paused
   * long enough for the session to expire unnoticed. */
  int fresh = s->state == ZKR_STATE_CONNECTED &&
              now - s->tick_at < (int64_t)s->timeout_ms / 2;
  pthread_mutex_unlock(&s->mu);
  return fresh;
}

uint64_t zkr__session_node_events(zkr_session *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t n = s->node_events;
  pthread_mutex_unlock(&s->mu);
  return n;
}
