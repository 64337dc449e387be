/* What the fuzz targets share: a property check that aborts (so that
 * libFuzzer keeps the input as a crash) and a NUL-terminated copy of the
 * input. */
#ifndef ZKR_FUZZ_H
#define ZKR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with a message when the property @cond does not hold. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__,      \
              #cond);                                                          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* The input as a C string: a copy up to its first NUL (malloc'd). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t n = nul ? (size_t)(nul - data) : size;
  char *s = malloc(n + 1);
  if (!s)
    abort();
  memcpy(s, data, n);
  s[n] = '\0';
  return s;
}

/* Splits the input at its first NUL: *@rest gets what follows it (NULL if
 * there is no NUL). Returns the part before as a string (malloc'd). */
static inline char *fuzz_split(const uint8_t *data, size_t size,
                               const uint8_t **rest, size_t *rest_size) {
  const uint8_t *nul = memchr(data, 0, size);
  char *s = fuzz_cstr(data, size);
  if (nul) {
    *rest = nul + 1;
    *rest_size = size - (size_t)(nul + 1 - data);
  } else {
    *rest = NULL;
    *rest_size = 0;
  }
  return s;
}

/* A reference UTF-8 decoder, written apart from the ones under test: the
 * length of the well-formed sequence at @p (1 to 4 bytes; no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0; *@cp its code
 * point. @p is NUL-terminated. */
static inline int fuzz_utf8(const unsigned char *p, uint32_t *cp) {
  static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
  int n;
  if (p[0] < 0x80)
    n = 1;
  else if ((p[0] & 0xe0) == 0xc0)
    n = 2;
  else if ((p[0] & 0xf0) == 0xe0)
    n = 3;
  else if ((p[0] & 0xf8) == 0xf0)
    n = 4;
  else
    return 0;
  uint32_t v = n == 1 ? p[0] : p[0] & (0x7fu >> n);
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    v = (v << 6) | (p[i] & 0x3fu);
  }
  if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

/* Is @s (NUL-terminated) well-formed UTF-8? */
static inline int fuzz_utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n = fuzz_utf8(p, &cp);
    if (n == 0)
      return 0;
    p += n;
  }
  return 1;
}

/* Is @s valid UTF-8 with no control character but '\n'? */
static inline int fuzz_clean_text(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n = fuzz_utf8(p, &cp);
    if (n == 0 || (cp < 0x20 && cp != '\n') || (cp >= 0x7f && cp <= 0x9f))
      return 0;
    p += n;
  }
  return 1;
}

#endif
