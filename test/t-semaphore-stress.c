/* The counting semaphore under load, against a real standalone server:
 * 4 processes, each with one session and 8 threads sharing one semaphore
 * object (3 permits), take 2,000 leases in all, one at a time: acquire,
 * call (a 3 ms sleep), release. Every acquisition must return ZKR_OK and
 * never more than 3 leases may be held at once, counted across the
 * processes in shared memory.
 *
 * Each process takes its share in rounds of 10 acquisitions, a fresh
 * semaphore object per round (200 objects in all), its 8 threads arriving
 * 0.1 ms apart, as threads started one after another do: a new object
 * checks the path's layout before its first admission, and its first
 * acquisitions start while that check's answer comes in. (Issue 84: an
 * acquisition started then could be started twice, the second start of
 * its admission queue failing with ZKR_EBUSY; before the fix this test
 * saw that in 10 runs of 10, 41 to 68 times in each.) The work is the
 * same under the sanitizers: about 3 s plain. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkt.h"

#define PROCS 4
#define THREADS 8
#define LIMIT 3
#define TOTAL 2000
#define PER_ROUND 10 /* acquisitions per semaphore object */
#define ROUNDS (TOTAL / PROCS / PER_ROUND)
#define ACQ_TIMEOUT_MS 60000
#define CALL_US 3000   /* the "call" made while holding a lease */
#define STAGGER_US 100 /* between the threads' first acquisitions */
#define BUDGET_S 240

/* Shared by the processes (MAP_SHARED, set up before the fork). The
 * codes are counted by -(code) - 500 (zkr's codes lie in [-599, -500]). */
struct shared {
  atomic_int held;     /* leases held now, in all processes */
  atomic_int max_held; /* the most ever held at once */
  atomic_int over;     /* acquisitions that found more than LIMIT held */
  atomic_int ok;       /* acquisitions that returned ZKR_OK */
  atomic_int other;    /* codes outside zkr's range (counted, not named) */
  atomic_int codes[100];
  atomic_int release_bad; /* releases that did not return ZKR_OK */
  atomic_int release_rc;
};

static struct shared *sh;

/* One round of one process: the object its threads share. */
struct round {
  zkr_semaphore *sem;
  pthread_barrier_t go;
  atomic_int next; /* the threads' numbers */
  atomic_int left; /* acquisitions still to take */
};

static void count_rc(int rc) {
  if (rc == ZKR_OK)
    atomic_fetch_add(&sh->ok, 1);
  else if (rc <= -500 && rc > -600)
    atomic_fetch_add(&sh->codes[-rc - 500], 1);
  else
    atomic_fetch_add(&sh->other, 1);
}

static void *worker(void *arg) {
  struct round *r = arg;
  int me = atomic_fetch_add(&r->next, 1);
  pthread_barrier_wait(&r->go);
  if (me > 0)
    usleep((useconds_t)(STAGGER_US * me));
  while (atomic_fetch_sub(&r->left, 1) > 0) {
    zkr_lease *l = NULL;
    int rc = zkr_semaphore_acquire(r->sem, 1, ACQ_TIMEOUT_MS, &l);
    count_rc(rc);
    if (rc != ZKR_OK)
      continue;
    int now = atomic_fetch_add(&sh->held, 1) + 1;
    int max = atomic_load(&sh->max_held);
    while (now > max && !atomic_compare_exchange_weak(&sh->max_held, &max, now))
      ;
    if (now > LIMIT)
      atomic_fetch_add(&sh->over, 1);
    usleep(CALL_US);
    /* (counted off before the release: its node goes after this) */
    atomic_fetch_sub(&sh->held, 1);
    rc = zkr_lease_release(l);
    zkr_lease_free(l);
    if (rc != ZKR_OK) {
      atomic_fetch_add(&sh->release_bad, 1);
      atomic_store(&sh->release_rc, rc);
    }
  }
  return NULL;
}

