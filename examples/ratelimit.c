/* ratelimit: at most 3 calls to a slow service in flight, across every
 * process that runs it: each call holds one lease of a semaphore of 3.
 * Two threads per process make the calls, so three processes want six.
 *
 * Usage: ratelimit [HOSTS [PATH [CALLS]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/ratelimit, 4 calls per thread) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static zkr_semaphore *sem;
static long calls;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void *caller(void *arg) {
  (void)arg;
  for (long i = 0; i < calls; i++) {
    zkr_lease *lease;
    int rc = zkr_semaphore_acquire(sem, 1, -1, &lease);
    if (rc != ZKR_OK) {
      fprintf(stderr, "ratelimit: %s\n", zkr_strerror(rc));
      return (void *)1;
    }
    printf("call start %lld pid %d\n", now_ms(), (int)getpid());
    fflush(stdout);
    nanosleep(&(struct timespec){.tv_nsec = 500000000}, NULL); /* the call */
    printf("call end %lld pid %d\n", now_ms(), (int)getpid());
    fflush(stdout);
    zkr_lease_release(lease);
    zkr_lease_free(lease);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/ratelimit";
  calls = argc > 3 ? strtol(argv[3], NULL, 10) : 4;
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, hosts ? hosts : "127.0.0.1:2181", NULL);
  if (rc == ZKR_OK)
    rc = zkr_semaphore_new(&sem, s, path, 3, NULL);
  pthread_t th[2];
  void *failed[2] = {(void *)1, (void *)1};
  for (int i = 0; rc == ZKR_OK && i < 2; i++)
    pthread_create(&th[i], NULL, caller, NULL);
  for (int i = 0; rc == ZKR_OK && i < 2; i++)
    pthread_join(th[i], &failed[i]);
  if (rc != ZKR_OK)
    fprintf(stderr, "ratelimit: %s\n", zkr_strerror(rc));
  zkr_semaphore_free(sem);
  zkr_session_close(s);
  return rc == ZKR_OK && !failed[0] && !failed[1] ? 0 : 1;
}
