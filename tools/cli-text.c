/*
 * Untrusted text made safe to show (see cli-text.h): UTF-8 decoding, the
 * escaping of node names, node data and arguments for messages and
 * tables, JSON strings, and zkr's contender data ("host=H pid=P id=I")
 * read into its fields.
 *
 * Owns: esc()'s per-thread results. Must not touch: where the text goes
 * (the callers print it).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-text.h"

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

/* esc()'s last four results, per thread (zkr-exporter escapes on its HTTP
 * threads and on main), freed when the thread ends. */
struct esc_slots {
  char *slot[4];
  unsigned next;
};
static pthread_key_t esc_key;
static pthread_once_t esc_once = PTHREAD_ONCE_INIT;
static void esc_slots_free(void *p) {
  struct esc_slots *e = p;
  for (int i = 0; i < 4; i++)
    free(e->slot[i]);
  free(e);
}
static void esc_key_make(void) {
  pthread_key_create(&esc_key, esc_slots_free);
}

const char *esc(const char *s) {
  if (!s)
    return "(null)";
  pthread_once(&esc_once, esc_key_make);
  struct esc_slots *e = pthread_getspecific(esc_key);
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e || pthread_setspecific(esc_key, e) != 0) {
      free(e);
      return "(out of memory)";
    }
  }
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
  free(e->slot[e->next % 4]);
  e->slot[e->next++ % 4] = out;
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

int parse_owner(const char *data, struct owner *o) {
  memset(o, 0, sizeof *o);
  if (!data || strncmp(data, "host=", 5) != 0)
    return 0;
  const char *h = data + 5, *sp = strchr(h, ' ');
  if (!sp || (size_t)(sp - h) >= sizeof o->host)
    return 0;
  memcpy(o->host, h, (size_t)(sp - h));
  if (strncmp(sp + 1, "pid=", 4) != 0)
    return 0;
  char *end;
  errno = 0;
  o->pid = strtol(sp + 5, &end, 10);
  if (errno || end == sp + 5)
    return 0;
  if (*end == '\0')
    return 1;
  if (strncmp(end, " set=", 5) == 0) {
    const char *ns = end + 5;
    long n = strtol(ns, &end, 10);
    if (end == ns || n < 1 || n > 64 || (*end != '\0' && *end != ' '))
      return 0;
    o->set = (int)n;
    if (*end == '\0')
      return 1;
  }
  if (strncmp(end, " id=", 4) != 0)
    return 0;
  /* cut to fit between two UTF-8 characters, not inside one */
  const char *id = end + 4;
  size_t n = strlen(id);
  if (n >= sizeof o->id) {
    n = sizeof o->id - 1;
    while (n > 0 && ((unsigned char)id[n] & 0xc0) == 0x80)
      n--;
  }
  memcpy(o->id, id, n);
  o->id[n] = '\0';
  return 1;
}

void json_owner(FILE *f, const struct owner *o) {
  fprintf(f, ",\"host\":");
  json_string(f, o->host);
  fprintf(f, ",\"pid\":%ld,\"id\":", o->pid);
  json_string(f, o->id);
  if (o->set)
    fprintf(f, ",\"set\":%d", o->set);
}