/* One process: ROUNDS rounds of PER_ROUND acquisitions by THREADS threads
 * on a fresh object. Exits 0, or 2 if it could not set up. */
static void child(const char *hosts, const char *path, unsigned budget) {
  alarm(budget); /* (a child does not inherit the parent's alarm) */
  zkr_session *s = zkt_connect(hosts, 10000);
  int status = 0;
  for (int k = 0; k < ROUNDS && status == 0; k++) {
    struct round r;
    memset(&r, 0, sizeof r);
    atomic_store(&r.left, PER_ROUND);
    if (zkr_semaphore_new(&r.sem, s, path, LIMIT, NULL) != ZKR_OK) {
      status = 2;
      break;
    }
    pthread_barrier_init(&r.go, NULL, THREADS);
    pthread_t t[THREADS];
    int started = 0;
    for (; started < THREADS; started++)
      if (pthread_create(&t[started], NULL, worker, &r) != 0)
        break;
    if (started < THREADS) {
      /* (the barrier would never open: a broken set-up, give up) */
      _exit(2);
    }
    for (int i = 0; i < THREADS; i++)
      pthread_join(t[i], NULL);
    pthread_barrier_destroy(&r.go);
    zkr_semaphore_free(r.sem);
  }
  zkr_session_close(s);
  exit(status);
}

int main(void) {
  tap_init(BUDGET_S);
  const char *m = getenv("ZKR_TEST_TIMEOUT_MULTIPLIER");
  unsigned budget =
      (unsigned)(BUDGET_S * (m && atof(m) > 0 ? atof(m) : 1.0)) + 10;
  const char *hosts = zkt_start(1);
  zkt_root("t-semaphore-stress");
  const char *path = zkt_path("sem");
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED)
    tap_bail("mmap");
  memset(sh, 0, sizeof *sh);

  int64_t t0 = zkt_now_ms();
  pid_t pid[PROCS];
  for (int i = 0; i < PROCS; i++) {
    fflush(stdout);
    pid[i] = fork();
    if (pid[i] < 0)
      tap_bail("fork");
    if (pid[i] == 0)
      child(hosts, path, budget);
  }
  int clean = 0;
  for (int i = 0; i < PROCS; i++) {
    int st = 0;
    if (waitpid(pid[i], &st, 0) == pid[i] && WIFEXITED(st) &&
        WEXITSTATUS(st) == 0)
      clean++;
    else
      tap_diag("process %d: %s %d", i, WIFEXITED(st) ? "exit status" : "signal",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  }
  int64_t ms = zkt_now_ms() - t0;

  is(clean, PROCS, "every process ran to its end");
  is(atomic_load(&sh->ok), TOTAL, "every acquisition returned ZKR_OK");
  for (int i = 0; i < 100; i++) {
    int n = atomic_load(&sh->codes[i]);
    if (n)
      tap_diag("%d acquisitions returned %s", n, zkr_err_name(-500 - i));
  }
  if (atomic_load(&sh->other))
    tap_diag("%d acquisitions returned a code outside zkr's",
             atomic_load(&sh->other));
  is(atomic_load(&sh->over), 0, "never more than %d leases held at once",
     LIMIT);
  tap_diag("at most %d leases held at once", atomic_load(&sh->max_held));
  is(atomic_load(&sh->release_bad), 0, "every release returned ZKR_OK");
  if (atomic_load(&sh->release_bad))
    tap_diag("a release returned %s",
             zkr_err_name(atomic_load(&sh->release_rc)));
  zkr_session *admin = zkt_connect(hosts, 10000);
  char leases[600];
  snprintf(leases, sizeof leases, "%s/leases", path);
  ok(zkt_children_become(admin, leases, 0, 10000), "no lease node left behind");
  zkr_session_close(admin);
  tap_diag("%d acquisitions by %d processes x %d threads in %lld ms", TOTAL,
           PROCS, THREADS, (long long)ms);
  munmap(sh, sizeof *sh);
  return tap_done();
}
