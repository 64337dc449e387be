/* prices: a price table many read at once and one writes alone, under
 * the read-write lock at PATH. A reader reads the table (the data of
 * PATH) under the read side; the writer rewrites it under the write side,
 * with a guarded write that ZooKeeper applies only while the write lock
 * is held. A write waits for the readers before it and holds off those
 * after it.
 *
 * Usage: prices [HOSTS [PATH [read|write [ROUNDS]]]]   (defaults:
 * $ZKR_SERVERS or 127.0.0.1:2181, /zkr-examples/prices, read, 3 rounds) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/prices";
  int writer = argc > 3 && strcmp(argv[3], "write") == 0;
  long rounds = argc > 4 ? strtol(argv[4], NULL, 10) : 3;
  zkr_session *s = NULL;
  zkr_rwlock *rw = NULL;
  int rc = zkr_session_new(&s, hosts ? hosts : "127.0.0.1:2181", NULL);
  if (rc == ZKR_OK)
    rc = zkr_rwlock_new(&rw, s, path, NULL);
  zkr_mutex *side =
      writer ? zkr_rwlock_write_lock(rw) : zkr_rwlock_read_lock(rw);
  for (long i = 1; rc == ZKR_OK && i <= rounds; i++) {
    rc = zkr_mutex_acquire(side, -1);
    if (rc != ZKR_OK)
      break;
    printf("%s start %lld pid %d\n", writer ? "write" : "read", now_ms(),
           (int)getpid());
    fflush(stdout);
    sleep(1); /* reading the table, or computing the new one */
    if (writer) {
      char table[64];
      int n = snprintf(table, sizeof table, "prices v%ld", i);
      rc = zkr_hold_guarded_set(zkr_mutex_hold(side), path, table, n, -1, 5000);
    }
    printf("%s end %lld pid %d\n", writer ? "write" : "read", now_ms(),
           (int)getpid());
    fflush(stdout);
    int released = zkr_mutex_release(side);
    rc = rc == ZKR_OK ? released : rc;
  }
  if (rc != ZKR_OK)
    fprintf(stderr, "prices: %s\n", zkr_strerror(rc));
  zkr_rwlock_free(rw);
  zkr_session_close(s);
  return rc == ZKR_OK ? 0 : 1;
}
