/* Node names and their sequence numbers (lib/seq.c) for zkr's, Curator's
 * and kazoo's names: what the parse finds is the "%010d" the name ends
 * with; a name built from a prefix, a marker and "%010d" of a number
 * parses back to that number with that marker; every name that ends in a
 * "%010d" form has a sequence number; the wrap-safe order is a strict
 * order on every window of 2^31 numbers.
 *
 * Input: 4 bytes (a number), 4 bytes (a distance), 1 byte (which marker),
 * then a name (also used as the prefix). */
#include "config.h"

#include "fuzz.h"
#include "zkr-private.h"

/* Every marker zkr, Curator and kazoo write before the number. */
static const char *const markers[] = {
    "-lock-",   /* Curator's and zkr's mutex, LeaderSelector */
    "__READ__", /* Curator's and zkr's read lock */
    "__WRIT__", /* Curator's and zkr's write lock */
    "-latch-",  /* Curator's LeaderLatch, zkr's election */
    "-lease-",  /* Curator's InterProcessSemaphoreV2 leases */
    "__lock__", /* kazoo's Lock and WriteLock */
    "__rlock__" /* kazoo's ReadLock */
};
#define NMARKERS (sizeof markers / sizeof *markers)

static int ends_with(const char *s, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static int all_digits(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] < '0' || p[i] > '9')
      return 0;
  return 1;
}

/* Does @s end in what "%010d" writes for some int32? */
static int ends_in_seq_form(const char *s) {
  size_t n = strlen(s);
  if (n >= 10 && all_digits(s + n - 10, 10) &&
      strtoll(s + n - 10, NULL, 10) <= INT32_MAX)
    return 1;
  if (n >= 10 && s[n - 10] == '-' && all_digits(s + n - 9, 9) &&
      strtoll(s + n - 9, NULL, 10) != 0)
    return 1;
  if (n >= 11 && s[n - 11] == '-' && all_digits(s + n - 10, 10) &&
      s[n - 10] != '0' && strtoll(s + n - 10, NULL, 10) <= 2147483648LL)
    return 1;
  return 0;
}

static int32_t get32(const uint8_t *p) {
  return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                   ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 9)
    return 0;
  int32_t v = get32(data), w = get32(data + 4);
  const char *marker = markers[data[8] % NMARKERS];
  char *name = fuzz_cstr(data + 9, size - 9);
  size_t len = strlen(name);
  char num[16];

  /* 1. Whatever the name, a sequence number found is the "%010d" it ends
   * with, and a marker is found before it exactly when it stands there. */
  int32_t got = 0;
  int parsed = zkr__seq_parse(name, &got);
  if (parsed) {
    snprintf(num, sizeof num, "%010d", got);
    CHECK(ends_with(name, len, num), "'%s' parsed as %d", name, got);
  }
  CHECK(parsed == ends_in_seq_form(name), "'%s': parse %d", name, parsed);
  for (size_t i = 0; i < NMARKERS; i++) {
    int marked = zkr__seq_marked(name, markers[i]);
    int expect = 0;
    if (parsed) {
      size_t nl = strlen(num);
      expect = ends_with(name, len - nl, markers[i]);
    }
    CHECK(marked == expect, "'%s' marked '%s': %d", name, markers[i], marked);
  }

  /* 2. Format, then parse: PREFIX MARKER "%010d" gives back the number and
   * the marker (and any other marker only if it ends PREFIX MARKER). */
  snprintf(num, sizeof num, "%010d", v);
  size_t ml = strlen(marker), nl = strlen(num);
  char *built = malloc(len + ml + nl + 1);
  CHECK(built != NULL, "oom");
  memcpy(built, name, len);
  memcpy(built + len, marker, ml);
  memcpy(built + len + ml, num, nl + 1);
  got = 0;
  CHECK(zkr__seq_parse(built, &got) && got == v, "'%s': %d, not %d", built, got,
        v);
  for (size_t i = 0; i < NMARKERS; i++) {
    int expect = ends_with(built, len + ml, markers[i]);
    CHECK(zkr__seq_marked(built, markers[i]) == expect, "'%s' marked '%s'",
          built, markers[i]);
  }
  /* and the number alone, as a name with no prefix (but for "-" and ten
   * digits, which without a marker is read as the ten digits) */
  if (v >= -999999999)
    CHECK(zkr__seq_parse(num, &got) && got == v, "'%s' alone", num);
  free(built);

  /* 3. The order: safe across the wrap for numbers less than 2^31 apart
   * (at 2^31 apart, which no queue spans, it cannot be). */
  CHECK(zkr__seq_cmp(v, v) == 0, "cmp(%d, %d)", v, v);
  int c = zkr__seq_cmp(v, w);
  if ((uint32_t)v - (uint32_t)w != 0x80000000u)
    CHECK(c == -zkr__seq_cmp(w, v), "cmp(%d, %d) not antisymmetric", v, w);
  CHECK(c >= -1 && c <= 1, "cmp %d", c);
  uint32_t d = (uint32_t)w & 0x7fffffffu;
  if (d != 0) {
    int32_t later = (int32_t)((uint32_t)v + d);
    CHECK(zkr__seq_cmp(v, later) < 0 && zkr__seq_cmp(later, v) > 0,
          "%d is issued %u after %d", later, d, v);
  }
  free(name);
  return 0;
}
