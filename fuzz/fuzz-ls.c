/* What zkr-ls makes of what it reads (tools/ls.c and tools/cli-text.c,
 * linked as the tools link them): the contender data parser
 * parse_owner (the library's own writer, zkr__contender_data, and a
 * formatted "host=H pid=P id=I", also with a multi-lock set's " set=N"
 * before the id, parse back to their fields; an id cut to
 * fit is cut between characters), the node classification (every name
 * the library orders has a sequence number for zkr-ls too; "read",
 * "write", "latch" and "selector" are exactly the names the library's
 * rules call so, for zkr's, Curator's and kazoo's names, before and after
 * the counter wraps; a semaphore is exactly "leases" and maybe "locks"),
 * and the table and JSON it prints from any node
 * names and data (valid UTF-8, no control characters, one line per
 * contender).
 *
 * Input: 1 byte (what to fuzz), then NUL-separated strings. */
#include "config.h"

#include <unistd.h>

#include "cli.h"
#include "fuzz.h"
#include "ls.h"
#include "recipe.h"

const char *prog = "zkr-ls";

static int is(const char *a, const char *b) {
  return strcmp(a, b) == 0;
}

/* ---- parse_owner ---- */

static void owner(char **s, int n) {
  struct owner o;
  const char *data = s[0];
  if (parse_owner(data, &o)) {
    CHECK(strncmp(data, "host=", 5) == 0, "'%s'", data);
    size_t hl = strcspn(data + 5, " ");
    CHECK(strlen(o.host) == hl && memcmp(o.host, data + 5, hl) == 0 &&
              hl < sizeof o.host,
          "'%s': host '%s'", data, o.host);
    const char *p = data + 5 + hl;
    CHECK(strncmp(p, " pid=", 5) == 0, "'%s'", data);
    char *end;
    long pid = strtol(p + 5, &end, 10);
    CHECK(o.pid == pid, "'%s': pid %ld", data, o.pid);
    if (strncmp(end, " set=", 5) == 0) { /* a multi-lock set's node */
      long set = strtol(end + 5, &end, 10);
      CHECK(o.set == set && set >= 1 && set <= 64, "'%s': set %d", data, o.set);
    } else {
      CHECK(o.set == 0, "'%s': set %d", data, o.set);
    }
    if (*end) {
      CHECK(strncmp(end, " id=", 4) == 0, "'%s'", data);
      const char *id = end + 4;
      size_t il = strlen(o.id);
      CHECK(il < sizeof o.id && strncmp(o.id, id, il) == 0, "'%s': id '%s'",
            data, o.id);
      if (strlen(id) < sizeof o.id)
        CHECK(il == strlen(id), "'%s': id '%s' cut", data, o.id);
      else if (fuzz_utf8_valid(id))
        CHECK(fuzz_utf8_valid(o.id) && il + 4 >= sizeof o.id - 1,
              "'%s': id cut to %zu bytes inside a character", data, il);
    } else {
      CHECK(o.id[0] == '\0', "'%s': id '%s'", data, o.id);
    }
  }

  /* format, parse: a host without spaces, a pid, an id */
  if (n >= 2) {
    char host[256];
    size_t k = 0;
    for (const char *p = s[0]; *p && k < sizeof host - 1; p++)
      if (*p != ' ')
        host[k++] = *p;
    host[k] = '\0';
    long pid = (long)strlen(s[1]) * 7919 - 3;
    const char *id = s[1];
    size_t need = strlen(host) + strlen(id) + 64;
    char *buf = malloc(need);
    CHECK(buf != NULL, "oom");
    snprintf(buf, need, "host=%s pid=%ld id=%s", host, pid, id);
    CHECK(parse_owner(buf, &o) && is(o.host, host) && o.pid == pid,
          "'%s' did not parse back", buf);
    if (strlen(id) < sizeof o.id)
      CHECK(is(o.id, id), "'%s': id '%s'", buf, o.id);
    snprintf(buf, need, "host=%s pid=%ld", host, pid);
    CHECK(parse_owner(buf, &o) && is(o.host, host) && o.pid == pid &&
              o.id[0] == '\0',
          "'%s' did not parse back", buf);
    int set = 1 + (int)(strlen(s[1]) % 64);
    snprintf(buf, need, "host=%s pid=%ld set=%d id=%s", host, pid, set, id);
    CHECK(parse_owner(buf, &o) && is(o.host, host) && o.pid == pid &&
              o.set == set,
          "'%s' did not parse back", buf);
    if (strlen(id) < sizeof o.id)
      CHECK(is(o.id, id), "'%s': id '%s'", buf, o.id);
    free(buf);

    /* what the library writes parses back */
    if (zkr__contender_id_check(id) == ZKR_OK) {
      char data2[1024], me[256];
      zkr__contender_data(id, data2, sizeof data2);
      CHECK(parse_owner(data2, &o) && o.pid == (long)getpid() && is(o.id, id),
            "the library's '%s' did not parse back", data2);
      if (gethostname(me, sizeof me) == 0) {
        me[sizeof me - 1] = '\0';
        CHECK(is(o.host, me), "host '%s'", o.host);
      }
    }
  }
}

/* ---- classification ---- */

static const char *const markers[] = {"-lock-",   "__READ__", "__WRIT__",
                                      "-latch-",  "-lease-",  "__lock__",
                                      "__rlock__"};

