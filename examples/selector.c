/* selector: a job that runs on one instance at a time, the leader, with
 * zkr_election_run(): the library runs the leader's function on a thread
 * of its own each time this instance leads, and passes leadership on when
 * it returns. The function checks zkr_election_is_leader() between steps
 * and stops at once when leadership is lost.
 *
 * Usage: selector [HOSTS [PATH [STEPS]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/selector, 3 steps, then it leaves) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static long steps;
static atomic_int finished;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Runs while this instance leads, on the election's own thread. */
static void lead(zkr_election *e, void *ud) {
  (void)ud;
  long long token = zkr_hold_token(zkr_election_hold(e));
  while (steps > 0 && zkr_election_is_leader(e)) {
    printf("step %lld pid %d token %lld\n", now_ms(), (int)getpid(), token);
    fflush(stdout);
    steps--;
    sleep(1);
  }
  atomic_store(&finished, steps == 0);
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/selector";
  steps = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
  zkr_session *s = NULL;
  zkr_election *e = NULL;
  int rc = zkr_session_new(&s, hosts ? hosts : "127.0.0.1:2181", NULL);
  if (rc == ZKR_OK)
    rc = zkr_election_new(&e, s, path, NULL);
  if (rc == ZKR_OK) /* requeue: lead again after a lost term */
    rc = zkr_election_run(e, lead, NULL, 1);
  while (rc == ZKR_OK && !atomic_load(&finished))
    nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
  if (rc != ZKR_OK)
    fprintf(stderr, "selector: %s\n", zkr_strerror(rc));
  zkr_election_free(e); /* waits for lead() to return, and leaves */
  zkr_session_close(s);
  return rc == ZKR_OK ? 0 : 1;
}
