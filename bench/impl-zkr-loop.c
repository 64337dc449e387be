/*
 * impl-zkr-loop.c - the zkr-loop back end of the benchmark worker: zkr's
 * public API (<zkr/zkr.h>) in dispatch mode (zkr_session_options.dispatch),
 * every callback run by an epoll loop of the benchmark's own, to measure
 * what such a loop costs against zkr's threads (bench/impl-zkr.c).
 *
 * Each session has one loop thread: epoll(7) on zkr_session_fd() (level-
 * triggered; readable: zkr_session_dispatch(s, 0)) and on a command pipe.
 * Every acquisition is started with zkr_mutex_acquire_async() and completes
 * in a callback that zkr_session_dispatch() runs on that thread:
 *
 *   - b_cycles (the measured part of S1 and S2): the whole cycle runs on the
 *     loop. The caller's thread sends the block through the pipe and waits;
 *     the loop starts the acquisition, and its completion callback records
 *     the time, releases (zkr_mutex_release() does not block) and starts the
 *     next acquisition, until the driver's step function says stop. No other
 *     thread takes part in a cycle.
 *   - b_acquire (warm-ups, and the other modes): the calling thread starts
 *     the acquisition and waits on a condition variable that the completion
 *     callback, on the loop, signals.
 *   - b_acquire_async: the driver's callback runs on the loop.
 *
 * Default options otherwise, like impl-zkr.c; no read-write lock, semaphore
 * or election (scripts/bench runs zkr-loop in S1 and S2 only).
 */
#define _GNU_SOURCE /* pipe2 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "bench.h"

const char *const b_impl = "zkr-loop";

enum { EV_SESSION, EV_CMD }; /* what an epoll event is about */

struct bsess {
  zkr_session *s;
  char *hosts;
  int session_ms;
  int ep;     /* the loop's epoll set */
  int cmd[2]; /* the loop's command pipe: a block * (b_cycles), NULL: stop */
  pthread_t th;
};

struct block {
  zkr_mutex *m;
  bsess *b;
  pthread_mutex_t mu; /* done and rc, for the thread waiting on cv */
  pthread_cond_t cv;
  int done, rc;
  b_done_fn fn; /* b_acquire_async */
  void *ud;
  b_cycle_fn cfn; /* b_cycles */
  void *cud;
};

static void fatal(const char *what, int err) {
  fprintf(stderr, "%s-bench: %s: %s\n", b_impl, what, strerror(err));
  exit(1);
}

/* ---------------------------------------------------------------- loop */

/* Set on the loop threads: every callback must run there (else dispatch
 * mode is not in effect and the figures would not measure the loop). */
static _Thread_local int on_loop;

static void check_on_loop(void) {
  if (!on_loop) {
    fprintf(stderr, "%s-bench: a zkr callback ran outside the loop\n", b_impl);
    exit(1);
  }
}

