/* Path and connection-string validation. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "zkr-private.h"

int main(void) {
  tap_init(10);
  static const char *good[] = {
      "/", "/a", "/a/b", "/locks/job-1", "/a.b/..c", "/x/.../y", "/ünïcode"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    is(zkr__path_check(good[i]), ZKR_OK, "path '%s' accepted", good[i]);
  static const char *bad[] = {"",      "a",       "a/b",   "//", "/a//b",
                              "/a/",   "/a/./b",  "/a/..", "/.", "/..",
                              "/a\nb", "/a\x01b", "/a\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    is(zkr__path_check(bad[i]), ZKR_EBADPATH, "path #%zu refused", i);
  is(zkr__path_check(NULL), ZKR_EBADPATH, "NULL path refused");
  /* What the server refuses (ZooKeeper 3.8's PathUtils.validatePath, on
   * the path decoded as UTF-8) is refused before anything is sent. */
  static const char *utf_good[] = {"/\xc2\xa0nbsp", "/\xe2\x82\xac",
                                   "/\xef\xbf\xaf", "/\xe0\xa0\x80",
                                   "/\xef\xa4\x80"};
  for (size_t i = 0; i < sizeof utf_good / sizeof *utf_good; i++)
    is(zkr__path_check(utf_good[i]), ZKR_OK, "UTF-8 path #%zu accepted", i);
  static const char *utf_bad[] = {
      "/\xc2\x80",              /* U+0080, a C1 control */
      "/\xc2\x9f",              /* U+009F */
      "/\xef\xa3\xbf",          /* U+F8FF, the last private use one */
      "/\xee\x80\x80",          /* U+E000, private use */
      "/\xed\xa0\x80",          /* U+D800, a surrogate */
      "/\xef\xbf\xbd",          /* U+FFFD */
      "/\xef\xbf\xbf",          /* U+FFFF */
      "/emoji\xf0\x9f\x98\x80", /* U+1F600: a surrogate pair in Java */
      "/\xff",                  /* invalid UTF-8 */
      "/a\x80"
      "b",             /* a lone continuation byte */
      "/\xc3",         /* truncated */
      "/\xc0\xaf",     /* overlong */
      "/\xe0\x80\xaf", /* overlong */
  };
  for (size_t i = 0; i < sizeof utf_bad / sizeof *utf_bad; i++)
    is(zkr__path_check(utf_bad[i]), ZKR_EBADPATH, "UTF-8 path #%zu refused", i);
  char *longp = malloc(ZKR__PATH_MAX + 2);
  longp[0] = '/';
  memset(longp + 1, 'a', ZKR__PATH_MAX);
  longp[ZKR__PATH_MAX + 1] = '\0';
  is(zkr__path_check(longp), ZKR_EBADPATH, "over-long path refused");
  longp[ZKR__PATH_MAX] = '\0';
  is(zkr__path_check(longp), ZKR_OK, "path of the maximum length accepted");
  free(longp);

  static const char *hgood[] = {"127.0.0.1:2181",
                                "a:1,b:2,c:3",
                                "zk-1.example.com:2181/app",
                                "[::1]:2181",
                                "h:65535/a/b",
                                "::1:2181",
                                "[::1]:1,::1:2,127.0.0.1:3/x",
                                "[fe80::a:1]:2181",
                                "2001:db8::1:2181",
                                "[::ffff:127.0.0.1]:2181"};
  for (size_t i = 0; i < sizeof hgood / sizeof *hgood; i++)
    is(zkr__hosts_check(hgood[i]), ZKR_OK, "hosts '%s' accepted", hgood[i]);
  static const char *hbad[] = {
      "",          "localhost", "h:",      ":2181",      "h:0",
      "h:65536",   "h:12x",     "h:1,",    "h:1,,h:2",   "h h:1",
      "[::1:2181", ",h:1",      "[]:2181", "[::g]:2181", "[::1]2181",
      "::g:2181",  "1:2:2181",  "[::1]:",  "::1]:2181",  "[[::1]]:1",
      "::::2181"};
  for (size_t i = 0; i < sizeof hbad / sizeof *hbad; i++)
    is(zkr__hosts_check(hbad[i]), ZKR_EBADCONN, "hosts '%s' refused", hbad[i]);
  is(zkr__hosts_check("h:1/"), ZKR_EBADPATH, "chroot '/' refused");
  is(zkr__hosts_check("h:1/a/"), ZKR_EBADPATH, "chroot '/a/' refused");
  is(zkr__hosts_check("h:1/a//b"), ZKR_EBADPATH, "chroot '/a//b' refused");
  is(zkr__hosts_check(NULL), ZKR_EBADCONN, "NULL hosts refused");
  /* found by fuzz/fuzz-hosts (corpus: finding-chroot-only): a chroot with
   * no host before it was accepted, and zookeeper_init given no server */
  is(zkr__hosts_check("/h63158"), ZKR_EBADCONN, "a chroot alone refused");

  /* what the ZooKeeper C client is given: its getaddrinfo would get the
   * brackets, and its strtol(..., 0) would read "0" as octal */
  static const char *const conv[][2] = {
      {"127.0.0.1:2181", "127.0.0.1:2181"},
      {"[::1]:2181", "::1:2181"},
      {"::1:2181", "::1:2181"},
      {"a:1,[::1]:02181,[fe80::1]:3/ch/root", "a:1,::1:2181,fe80::1:3/ch/root"},
      {"h:00010/a", "h:10/a"}};
  for (size_t i = 0; i < sizeof conv / sizeof *conv; i++) {
    char *c = zkr__hosts_client(conv[i][0]);
    ok(zkr__hosts_check(conv[i][0]) == ZKR_OK && c &&
           strcmp(c, conv[i][1]) == 0,
       "client form of '%s' is '%s' (got '%s')", conv[i][0], conv[i][1],
       c ? c : "NULL");
    free(c);
  }

  char *j = zkr__path_join("/", "a");
  ok(j && strcmp(j, "/a") == 0, "join / a");
  free(j);
  j = zkr__path_join("/x/y", "a");
  ok(j && strcmp(j, "/x/y/a") == 0, "join /x/y a");
  free(j);
  return tap_done();
}
