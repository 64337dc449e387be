/* probe-cost - what a waiter's wake-up check costs, by the number k of
 * predecessors it still has to rule out, with plain libzookeeper_mt:
 *
 *   relist  getChildren of a lock path with k+1 children (what the raw
 *           floor, Curator and kazoo do on every wake-up)
 *   probe   zkr's probe when all k are gone: one multi of k creates of
 *           missing nodes and a check that fails, so nothing is applied
 *           (a write transaction that the server logs, and in an ensemble
 *           a quorum round)
 *   exists  one exists on one node (zkr's wake-up with one predecessor
 *           left)
 *   pexists k exists requests, one per predecessor, sent back to back
 *           without waiting and then all awaited: a read-only alternative
 *           to the probe (k requests, one round trip)
 *
 *   probe-cost --servers HOSTS --path PATH [--iters N] [--ks 1,2,4,...]
 *
 * Prints "probecost k=K relist_us=M probe_us=M exists_us=M pexists_us=M"
 * per k, M the
 * median of N (default 300) sequential calls in microseconds. Node names
 * have the length of Curator's and zkr's ("_c_" + a UUID + "-lock-" + 10
 * digits). Creates PATH/k<K>/ and deletes it afterwards.
 */
#define _GNU_SOURCE
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double median_us(int64_t *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp64);
  return (double)t[n / 2] / 1000.0;
}

struct pending {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int left;
};

static void pexists_cb(int rc, const struct Stat *st, const void *data) {
  struct pending *p = (struct pending *)data;
  (void)rc;
  (void)st;
  pthread_mutex_lock(&p->mu);
  if (--p->left == 0)
    pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static void die(const char *what, int rc) {
  fprintf(stderr, "probe-cost: %s: %s\n", what, zerror(rc));
  exit(1);
}

static void name_of(char *buf, size_t len, const char *dir, int i) {
  snprintf(buf, len, "%s/_c_0c1d2e3f-4a5b-4c6d-8e7f-%012d-lock-%010d", dir, i,
           i);
}

int main(int argc, char **argv) {
  const char *servers = NULL, *path = NULL, *ks = "1,2,4,8,16,32,64,128,256";
  int iters = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--servers"))
      servers = argv[i + 1];
    else if (!strcmp(argv[i], "--path"))
      path = argv[i + 1];
    else if (!strcmp(argv[i], "--iters")) {
      char *end;
      long v = strtol(argv[i + 1], &end, 10);
      iters = *argv[i + 1] && !*end && v > 0 && v <= 1000000000 ? (int)v : 0;
    } else if (!strcmp(argv[i], "--ks"))
      ks = argv[i + 1];
  }
  if (!servers || !path || iters < 1) {
    fprintf(stderr, "usage: probe-cost --servers HOSTS --path PATH "
                    "[--iters N] [--ks 1,2,4,...]\n");
    return 64;
  }
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zhandle_t *zh = zookeeper_init(servers, NULL, 10000, NULL, NULL, 0);
  for (int i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE; i++) {
    if (i > 3000)
      die("connect", ZOPERATIONTIMEOUT);
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  if (!zh)
    die("zookeeper_init", ZSYSTEMERROR);
  int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  if (rc != ZOK && rc != ZNODEEXISTS)
    die(path, rc);
  int64_t *t = calloc((size_t)iters, sizeof *t);
  if (!t)
    die("calloc", ZSYSTEMERROR);
  for (const char *p = ks; *p;) {
    char *e;
    int k = (int)strtol(p, &e, 10);
    p = *e == ',' ? e + 1 : e;
    if (k < 1 || k > 1000)
      continue;
    char dir[1024], node[1200], mine[1200];
    snprintf(dir, sizeof dir, "%s/k%d", path, k);
    if ((rc = zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                         0)) != ZOK)
      die(dir, rc);
    for (int i = 0; i <= k; i++) {
      name_of(node, sizeof node, dir, i);
      if ((rc = zoo_create(zh, node, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                           0)) != ZOK)
        die(node, rc);
    }
    name_of(mine, sizeof mine, dir, k);
    /* relist */
    for (int i = 0; i < iters; i++) {
      struct String_vector v = {0, NULL};
      int64_t t0 = now_ns();
      if ((rc = zoo_get_children(zh, dir, 0, &v)) != ZOK)
        die("get_children", rc);
      t[i] = now_ns() - t0;
      deallocate_String_vector(&v);
    }
    double relist = median_us(t, iters);
    /* probe: k creates of nodes that are gone, then a check that fails */
    zoo_op_t *ops = calloc((size_t)k + 1, sizeof *ops);
    zoo_op_result_t *res = calloc((size_t)k + 1, sizeof *res);
    char **paths = calloc((size_t)k + 1, sizeof *paths);
    if (!ops || !res || !paths)
      die("calloc", ZSYSTEMERROR);
    for (int i = 0; i < k; i++) {
      paths[i] = malloc(1200);
      if (!paths[i])
        die("malloc", ZSYSTEMERROR);
      name_of(paths[i], 1200, dir, 100000 + i);
      zoo_create_op_init(&ops[i], paths[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                         NULL, 0);
    }
    paths[k] = malloc(1300);
    if (!paths[k])
      die("malloc", ZSYSTEMERROR);
    snprintf(paths[k], 1300, "%s/p", mine);
    zoo_check_op_init(&ops[k], paths[k], -1);
    for (int i = 0; i < iters; i++) {
      int64_t t0 = now_ns();
      rc = zoo_multi(zh, k + 1, ops, res);
      t[i] = now_ns() - t0;
      if (rc != ZNONODE)
        die("probe multi did not fail as expected", rc);
    }
    double probe = median_us(t, iters);
    /* exists */
    for (int i = 0; i < iters; i++) {
      struct Stat st;
      int64_t t0 = now_ns();
      if ((rc = zoo_exists(zh, mine, 0, &st)) != ZOK)
        die("exists", rc);
      t[i] = now_ns() - t0;
    }
    double ex = median_us(t, iters);
    /* pexists: k exists of missing nodes, pipelined */
    struct pending pe = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                         0};
    for (int i = 0; i < iters; i++) {
      int64_t t0 = now_ns();
      pthread_mutex_lock(&pe.mu);
      pe.left = k;
      pthread_mutex_unlock(&pe.mu);
      for (int j = 0; j < k; j++)
        if ((rc = zoo_aexists(zh, paths[j], 0, pexists_cb, &pe)) != ZOK)
          die("aexists", rc);
      pthread_mutex_lock(&pe.mu);
      while (pe.left > 0)
        pthread_cond_wait(&pe.cv, &pe.mu);
      pthread_mutex_unlock(&pe.mu);
      t[i] = now_ns() - t0;
    }
    double pex = median_us(t, iters);
    printf("probecost k=%d relist_us=%.1f probe_us=%.1f exists_us=%.1f "
           "pexists_us=%.1f\n",
           k, relist, probe, ex, pex);
    fflush(stdout);
    for (int i = 0; i <= k; i++) {
      free(paths[i]);
      name_of(node, sizeof node, dir, i);
      zoo_delete(zh, node, -1);
    }
    zoo_delete(zh, dir, -1);
    free(paths);
    free(ops);
    free(res);
  }
  free(t);
  zookeeper_close(zh);
  return 0;
}
