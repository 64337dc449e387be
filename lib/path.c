/* Path and connection-string validation. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "zkr-private.h"

char *zkr__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

int zkr__path_check(const char *path) {
  if (path == NULL || path[0] != '/')
    return ZKR_EBADPATH;
  size_t len = strlen(path);
  if (len > ZKR__PATH_MAX)
    return ZKR_EBADPATH;
  if (len == 1)
    return ZKR_OK; /* the root */
  if (path[len - 1] == '/')
    return ZKR_EBADPATH;
  const char *comp = path + 1;
  for (const char *p = path + 1;; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '/' || c == '\0') {
      size_t clen = (size_t)(p - comp);
      if (clen == 0)
        return ZKR_EBADPATH; /* "//" */
      if ((clen == 1 && comp[0] == '.') ||
          (clen == 2 && comp[0] == '.' && comp[1] == '.'))
        return ZKR_EBADPATH;
      if (c == '\0')
        break;
      comp = p + 1;
      continue;
    }
    if (c < 0x20 || c == 0x7f)
      return ZKR_EBADPATH;
  }
  return ZKR_OK;
}

static int port_ok(const char *p, size_t n) {
  if (n == 0 || n > 5)
    return 0;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return 0;
    v = v * 10 + (p[i] - '0');
  }
  return v >= 1 && v <= 65535;
}

static int host_ok(const char *h, size_t n) {
  if (n == 0)
    return 0;
  if (h[0] == '[') { /* [v6 address] */
    if (n < 3 || h[n - 1] != ']')
      return 0;
    for (size_t i = 1; i + 1 < n; i++)
      if (!(h[i] == ':' || h[i] == '.' || (h[i] >= '0' && h[i] <= '9') ||
            (h[i] >= 'a' && h[i] <= 'f') || (h[i] >= 'A' && h[i] <= 'F')))
        return 0;
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    char c = h[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
      return 0;
  }
  return 1;
}

int zkr__hosts_check(const char *hosts) {
  if (hosts == NULL || hosts[0] == '\0')
    return ZKR_EBADCONN;
  if (strlen(hosts) > 4096)
    return ZKR_EBADCONN;
  const char *end = hosts + strlen(hosts);
  const char *slash = strchr(hosts, '/');
  if (slash) {
    int rc = zkr__path_check(slash);
    if (rc != ZKR_OK)
      return rc;
    if (slash[1] == '\0')
      return ZKR_EBADPATH; /* a chroot of "/" is meaningless */
    end = slash;
  }
  const char *p = hosts;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *e = comma ? comma : end;
    /* host:port, the port after the last ':' (v6 in brackets) */
    const char *colon = NULL;
    for (const char *q = e; q > p; q--)
      if (q[-1] == ':') {
        colon = q - 1;
        break;
      }
    if (colon == NULL)
      return ZKR_EBADCONN;
    if (!host_ok(p, (size_t)(colon - p)) ||
        !port_ok(colon + 1, (size_t)(e - colon - 1)))
      return ZKR_EBADCONN;
    if (!comma)
      break;
    p = comma + 1;
    if (p == end)
      return ZKR_EBADCONN; /* trailing comma */
  }
  return ZKR_OK;
}

char *zkr__path_join(const char *parent, const char *child) {
  size_t pl = strlen(parent), cl = strlen(child);
  if (pl == 1 && parent[0] == '/')
    pl = 0;
  char *out = malloc(pl + 1 + cl + 1);
  if (!out)
    return NULL;
  memcpy(out, parent, pl);
  out[pl] = '/';
  memcpy(out + pl + 1, child, cl + 1);
  return out;
}
