/*
 * common.c - what every back end of the benchmark worker shares: the
 * clock, and counting a lock's children with a plain ZooKeeper handle
 * (zkr has no call that only counts them: zkr_mutex_participants() also
 * reads each node's data).
 */
#include "config.h"

#include <pthread.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "bench.h"

int64_t b_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int b_count_with(zhandle_t *zh, const char *path) {
  struct String_vector v = {0, NULL};
  int rc = zoo_get_children(zh, path, 0, &v);
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return -1;
  int n = v.count;
  deallocate_String_vector(&v);
  return n;
}

/* The counting handle, opened on first use. */
static zhandle_t *counter;
static pthread_mutex_t counter_mu = PTHREAD_MUTEX_INITIALIZER;

int b_count_at(const char *hosts, int session_ms, const char *path) {
  pthread_mutex_lock(&counter_mu);
  if (!counter) {
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    counter = zookeeper_init(hosts, NULL, session_ms, NULL, NULL, 0);
    for (int i = 0;
         counter && i < 3000 && zoo_state(counter) != ZOO_CONNECTED_STATE;
         i++) {
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
  }
  pthread_mutex_unlock(&counter_mu);
  return counter ? b_count_with(counter, path) : -1;
}
