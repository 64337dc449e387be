/* Dispatch mode (zkr_session_options.dispatch) against a real server:
 * every callback runs in zkr_session_dispatch() on the thread that calls
 * it, never on the session's threads: 200 asynchronous acquisitions on 20
 * mutexes (four to a path) driven from one epoll loop, each result once,
 * none overlapping on a path; hold states, a server-side expiry's LOST and
 * the session listener's LOST; leadership and an observer; a semaphore's
 * result and lease states; the lock hook and an alert. Then the edges:
 * the descriptor is readable exactly while callbacks wait; max; a
 * callback queued during a dispatch waits for the next; ZKR_EDEADLK from
 * a dispatched callback, ZKR_EBUSY from a second thread; an object freed
 * with a callback queued, and a session closed with callbacks queued,
 * drop them; bad arguments change nothing. */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static pthread_t loop_thread;
static int dispatching; /* the loop thread is inside dispatch */
static int off_thread;  /* callbacks seen on another thread */
static int outside;     /* callbacks seen outside a dispatch */

static void check_thread(void) {
  if (!pthread_equal(pthread_self(), loop_thread))
    __atomic_add_fetch(&off_thread, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&dispatching, __ATOMIC_SEQ_CST))
    __atomic_add_fetch(&outside, 1, __ATOMIC_SEQ_CST);
}

static int dispatch(zkr_session *s, int max) {
  __atomic_store_n(&dispatching, 1, __ATOMIC_SEQ_CST);
  int n = zkr_session_dispatch(s, max);
  __atomic_store_n(&dispatching, 0, __ATOMIC_SEQ_CST);
  return n;
}

static int readable(zkr_session *s, int ms) {
  struct pollfd p = {.fd = zkr_session_fd(s), .events = POLLIN};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Dispatch from an epoll loop until @done(arg) or @ms pass. */
static int loop_until(zkr_session *s, int (*done)(void *), void *arg,
                      int64_t ms) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, zkr_session_fd(s), &ev);
  int64_t end = zkt_now_ms() + ms;
  int ok = 0;
  while (!(ok = done(arg)) && zkt_now_ms() < end) {
    struct epoll_event got;
    if (epoll_wait(ep, &got, 1, 100) == 1)
      dispatch(s, 0);
  }
  close(ep);
  return ok;
}

/* ---- 200 acquisitions on 20 mutexes, four to a path ---- */

#define NM 20
#define NP 5
#define ROUNDS 10

struct con {
  zkr_mutex *m;
  int path;
  int results, fails, held_seen;
};
static struct con cons[NM];
static int holders[NP], overlap, total, doubled;

static void on_acquired(zkr_mutex *m, int rc, void *ud) {
  struct con *c = ud;
  check_thread();
  if (c->m != m)
    doubled++;
  c->results++;
  total++;
  if (rc != ZKR_OK) {
    c->fails++;
    return;
  }
  if (++holders[c->path] > 1)
    overlap++;
  holders[c->path]--;
  if (zkr_mutex_release(m) != ZKR_OK)
    c->fails++;
  if (c->results < ROUNDS &&
      zkr_mutex_acquire_async(m, 30000, on_acquired, c) != ZKR_OK)
    c->fails++;
}

static void on_held_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  struct con *c = ud;
  (void)h;
  check_thread();
  if (st == ZKR_LOCK_HELD)
    c->held_seen++;
}

static int all_done(void *arg) {
  (void)arg;
  return total >= NM * ROUNDS;
}

static void many(zkr_session *s) {
  for (int i = 0; i < NM; i++) {
    char name[32];
    snprintf(name, sizeof name, "m%d", i % NP);
    cons[i].path = i % NP;
    zkr_mutex_new(&cons[i].m, s, zkt_path(name),
                  &(zkr_mutex_options){.state_fn = on_held_state,
                                       .state_user_data = &cons[i]});
  }
  int started = 0;
  for (int i = 0; i < NM; i++)
    started += zkr_mutex_acquire_async(cons[i].m, 30000, on_acquired,
                                       &cons[i]) == ZKR_OK;
  is(started, NM, "20 asynchronous acquisitions started on 20 mutexes");
  int done = loop_until(s, all_done, NULL, 60000);
  ok(done, "one epoll loop dispatches 200 results (%d)", total);
  usleep(200000); /* anything late would show up now */
  dispatch(s, 0);
  int each = 1, fails = 0, held = 0;
  for (int i = 0; i < NM; i++) {
    each &= cons[i].results == ROUNDS;
    fails += cons[i].fails;
    held += cons[i].held_seen;
  }
  ok(each && total == NM * ROUNDS && !doubled,
     "every mutex got exactly its 10 results, none lost or doubled (%d)",
     total);
  is(fails, 0, "every acquisition and release succeeded");
  is(overlap, 0, "no two holders of a path at once");
  is(held, NM * ROUNDS, "a HELD state callback for each acquisition (%d)",
     held);
  is(off_thread + outside, 0,
     "every callback ran on the loop thread, inside zkr_session_dispatch()");
  for (int i = 0; i < NM; i++)
    zkr_mutex_free(cons[i].m);
}

