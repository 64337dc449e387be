/* Path and connection-string validation. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

/* An IPv6 address in the textual form inet_pton() takes (no zone). */
static int v6_ok(const char *h, size_t n) {
  char buf[INET6_ADDRSTRLEN];
  struct in6_addr a;
  if (n == 0 || n >= sizeof buf)
    return 0;
  memcpy(buf, h, n);
  buf[n] = '\0';
  return inet_pton(AF_INET6, buf, &a) == 1;
}

static int host_ok(const char *h, size_t n) {
  if (n == 0)
    return 0;
  if (h[0] == '[') /* [v6 address] */
    return n >= 3 && h[n - 1] == ']' && v6_ok(h + 1, n - 2);
  if (memchr(h, ':', n)) /* a bare v6 address: the port after its last ':' */
    return v6_ok(h, n);
  for (size_t i = 0; i < n; i++) {
    char c = h[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
      return 0;
  }
  return 1;
}

/* Calls @fn for each "host:port" of a checked connection string: the host
 * (brackets included) and the port as written. Returns the chroot ("" if
 * none). */
static const char *each_host(const char *hosts,
                             void (*fn)(const char *h, size_t hn,
                                        const char *port, size_t pn, void *ud),
                             void *ud) {
  const char *slash = strchr(hosts, '/');
  const char *end = slash ? slash : hosts + strlen(hosts);
  const char *p = hosts;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *e = comma ? comma : end;
    const char *colon = e;
    while (colon > p && colon[-1] != ':')
      colon--;
    colon--; /* checked: there is one */
    fn(p, (size_t)(colon - p), colon + 1, (size_t)(e - colon - 1), ud);
    if (!comma)
      break;
    p = comma + 1;
  }
  return slash ? slash : "";
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
    /* host:port, the port after the last ':' (v6 in brackets or bare) */
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

struct client_form {
  char *out;
  size_t len;
};

static void put_host(const char *h, size_t hn, const char *port, size_t pn,
                     void *ud) {
  struct client_form *cf = ud;
  if (cf->len > 0)
    cf->out[cf->len++] = ',';
  if (h[0] == '[') { /* the client would pass the brackets to getaddrinfo */
    h++;
    hn -= 2;
  }
  memcpy(cf->out + cf->len, h, hn);
  cf->len += hn;
  cf->out[cf->len++] = ':';
  while (pn > 1 && port[0] == '0') { /* the client reads "0" as octal */
    port++;
    pn--;
  }
  memcpy(cf->out + cf->len, port, pn);
  cf->len += pn;
}

char *zkr__hosts_client(const char *hosts) {
  struct client_form cf = {malloc(strlen(hosts) + 1), 0};
  if (!cf.out)
    return NULL;
  const char *chroot = each_host(hosts, put_host, &cf);
  memcpy(cf.out + cf.len, chroot, strlen(chroot) + 1);
  return cf.out;
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
