/* Monitoring, against a real server: a lock object's and a session's
 * figures (acquisitions, failures by cause, wait and hold histograms,
 * hand-offs, gauges), the lock hook's events, the threshold alerts (once
 * per episode, with the holder's identity for a long wait), the
 * semaphore's and the election's figures, and bad input.
 *
 * Durations are only ever checked from below (a wait ended by a release
 * made 700 ms after it began lasted at least that long), never from
 * above: the machines are shared. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;
static zkr_session *admin;

/* ---- what the hook and the alert function saw ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int nev[4];        /* by zkr_lock_event_type */
static int nev_cause[8];  /* FAILED and LOST, by cause */
static int64_t last_wait; /* us, of the last ACQUIRED */
static char last_recipe[32];
static char last_path[600], last_node[600]; /* of the last ACQUIRED */
static int hook_bad;                        /* an event with a missing field */

static void hook(const zkr_lock_event *ev, void *ud) {
  pthread_mutex_lock(&mu);
  if ((int *)ud != &hook_bad || !ev->path || !ev->recipe || (int)ev->type < 0 ||
      ev->type > 3)
    hook_bad++;
  else {
    nev[ev->type]++;
    if (ev->type == ZKR_LOCK_EV_FAILED || ev->type == ZKR_LOCK_EV_LOST)
      nev_cause[ev->cause]++;
    if (ev->type == ZKR_LOCK_EV_ACQUIRED) {
      last_wait = ev->wait_us;
      if (!ev->node)
        hook_bad++;
      else
        snprintf(last_node, sizeof last_node, "%s", ev->node);
      snprintf(last_path, sizeof last_path, "%s", ev->path);
    }
    snprintf(last_recipe, sizeof last_recipe, "%s", ev->recipe);
  }
  pthread_mutex_unlock(&mu);
}

static int nalert[2];
static char alert_holder_id[64], alert_holder_host[256], alert_holder_node[256];
static char alert_path[600], alert_recipe[32];
static int64_t alert_holder_pid, alert_elapsed[2];

static void alert(const zkr_alert *a, void *ud) {
  (void)ud;
  pthread_mutex_lock(&mu);
  nalert[a->kind]++;
  alert_elapsed[a->kind] = a->elapsed_ms;
  snprintf(alert_path, sizeof alert_path, "%s", a->path);
  snprintf(alert_recipe, sizeof alert_recipe, "%s", a->recipe);
  if (a->kind == ZKR_ALERT_WAIT) {
    snprintf(alert_holder_id, sizeof alert_holder_id, "%s",
             a->holder_id ? a->holder_id : "(none)");
    snprintf(alert_holder_host, sizeof alert_holder_host, "%s",
             a->holder_host ? a->holder_host : "(none)");
    snprintf(alert_holder_node, sizeof alert_holder_node, "%s",
             a->holder_node ? a->holder_node : "(none)");
    alert_holder_pid = a->holder_pid;
  }
  pthread_mutex_unlock(&mu);
}

static int get(int *p) {
  pthread_mutex_lock(&mu);
  int v = *p;
  pthread_mutex_unlock(&mu);
  return v;
}
struct cnt_arg {
  int *p;
  int want;
};
static int cnt_is(void *arg) {
  struct cnt_arg *c = arg;
  return get(c->p) >= c->want;
}
static int wait_cnt(int *p, int want, int64_t ms) {
  struct cnt_arg c = {p, want};
  return zkt_wait_for(cnt_is, &c, ms);
}

static zkr_mutex *mutex(zkr_session *s, const char *path, const char *id,
                        int watch) {
  zkr_mutex_options o = {0};
  o.id = id;
  o.watch_node = watch;
  zkr_mutex *m = NULL;
  if (zkr_mutex_new(&m, s, path, &o) != ZKR_OK)
    tap_bail("zkr_mutex_new");
  return m;
}

static zkr_stats st(zkr_mutex *m) {
  zkr_stats s;
  memset(&s, 0xa5, sizeof s);
  if (zkr_mutex_stats(m, &s, sizeof s) != ZKR_OK)
    tap_bail("zkr_mutex_stats");
  return s;
}

