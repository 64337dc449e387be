/*
 * The tools' numbers (see cli-num.h): plain decimals and durations in
 * seconds as the options take them, and the monotonic clock they time
 * with.
 *
 * Owns: what a number on the command line may look like. Must not touch:
 * the messages that refuse one (the callers say what the number is for).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "cli-num.h"

int parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || *s < '0' || *s > '9')
    return -1; /* no sign, space or empty string */
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int parse_seconds(const char *s, int64_t *ms) {
  if (!s || *s < '0' || *s > '9')
    return -1;
  int64_t whole = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    whole = whole * 10 + (*p - '0');
    if (whole > SECONDS_MAX)
      return -1;
  }
  int64_t frac = 0; /* milliseconds */
  int digits = 0, round_up = 0, nonzero = whole > 0;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return -1; /* "5." */
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
      if (*p != '0')
        nonzero = 1;
      if (digits < 3)
        frac = frac * 10 + (*p - '0');
      else if (digits == 3)
        round_up = *p >= '5';
    }
    for (; digits < 3; digits++)
      frac *= 10;
  }
  if (*p != '\0')
    return -1;
  int64_t v = whole * 1000 + frac + round_up;
  if (v > (int64_t)SECONDS_MAX * 1000)
    return -1;
  if (v == 0 && nonzero)
    return -2;
  *ms = v;
  return 0;
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
