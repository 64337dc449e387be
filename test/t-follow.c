/* The node follower (lib/follow.c) against a real server: its reads are
 * numbered in the order they start and delivered in that order; a change
 * of the node is read again by itself; zkr__follow_refresh() names the
 * read that answers it, and that read sees what was written before the
 * call, whether a read was under way or not (the semaphore's shared count
 * relies on it: a read that started before an acquisition asked must not
 * answer it). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "follow.h"
#include "zkt.h"

#define MAXREADS 256

struct got {
  pthread_mutex_t mu;
  int n;
  uint64_t seq[MAXREADS];
  char data[MAXREADS][16];
  int in_order; /* every seq above the one before */
};

static void on_read(zkr__follow *f, const zkr__snapshot *v, void *ud) {
  struct got *g = ud;
  (void)f;
  pthread_mutex_lock(&g->mu);
  if (g->n < MAXREADS) {
    if (g->n > 0 && v->seq <= g->seq[g->n - 1])
      g->in_order = 0;
    g->seq[g->n] = v->seq;
    snprintf(g->data[g->n], sizeof g->data[g->n], "%s",
             v->rc == ZKR_OK && v->data ? v->data : "-");
    g->n++;
  }
  pthread_mutex_unlock(&g->mu);
}

/* What zkt_wait_for() waits for: a read numbered @want or later. */
struct want {
  struct got *g;
  uint64_t seq;
  char data[16]; /* the first such read's data, once found */
};

static int have(void *arg) {
  struct want *w = arg;
  int found = 0;
  pthread_mutex_lock(&w->g->mu);
  for (int i = 0; i < w->g->n && !found; i++)
    if (w->g->seq[i] >= w->seq) {
      snprintf(w->data, sizeof w->data, "%s", w->g->data[i]);
      found = 1;
    }
  pthread_mutex_unlock(&w->g->mu);
  return found;
}

/* The data of the first read numbered @seq or later ("" if none came). */
static const char *read_from(struct got *g, uint64_t seq, char *out) {
  struct want w = {.g = g, .seq = seq};
  out[0] = '\0';
  if (zkt_wait_for(have, &w, 10000))
    memcpy(out, w.data, sizeof w.data);
  return out;
}

static int set(zkr_session *s, const char *path, const char *v) {
  return zkr__zk_set(s, path, v, (int)strlen(v), -1, zkr__deadline(5000));
}

int main(void) {
  tap_init(12);
  const char *hosts = zkt_start(1);
  const char *root = zkt_root("t-follow");
  zkr_session *s = zkt_connect(hosts, 6000);
  const char *path = zkt_path("n");
  zkt_create_parents(s, root, zkr__deadline(5000));
  zkr__result r;
  memset(&r, 0, sizeof r);
  is(zkr__zk_create(s, path, "v1", 2, 0, zkr__deadline(5000), &r), ZKR_OK,
     "the node is created with v1");
  zkr__result_clear(&r);

  struct got g = {.mu = PTHREAD_MUTEX_INITIALIZER, .in_order = 1};
  zkr__follow *f = NULL;
  is(zkr__follow_new(&f, s, path, ZKR__FOLLOW_DATA, NULL, on_read, &g), ZKR_OK,
     "a follower of its data");
  char d[16];
  is(strcmp(read_from(&g, 1, d), "v1"), 0, "its first read, number 1, is v1");

  is(set(s, path, "v2"), ZKR_OK, "the data becomes v2");
  struct want w2 = {.g = &g, .seq = 2};
  ok(zkt_wait_for(have, &w2, 10000) && strcmp(w2.data, "v2") == 0,
     "the change is read by itself, as read 2 (%s)", w2.data);

  uint64_t r1 = zkr__follow_refresh(f);
  ok(r1 >= 3, "a refresh when idle starts read %llu", (unsigned long long)r1);
  is(strcmp(read_from(&g, r1, d), "v2"), 0, "which reads v2");

  /* a refresh, a write, and a refresh right after it: the second's read
   * is the next one if the first's is still under way, and sees v3 */
  uint64_t r2 = zkr__follow_refresh(f);
  is(set(s, path, "v3"), ZKR_OK, "the data becomes v3");
  uint64_t r3 = zkr__follow_refresh(f);
  ok(r3 > r1 && r3 >= r2, "the refreshes name reads %llu and %llu, in order",
     (unsigned long long)r2, (unsigned long long)r3);
  is(strcmp(read_from(&g, r3, d), "v3"), 0,
     "the read that answers the second refresh sees v3, written before it");

  zkr__follow_free(f);
  pthread_mutex_lock(&g.mu);
  ok(g.in_order && g.n >= 4, "%d reads delivered, numbered in order", g.n);
  pthread_mutex_unlock(&g.mu);
  is(zkr__zk_delete(s, path, -1, zkr__deadline(5000)), ZKR_OK,
     "the node is deleted");
  zkr_session_close(s);
  return tap_done();
}