/* ---- LOST through dispatch ---- */

static void on_lease_state(zkr_hold *h, zkr_lock_state st, void *ud);
static int lease_lost;

static zkr_lock_state last_state;
static int lost_states;
static zkr_session_event listener_evs[16];
static int n_listener;

static void on_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  (void)h;
  (void)ud;
  check_thread();
  last_state = st;
  lost_states += st == ZKR_LOCK_LOST;
}

static void on_session(zkr_session *s, zkr_session_event ev, int64_t sid,
                       void *ud) {
  (void)s;
  (void)sid;
  (void)ud;
  check_thread();
  if (n_listener < 16)
    listener_evs[n_listener++] = ev;
}

static int lost_seen(void *arg) {
  (void)arg;
  int ev = 0;
  for (int i = 0; i < n_listener; i++)
    ev |= listener_evs[i] == ZKR_EV_LOST;
  return lost_states > 0 && ev && lease_lost > 0;
}

static void lost(const char *hosts, zkr_session *s) {
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, zkt_path("lost"),
                &(zkr_mutex_options){.state_fn = on_state});
  uint64_t lid = 0;
  zkr_session_add_listener(s, on_session, NULL, &lid);
  zkr_semaphore *sem = NULL;
  zkr_semaphore_new(&sem, s, zkt_path("lostsem"), 2,
                    &(zkr_semaphore_options){.state_fn = on_lease_state});
  zkr_lease *l = NULL;
  is(zkr_semaphore_acquire(sem, 1, 10000, &l), ZKR_OK,
     "a lease, taken from the loop thread outside a dispatch");
  is(zkr_mutex_acquire(m, 10000), ZKR_OK,
     "a blocking acquisition from the loop thread, outside a dispatch");
  is(dispatch(s, 0), 1, "its HELD state waits for dispatch, and runs in it");
  is(last_state, ZKR_LOCK_HELD, "HELD");
  is(zkt_expire(hosts, s), 0, "the ZooKeeper session is expired server-side");
  int64_t end = zkt_now_ms() + 20000;
  while (zkr_mutex_state_get(m) != ZKR_LOCK_LOST && zkt_now_ms() < end)
    usleep(10000);
  ok(zkr_mutex_state_get(m) == ZKR_LOCK_LOST && lost_states == 0,
     "the mutex is LOST, and nothing was called before dispatching");
  ok(loop_until(s, lost_seen, NULL, 20000),
     "LOST reaches the mutex's and the lease's state callbacks and "
     "ZKR_EV_LOST the listener, through dispatch");
  zkr_lease_free(l);
  zkr_semaphore_free(sem);
  is(zkr_mutex_release(m), ZKR_ELOCKLOST, "the release says it was lost");
  zkr_mutex_free(m);
  zkr_session_remove_listener(s, lid);
  ok(zkr_session_wait_connected(s, 20000) == ZKR_OK,
     "a new ZooKeeper session follows");
}

/* The server expires the session while the proxy drops everything (the
 * session clock is set far beyond the timeout, so the LOST is the
 * server's): LOST and ZKR_EV_LOST reach the loop through dispatch, and
 * nothing runs before the loop dispatches. */