/* The bucket a duration falls in, by the documented bounds. */
static int bucket_for(uint64_t us) {
  int i = 0;
  while (i < ZKR_STATS_BUCKETS - 1 && us > ZKR_STATS_BUCKET_LE_US(i))
    i++;
  return i;
}
static uint64_t bucket_sum(const zkr_histogram *h) {
  uint64_t n = 0;
  for (int i = 0; i < ZKR_STATS_BUCKETS; i++)
    n += h->bucket[i];
  return n;
}

struct async {
  pthread_mutex_t mu;
  int done, rc;
};
static void async_fn(zkr_mutex *lock, int rc, void *ud) {
  struct async *a = ud;
  (void)lock;
  pthread_mutex_lock(&a->mu);
  a->done = 1;
  a->rc = rc;
  pthread_mutex_unlock(&a->mu);
}
static int async_done(void *arg) {
  struct async *a = arg;
  pthread_mutex_lock(&a->mu);
  int d = a->done;
  pthread_mutex_unlock(&a->mu);
  return d;
}

int main(void) {
  tap_init(120);
  hosts = zkt_start(1);
  zkt_root("t-stats");
  admin = zkt_connect(hosts, 10000);

  /* ---- bad input ---- */
  zkr_session *bad = NULL;
  is(zkr_session_new(
         &bad, hosts,
         &(zkr_session_options){.alert_wait_ms = -1, .alert_fn = alert}),
     ZKR_EINVAL, "alerts: a wait threshold below 0: ZKR_EINVAL");
  is(zkr_session_new(
         &bad, hosts,
         &(zkr_session_options){.alert_hold_ms = -5, .alert_fn = alert}),
     ZKR_EINVAL, "alerts: a hold threshold below 0: ZKR_EINVAL");
  is(zkr_session_new(&bad, hosts, &(zkr_session_options){.alert_wait_ms = 100}),
     ZKR_EINVAL, "alerts: a threshold without a function: ZKR_EINVAL");
  ok(bad == NULL, "... no session made");
  is(zkr_session_new(&bad, hosts,
                     &(zkr_session_options){.alert_user_data = &bad,
                                            .lock_hook_user_data = &bad}),
     ZKR_OK, "alerts: both off, no function: ZKR_OK");
  zkr_session_close(bad);
  zkr_stats junk;
  is(zkr_session_stats(admin, &junk, 8), ZKR_EINVAL,
     "stats: a size too small: ZKR_EINVAL");
  is(zkr_session_stats(NULL, &junk, sizeof junk), ZKR_EINVAL,
     "stats: a NULL session: ZKR_EINVAL");
  is(zkr_session_stats(admin, NULL, sizeof junk), ZKR_EINVAL,
     "stats: NULL out: ZKR_EINVAL");
  is(zkr_mutex_stats(NULL, &junk, sizeof junk), ZKR_EINVAL,
     "stats: a NULL mutex: ZKR_EINVAL");
  is(zkr_semaphore_stats(NULL, &junk, sizeof junk), ZKR_EINVAL,
     "stats: a NULL semaphore: ZKR_EINVAL");
  is(zkr_election_stats(NULL, &junk, sizeof junk), ZKR_EINVAL,
     "stats: a NULL election: ZKR_EINVAL");

  /* the session under test: hook, alerts at 1.5 s wait and 1.5 s hold */
  zkr_session *a = NULL;
  is(zkr_session_new(&a, hosts,
                     &(zkr_session_options){.session_timeout_ms = 10000,
                                            .lock_hook = hook,
                                            .lock_hook_user_data = &hook_bad,
                                            .alert_wait_ms = 1500,
                                            .alert_hold_ms = 1500,
                                            .alert_fn = alert}),
     ZKR_OK, "session a: lock hook, alerts (wait 1.5 s, hold 1.5 s)");
  zkr_session *b = zkt_connect(hosts, 10000);

  const char *path = zkt_path("m");
  zkr_mutex *ma = mutex(a, path, "waiter-a", 1);
  zkr_mutex *mb = mutex(b, path, "holder-b", 0);
  zkr_stats s0 = st(ma);
  ok(s0.size == sizeof s0 && s0.acquired == 0 && s0.wait.count == 0 &&
         s0.state == ZKR_LOCK_UNLOCKED && s0.held == 0 && s0.waiting == 0,
     "a new mutex: all zero, unlocked, size filled");

  /* an acquisition with no one before it */
  is(zkr_mutex_acquire(ma, 10000), ZKR_OK, "a acquires a free lock");
  zkr_stats s1 = st(ma);
  ok(s1.acquired == 1 && s1.handoffs == 0 && s1.held == 1 &&
         s1.state == ZKR_LOCK_HELD && s1.wait.count == 1,
     "free lock: 1 acquisition, no hand-off, held");
  ok(s1.wait.bucket[bucket_for(s1.wait.max_us)] == 1 &&
         bucket_sum(&s1.wait) == 1 && bucket_sum(&s1.hold) == 0,
     "its one wait is in its bucket, and nothing else in any bucket");
  ok(wait_cnt(&nev[ZKR_LOCK_EV_ACQUIRED], 1, 5000),
     "the hook is told ACQUIRED");
  pthread_mutex_lock(&mu);
  ok(strcmp(last_recipe, "lock") == 0 && last_wait >= 0,
     "ACQUIRED: recipe \"lock\", a wait (%s)", last_recipe);
  char held_node[600];
  zkr_hold_node(zkr_mutex_hold(ma), held_node, sizeof held_node);
  const char *held_name = strrchr(held_node, '/');
  ok(strcmp(last_path, path) == 0 && held_name &&
         strcmp(last_node, held_name + 1) == 0,
     "ACQUIRED: the lock's path and the name of the node held (%s, %s)",
     last_path, last_node);
  pthread_mutex_unlock(&mu);
  usleep(200000);
  is(zkr_mutex_release(ma), ZKR_OK, "a releases");
  zkr_stats s2 = st(ma);
  ok(s2.released == 1 && s2.hold.count == 1 && s2.hold.max_us >= 190000 &&
         s2.held == 0,
     "release: 1 release, a hold of at least 200 ms (%llu us)",
     (unsigned long long)s2.hold.max_us);
  is(s2.hold.bucket[bucket_for(s2.hold.max_us)], 1,
     "the hold is counted in the bucket its length falls in");
  ok(wait_cnt(&nev[ZKR_LOCK_EV_RELEASED], 1, 5000),
     "the hook is told RELEASED");

  /* a time-out */
  is(zkr_mutex_acquire(mb, 10000), ZKR_OK, "b takes the lock");
  is(zkr_mutex_acquire(ma, 300), ZKR_ETIMEDOUT, "a times out after 300 ms");
  zkr_stats s3 = st(ma);
  ok(s3.failed[ZKR_FAIL_TIMEDOUT] == 1 && s3.acquired == 1 &&
         s3.wait.count == 2 && s3.waiting == 0,
     "time-out: counted once under ZKR_FAIL_TIMEDOUT");
  ok(s3.wait.max_us >= 290000, "its wait is at least the 300 ms (%llu us)",
     (unsigned long long)s3.wait.max_us);
  is(s3.wait.bucket[bucket_for(s3.wait.max_us)], 1,
     "the 300 ms wait is in its bucket");
  is(bucket_sum(&s3.wait), s3.wait.count, "wait buckets add up to the count");
  ok(wait_cnt(&nev_cause[ZKR_FAIL_TIMEDOUT], 1, 5000),
     "the hook is told FAILED, cause ZKR_FAIL_TIMEDOUT");

  /* try-once refused */
  is(zkr_mutex_acquire(ma, 0), ZKR_EWOULDBLOCK, "a try-once is refused");
  ok(st(ma).failed[ZKR_FAIL_REFUSED] == 1, "counted under ZKR_FAIL_REFUSED");

  /* a cancel */
  struct async ac = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
  is(zkr_mutex_acquire_async(ma, -1, async_fn, &ac), ZKR_OK, "a waits (async)");
  ok(zkt_children_become(admin, path, 2, 10000), "a queued behind b");
  ok(st(ma).waiting == 1 && st(ma).state == ZKR_LOCK_ACQUIRING,
     "waiting: the gauge says 1");
  is(zkr_mutex_cancel(ma), ZKR_OK, "a cancels");
  zkt_wait_for(async_done, &ac, 10000);
  is(ac.rc, ZKR_ECANCELED, "its callback says ZKR_ECANCELED");
  zkr_stats s4 = st(ma);
  ok(s4.failed[ZKR_FAIL_CANCELED] == 1 && s4.failed[ZKR_FAIL_TIMEDOUT] == 1 &&
         s4.failed[ZKR_FAIL_REFUSED] == 1 && s4.waiting == 0,
     "cancel: counted once under ZKR_FAIL_CANCELED, the others unchanged");

  /* a wait of known length, handed on by b; the wait alert with b's
   * identity, once */
  struct async aw = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
  is(zkr_mutex_acquire_async(ma, -1, async_fn, &aw), ZKR_OK, "a waits again");
  ok(wait_cnt(&nalert[ZKR_ALERT_WAIT], 1, 10000),
     "past 1.5 s the wait alert fires");
  pthread_mutex_lock(&mu);
  char host[256] = "";
  gethostname(host, sizeof host);
  is(strcmp(alert_holder_id, "holder-b"), 0,
     "the alert names the holder's id (%s)", alert_holder_id);
  is(strcmp(alert_holder_host, host), 0, "and its host (%s)",
     alert_holder_host);
  is(alert_holder_pid, (int64_t)getpid(), "and its pid");
  ok(strstr(alert_holder_node, "-lock-") != NULL, "and its node (%s)",
     alert_holder_node);
  is(strcmp(alert_path, path), 0, "and the lock's path");
  ok(alert_elapsed[ZKR_ALERT_WAIT] >= 1500,
     "and how long a had waited (%lld ms)",
     (long long)alert_elapsed[ZKR_ALERT_WAIT]);
  pthread_mutex_unlock(&mu);
  usleep(500000);
  is(zkr_mutex_release(mb), ZKR_OK, "b releases (after more than 2 s)");
  zkt_wait_for(async_done, &aw, 10000);
  is(aw.rc, ZKR_OK, "a acquires");
  zkr_stats s5 = st(ma);
  ok(s5.acquired == 2 && s5.handoffs == 1,
     "a hand-off: 2 acquisitions, 1 of them handed on");
  ok(s5.wait.max_us >= 1900000, "the longest wait is at least 2 s (%llu us)",
     (unsigned long long)s5.wait.max_us);
  ok(s5.wait.bucket[bucket_for(s5.wait.max_us)] >= 1,
     "and is in its bucket (%d)", bucket_for(s5.wait.max_us));
  is(get(&nalert[ZKR_ALERT_WAIT]), 1, "one wait alert for that wait");

  /* the hold alert, once */
  ok(wait_cnt(&nalert[ZKR_ALERT_HOLD], 1, 10000),
     "held past 1.5 s, the hold alert fires");
  usleep(1000000);
  is(get(&nalert[ZKR_ALERT_HOLD]), 1, "once (not again a second later)");
  pthread_mutex_lock(&mu);
  ok(alert_elapsed[ZKR_ALERT_HOLD] >= 1500 && strcmp(alert_recipe, "lock") == 0,
     "it says how long and what (%lld ms, %s)",
     (long long)alert_elapsed[ZKR_ALERT_HOLD], alert_recipe);
  pthread_mutex_unlock(&mu);

  /* a loss: b deletes a's node (a watches its own node) */
  char node[600];
  zkr_hold_node(zkr_mutex_hold(ma), node, sizeof node);
  is(zkr__zk_delete(admin, node, -1, zkr__deadline(5000)), ZKR_OK,
     "another client deletes a's node");
  ok(wait_cnt(&nev[ZKR_LOCK_EV_LOST], 1, 10000), "the hook is told LOST");
  zkr_stats s6 = st(ma);
  ok(s6.failed[ZKR_FAIL_LOST] == 1 && s6.hold.count == 2 && s6.held == 0 &&
         s6.released == 1,
     "loss: counted once under ZKR_FAIL_LOST, its hold counted");
  is(zkr_mutex_release(ma), ZKR_ELOCKLOST, "release says ZKR_ELOCKLOST");
  zkr_stats s7 = st(ma);
  ok(s7.failed[ZKR_FAIL_LOST] == 1 && s7.released == 1 && s7.hold.count == 2,
     "and counts nothing more");
  is(nev_cause[ZKR_FAIL_LOST], 1, "LOST's cause is ZKR_FAIL_LOST");

  /* the hook saw what the figures say */
  zkt_wait_for(cnt_is, &(struct cnt_arg){&nev[ZKR_LOCK_EV_FAILED], 3}, 5000);
  pthread_mutex_lock(&mu);
  ok(nev[ZKR_LOCK_EV_ACQUIRED] == (int)s7.acquired &&
         nev[ZKR_LOCK_EV_RELEASED] == (int)s7.released &&
         nev[ZKR_LOCK_EV_FAILED] == 3 && nev[ZKR_LOCK_EV_LOST] == 1 &&
         hook_bad == 0,
     "the hook's events match the figures (%d acquired, %d released, %d "
     "failed, %d lost)",
     nev[0], nev[2], nev[1], nev[3]);
  pthread_mutex_unlock(&mu);

  /* the session adds up its objects (only ma so far) */
  zkr_stats ss;
  is(zkr_session_stats(a, &ss, sizeof ss), ZKR_OK, "the session's figures");
  ok(ss.acquired == s7.acquired && ss.released == s7.released &&
         ss.failed[ZKR_FAIL_TIMEDOUT] == 1 && ss.failed[ZKR_FAIL_LOST] == 1 &&
         ss.wait.count == s7.wait.count && ss.hold.count == s7.hold.count &&
         ss.wait.max_us == s7.wait.max_us && ss.handoffs == 1,
     "equal its one mutex's");
  ok(ss.held == 0 && ss.waiting == 0 && ss.state == ZKR_STATE_CONNECTED &&
         ss.losses == 0,
     "nothing held or waiting, connected, no session lost");
  zkr_mutex_free(ma);
  zkr_mutex_free(mb);

  /* a semaphore: one acquisition of two leases */
  {
    zkr_semaphore *sem = NULL;
    const char *sp = zkt_path("sem");
    is(zkr_semaphore_new(&sem, a, sp, 3, NULL), ZKR_OK, "a semaphore of 3");
    zkr_lease *l[2] = {NULL, NULL};
    is(zkr_semaphore_acquire(sem, 2, 10000, l), ZKR_OK, "two leases");
    zkr_stats t;
    is(zkr_semaphore_stats(sem, &t, sizeof t), ZKR_OK, "its figures");
    ok(t.acquired == 1 && t.held == 2 && t.state == ZKR_LOCK_HELD &&
           t.wait.count == 1,
       "one acquisition, two holds now");
    zkr_lease_release(l[0]);
    zkr_lease_release(l[1]);
    zkr_semaphore_stats(sem, &t, sizeof t);
    ok(t.released == 2 && t.hold.count == 2 && t.held == 0,
       "both released: two holds counted");
    ok(wait_cnt(&nev[ZKR_LOCK_EV_RELEASED], (int)s7.released + 2, 5000),
       "the hook is told of both");
    pthread_mutex_lock(&mu);
    is(strcmp(last_recipe, "lease"), 0, "as \"lease\"");
    pthread_mutex_unlock(&mu);
    zkr_semaphore_free(sem);
  }

  /* an election: a term, then a resignation */
  {
    zkr_election *e = NULL;
    const char *ep = zkt_path("elect");
    is(zkr_election_new(&e, a, ep, NULL), ZKR_OK, "a participant");
    zkr_election_start(e);
    is(zkr_election_await(e, 10000), ZKR_OK, "it leads");
    zkr_stats t;
    is(zkr_election_stats(e, &t, sizeof t), ZKR_OK, "its figures");
    ok(t.acquired == 1 && t.held == 1, "one term, held");
    is(zkr_election_resign(e), ZKR_OK, "it resigns (and queues again)");
    is(zkr_election_await(e, 10000), ZKR_OK, "alone, it leads again");
    zkr_election_stats(e, &t, sizeof t);
    ok(t.acquired == 2 && t.released == 1 && t.hold.count == 1,
       "two terms, one ended by the resignation");
    zkr_election_free(e);
  }

  zkr_session_stats(a, &ss, sizeof ss);
  ok(ss.held == 0 && ss.waiting == 0,
     "every object freed: nothing held or waiting in the session");
  ok(ss.acquired == s7.acquired + 1 + 2, "the session counted every recipe");

  /* an old caller's smaller struct: only that much is written */
  {
    unsigned char buf[sizeof(zkr_stats) + 16];
    memset(buf, 0x5a, sizeof buf);
    is(zkr_session_stats(a, (zkr_stats *)buf, sizeof(zkr_stats)), ZKR_OK,
       "stats into a buffer of sizeof(zkr_stats)");
    int untouched = 1;
    for (size_t i = sizeof(zkr_stats); i < sizeof buf; i++)
      untouched &= buf[i] == 0x5a;
    ok(untouched, "nothing written past the size given");
  }

  /* the session's own: a connection cut (test/zkproxy) is one
   * suspension and one reconnection to the same session, no loss */
  {
    int port = zkt_proxy_start(hosts);
    char via[64];
    snprintf(via, sizeof via, "127.0.0.1:%d", port);
    zkr_session *c = zkt_connect(via, 10000);
    zkr_stats before, after;
    zkr_session_stats(c, &before, sizeof before);
    ok(before.suspensions == 0 && before.reconnects == 0 && before.losses == 0,
       "a new session: no suspension, reconnection or loss");
    int64_t sid = zkr_session_id(c);
    zkt_proxy_cmd("cut-all");
    ok(zkt_proxy_wait("done cut-all", 1, 5000), "its connection cut");
    int64_t end = zkt_now_ms() + 20000;
    do {
      usleep(50000);
      zkr_session_stats(c, &after, sizeof after);
    } while ((after.reconnects == 0 || after.state != ZKR_STATE_CONNECTED) &&
             zkt_now_ms() < end);
    is(zkr_session_wait_connected(c, 20000), ZKR_OK, "c is connected again");
    zkr_session_stats(c, &after, sizeof after);
    ok(zkr_session_id(c) == sid, "in the same ZooKeeper session");
    ok(after.suspensions == 1 && after.reconnects == 1 && after.losses == 0,
       "one suspension, one reconnection, no loss (%llu, %llu, %llu)",
       (unsigned long long)after.suspensions,
       (unsigned long long)after.reconnects, (unsigned long long)after.losses);
    zkr_session_close(c);
    is(zkt_proxy_stop(), 0, "the proxy exits cleanly");
  }

  /* the session's own: a forced expiry is one loss, and the session
   * renews itself */
  {
    zkr_stats before, after;
    zkr_session_stats(a, &before, sizeof before);
    int64_t sid = zkr_session_id(a);
    zkt_expire(hosts, a); /* (its result: whether it saw the id change) */
    int64_t end = zkt_now_ms() + 30000;
    do {
      usleep(50000);
      zkr_session_stats(a, &after, sizeof after);
    } while (after.losses == before.losses && zkt_now_ms() < end);
    is(zkr_session_wait_connected(a, 20000), ZKR_OK, "a is connected again");
    ok(zkr_session_id(a) != sid, "in a new ZooKeeper session");
    zkr_session_stats(a, &after, sizeof after);
    is(after.losses, before.losses + 1, "the loss is counted once (%llu)",
       (unsigned long long)after.losses);
    ok(after.state == ZKR_STATE_CONNECTED, "and the state is CONNECTED again");
  }

  zkr_session_close(b);
  zkr_session_close(a);
  zkr_session_close(admin);
  return tap_done();
}
