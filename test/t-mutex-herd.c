/* No herd: with 50 waiters queued, each waiting session holds exactly one
 * watch, on its predecessor (the server's wchc and mntr's
 * zk_watch_count), and each release wakes exactly one waiter. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

#define W 50

static const char *hosts;
static zkr_session *ses[W + 1];
static zkr_mutex *mx[W + 1];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int granted[W + 1];

static void on_acquired(zkr_mutex *lock, int rc, void *ud) {
  (void)lock;
  pthread_mutex_lock(&mu);
  granted[(intptr_t)ud] = rc == ZKR_OK ? 1 : -1;
  pthread_mutex_unlock(&mu);
}

static int ngranted(void) {
  pthread_mutex_lock(&mu);
  int n = 0;
  for (int i = 0; i <= W; i++)
    n += granted[i] == 1;
  pthread_mutex_unlock(&mu);
  return n;
}

struct want {
  int n;
};
static int granted_at_least(void *arg) {
  return ngranted() >= ((struct want *)arg)->n;
}

static int children(zkr_session *s, const char *path, zkr__result *r) {
  memset(r, 0, sizeof *r);
  return zkr__zk_children(s, path, zkr__deadline(5000), r) == ZKR_OK
             ? r->names.count
             : -1;
}

static int by_seq(const void *a, const void *b) {
  int32_t x = 0, y = 0;
  zkr__seq_parse(*(char *const *)a, &x);
  zkr__seq_parse(*(char *const *)b, &y);
  return zkr__seq_cmp(x, y);
}

int main(void) {
  tap_init(240);
  hosts = zkt_start(1);
  char path[256];
  snprintf(path, sizeof path, "%s/lock", zkt_root("t-mutex-herd"));
  for (int i = 0; i <= W; i++) {
    zkr_session_options o = {0};
    o.session_timeout_ms = 20000;
    if (zkr_session_new(&ses[i], hosts, &o) != ZKR_OK)
      tap_bail("session %d", i);
    zkr_mutex_new(&mx[i], ses[i], path, NULL);
  }
  ok(1, "%d sessions", W + 1);
  is(zkr_mutex_acquire(mx[0], -1), ZKR_OK, "session 0 holds");
  granted[0] = 1;
  int64_t base = zkt_mntr(1, "zk_watch_count");
  /* Queue the waiters one after the other, so their order is known. */
  zkr__result r;
  int queued_ok = 1;
  for (int i = 1; i <= W; i++) {
    zkr_mutex_acquire_async(mx[i], -1, on_acquired, (void *)(intptr_t)i);
    int64_t end = zkt_now_ms() + 5000;
    while (children(ses[0], path, &r) != i + 1 && zkt_now_ms() < end) {
      zkr__result_clear(&r);
      usleep(2000);
    }
    if (r.names.count != i + 1)
      queued_ok = 0;
    zkr__result_clear(&r);
  }
  ok(queued_ok, "%d waiters queued in order", W);
  /* every waiter's watch is set */
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_mntr(1, "zk_watch_count") < base + W && zkt_now_ms() < end)
    usleep(10000);
  is(zkt_mntr(1, "zk_watch_count") - base, W,
     "the server holds exactly %d watches (one per waiter)", W);

  /* wchc: each waiting session watches exactly its predecessor */
  children(ses[0], path, &r);
  qsort(r.names.data, (size_t)r.names.count, sizeof(char *), by_seq);
  int one_each = 1, on_pred = 1, holder_none = 1;
  char first[600];
  if (zkt_watches_of(1, zkr_session_id(ses[0]), first, sizeof first) != 0)
    holder_none = 0;
  for (int i = 1; i <= W; i++) {
    int n = zkt_watches_of(1, zkr_session_id(ses[i]), first, sizeof first);
    if (n != 1)
      one_each = 0;
    char want[600];
    snprintf(want, sizeof want, "%s/%s", path, r.names.data[i - 1]);
    if (n == 1 && strcmp(first, want) != 0) {
      on_pred = 0;
      tap_diag("waiter %d watches %s, its predecessor is %s", i, first, want);
    }
  }
  zkr__result_clear(&r);
  ok(holder_none, "the holder's session holds no watch");
  ok(one_each, "every waiting session holds exactly one watch (wchc)");
  ok(on_pred, "each on the node just before its own");

  /* Each release wakes exactly one session: count node events. */
  int exact = 1, order = 1;
  for (int i = 0; i < W; i++) {
    uint64_t before = 0;
    for (int k = 1; k <= W; k++)
      before += zkr__session_node_events(ses[k]);
    is(zkr_mutex_release(mx[i]), ZKR_OK, "holder %d releases", i);
    struct want w = {i + 2};
    if (!zkt_wait_for(granted_at_least, &w, 10000))
      order = 0;
    usleep(20000); /* would any other session be woken too? */
    uint64_t after = 0;
    for (int k = 1; k <= W; k++)
      after += zkr__session_node_events(ses[k]);
    if (after - before != 1) {
      exact = 0;
      tap_diag("release %d woke %llu sessions", i,
               (unsigned long long)(after - before));
    }
    int n = ngranted();
    pthread_mutex_lock(&mu);
    if (granted[i + 1] != 1 || n != i + 2)
      order = 0;
    pthread_mutex_unlock(&mu);
  }
  ok(exact, "each of %d releases woke exactly one session", W);
  ok(order, "and granted the lock to the next in line, FIFO");
  is(zkt_mntr(1, "zk_watch_count") - base, 0, "no watch left");
  zkr_mutex_release(mx[W]);
  for (int i = 0; i <= W; i++) {
    zkr_mutex_free(mx[i]);
    zkr_session_close(ses[i]);
  }
  return tap_done();
}
