/*
 * Contender names and their order.
 *
 * ZooKeeper appends a sequential node's number as "%010d" of the parent's
 * signed 32-bit child version: "0000000042", or after the counter wraps,
 * "-000000005" and "-2147483648". Contenders are ordered by that number in
 * serial-number arithmetic (the sign of the 32-bit difference), which stays
 * right across the wrap as long as a queue spans less than 2^31 numbers,
 * and never by the rest of the name: Curator's "_c_<uuid>-lock-N", kazoo's
 * "<uuid>__lock__N" and zkr's nodes interleave correctly on one path.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "zkr-private.h"

/* The known markers (layout.h) are those after which the sequence follows
 * directly. The sequence of a name with a marker is everything after the
 * last marker, so negative numbers written as "-1000000005" are not
 * mistaken for a dash of the name followed by a positive number. */
static const char *const markers[] = {ZKR__MARKERS};

static int parse_num(const char *p, size_t n, int32_t *out) {
  int neg = 0;
  if (n > 0 && p[0] == '-') {
    neg = 1;
    p++;
    n--;
  }
  if (n == 0 || n > 10)
    return 0;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return 0;
    v = v * 10 + (p[i] - '0');
  }
  if (neg)
    v = -v;
  if (v > INT32_MAX || v < INT32_MIN)
    return 0;
  /* only the form "%010d" gives: a positive number (or 0) zero-padded to
   * 10 digits; a negative one as "-" and 9 digits ("-000000005"), or "-"
   * and 10 digits without a leading zero ("-1000000005"); never "-0…0" */
  if (!neg && n != 10)
    return 0;
  if (neg && !((n == 9 && v != 0) || (n == 10 && p[0] != '0')))
    return 0;
  *out = (int32_t)v;
  return 1;
}

int zkr__seq_parse(const char *name, int32_t *seq) {
  if (!name)
    return 0;
  size_t len = strlen(name);
  /* After the last known marker, if there is one. */
  const char *best = NULL;
  for (size_t i = 0; i < sizeof markers / sizeof *markers; i++) {
    size_t ml = strlen(markers[i]);
    for (const char *p = strstr(name, markers[i]); p;
         p = strstr(p + 1, markers[i]))
      if (!best || p + ml > best)
        best = p + ml;
  }
  if (best && parse_num(best, (size_t)(name + len - best), seq))
    return 1;
  /* Otherwise the trailing "%010d": ten digits, or a minus sign and nine
   * digits, or a minus sign and ten digits when the ten digits alone would
   * not fit a positive int32. */
  if (len < 10)
    return 0;
  const char *tail = name + len - 10;
  if (parse_num(tail, 10, seq))
    return 1;
  if (len >= 11 && tail[-1] == '-' && parse_num(tail - 1, 11, seq))
    return 1;
  return 0;
}

int zkr__seq_marked(const char *name, const char *marker) {
  int32_t seq;
  if (!zkr__seq_parse(name, &seq))
    return 0;
  char num[16];
  int n = snprintf(num, sizeof num, "%010d", seq);
  size_t len = strlen(name), ml = strlen(marker);
  if (n <= 0 || (size_t)n + ml > len ||
      strcmp(name + len - (size_t)n, num) != 0)
    return 0;
  return memcmp(name + len - (size_t)n - ml, marker, ml) == 0;
}

int zkr__seq_cmp(int32_t a, int32_t b) {
  int32_t d = (int32_t)((uint32_t)a - (uint32_t)b);
  return d < 0 ? -1 : d > 0 ? 1 : 0;
}