static void classify(const char *name) {
  if (strchr(name, '/'))
    return; /* not a child's name */
  int32_t seq;
  if (!zkr__seq_parse(name, &seq))
    return; /* not a contender for the library either */
  CHECK(ls_has_seq(name), "'%s' (seq %d) is no contender for zkr-ls", name,
        seq);
  int reader =
      zkr__seq_marked(name, "__READ__") || zkr__seq_marked(name, "__rlock__");
  int writer = !reader && (zkr__seq_marked(name, "__WRIT__") ||
                           zkr__seq_marked(name, "__lock__"));
  int lease = !reader && !writer && zkr__seq_marked(name, "-lease-");
  zkr_role k = zkr__role_of(name, ZKR__IN_LOCK);
  CHECK((k == ZKR_ROLE_READ) == reader && (k == ZKR_ROLE_WRITE) == writer &&
            (k == ZKR_ROLE_LEASE) == lease &&
            (reader || writer || lease || k == ZKR_ROLE_LOCK),
        "'%s' (seq %d): role '%s', the markers say %s", name, seq,
        zkr_role_name(k),
        reader   ? "read"
        : writer ? "write"
        : lease  ? "lease"
                 : "lock");
  int latch = zkr__seq_marked(name, "-latch-");
  int selector = !latch && zkr__seq_marked(name, "-lock-");
  zkr_role ek = zkr__role_of(name, ZKR__IN_ELECTION);
  CHECK((ek == ZKR_ROLE_LATCH) == latch &&
            (ek == ZKR_ROLE_SELECTOR) == selector &&
            (latch || selector || ek == k),
        "'%s' (seq %d): election role '%s'", name, seq, zkr_role_name(ek));
  char *kids[1] = {(char *)name};
  CHECK((zkr_layout_of(kids, 1) == ZKR_LAYOUT_ELECTION) == latch,
        "'%s' (seq %d): layout %s", name, seq,
        zkr_layout_name(zkr_layout_of(kids, 1)));
}

static void names(char **s, int n, const uint8_t *raw, size_t rawn) {
  /* a semaphore's children: "leases", maybe "locks", nothing else */
  int leases = 0, other = 0;
  for (int i = 0; i < n; i++) {
    leases |= is(s[i], "leases");
    other |= !is(s[i], "leases") && !is(s[i], "locks");
  }
  CHECK((zkr_layout_of(s, (size_t)n) == ZKR_LAYOUT_SEMAPHORE) ==
            (leases && !other),
        "%d children: layout %s", n,
        zkr_layout_name(zkr_layout_of(s, (size_t)n)));
  for (int i = 0; i < n; i++) {
    classify(s[i]);
    /* and built: PREFIX MARKER "%010d" */
    for (size_t m = 0; m < sizeof markers / sizeof *markers; m++) {
      int32_t v = 0;
      for (size_t b = 0; b < 4 && b < rawn; b++)
        v = (int32_t)(((uint32_t)v << 8) | raw[(b + m) % rawn]);
      size_t need = strlen(s[i]) + 32;
      char *built = malloc(need);
      CHECK(built != NULL, "oom");
      snprintf(built, need, "%s%s%010d", s[i], markers[m], v);
      classify(built);
      free(built);
    }
  }
}

/* ---- the table and the JSON ---- */

static void table(char **s, int n, int flags) {
  size_t cap = (size_t)n / 2 + 1;
  zkr_participant *p = calloc(cap, sizeof *p);
  CHECK(p != NULL, "oom");
  size_t k = 0;
  for (int i = 0; i + 1 < n; i += 2) {
    int32_t seq;
    if (!zkr__seq_parse(s[i], &seq))
      continue;
    p[k].node = s[i];
    p[k].data = s[i + 1];
    p[k].seq = seq;
    p[k].is_holder = k == 0;
    p[k].session_id = (int64_t)0x100000000LL * (int64_t)k + 1;
    p[k].czxid = (int64_t)k * 1000 + seq;
    p[k].ctime_ms = ls_wall_ms() - (int64_t)k * 61000;
    k++;
  }
  struct ls_view v = {p, k, 0, (flags & 2) != 0};
  ls_json = flags & 1;
  FILE *real = stdout;
  char *out = NULL;
  size_t outn = 0;
  stdout = open_memstream(&out, &outn);
  CHECK(stdout != NULL, "oom");
  ls_show_queue("/q", &v);
  fclose(stdout);
  stdout = real;
  CHECK(strlen(out) == outn, "a NUL in the output");
  CHECK(fuzz_clean_text(out), "%s output not clean:\n%s",
        ls_json ? "JSON" : "table", out);
  if (!ls_json) {
    size_t lines = 0;
    for (const char *q = out; *q; q++)
      lines += *q == '\n';
    CHECK(lines == (k ? k + 2 : 1) && outn > 0 && out[outn - 1] == '\n',
          "%zu contenders in %zu lines:\n%s", k, lines, out);
  } else {
    CHECK(!strchr(out, '\n'), "JSON in more than one line");
  }
  ls_json = 0;
  free(out);
  free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0] % 3, flags = data[0] / 3;
  const uint8_t *raw = data + 1;
  size_t rawn = size - 1;
  char *s[33];
  int n = 0;
  const uint8_t *d = raw;
  size_t dn = rawn;
  while (n < 32) {
    const uint8_t *rest;
    size_t rest_size;
    s[n++] = fuzz_split(d, dn, &rest, &rest_size);
    if (!rest)
      break;
    d = rest;
    dn = rest_size;
  }
  switch (mode) {
  case 0:
    owner(s, n);
    break;
  case 1:
    names(s, n, raw, rawn);
    break;
  case 2:
    table(s, n, flags);
    break;
  }
  for (int i = 0; i < n; i++)
    free(s[i]);
  return 0;
}
