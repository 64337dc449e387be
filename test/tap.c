#include "tap.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int planned = -1;
static int count;
static int failed;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "Bail out! test deadline passed\n";
  ssize_t r = write(1, msg, sizeof msg - 1);
  (void)r;
  _exit(1);
}

void tap_init(int seconds) {
  double mult = 1.0;
  const char *m = getenv("ZKR_TEST_TIMEOUT_MULTIPLIER");
  if (m && atof(m) > 0)
    mult = atof(m);
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
  signal(SIGPIPE, SIG_IGN);
  alarm((unsigned)(seconds * mult));
}

void tap_plan(int n) {
  planned = n;
  printf("1..%d\n", n);
  fflush(stdout);
}

static void vdiag(const char *fmt, va_list ap) {
  printf("# ");
  vprintf(fmt, ap);
  printf("\n");
}

void tap_diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vdiag(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static void point(int cond, const char *fmt, va_list ap) {
  count++;
  printf("%s %d - ", cond ? "ok" : "not ok", count);
  vprintf(fmt, ap);
  printf("\n");
  if (!cond)
    failed++;
}

int tap_ok_at(int cond, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  point(cond, fmt, ap);
  va_end(ap);
  if (!cond)
    printf("#   failed at %s:%d\n", file, line);
  fflush(stdout);
  return cond;
}

int tap_is_at(int64_t got, int64_t want, const char *file, int line,
              const char *fmt, ...) {
  int cond = got == want;
  va_list ap;
  va_start(ap, fmt);
  point(cond, fmt, ap);
  va_end(ap);
  if (!cond)
    printf("#   failed at %s:%d: got %lld, want %lld\n", file, line,
           (long long)got, (long long)want);
  fflush(stdout);
  return cond;
}

void tap_skip_all(const char *fmt, ...) {
  va_list ap;
  const char *noskip = getenv("ZKR_TEST_NO_SKIP");
  if (noskip && noskip[0] == '1') {
    printf("Bail out! would skip, but ZKR_TEST_NO_SKIP=1: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
  }
  printf("1..0 # SKIP ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  exit(0);
}

void tap_bail(const char *fmt, ...) {
  va_list ap;
  printf("Bail out! ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  exit(1);
}

int tap_done(void) {
  if (planned < 0)
    printf("1..%d\n", count);
  else if (planned != count)
    printf("# planned %d tests but ran %d\n", planned, count);
  fflush(stdout);
  return failed || (planned >= 0 && planned != count) ? 1 : 0;
}