static void proxy_lost(const char *hosts) {
  int port = zkt_proxy_start(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  zkr_session *s = NULL;
  is(zkr_session_new(&s, via,
                     &(zkr_session_options){.session_timeout_ms = 4000,
                                            .lost_fraction = 10,
                                            .dispatch = 1}),
     ZKR_OK, "a dispatch-mode session through the proxy");
  if (!s)
    return;
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, zkt_path("plost"),
                &(zkr_mutex_options){.state_fn = on_state});
  zkr_session_add_listener(s, on_session, NULL, NULL);
  n_listener = 0;
  lost_states = 0;
  lease_lost = 1; /* (no lease here) */
  is(zkr_mutex_acquire(m, 10000), ZKR_OK, "a mutex held through it");
  dispatch(s, 0);
  zkt_proxy_cmd("blackhole");
  ok(zkt_proxy_wait("done blackhole", 1, 5000), "the proxy drops everything");
  usleep(7000 * 1000); /* past the 4 s timeout: the server expires it */
  ok(lost_states == 0 && n_listener == 0,
     "nothing was called meanwhile (the loop did not dispatch)");
  zkt_proxy_cmd("flow");
  ok(loop_until(s, lost_seen, NULL, 30000),
     "once traffic flows, the server's expiry reaches the loop: LOST and "
     "ZKR_EV_LOST, through dispatch");
  is(zkr_mutex_release(m), ZKR_ELOCKLOST, "the release says it was lost");
  zkr_mutex_free(m);
  zkr_session_close(s);
  is(zkt_proxy_stop(), 0, "the proxy exits cleanly");
}

/* ---- leadership, an observer, a semaphore, the lock hook, alerts ---- */

static int leading = -1, leader_calls, observed, sem_rc = 99, sem_results;
static zkr_lease *leases[2];

static void on_lead(zkr_election *e, int is_leader, void *ud) {
  (void)e;
  (void)ud;
  check_thread();
  leading = is_leader;
  leader_calls++;
}

static void on_observe(zkr_election_observer *o, const zkr_participant *p,
                       void *ud) {
  (void)o;
  (void)ud;
  check_thread();
  observed += p != NULL;
}

static void on_sem(zkr_semaphore *sem, int rc, zkr_lease **l, int n, void *ud) {
  (void)sem;
  (void)l;
  (void)n;
  (void)ud;
  check_thread();
  sem_rc = rc;
  sem_results++;
}

static void on_lease_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  (void)h;
  (void)ud;
  check_thread();
  lease_lost += st == ZKR_LOCK_LOST;
}

static int recipes_done(void *arg) {
  (void)arg;
  return leading == 1 && observed > 0 && sem_results == 1;
}

static int hook_events, alerts;

static void on_hook(const zkr_lock_event *ev, void *ud) {
  (void)ev;
  (void)ud;
  check_thread();
  hook_events++;
}

static void on_alert(const zkr_alert *a, void *ud) {
  (void)a;
  (void)ud;
  check_thread();
  alerts++;
}

static int hook_and_alert(void *arg) {
  (void)arg;
  return hook_events >= 2 && alerts >= 1;
}

static void recipes(zkr_session *s) {
  zkr_election *e = NULL;
  zkr_election_new(&e, s, zkt_path("leader"),
                   &(zkr_election_options){.listener = on_lead});
  zkr_election_observer *o = NULL;
  zkr_election_observe(s, zkt_path("leader"), on_observe, NULL, &o);
  zkr_semaphore *sem = NULL;
  zkr_semaphore_new(&sem, s, zkt_path("sem"), 3,
                    &(zkr_semaphore_options){.state_fn = on_lease_state});
  is(zkr_election_start(e), ZKR_OK, "an election started");
  is(zkr_semaphore_acquire_async(sem, 2, 10000, leases, on_sem, NULL), ZKR_OK,
     "a semaphore acquisition of two leases started");
  int done = loop_until(s, recipes_done, NULL, 20000);
  ok(done,
     "leadership, the observer and the semaphore's result come through "
     "dispatch (%d %d %d)",
     leading, observed, sem_results);
  is(sem_rc, ZKR_OK, "the semaphore's result is ZKR_OK");
  is(zkr_election_resign(e), ZKR_OK, "resign");
  zkr_election_free(e);
  zkr_election_observer_free(o);
  for (int i = 0; i < 2; i++)
    zkr_lease_free(leases[i]);
  zkr_semaphore_free(sem);
  dispatch(s, 0);
  is(leader_calls >= 1 && off_thread + outside == 0, 1,
     "all of them on the loop thread, inside dispatch (%d leader calls)",
     leader_calls);
}

