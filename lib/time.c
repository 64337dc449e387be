/* Monotonic time and deadline helpers. */
#include "config.h"

#include <errno.h>
#include <time.h>

#include "zkr-private.h"

int64_t zkr__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zkr__deadline(int64_t timeout_ms) {
  if (timeout_ms < 0)
    return -1;
  return zkr__now_ms() + timeout_ms;
}

int zkr__cond_init(pthread_cond_t *cv) {
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc != 0)
    return rc;
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(cv, &attr);
  pthread_condattr_destroy(&attr);
  return rc;
}

int zkr__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         int64_t deadline_ms) {
  if (deadline_ms < 0) {
    pthread_cond_wait(cv, mu);
    return 0;
  }
  if (zkr__now_ms() >= deadline_ms)
    return ETIMEDOUT;
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline_ms / 1000);
  ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
  int rc = pthread_cond_timedwait(cv, mu, &ts);
  if (rc == ETIMEDOUT || zkr__now_ms() >= deadline_ms)
    return ETIMEDOUT;
  return 0;
}

void zkr__sleep_ms(int64_t ms) {
  if (ms <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000);
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
