/* The semaphore's node data (lib/semaphore-prep.c): the shared count
 * (Curator's SharedCount: 4 bytes, big-endian, signed) decodes only from
 * 4 bytes, re-encodes to the same bytes, and gives a limit within
 * [0, ZKR_SEMAPHORE_MAX] that is the count itself when it is in range;
 * encode then decode gives the number back. The test for kazoo's layout
 * (a decimal number as the semaphore node's data) takes exactly an
 * optional '-' and one or more digits, and what "%d" writes.
 *
 * Input: node data, any bytes. */
#include "config.h"

#include "fuzz.h"
#include "semaphore-int.h"

static int ref_number(const uint8_t *v, size_t len) {
  size_t i = len > 0 && v[0] == '-' ? 1 : 0;
  if (i >= len)
    return 0;
  for (; i < len; i++)
    if (v[i] < '0' || v[i] > '9')
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64)
    return 0; /* node data past a few bytes tells nothing more */
  /* the data as ZooKeeper hands it over: not terminated */
  char *copy = malloc(size ? size : 1);
  CHECK(copy != NULL, "oom");
  memcpy(copy, data, size);
  int len = (int)size;

  int32_t v = 0;
  int ok = zkr__sem_count_decode(copy, len, &v);
  CHECK(ok == (size == 4), "%zu bytes decoded: %d", size, ok);
  if (ok) {
    uint8_t back[4] = {(uint8_t)((uint32_t)v >> 24),
                       (uint8_t)((uint32_t)v >> 16),
                       (uint8_t)((uint32_t)v >> 8), (uint8_t)v};
    CHECK(memcmp(back, data, 4) == 0, "%d does not encode back", v);
    int lim = zkr__sem_count_limit(v);
    CHECK(lim >= 0 && lim <= ZKR_SEMAPHORE_MAX, "limit %d of %d", lim, v);
    CHECK(lim == (v < 0                   ? 0
                  : v > ZKR_SEMAPHORE_MAX ? ZKR_SEMAPHORE_MAX
                                          : v),
          "limit %d of %d", lim, v);
  }
  CHECK(!zkr__sem_count_decode(NULL, 4, &v), "NULL data");

  int num = zkr__sem_is_number(copy, len);
  CHECK(num == ref_number(data, size), "'%.*s': is_number %d", len, copy, num);
  free(copy);

  if (size >= 4) {
    /* encode, decode */
    int32_t x =
        (int32_t)(((uint32_t)data[0] << 24) | ((uint32_t)data[1] << 16) |
                  ((uint32_t)data[2] << 8) | (uint32_t)data[3]);
    char enc[4] = {(char)((uint32_t)x >> 24), (char)((uint32_t)x >> 16),
                   (char)((uint32_t)x >> 8), (char)x};
    int32_t y = 0;
    CHECK(zkr__sem_count_decode(enc, 4, &y) && y == x, "%d decoded as %d", x,
          y);
    /* what kazoo writes, str(max_leases), is a number; with one more
     * character that is not a digit it is not */
    char dec[16];
    int n = snprintf(dec, sizeof dec, "%d", x);
    CHECK(zkr__sem_is_number(dec, n), "'%s'", dec);
    dec[n] = (char)(data[size - 1] & 0x7f);
    if (dec[n] < '0' || dec[n] > '9')
      CHECK(!zkr__sem_is_number(dec, n + 1), "'%.*s'", n + 1, dec);
  }
  return 0;
}