static void hooks(const char *hosts) {
  zkr_session *s = NULL;
  is(zkr_session_new(&s, hosts,
                     &(zkr_session_options){.session_timeout_ms = 6000,
                                            .dispatch = 1,
                                            .lock_hook = on_hook,
                                            .alert_hold_ms = 1,
                                            .alert_fn = on_alert}),
     ZKR_OK, "a dispatch-mode session with a lock hook and a 1 ms hold alert");
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, zkt_path("hook"), NULL);
  zkr_mutex_acquire(m, 10000);
  usleep(100000);
  zkr_mutex_release(m);
  int done = loop_until(s, hook_and_alert, NULL, 20000);
  ok(done,
     "the lock hook's acquired and released and the hold alert come "
     "through dispatch (%d, %d)",
     hook_events, alerts);
  is(off_thread + outside, 0, "on the loop thread, inside dispatch");
  zkr_mutex_free(m);
  zkr_session_close(s);
}

/* ---- the edges ---- */

static int calls;
static int nested_rc = 99, blocking_rc = 99;
static zkr_session *nested_s;

static void counted(zkr_mutex *m, int rc, void *ud) {
  (void)m;
  (void)rc;
  (void)ud;
  check_thread();
  calls++;
}

static zkr_mutex *later;
static int queued_inside;

static void nested(zkr_mutex *m, int rc, void *ud) {
  (void)rc;
  (void)ud;
  nested_rc = zkr_session_dispatch(nested_s, 0);
  zkr_mutex_release(m);
  blocking_rc = zkr_mutex_acquire(m, 1000);
  zkr_mutex_acquire_async(later, 10000, counted, NULL);
  queued_inside = readable(nested_s, 10000); /* its result comes meanwhile */
}

struct busy {
  zkr_session *s;
  int rc;
  int done;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};
static struct busy busy = {
    .rc = 99, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *other_dispatch(void *arg) {
  (void)arg;
  int rc = zkr_session_dispatch(busy.s, 0);
  pthread_mutex_lock(&busy.mu);
  busy.rc = rc;
  busy.done = 1;
  pthread_cond_broadcast(&busy.cv);
  pthread_mutex_unlock(&busy.mu);
  return NULL;
}

static void wait_other(zkr_mutex *m, int rc, void *ud) {
  (void)m;
  (void)rc;
  (void)ud;
  pthread_t th;
  pthread_create(&th, NULL, other_dispatch, NULL);
  pthread_join(th, NULL); /* (it must not wait for this dispatch) */
}

/* Wait until @n results are queued on @s (its descriptor readable and
 * @m's acquisitions ended). */
static int queued(zkr_session *s, zkr_mutex *m) {
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_now_ms() < end) {
    if (zkr_mutex_is_held(m) && readable(s, 10))
      return 1;
    usleep(10000);
  }
  return 0;
}

