/* loop-epoll: a session driven by an epoll loop on one thread. In dispatch
 * mode the session queues its callbacks, zkr_session_fd() is readable while
 * some wait, and the loop runs them with zkr_session_dispatch(). The loop
 * takes the mutex PATH/lock N times, one asynchronous acquisition after the
 * other, while it stands in the election PATH/leader, and ends when it has
 * done the N and leads. Every callback checks it runs on the loop's thread.
 *
 * Usage: loop-epoll [HOSTS [PATH [N]]]   (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, /zkr-examples/loop-epoll, 5 acquisitions) */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

struct app {
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
    fprintf(stderr, "loop-epoll: %s ran off the loop thread\n", what);
    exit(1);
  }
}

static void fail(struct app *a, const char *what, int rc) {
  fprintf(stderr, "loop-epoll: %s: %s\n", what, zkr_strerror(rc));
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

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/loop-epoll";
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
  zkr_session *s = NULL;
  zkr_mutex *m = NULL;
  zkr_election *e = NULL;
  int ep = epoll_create1(EPOLL_CLOEXEC), fd = -1;
  int rc = zkr_session_new(&s, hosts, &(zkr_session_options){.dispatch = 1});
  if (rc == ZKR_OK)
    rc = fd = zkr_session_fd(s); /* the descriptor, or an error */
  if (rc >= 0) {
    struct epoll_event ev = {.events = EPOLLIN};
    rc = epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0 ? ZKR_OK : ZKR_ESYS;
  }
  if (rc == ZKR_OK)
    rc = zkr_mutex_new(&m, s, lock, &(zkr_mutex_options){.id = "loop-epoll"});
  if (rc == ZKR_OK)
    rc = zkr_election_new(&e, s, leader,
                          &(zkr_election_options){.listener = on_leader,
                                                  .listener_user_data = &a});
  if (rc == ZKR_OK)
    rc = zkr_election_start(e);
  if (rc == ZKR_OK)
    rc = zkr_mutex_acquire_async(m, 30000, on_acquired, &a);
  if (rc != ZKR_OK)
    fail(&a, s ? path : hosts, rc);

  /* The loop: it sleeps until the session has callbacks for it to run. */
  while (a.rc == ZKR_OK && !a.finished) {
    struct epoll_event ev;
    if (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
      fail(&a, "epoll_wait", ZKR_ESYS);
    else if ((rc = zkr_session_dispatch(s, 0)) < 0)
      fail(&a, "dispatch", rc);
  }
  if (a.rc == ZKR_OK)
    printf("done: %ld acquisitions, leader yes\n", a.done);

  /* Shutdown: free the objects, run what is still queued, take the
   * descriptor out of the loop, close the session. */
  zkr_mutex_free(m);
  zkr_election_free(e);
  if (fd >= 0) {
    zkr_session_dispatch(s, 0);
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  }
  zkr_session_close(s);
  close(ep);
  return a.rc == ZKR_OK ? 0 : 1;
}
