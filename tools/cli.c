/* Shared by the command-line tools (see cli.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void usage_error(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", prog, buf,
          prog);
  exit(EX_USAGE);
}

/* The long option that @arg ("--name" or "--name=value") names: an exact
 * name, else the only one it abbreviates; NULL if none. */
static const struct option *long_named(const char *arg,
                                       const struct option *longopts) {
  const char *name = arg + 2;
  size_t n = strcspn(name, "=");
  const struct option *found = NULL;
  int count = 0;
  for (const struct option *o = longopts; o && o->name; o++) {
    if (strncmp(o->name, name, n) != 0)
      continue;
    if (strlen(o->name) == n)
      return o;
    found = o;
    count++;
  }
  return count == 1 ? found : NULL;
}

void option_error(int c, char *const argv[], const struct option *longopts) {
  /* getopt_long leaves optind on the next argument once it has finished
   * one, so argv[optind - 1] is the option it complained about only when
   * that option ended its argument; inside a cluster ("-vx") it is the
   * previous one (or the program). optopt tells: 0 for an unknown long
   * option, else the character or the long option's value. */
  const char *last = optind > 0 ? argv[optind - 1] : "";
  const struct option *lo = NULL;
  if (strncmp(last, "--", 2) == 0 && last[2] != '\0')
    lo = long_named(last, longopts);
  if (c == ':') {
    if (lo && lo->val == optopt)
      usage_error("option '--%s' needs an argument", lo->name);
    if (optopt > ' ' && optopt < 0x7f)
      usage_error("option '-%c' needs an argument", optopt);
    usage_error("option '%s' needs an argument", esc(last));
  }
  if (optopt == 0) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(last, "="), last);
    usage_error("unknown option '%s'", esc(name));
  }
  if (lo && lo->val == optopt && lo->has_arg == no_argument &&
      strchr(last, '='))
    usage_error("option '--%s' takes no argument", lo->name);
  if (optopt > ' ' && optopt < 0x7f)
    usage_error("unknown option '-%c'", optopt);
  usage_error("unknown option '-\\x%02x'", (unsigned)(optopt & 0xff));
}

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
    if (whole > 1000000000)
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
  if (v > (int64_t)1000000000 * 1000)
    return -1;
  if (v == 0 && nonzero)
    return -2;
  *ms = v;
  return 0;
}

const char *default_servers(void) {
  const char *s = getenv("ZKR_SERVERS");
  return s && *s ? s : "127.0.0.1:2181";
}

int utf8_seq(const unsigned char *p, uint32_t *cp) {
  unsigned char c = p[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int n;
  uint32_t v, min;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0; /* a continuation byte, 0xc0/0xc1 or 0xf5-0xff */
  }
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0; /* also stops at the terminating NUL */
    v = (v << 6) | (p[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

const char *esc(const char *s) {
  static char *slot[4];
  static unsigned next;
  if (!s)
    return "(null)";
  size_t len = strlen(s);
  char *out = malloc(len * 4 + 1);
  if (!out)
    return "(out of memory)";
  size_t k = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n = utf8_seq(p, &cp);
    if (n > 0 && cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f) && cp != '\\') {
      memcpy(out + k, p, (size_t)n);
      k += (size_t)n;
      p += n;
      continue;
    }
    if (n == 0)
      n = 1; /* one invalid byte */
    for (int i = 0; i < n; i++, p++) {
      if (*p == '\n' || *p == '\t' || *p == '\r' || *p == '\\') {
        out[k++] = '\\';
        out[k++] = *p == '\n'   ? 'n'
                   : *p == '\t' ? 't'
                   : *p == '\r' ? 'r'
                                : '\\';
      } else {
        snprintf(out + k, 5, "\\x%02x", *p);
        k += 4;
      }
    }
  }
  out[k] = '\0';
  free(slot[next % 4]);
  slot[next++ % 4] = out;
  return out;
}

void json_string(FILE *f, const char *s) {
  fputc('"', f);
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    uint32_t cp;
    int n = utf8_seq(p, &cp);
    if (n == 0) {
      fprintf(f, "\\u%04x", *p++); /* not UTF-8: the byte, as Latin-1 */
    } else if (cp == '"' || cp == '\\') {
      fprintf(f, "\\%c", (int)cp);
      p++;
    } else if (cp == '\n' || cp == '\t' || cp == '\r' || cp == '\b' ||
               cp == '\f') {
      fprintf(f, "\\%c",
              cp == '\n'   ? 'n'
              : cp == '\t' ? 't'
              : cp == '\r' ? 'r'
              : cp == '\b' ? 'b'
                           : 'f');
      p++;
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      fprintf(f, "\\u%04x", (unsigned)cp);
      p += n;
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}
