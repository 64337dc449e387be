/* loop-uv: a session driven by a libuv loop on one thread. In dispatch
 * mode the session queues its callbacks, zkr_session_fd() is readable while
 * some wait (a uv_poll_t watches it), and the loop runs them with
 * zkr_session_dispatch(). The loop takes the mutex PATH/lock N times, one
 * asynchronous acquisition after the other, while it stands in the election
 * PATH/leader, and ends when it has done the N and leads. Every callback checks
 * it runs on the loop's thread.
 *
 * Usage: loop-uv [HOSTS [PATH [N]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/loop-uv, 5 acquisitions) */
/* uv.h needs the POSIX types that a strict -std=c11 hides */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <uv.h>

#include <zkr/zkr.h>

struct app {
  zkr_session *s;
  pthread_t loop_thread;
  long want, done; /* acquisitions to make, made */
  int leader, rc, finished;
};

static long long now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* Every callback starts here: in dispatch mode they all run on the thread
 * that calls zkr_session_dispatch(), the loop's. */
static void on_loop_thread(struct app *a, const char *what) {
  if (!pthread_equal(pthread_self(), a->loop_thread)) {
    fprintf(stderr, "loop-uv: %s ran off the loop thread\n", what);
    exit(1);
  }
}

static void fail(struct app *a, const char *what, int rc) {
  fprintf(stderr, "loop-uv: %s: %s\n", what, zkr_strerror(rc));
  a->rc = rc;
}

static void on_acquired(zkr_mutex *m, int rc, void *ud) {
  struct app *a = ud;
  on_loop_thread(a, "the acquisition callback");
  zkr_hold *h = zkr_mutex_hold(m);
  if (rc == ZKR_OK) {
    printf("acquired %ld token %lld at %lld\n", ++a->done,
           (long long)zkr_hold_token(h), now_us());
    /* The work, kept short: the loop waits for it. */
    rc = zkr_hold_state(h) == ZKR_LOCK_HELD ? ZKR_OK : ZKR_ELOCKLOST;
  }
  if (rc == ZKR_OK) {
    printf("releasing %ld at %lld\n", a->done, now_us());
    rc = zkr_mutex_release(m);
  }
  if (rc == ZKR_OK && a->done < a->want) /* the next one */
    rc = zkr_mutex_acquire_async(m, 30000, on_acquired, a);
  if (rc != ZKR_OK)
    fail(a, "lock", rc);
  a->finished = a->done == a->want && a->leader;
}

static void on_leader(zkr_election *e, int is_leader, void *ud) {
  struct app *a = ud;
  (void)e;
  on_loop_thread(a, "the election listener");
  printf("leader %s\n", is_leader ? "yes" : "no");
  a->leader = is_leader;
  a->finished = a->done == a->want && a->leader;
}

/* The session's descriptor is readable: run its callbacks. Stopping the
 * only handle ends uv_run(). */
static void on_readable(uv_poll_t *p, int status, int events) {
  struct app *a = p->data;
  (void)events;
  int rc = status < 0 ? ZKR_ESYS : zkr_session_dispatch(a->s, 0);
  if (rc < 0)
    fail(a, status < 0 ? uv_strerror(status) : "dispatch", rc);
  if (a->rc != ZKR_OK || a->finished)
    uv_poll_stop(p);
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/loop-uv";
  struct app a = {.loop_thread = pthread_self(),
                  .want = argc > 3 ? strtol(argv[3], NULL, 10) : 5};
  if (!hosts)
    hosts = "127.0.0.1:2181";
  if (a.want < 1) {
    fprintf(stderr, "%s: N must be a number above 0\n", argv[0]);
    return 2;
  }
  char lock[1100], leader[1100];
  snprintf(lock, sizeof lock, "%s/lock", path);
  snprintf(leader, sizeof leader, "%s/leader", path);
  zkr_mutex *m = NULL;
  zkr_election *e = NULL;
  uv_loop_t *loop = uv_default_loop();
  uv_poll_t poll = {.data = &a};
  int fd = -1, polling = 0;
  int rc = zkr_session_new(&a.s, hosts, &(zkr_session_options){.dispatch = 1});
  if (rc == ZKR_OK)
    rc = fd = zkr_session_fd(a.s); /* the descriptor, or an error */
  if (rc >= 0)
    rc = uv_poll_init(loop, &poll, fd) == 0 ? ZKR_OK : ZKR_ESYS;
  polling = rc == ZKR_OK;
  if (polling && uv_poll_start(&poll, UV_READABLE, on_readable) != 0)
    rc = ZKR_ESYS;
  if (rc == ZKR_OK)
    rc = zkr_mutex_new(&m, a.s, lock, &(zkr_mutex_options){.id = "loop-uv"});
  if (rc == ZKR_OK)
    rc = zkr_election_new(&e, a.s, leader,
                          &(zkr_election_options){.listener = on_leader,
                                                  .listener_user_data = &a});
  if (rc == ZKR_OK)
    rc = zkr_election_start(e);
  if (rc == ZKR_OK)
    rc = zkr_mutex_acquire_async(m, 30000, on_acquired, &a);
  if (rc != ZKR_OK)
    fail(&a, a.s ? path : hosts, rc);

  /* The loop: it sleeps until the session has callbacks for it to run. */
  if (a.rc == ZKR_OK)
    uv_run(loop, UV_RUN_DEFAULT);
  if (a.rc == ZKR_OK)
    printf("done: %ld acquisitions, leader yes\n", a.done);

  /* Shutdown: free the objects, run what is still queued, take the
   * descriptor out of the loop, close the session. */
  zkr_mutex_free(m);
  zkr_election_free(e);
  if (fd >= 0)
    zkr_session_dispatch(a.s, 0);
  if (polling)
    uv_close((uv_handle_t *)&poll, NULL);
  uv_run(loop, UV_RUN_DEFAULT); /* completes the close */
  zkr_session_close(a.s);
  uv_loop_close(loop);
  return a.rc == ZKR_OK ? 0 : 1;
}
