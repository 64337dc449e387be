/* scheduler: tick once a second on exactly one instance, the leader, and
 * stop at once when leadership is lost (zkr_election_await_change() wakes
 * the tick loop on any change, so no tick is made after a loss is known).
 * Each tick is fenced with the term's token; a new leader's are larger.
 *
 * Usage: scheduler [HOSTS [PATH [TICKS]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/scheduler, 5 ticks, then it leaves) */
#include <stdio.h>
#include <stdlib.h>
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
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/scheduler";
  long ticks = argc > 3 ? strtol(argv[3], NULL, 10) : 5;
  zkr_session *s = NULL;
  zkr_election *e = NULL;
  int rc = zkr_session_new(&s, hosts ? hosts : "127.0.0.1:2181", NULL);
  if (rc == ZKR_OK)
    rc = zkr_election_new(&e, s, path, NULL);
  if (rc == ZKR_OK)
    rc = zkr_election_start(e);
  while (rc == ZKR_OK && ticks > 0) {
    rc = zkr_election_await(e, -1); /* until this instance leads */
    long long token = zkr_hold_token(zkr_election_hold(e));
    printf("leading, token %lld\n", token);
    while (rc == ZKR_OK && ticks > 0 && zkr_election_is_leader(e)) {
      printf("tick %lld pid %d token %lld\n", now_ms(), (int)getpid(), token);
      fflush(stdout);
      ticks--;
      rc = zkr_election_await_change(e, 1000); /* a second, or a change */
      rc = rc == ZKR_ETIMEDOUT ? ZKR_OK : rc;
    }
    if (ticks > 0)
      printf("not leading any more: ticks stop\n");
  }
  if (rc != ZKR_OK)
    fprintf(stderr, "scheduler: %s\n", zkr_strerror(rc));
  zkr_election_free(e);
  zkr_session_close(s);
  return rc == ZKR_OK ? 0 : 1;
}
