/* No herd in the election: 100 latch participants, each on a session of
 * its own, queue one after the other; the leader of the moment resigns
 * (and queues again at the back) or is freed, 60 times in turn. Each
 * change of leader wakes exactly one of the waiting sessions, the next in
 * line (node watch events counted per session; the old leader's own
 * session is not counted: it watches its own node, which it deletes), the
 * server holds one watch per participant throughout (mntr's
 * zk_watch_count), and an observer on a session of its own is told every
 * change of leader once, in order. Modelled on t-mutex-herd.c. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zkr-private.h"
#include "zkt.h"

#define P 100       /* participants */
#define CHANGES 60  /* changes of leader: even ones resign, odd ones free */
#define MAXSEEN 256 /* observer calls recorded */

static const char *hosts;
static zkr_session *ses[P];
static zkr_election *el[P];
static int q[P * 2], qn; /* the queue as the test expects it: indexes */

/* the observer's record: the leader's node name per call ("-": none) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *seen[MAXSEEN];
static int nseen;

static void observed(zkr_election_observer *o, const zkr_participant *l,
                     void *ud) {
  (void)o;
  (void)ud;
  pthread_mutex_lock(&mu);
  if (nseen < MAXSEEN)
    seen[nseen] = strdup(l ? l->node : "-");
  nseen++;
  pthread_mutex_unlock(&mu);
}

static int seen_count(void) {
  pthread_mutex_lock(&mu);
  int n = nseen;
  pthread_mutex_unlock(&mu);
  return n;
}

static int seen_at_least(void *arg) {
  return seen_count() >= *(int *)arg;
}

static int leads(void *arg) {
  return zkr_election_is_leader(el[*(int *)arg]);
}

static uint64_t events_of(int i) {
  return zkr__session_node_events(ses[i]);
}

static const char *base(const char *node) {
  const char *s = strrchr(node, '/');
  return s ? s + 1 : node;
}

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  char path[256];
  snprintf(path, sizeof path, "%s/leader", zkt_root("t-election-herd"));
  zkr_session *admin = zkt_connect(hosts, 20000);
  zkr_session *os = zkt_connect(hosts, 20000);
  for (int i = 0; i < P; i++) {
    ses[i] = zkt_connect(hosts, 20000);
    char id[16];
    snprintf(id, sizeof id, "p%d", i);
    zkr_election_options o = {0};
    o.id = id;
    if (zkr_election_new(&el[i], ses[i], path, &o) != ZKR_OK)
      tap_bail("zkr_election_new %d", i);
  }
  ok(1, "%d sessions, one participant each", P);
  int64_t base_watches = zkt_watch_count();

  /* join one after the other, so the order is known */
  int queued_ok = 1;
  for (int i = 0; i < P; i++) {
    if (zkr_election_start(el[i]) != ZKR_OK ||
        !zkt_children_become(admin, path, i + 1, 10000))
      queued_ok = 0;
    q[qn++] = i;
  }
  ok(queued_ok, "%d participants queued in order", P);
  is(zkr_election_await(el[0], 10000), ZKR_OK, "the first one leads");

  zkr_election_observer *obs = NULL;
  is(zkr_election_observe(os, path, observed, NULL, &obs), ZKR_OK,
     "an observer on a session of its own");
  int one = 1;
  ok(zkt_wait_for(seen_at_least, &one, 10000), "it is told the leader");

  /* one watch per participant (the leader on its own node, each waiter on
   * its predecessor) and the observer's children watch */
  ok(zkt_watch_count_becomes(base_watches + P + 1, 20000),
     "the server holds %d watches: one per participant, one of the "
     "observer (%lld)",
     P + 1, (long long)(zkt_watch_count() - base_watches));

  char *leaders[CHANGES + 1] = {0}; /* the leader's node at each step */
  char node[600];
  zkr_hold_node(zkr_election_hold(el[0]), node, sizeof node);
  leaders[0] = strdup(base(node));

  int exact = 1, order = 1, watches = 1, alive = P, frees = 0;
  uint64_t old_leader_events = 0;
  for (int c = 0; c < CHANGES; c++) {
    int cur = q[0], next = q[1];
    uint64_t before[P];
    for (int i = 0; i < P; i++)
      before[i] = el[i] ? events_of(i) : 0;
    if (c % 2 == 0) {
      if (zkr_election_resign(el[cur]) != ZKR_OK)
        order = 0;
      memmove(q, q + 1, (size_t)(qn - 1) * sizeof q[0]);
      q[qn - 1] = cur; /* at the back */
    } else {
      zkr_election_free(el[cur]);
      el[cur] = NULL;
      memmove(q, q + 1, (size_t)(qn - 1) * sizeof q[0]);
      qn--;
      alive--;
      frees++;
    }
    if (!zkt_wait_for(leads, &next, 10000)) {
      order = 0;
      tap_diag("change %d: participant %d does not lead", c, next);
      break;
    }
    zkr_hold_node(zkr_election_hold(el[next]), node, sizeof node);
    leaders[c + 1] = strdup(base(node));
    /* settled: the resigned one queued again with its one watch, the
     * freed one's watch gone (fired), and the observer has its watch
     * again */
    if (!zkt_children_become(admin, path, alive, 10000) ||
        !zkt_watch_count_becomes(base_watches + alive + 1, 10000)) {
      watches = 0;
      tap_diag("change %d: %d children, %lld watches (want %d)", c,
               zkt_children(admin, path),
               (long long)(zkt_watch_count() - base_watches), alive + 1);
    }
    int want = c + 2;
    zkt_wait_for(seen_at_least, &want, 10000);
    uint64_t woken = 0, next_woken = 0;
    for (int i = 0; i < P; i++) {
      if (i == cur || !el[i])
        continue;
      uint64_t d = events_of(i) - before[i];
      woken += d != 0;
      if (i == next)
        next_woken = d;
    }
    if (el[cur])
      old_leader_events += events_of(cur) - before[cur];
    if (woken != 1 || next_woken != 1) {
      exact = 0;
      tap_diag("change %d (%s): %llu waiting sessions woken, the next in "
               "line %llu times",
               c, c % 2 ? "free" : "resign", (unsigned long long)woken,
               (unsigned long long)next_woken);
    }
    for (int i = 0; i < P; i++)
      if (el[i] && i != next && zkr_election_is_leader(el[i])) {
        order = 0;
        tap_diag("change %d: %d leads beside %d", c, i, next);
      }
  }
  ok(order,
     "%d changes of leader (%d resignations, %d frees): each time "
     "the next in line leads, and only it",
     CHANGES, CHANGES - frees, frees);
  ok(exact, "each change woke exactly one waiting session: the next in line");
  ok(watches, "after each change the server holds one watch per "
              "participant (and the observer's)");
  tap_diag("the old leaders' own sessions saw %llu node events in %d "
           "changes (each watches its own node, which it deletes)",
           (unsigned long long)old_leader_events, CHANGES);

  int all = CHANGES + 1;
  ok(zkt_wait_for(seen_at_least, &all, 10000) && seen_count() == all,
     "the observer was told %d leaders (%d)", all, seen_count());
  int same = 1;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < all && i < nseen; i++)
    if (!leaders[i] || !seen[i] || strcmp(leaders[i], seen[i]) != 0) {
      same = 0;
      tap_diag("change %d: the observer saw %s, the leader was %s", i,
               seen[i] ? seen[i] : "?", leaders[i] ? leaders[i] : "?");
      break;
    }
  pthread_mutex_unlock(&mu);
  ok(same, "every change once, in order, the same leaders");

  zkr_election_observer_free(obs);
  for (int i = 0; i < P; i++) {
    zkr_election_free(el[i]);
    zkr_session_close(ses[i]);
  }
  ok(zkt_children_become(admin, path, 0, 20000), "nothing left");
  for (int i = 0; i <= CHANGES; i++)
    free(leaders[i]);
  for (int i = 0; i < nseen && i < MAXSEEN; i++)
    free(seen[i]);
  zkr_session_close(os);
  zkr_session_close(admin);
  return tap_done();
}
