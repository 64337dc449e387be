/* worker: fenced work under a mutex, done again when the hold is lost.
 *
 * Each job ends with a guarded write of its record into the data of the
 * lock's node PATH, which ZooKeeper applies only while this worker's lock
 * node (a child of PATH) exists: a worker
 * that was paused past its session timeout and lost the lock cannot write,
 * however late its write arrives. A job whose hold was lost is done again.
 *
 * Usage: worker [HOSTS [PATH [JOBS]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/worker, 3 jobs) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <zkr/zkr.h>

/* One job, taking a second, ended by its guarded write. */
static int do_job(zkr_hold *h, const char *path, int job) {
  char line[96];
  printf("job %d started, token %lld\n", job, (long long)zkr_hold_token(h));
  fflush(stdout);
  sleep(1);
  int n = snprintf(line, sizeof line, "job %d of pid %d, token %lld", job,
                   (int)getpid(), (long long)zkr_hold_token(h));
  return zkr_hold_guarded_set(h, path, line, n, -1, 5000);
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/worker";
  long jobs = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
  zkr_session *s = NULL;
  zkr_mutex *m = NULL;
  int rc = zkr_session_new(&s, hosts ? hosts : "127.0.0.1:2181", NULL);
  if (rc == ZKR_OK)
    rc = zkr_mutex_new(&m, s, path, NULL);
  for (long job = 1; job <= jobs && rc == ZKR_OK;) {
    rc = zkr_mutex_acquire(m, -1);
    if (rc != ZKR_OK)
      break;
    rc = do_job(zkr_mutex_hold(m), path, (int)job);
    int released = zkr_mutex_release(m);
    if (rc == ZKR_OK && released == ZKR_OK) {
      printf("job %ld done\n", job++);
    } else {
      printf("job %ld: hold lost (%s), doing it again\n", job,
             zkr_strerror(rc != ZKR_OK ? rc : released));
      rc = ZKR_OK;
    }
    fflush(stdout);
  }
  if (rc != ZKR_OK)
    fprintf(stderr, "worker: %s\n", zkr_strerror(rc));
  zkr_mutex_free(m);
  zkr_session_close(s);
  return rc == ZKR_OK ? 0 : 1;
}