static void edges(const char *hosts, zkr_session *s) {
  ok(!readable(s, 0), "nothing queued: the descriptor is not readable");
  is(dispatch(s, 0), 0, "and dispatching runs nothing");

  zkr_mutex *a = NULL, *b = NULL, *c = NULL;
  zkr_mutex_new(&a, s, zkt_path("ea"), NULL);
  zkr_mutex_new(&b, s, zkt_path("eb"), NULL);
  zkr_mutex_new(&c, s, zkt_path("ec"), NULL);
  zkr_mutex_acquire_async(a, 10000, counted, NULL);
  zkr_mutex_acquire_async(b, 10000, counted, NULL);
  ok(queued(s, a) && queued(s, b), "two results queued: readable");
  is(calls, 0, "neither was called yet");
  is(dispatch(s, 1), 1, "max 1 runs one");
  ok(readable(s, 0), "the descriptor stays readable with one left");
  is(dispatch(s, 5), 1, "max 5 runs the one left");
  ok(!readable(s, 0) && calls == 2, "and it is not readable any more");
  zkr_mutex_release(a);
  zkr_mutex_release(b);

  /* a callback queued during a dispatch waits for the next one */
  calls = 0;
  nested_s = s;
  later = a;
  zkr_mutex_acquire_async(c, 10000, nested, NULL);
  ok(queued(s, c), "a result queued");
  is(dispatch(s, 0), 1, "it runs, alone");
  ok(queued_inside, "a result queued while it ran (its callback started "
                    "an acquisition)");
  ok(calls == 0 && readable(s, 0),
     "was left for the next dispatch: not called, the descriptor readable");
  is(dispatch(s, 0), 1, "the next dispatch runs it");
  is(calls, 1, "called once");
  zkr_mutex_release(a);
  is(nested_rc, ZKR_EDEADLK,
     "zkr_session_dispatch() from a dispatched callback: ZKR_EDEADLK");
  is(blocking_rc, ZKR_EDEADLK,
     "a blocking acquisition from a dispatched callback: ZKR_EDEADLK");

  busy.s = s;
  zkr_mutex_acquire_async(c, 10000, wait_other, NULL);
  ok(queued(s, c), "a result queued");
  dispatch(s, 0);
  is(busy.rc, ZKR_EBUSY, "a second thread dispatching meanwhile: ZKR_EBUSY");
  zkr_mutex_release(c);

  /* freed with its result queued: dropped */
  calls = 0;
  zkr_mutex_acquire_async(a, 10000, counted, NULL);
  ok(queued(s, a), "a result queued");
  zkr_mutex_free(a);
  is(dispatch(s, 0), 1, "the freed mutex's queued result is taken");
  is(calls, 0, "and dropped: its callback is never called");
  zkr_election *e = NULL;
  leader_calls = 0;
  zkr_election_new(&e, s, zkt_path("eleader"),
                   &(zkr_election_options){.listener = on_lead});
  zkr_election_start(e);
  int64_t end = zkt_now_ms() + 10000;
  while (!(zkr_election_is_leader(e) && readable(s, 10)) && zkt_now_ms() < end)
    usleep(10000);
  ok(zkr_election_is_leader(e), "an election leads, its listener queued");
  zkr_election_free(e);
  dispatch(s, 0);
  is(leader_calls, 0, "freed: the listener is never called");
  zkr_mutex_free(b);
  zkr_mutex_free(c);

  /* closed with callbacks queued: dropped, the descriptor closed */
  zkr_session *s2 = NULL;
  zkr_session_new(
      &s2, hosts,
      &(zkr_session_options){.session_timeout_ms = 6000, .dispatch = 1});
  zkr_session_add_listener(s2, on_session, NULL, NULL);
  n_listener = 0;
  zkr_mutex *d = NULL;
  zkr_mutex_new(&d, s2, zkt_path("ed"), NULL);
  calls = 0;
  zkr_mutex_acquire_async(d, 10000, counted, NULL);
  ok(queued(s2, d), "a result queued on a second session");
  int fd = zkr_session_fd(s2);
  is(zkr_session_close(s2), ZKR_OK, "that session is closed");
  ok(calls == 0 && n_listener == 0,
     "the queued result and ZKR_EV_CLOSED were dropped, never called");
  ok(fcntl(fd, F_GETFD) == -1, "its descriptor is closed");
  is(zkr_mutex_acquire_async(d, 1000, counted, NULL), ZKR_ECLOSED,
     "an acquisition after the close: ZKR_ECLOSED");
  zkr_mutex_free(d);
  is(calls, 0, "nothing was called");
}

/* ---- the guarded write that does not wait ---- */

static int g_rc = 99, g_calls;
static pthread_t g_thread;

static void on_guarded(int rc, void *ud) {
  (void)ud;
  check_thread();
  g_rc = rc;
  g_calls++;
}

static void on_guarded_plain(int rc, void *ud) {
  (void)ud;
  g_thread = pthread_self();
  g_rc = rc;
  __atomic_add_fetch(&g_calls, 1, __ATOMIC_SEQ_CST);
}

static int guarded_done(void *arg) {
  (void)arg;
  return __atomic_load_n(&g_calls, __ATOMIC_SEQ_CST) > 0;
}

static int send_set(zkr_mutex *m, const char *path, const char *v, int version,
                    zoo_op_t *op, zoo_op_result_t *res, zkr_guarded_fn fn) {
  g_calls = 0;
  g_rc = 99;
  memset(res, 0, sizeof *res);
  zoo_set_op_init(op, path, v, (int)strlen(v), version, NULL);
  return zkr_hold_guarded_multi_async(zkr_mutex_hold(m), 1, op, res, fn, NULL);
}