/* On the loop: @l's waiting thread (b_acquire, b_cycles) gets @rc. */
static void hand_over(block *l, int rc) {
  pthread_mutex_lock(&l->mu);
  l->rc = rc;
  l->done = 1;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* The caller's side of hand_over(): wait for it. */
static int await_hand_over(block *l) {
  pthread_mutex_lock(&l->mu);
  while (!l->done)
    pthread_cond_wait(&l->cv, &l->mu);
  int rc = l->rc;
  pthread_mutex_unlock(&l->mu);
  return rc;
}

static void cycle_acquired(zkr_mutex *m, int rc, void *ud);

/* On the loop: the next cycle of b_cycles, or its end. */
static void cycle_start(block *l) {
  if (!l->cfn(l->cud, B_START)) {
    hand_over(l, 0);
    return;
  }
  int rc = zkr_mutex_acquire_async(l->m, -1, cycle_acquired, l);
  if (rc != ZKR_OK)
    hand_over(l, rc);
}

/* Dispatched on the loop: held; release and go on. */
static void cycle_acquired(zkr_mutex *m, int rc, void *ud) {
  block *l = ud;
  check_on_loop();
  if (rc == ZKR_OK) {
    l->cfn(l->cud, B_HELD);
    rc = zkr_mutex_release(m);
  }
  if (rc != ZKR_OK) {
    hand_over(l, rc);
    return;
  }
  l->cfn(l->cud, B_RELEASED);
  cycle_start(l);
}

static void *loop(void *arg) {
  bsess *b = arg;
  on_loop = 1;
  for (;;) {
    struct epoll_event ev[2];
    int n = epoll_wait(b->ep, ev, 2, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fatal("epoll_wait", errno);
    }
    for (int i = 0; i < n; i++) {
      if (ev[i].data.u32 == EV_SESSION) {
        int rc = zkr_session_dispatch(b->s, 0);
        if (rc < 0) {
          fprintf(stderr, "%s-bench: zkr_session_dispatch: %s\n", b_impl,
                  zkr_strerror(rc));
          exit(1);
        }
        continue;
      }
      block *l;
      ssize_t r = read(b->cmd[0], &l, sizeof l);
      if (r < 0 && errno == EINTR)
        continue; /* still readable: the next epoll_wait says so */
      if (r != (ssize_t)sizeof l)
        fatal("read of the command pipe", r < 0 ? errno : EIO);
      if (!l)
        return NULL;
      cycle_start(l);
    }
  }
}

/* Send @l (a b_cycles to start; NULL: stop) to @b's loop. */
static void command(bsess *b, block *l) {
  ssize_t w;
  while ((w = write(b->cmd[1], &l, sizeof l)) < 0 && errno == EINTR)
    ;
  if (w != (ssize_t)sizeof l)
    fatal("write of the command pipe", w < 0 ? errno : EIO);
}

/* ---------------------------------------------------------------- session */

int b_connect(const char *hosts, int session_ms, bsess **out) {
  bsess *b = calloc(1, sizeof *b);
  if (!b || !(b->hosts = strdup(hosts))) {
    free(b);
    return ZKR_ENOMEM;
  }
  b->session_ms = session_ms;
  b->ep = b->cmd[0] = b->cmd[1] = -1;
  int rc =
      zkr_session_new(&b->s, hosts,
                      &(zkr_session_options){.session_timeout_ms = session_ms,
                                             .connect_timeout_ms = 30000,
                                             .dispatch = 1});
  if (rc != ZKR_OK) {
    free(b->hosts);
    free(b);
    return rc;
  }
  int fd = zkr_session_fd(b->s);
  if (fd < 0)
    rc = fd;
  else if ((b->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
           pipe2(b->cmd, O_CLOEXEC) != 0 ||
           epoll_ctl(b->ep, EPOLL_CTL_ADD, fd,
                     &(struct epoll_event){.events = EPOLLIN,
                                           .data.u32 = EV_SESSION}) != 0 ||
           epoll_ctl(b->ep, EPOLL_CTL_ADD, b->cmd[0],
                     &(struct epoll_event){.events = EPOLLIN,
                                           .data.u32 = EV_CMD}) != 0)
    rc = ZKR_ESYS;
  else if (pthread_create(&b->th, NULL, loop, b) != 0)
    rc = ZKR_ESYS;
  if (rc != ZKR_OK) {
    for (int i = 0; i < 2; i++)
      if (b->cmd[i] >= 0)
        close(b->cmd[i]);
    if (b->ep >= 0)
      close(b->ep);
    zkr_session_close(b->s);
    free(b->hosts);
    free(b);
    return rc;
  }
  *out = b;
  return 0;
}

void b_close(bsess *b) {
  /* the loop stops (and the descriptor leaves it) before the close */
  command(b, NULL);
  pthread_join(b->th, NULL);
  close(b->ep);
  close(b->cmd[0]);
  close(b->cmd[1]);
  zkr_session_close(b->s);
  free(b->hosts);
  free(b);
}

/* ---------------------------------------------------------------- locks */

int b_lock_new(bsess *b, const char *path, block **out) {
  block *l = calloc(1, sizeof *l);
  if (!l)
    return ZKR_ENOMEM;
  int rc = zkr_mutex_new(&l->m, b->s, path, NULL);
  if (rc != ZKR_OK) {
    free(l);
    return rc;
  }
  l->b = b;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  *out = l;
  return 0;
}

/* Dispatched on the loop: hand the result to the thread in b_acquire. */
static void acquired(zkr_mutex *m, int rc, void *ud) {
  (void)m;
  check_on_loop();
  hand_over(ud, rc);
}

int b_acquire(block *l) {
  l->done = 0; /* no callback of l is pending: nothing reads it now */
  int rc = zkr_mutex_acquire_async(l->m, -1, acquired, l);
  return rc != ZKR_OK ? rc : await_hand_over(l);
}

int b_release(block *l) {
  return zkr_mutex_release(l->m);
}

void b_lock_free(block *l) {
  zkr_mutex_free(l->m);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  free(l);
}

static int cycles(block *l, b_cycle_fn fn, void *ud) {
  l->cfn = fn;
  l->cud = ud;
  l->done = 0;
  command(l->b, l); /* the pipe orders these writes before the loop's reads */
  return await_hand_over(l);
}

int (*const b_cycles)(block *, b_cycle_fn, void *) = cycles;

/* Dispatched on the loop: the driver's callback. */
static void async_done(zkr_mutex *m, int rc, void *ud) {
  block *l = ud;
  (void)m;
  check_on_loop();
  l->fn(l->ud, rc);
}

static int acquire_async(block *l, b_done_fn fn, void *ud) {
  l->fn = fn;
  l->ud = ud;
  return zkr_mutex_acquire_async(l->m, -1, async_done, l);
}

int (*const b_acquire_async)(block *, b_done_fn, void *) = acquire_async;

int (*const b_rwlock_new)(bsess *, const char *, block **, block **) = NULL;
int (*const b_semaphore_new)(bsess *, const char *, int, block **) = NULL;
int (*const b_election_new)(bsess *, const char *, block **) = NULL;
int (*const b_multilock_new)(bsess *, const char *const *, int,
                             block **) = NULL;

const char *b_strerror(int rc) {
  return zkr_strerror(rc);
}

int b_count_children(bsess *b, const char *path) {
  return b_count_at(b->hosts, b->session_ms, path);
}
