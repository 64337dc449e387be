/* A small TAP producer for zkr's tests (automake's tap-driver reads it). */
#ifndef ZKR_TEST_TAP_H
#define ZKR_TEST_TAP_H

#include <stdint.h>

/* Start a test program: installs a deadline (alarm) of @seconds times
 * $ZKR_TEST_TIMEOUT_MULTIPLIER, after which it bails out. */
void tap_init(int seconds);
void tap_plan(int n);
/* Every test point, with the location of the call. */
int tap_ok_at(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tap_is_at(int64_t got, int64_t want, const char *file, int line,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Skip the whole program, with a reason (fails instead when
 * ZKR_TEST_NO_SKIP=1, as in CI). Does not return. */
void tap_skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
/* Give up: prints "Bail out!" and exits 1. */
void tap_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
/* Print the plan if not given yet; return the exit status. */
int tap_done(void);

#define ok(cond, ...) tap_ok_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is(got, want, ...)                                                     \
  tap_is_at((int64_t)(got), (int64_t)(want), __FILE__, __LINE__, __VA_ARGS__)

#endif