static void guarded(const char *hosts, zkr_session *s) {
  const char *data = zkt_path("gdata");
  zkr__result r;
  memset(&r, 0, sizeof r);
  zkr__zk_create(s, data, "v0", 2, 0, zkr__deadline(10000), &r);
  zkr__result_clear(&r);
  zkr_mutex *m = NULL;
  zkr_mutex_new(&m, s, zkt_path("g"), NULL);
  zoo_op_t op;
  zoo_op_result_t res;
  is(send_set(m, data, "v1", -1, &op, &res, on_guarded), ZKR_ENOTHELD,
     "guarded write without the hold: ZKR_ENOTHELD, nothing sent");
  is(zkr_mutex_acquire(m, 10000), ZKR_OK, "the mutex is held");
  is(zkr_hold_guarded_multi_async(zkr_mutex_hold(m), 1, &op, &res, NULL, NULL),
     ZKR_EINVAL, "a NULL callback: ZKR_EINVAL");
  is(send_set(m, data, "v1", -1, &op, &res, on_guarded), ZKR_OK,
     "a guarded write sent without waiting");
  int done = loop_until(s, guarded_done, NULL, 10000);
  ok(done && g_rc == ZKR_OK && g_calls == 1,
     "its outcome ZKR_OK comes once, through dispatch");
  memset(&r, 0, sizeof r);
  zkr__zk_get(s, data, zkr__deadline(10000), &r);
  ok(r.data && strcmp(r.data, "v1") == 0, "the data is v1 (%s)",
     r.data ? r.data : "-");
  zkr__result_clear(&r);
  is(send_set(m, data, "v2", 99, &op, &res, on_guarded), ZKR_OK,
     "a guarded write with a wrong version");
  done = loop_until(s, guarded_done, NULL, 10000);
  ok(done && g_rc == ZKR_EBADVERSION && res.err == ZBADVERSION,
     "ZKR_EBADVERSION, the result filled (%d)", res.err);

  char node[1100];
  zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
  zkr_session *other = zkt_connect(hosts, 6000);
  is(zkr__zk_delete(other, node, -1, zkr__deadline(10000)), ZKR_OK,
     "another session deletes the holder's node");
  is(send_set(m, data, "v3", -1, &op, &res, on_guarded), ZKR_OK,
     "a guarded write sent");
  done = loop_until(s, guarded_done, NULL, 10000);
  ok(done && g_rc == ZKR_ELOCKLOST && zkr_mutex_state_get(m) == ZKR_LOCK_LOST,
     "ZKR_ELOCKLOST, nothing applied, the mutex LOST");
  memset(&r, 0, sizeof r);
  zkr__zk_get(s, data, zkr__deadline(10000), &r);
  ok(r.data && strcmp(r.data, "v1") == 0, "the data is still v1");
  zkr__result_clear(&r);
  zkr_mutex_release(m);
  dispatch(s, 0);
  zkr_mutex_free(m);

  /* without dispatch mode: on the event thread */
  zkr_mutex *pm = NULL;
  zkr_mutex_new(&pm, other, zkt_path("gp"), NULL);
  zkr_mutex_acquire(pm, 10000);
  is(send_set(pm, data, "v4", -1, &op, &res, on_guarded_plain), ZKR_OK,
     "a guarded write sent on a session without dispatch mode");
  ok(zkt_wait_for(guarded_done, NULL, 10000) && g_rc == ZKR_OK &&
         !pthread_equal(g_thread, pthread_self()),
     "its outcome comes on the session's event thread");
  zkr_mutex_free(pm);
  zkr_session_close(other);
}

static void bad(const char *hosts) {
  is(zkr_session_fd(NULL), ZKR_EINVAL, "zkr_session_fd(NULL): ZKR_EINVAL");
  is(zkr_session_dispatch(NULL, 0), ZKR_EINVAL,
     "zkr_session_dispatch(NULL): ZKR_EINVAL");
  zkr_session *s = zkt_connect(hosts, 6000);
  is(zkr_session_fd(s), ZKR_EINVAL,
     "zkr_session_fd() without dispatch mode: ZKR_EINVAL");
  is(zkr_session_dispatch(s, 0), ZKR_EINVAL,
     "zkr_session_dispatch() without dispatch mode: ZKR_EINVAL");
  zkr_session_close(s);
}

int main(void) {
  tap_init(300);
  const char *hosts = zkt_start(1);
  zkt_root("t-dispatch");
  loop_thread = pthread_self();
  bad(hosts);
  zkr_session *s = NULL;
  is(zkr_session_new(
         &s, hosts,
         &(zkr_session_options){.session_timeout_ms = 6000, .dispatch = 1}),
     ZKR_OK, "a session in dispatch mode");
  ok(zkr_session_fd(s) >= 0, "it has a descriptor");
  many(s);
  lost(hosts, s);
  guarded(hosts, s);
  recipes(s);
  edges(hosts, s);
  is(off_thread + outside, 0,
     "no callback ever ran on another thread or outside a dispatch");
  zkr_session_close(s);
  hooks(hosts);
  proxy_lost(hosts);
  return tap_done();
}
