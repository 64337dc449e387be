/* Path and connection-string validation. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
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

/* The length of the UTF-8 sequence at @p (its first byte >= 0x80) if it
 * is one the server accepts in a path, else 0. The server decodes a path
 * as UTF-8 and refuses (PathUtils.validatePath in ZooKeeper 3.8) U+0080
 * to U+009F, U+D800 to U+F8FF (surrogates and the private use area),
 * U+FFF0 to U+FFFF and, since Java strings hold them as surrogate pairs,
 * every character above U+FFFF; invalid UTF-8 decodes to U+FFFD, refused
 * too. Overlong forms are refused here as invalid. */
static size_t utf8_char_ok(const char *p) {
  const unsigned char *u = (const unsigned char *)p;
  uint32_t cp;
  size_t n;
  if (u[0] >= 0xc2 && u[0] <= 0xdf) {
    n = 2;
    cp = u[0] & 0x1fu;
  } else if (u[0] >= 0xe0 && u[0] <= 0xef) {
    n = 3;
    cp = u[0] & 0x0fu;
  } else {
    return 0; /* a continuation byte, an overlong lead, or 4 bytes+ */
  }
  for (size_t i = 1; i < n; i++) {
    if ((u[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (u[i] & 0x3fu);
  }
  if (n == 3 && cp < 0x800)
    return 0; /* overlong */
  if (cp <= 0x9f || (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0)
    return 0;
  return n;
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
    if (c >= 0x80) {
      size_t n = utf8_char_ok(p);
      if (n == 0)
        return ZKR_EBADPATH;
      p += n - 1;
    }
  }
  return ZKR_OK;
}

int zkr__path_call_check(const char *path) {
  int rc = zkr__path_check(path);
  if (rc == ZKR_OK && zkr__tls_in_callback)
    rc = ZKR_EDEADLK;
  return rc;
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
  if (end == hosts)
    return ZKR_EBADCONN; /* a chroot and no host */
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
