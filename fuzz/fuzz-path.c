/* Path validation (lib/path.c, lib/recipe.c): zkr__path_check against a
 * reference written from the server's rules, the lock path rule, joining
 * a valid parent and a valid name, and the contender id check.
 *
 * Input: a path, optionally a NUL and a second string (a child name and
 * an id). */
#include "config.h"

#include "fuzz.h"
#include "recipe.h"
#include "zkr-private.h"

/* The server's rule (PathUtils.validatePath, ZooKeeper 3.8) for a code
 * point, and ours for what it would turn into U+FFFD. */
static int cp_ok(uint32_t cp) {
  return !(cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
           (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0);
}

static int ref_path_ok(const char *s) {
  size_t len = strlen(s);
  if (len == 0 || s[0] != '/' || len > ZKR__PATH_MAX)
    return 0;
  if (len == 1)
    return 1;
  if (s[len - 1] == '/')
    return 0;
  for (const char *c = s + 1;;) {
    const char *e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') ||
        (n == 2 && c[0] == '.' && c[1] == '.'))
      return 0;
    if (!e)
      break;
    c = e + 1;
  }
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    uint32_t cp;
    int n = fuzz_utf8(p, &cp);
    if (n == 0 || !cp_ok(cp))
      return 0;
    p += n;
  }
  return 1;
}

static int ref_id_ok(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n > 256)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *rest;
  size_t rest_size;
  char *path = fuzz_split(data, size, &rest, &rest_size);
  char *child = rest ? fuzz_cstr(rest, rest_size) : NULL;

  int rc = zkr__path_check(path);
  CHECK(rc == ZKR_OK || rc == ZKR_EBADPATH, "rc %d", rc);
  int ok = rc == ZKR_OK;
  CHECK(ok == ref_path_ok(path), "'%s': check says %d, reference %d", path, ok,
        !ok);

  /* a lock may not be the root or under /zookeeper */
  int lrc = zkr__lock_path_check(path);
  int lock_ok = ok && strcmp(path, "/") != 0 &&
                strcmp(path, "/zookeeper") != 0 &&
                strncmp(path, "/zookeeper/", 11) != 0;
  CHECK((lrc == ZKR_OK) == lock_ok, "'%s': lock check %d", path, lrc);
  CHECK(lrc == ZKR_OK || lrc == ZKR_EBADPATH, "lock rc %d", lrc);

  if (ok && path[1] != '\0') {
    /* a valid path is its valid parent joined with its last name */
    const char *slash = strrchr(path, '/');
    size_t pl = (size_t)(slash - path);
    char *parent = pl == 0 ? zkr__strdup("/") : strndup(path, pl);
    CHECK(parent != NULL, "oom");
    CHECK(zkr__path_check(parent) == ZKR_OK, "parent '%s' of '%s'", parent,
          path);
    char *joined = zkr__path_join(parent, slash + 1);
    CHECK(joined && strcmp(joined, path) == 0, "join '%s' + '%s' = '%s'",
          parent, slash + 1, joined ? joined : "(null)");
    free(joined);
    free(parent);
  }

  if (child) {
    /* a valid path joined with a valid name is valid while it fits */
    size_t cl = strlen(child);
    char *as_path = malloc(cl + 2);
    CHECK(as_path != NULL, "oom");
    as_path[0] = '/';
    memcpy(as_path + 1, child, cl + 1);
    int name_ok =
        cl > 0 && !strchr(child, '/') && zkr__path_check(as_path) == ZKR_OK;
    if (ok && name_ok) {
      char *j = zkr__path_join(path, child);
      CHECK(j != NULL, "oom");
      size_t expect = (strcmp(path, "/") == 0 ? 0 : strlen(path)) + 1 + cl;
      CHECK(strlen(j) == expect, "joined length %zu, expected %zu", strlen(j),
            expect);
      CHECK((zkr__path_check(j) == ZKR_OK) == (expect <= ZKR__PATH_MAX),
            "'%s' joined with '%s': '%s' check %d", path, child, j,
            zkr__path_check(j));
      free(j);
    }
    free(as_path);

    /* the contender id: 1 to 256 bytes, no control characters */
    int irc = zkr__contender_id_check(child);
    CHECK((irc == ZKR_OK) == ref_id_ok(child), "id '%s': %d", child, irc);
    CHECK(irc == ZKR_OK || irc == ZKR_EINVAL, "id rc %d", irc);
  }
  CHECK(zkr__path_check(NULL) == ZKR_EBADPATH, "NULL path");
  free(child);
  free(path);
  return 0;
}
