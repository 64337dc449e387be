/* Connection strings and their chroot (lib/path.c) and the session
 * options (lib/sessopts.c): a checked string's client form (what
 * zookeeper_init gets) is itself a checked string, is its own client form,
 * names the same servers with the same ports in the same order, has no
 * brackets and no port with a leading zero, and keeps the chroot, which
 * is a valid path other than "/"; a string that is accepted has a host
 * before its chroot. The session options are accepted exactly in their
 * documented ranges (0 meaning the default).
 *
 * Input: a connection string, optionally a NUL and 4 bytes (a number for
 * the options). */
#include "config.h"

#include "fuzz.h"
#include "session-int.h"

/* One "host:port" of a checked string: the host without brackets, the
 * port's value. */
struct server {
  const char *host;
  size_t hn;
  long port;
};

/* Splits a checked string into its servers (at most @max) and chroot;
 * returns the number of servers. Written apart from lib/path.c. */
static size_t split(const char *s, struct server *sv, size_t max,
                    const char **chroot) {
  const char *slash = strchr(s, '/');
  size_t end = slash ? (size_t)(slash - s) : strlen(s);
  *chroot = slash ? slash : "";
  size_t n = 0, i = 0;
  while (i < end && n < max) {
    size_t j = i;
    while (j < end && s[j] != ',')
      j++;
    size_t colon = j;
    while (colon > i && s[colon - 1] != ':')
      colon--;
    CHECK(colon > i, "no ':' in a server of '%s'", s);
    colon--;
    const char *h = s + i;
    size_t hn = colon - i;
    if (hn >= 2 && h[0] == '[') {
      h++;
      hn -= 2;
    }
    sv[n].host = h;
    sv[n].hn = hn;
    sv[n].port = strtol(s + colon + 1, NULL, 10);
    n++;
    i = j + 1;
  }
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *rest;
  size_t rest_size;
  char *hosts = fuzz_split(data, size, &rest, &rest_size);

  int rc = zkr__hosts_check(hosts);
  CHECK(rc == ZKR_OK || rc == ZKR_EBADCONN || rc == ZKR_EBADPATH, "rc %d", rc);
  if (rc == ZKR_OK) {
    const char *slash = strchr(hosts, '/');
    CHECK(slash != hosts, "'%s': a chroot and no host", hosts);
    if (slash) {
      CHECK(zkr__path_check(slash) == ZKR_OK && strcmp(slash, "/") != 0,
            "'%s': chroot '%s'", hosts, slash);
    }
    char *client = zkr__hosts_client(hosts);
    CHECK(client != NULL, "oom");
    CHECK(strlen(client) <= strlen(hosts), "'%s' grew to '%s'", hosts, client);
    CHECK(zkr__hosts_check(client) == ZKR_OK, "'%s': client form '%s' refused",
          hosts, client);
    const char *cslash = strchr(client, '/');
    size_t hl = cslash ? (size_t)(cslash - client) : strlen(client);
    CHECK(!memchr(client, '[', hl), "'%s': brackets left in '%s'", hosts,
          client);
    char *again = zkr__hosts_client(client);
    CHECK(again && strcmp(again, client) == 0, "'%s' -> '%s' -> '%s'", hosts,
          client, again ? again : "(null)");
    free(again);

    size_t max = 1;
    for (const char *p = hosts; *p; p++)
      max += *p == ',';
    struct server *a = calloc(max, sizeof *a), *b = calloc(max, sizeof *b);
    CHECK(a && b, "oom");
    const char *ca, *cb;
    size_t na = split(hosts, a, max, &ca), nb = split(client, b, max, &cb);
    CHECK(na == nb, "'%s': %zu servers, client form '%s' %zu", hosts, na,
          client, nb);
    CHECK(strcmp(ca, cb) == 0, "'%s': chroot '%s' became '%s'", hosts, ca, cb);
    for (size_t i = 0; i < na; i++) {
      CHECK(a[i].hn == b[i].hn && memcmp(a[i].host, b[i].host, a[i].hn) == 0 &&
                a[i].port == b[i].port && a[i].port >= 1 && a[i].port <= 65535,
            "'%s': server %zu '%.*s':%ld became '%.*s':%ld", hosts, i,
            (int)a[i].hn, a[i].host, a[i].port, (int)b[i].hn, b[i].host,
            b[i].port);
    }
    free(a);
    free(b);
    /* no port the client would read as octal */
    for (const char *p = client;
         (p = memchr(p, ':', hl - (size_t)(p - client))) != NULL; p++) {
      size_t k = strspn(p + 1, "0123456789");
      if (k > 0 && (p[1 + k] == ',' || p[1 + k] == '/' || p[1 + k] == '\0'))
        CHECK(p[1] != '0', "'%s': port with a leading zero in '%s'", hosts,
              client);
    }
    free(client);
  }

  if (rest && rest_size >= 4) {
    int32_t v =
        (int32_t)(((uint32_t)rest[0] << 24) | ((uint32_t)rest[1] << 16) |
                  ((uint32_t)rest[2] << 8) | (uint32_t)rest[3]);
    struct zkr__sopts d;
    int src =
        zkr__opts_from(&d, &(zkr_session_options){.session_timeout_ms = v});
    CHECK((src == ZKR_OK) == (v == 0 || (v >= ZKR_SESSION_TIMEOUT_MIN &&
                                         v <= ZKR_SESSION_TIMEOUT_MAX)),
          "session timeout %d: %d", v, src);
    CHECK(src != ZKR_OK || d.session_timeout == (v ? v : 10000),
          "session timeout %d: %d kept", v, d.session_timeout);
    int crc =
        zkr__opts_from(&d, &(zkr_session_options){.connect_timeout_ms = v});
    CHECK((crc == ZKR_OK) == (v >= 0), "connect timeout %d: %d", v, crc);
    double f = (double)v / 1000.0;
    int frc = zkr__opts_from(&d, &(zkr_session_options){.lost_fraction = f});
    CHECK((frc == ZKR_OK) == (f == 0.0 || (f > 0.0 && f <= 10.0)),
          "lost fraction %g: %d", f, frc);
    if (rest_size > 4) {
      /* digest credentials: any scheme but "", any credential */
      char *scheme = fuzz_cstr(rest + 4, rest_size - 4);
      zkr_auth a = {scheme, hosts};
      int arc = zkr__opts_from(
          &d, &(zkr_session_options){.auth = &a, .auth_count = 1});
      CHECK((arc == ZKR_OK) == (scheme[0] != '\0'), "scheme '%s': %d", scheme,
            arc);
      if (arc == ZKR_OK)
        zkr__opts_clear(&d);
      free(scheme);
    }
    CHECK(
        zkr__opts_from(&d,
                       &(zkr_session_options){.auth = &(zkr_auth){NULL, "x"},
                                              .auth_count = 1}) == ZKR_EINVAL &&
            zkr__opts_from(
                &d, &(zkr_session_options){.auth = &(zkr_auth){"digest", NULL},
                                           .auth_count = 1}) == ZKR_EINVAL,
        "NULL auth");
  }
  free(hosts);
  return 0;
}
