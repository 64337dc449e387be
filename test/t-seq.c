/* Contender names: sequence parsing and wrap-safe ordering. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "layout.h"
#include "zkr-private.h"

static int32_t seq_of(const char *name) {
  int32_t v = 0;
  if (!zkr__seq_parse(name, &v))
    return -777777;
  return v;
}

static int by_seq(const void *a, const void *b) {
  int32_t x = seq_of(*(const char *const *)a);
  int32_t y = seq_of(*(const char *const *)b);
  return zkr__seq_cmp(x, y);
}

int main(void) {
  tap_init(10);
  is(seq_of("_c_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab-lock-0000000042"), 42,
     "Curator/zkr mutex name");
  is(seq_of("4b1f0c7e9d2a4f6b8c3d5e7f9a1b2c3d__lock__0000000007"), 7,
     "kazoo lock name");
  is(seq_of("_c_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab-__READ__0000000003"), 3,
     "read lock name");
  is(seq_of("_c_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab-__WRIT__0000000004"), 4,
     "write lock name");
  is(seq_of("anything0000000100"), 100, "unknown name with a 10-digit tail");
  is(seq_of("_c_x-lock--000000005"), -5, "negative after the wrap");
  is(seq_of("_c_x-lock--2147483648"), INT32_MIN, "INT32_MIN");
  is(seq_of("_c_x-lock--1000000005"), -1000000005,
     "ten-digit negative after a marker");
  is(seq_of("x-2147483648"), INT32_MIN, "ten-digit negative, no marker");
  is(seq_of("_c_x-lock-2147483647"), INT32_MAX, "INT32_MAX");
  int32_t v;
  ok(!zkr__seq_parse("lease_holder", &v), "no sequence: not a contender");
  ok(!zkr__seq_parse("_c_x-lock-12345", &v), "short number: not a contender");
  ok(!zkr__seq_parse("_c_x-lock-00000000a1", &v), "letters: not a contender");
  ok(!zkr__seq_parse("x2147483648", &v), "out of int32 range: not one");
  ok(!zkr__seq_parse("", &v) && !zkr__seq_parse(NULL, &v), "empty / NULL");
  /* found by fuzz/fuzz-seq (corpus: finding-noncanonical-negative): only
   * what "%010d" writes is a sequence number; the parse read "-0000000003"
   * as -3 although the name does not end in "%010d" of -3 ("-000000003"),
   * so zkr__seq_marked disagreed with it */
  is(seq_of("40123456__READ__-0000000003"), 3,
     "'-' and ten digits with a leading zero: the ten digits are the number");
  ok(!zkr__seq_marked("40123456__READ__-0000000003", "__READ__"),
     "and the '-' stands between the marker and the number");
  ok(!zkr__seq_parse("_c_x-lock--000000000", &v), "'-000000000': not one");
  ok(zkr__seq_parse("_c_x-lock-0000000000", &v) && v == 0, "0 is '0000000000'");
  is(seq_of("x__rlock__-1500000000"), -1500000000,
     "ten-digit negative after kazoo's reader marker");

  ok(zkr__seq_cmp(1, 2) < 0 && zkr__seq_cmp(2, 1) > 0 &&
         zkr__seq_cmp(5, 5) == 0,
     "plain order");
  ok(zkr__seq_cmp(INT32_MAX, INT32_MIN) < 0,
     "INT32_MAX comes before INT32_MIN (the wrap)");
  ok(zkr__seq_cmp(INT32_MAX - 1, -2147483647) < 0, "across the wrap");
  ok(zkr__seq_cmp(-1, 0) < 0, "-1 before 0 (the counter's second wrap)");

  /* A queue created across the wrap, named by three implementations,
   * shuffled: sorting must give creation order. */
  const char *created[] = {
      "_c_a-lock-2147483645",
      "0123456789abcdef0123456789abcdef__lock__2147483646",
      "_c_b-lock-2147483647",
      "_c_c-lock--2147483648",
      "fedcba9876543210fedcba9876543210__lock__-2147483647",
      "_c_d-lock--2147483646",
      "_c_e-lock--2147483645",
  };
  size_t n = sizeof created / sizeof *created;
  const char *shuffled[] = {created[5], created[0], created[2], created[6],
                            created[1], created[4], created[3]};
  qsort(shuffled, n, sizeof *shuffled, by_seq);
  int same = 1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(shuffled[i], created[i]) != 0)
      same = 0;
  ok(same, "a mixed zkr/Curator/kazoo queue across 2^31 sorts in creation "
           "order");
  /* Sorting by name would not. */
  ok(strcmp(created[1], created[0]) < 0,
     "(by name a kazoo node would wrongly sort before an older Curator one)");
  /* the marker right before the sequence number (the read-write lock's
   * reader test) */
  ok(zkr__seq_marked("_c_u-__READ__0000000007", "__READ__"), "__READ__ reader");
  ok(zkr__seq_marked("abc__rlock__-000000005", "__rlock__"),
     "kazoo reader, wrapped number");
  ok(!zkr__seq_marked("abc__rlock__0000000005", "__lock__"),
     "__lock__ is not the marker of __rlock__");
  ok(!zkr__seq_marked("_c_u-__WRIT__0000000007", "__READ__"), "a writer");
  ok(!zkr__seq_marked("__READ__x0000000007", "__READ__"),
     "marker not right before the number");
  ok(zkr__seq_marked("x__rlock__-1500000000", "__rlock__") &&
         zkr__seq_marked("_c_u-__READ__-2147483648", "__READ__"),
     "reader markers before an 11-character number");
  ok(!zkr__seq_marked("__READ__", "__READ__") &&
         !zkr__seq_marked("_c_u-__READ__12", "__READ__"),
     "no sequence number: no marker");
  /* found by fuzz/fuzz-ls (corpus: names): below -999999999 the sequence
   * number has 11 characters, and readers and writers were shown as
   * "lock" */
  static const char *const kinds[][3] = {
      {"_c_x-__READ__-1000000005", "read", "read"},
      {"_c_x-__WRIT__-2147483648", "write", "write"},
      {"k__rlock__-1500000000", "read", "read"},
      {"k__lock__-1000000000", "write", "write"},
      {"_c_x-lock--1000000005", "lock", "selector"},
      {"_c_x-latch--1000000005", "lock", "latch"},
      {"_c_x-__READ__-000000005", "read", "read"},
      {"_c_x-__READ__0000000005", "read", "read"},
      {"_c_x-lock-1000000005", "lock", "selector"},
      {"_c_x-latch-1000000005", "lock", "latch"},
      {"_c_x-lease-0000000003", "lease", "lease"},
      {"_c_x-__READ__--000000005", "lock", "lock"},
      {"_c_x-__READ__-0000000005", "lock", "lock"},
      {"no-number", "other", "other"}};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    const char *k = zkr_role_name(zkr__role_of(kinds[i][0], ZKR__IN_LOCK));
    const char *e = zkr_role_name(zkr__role_of(kinds[i][0], ZKR__IN_ELECTION));
    ok(strcmp(k, kinds[i][1]) == 0 && strcmp(e, kinds[i][2]) == 0,
       "%s: %s, in an election %s (got %s, %s)", kinds[i][0], kinds[i][1],
       kinds[i][2], k, e);
  }
  ok(zkr__role_of("_c_x-lock-0000000001", ZKR__IN_LEASES) == ZKR_ROLE_LEASE &&
         zkr__role_of("_c_x-lock-0000000001", ZKR__IN_ADMISSION) ==
             ZKR_ROLE_ADMISSION,
     "a semaphore's contenders: lease, admission by their place");
  ok(strcmp(zkr_role_name((zkr_role)99), "other") == 0 &&
         strcmp(zkr_layout_name((zkr_layout)99), "other") == 0,
     "an unknown role or layout is named other");

  ok(zkr_role_of("locks", ZKR_LAYOUT_SEMAPHORE) == ZKR_ROLE_ADMISSION &&
         zkr_role_of("leases", ZKR_LAYOUT_SEMAPHORE) == ZKR_ROLE_LEASE &&
         zkr_role_of("locks", ZKR_LAYOUT_LOCK) == ZKR_ROLE_OTHER,
     "zkr_role_of: a semaphore's two children, by name, only in its layout");
  ok(zkr_role_of("_c_x-lock-0000000001", ZKR_LAYOUT_ELECTION) ==
             ZKR_ROLE_SELECTOR &&
         zkr_role_of("_c_x-lock-0000000001", ZKR_LAYOUT_LOCK) ==
             ZKR_ROLE_LOCK &&
         zkr_role_of("_c_x-latch-0000000001", ZKR_LAYOUT_ELECTION) ==
             ZKR_ROLE_LATCH &&
         zkr_role_of("k__rlock__0000000001", ZKR_LAYOUT_RWLOCK) ==
             ZKR_ROLE_READ &&
         zkr_role_of(NULL, ZKR_LAYOUT_LOCK) == ZKR_ROLE_OTHER,
     "zkr_role_of: contenders by their marker and layout");

  /* which recipe the children of a path show */
  char *latch[] = {(char *)"_c_x-latch--1000000005"};
  char *sem[] = {(char *)"locks", (char *)"leases"};
  char *locks_only[] = {(char *)"locks"};
  char *sem_more[] = {(char *)"leases", (char *)"x"};
  char *rw[] = {(char *)"_c_a-lock-0000000001",
                (char *)"_c_b-__READ__0000000002"};
  char *writer[] = {(char *)"_c_a-__WRIT__0000000001"};
  char *kz[] = {(char *)"a__lock__0000000001", (char *)"b__lock__0000000002"};
  char *mutex[] = {(char *)"_c_a-lock-0000000001", (char *)"other"};
  char *kzsem[] = {(char *)"0123456789abcdef0123456789abcdef"};
  char *other[] = {(char *)"config", (char *)"1234"};
  struct {
    char **kids;
    size_t n;
    zkr_layout want;
    const char *what;
  } lay[] = {
      {latch, 1, ZKR_LAYOUT_ELECTION, "an election whose counter wrapped"},
      {sem, 2, ZKR_LAYOUT_SEMAPHORE, "locks and leases: a semaphore"},
      {locks_only, 1, ZKR_LAYOUT_OTHER, "locks alone: other"},
      {sem_more, 2, ZKR_LAYOUT_OTHER, "leases and another child: other"},
      {rw, 2, ZKR_LAYOUT_RWLOCK, "a reader: a read-write lock"},
      {writer, 1, ZKR_LAYOUT_RWLOCK, "a __WRIT__ writer: a read-write lock"},
      {kz, 2, ZKR_LAYOUT_LOCK, "kazoo's __lock__ nodes: a lock"},
      {mutex, 2, ZKR_LAYOUT_LOCK, "a mutex's node among others: a lock"},
      {kzsem, 1, ZKR_LAYOUT_KAZOO_SEMAPHORE, "a uuid: kazoo's semaphore"},
      {other, 2, ZKR_LAYOUT_OTHER, "no contender: other"},
      {other, 0, ZKR_LAYOUT_NONE, "no children: none"},
      {NULL, 3, ZKR_LAYOUT_NONE, "NULL: none"}};
  for (size_t i = 0; i < sizeof lay / sizeof *lay; i++)
    ok(zkr_layout_of(lay[i].kids, lay[i].n) == lay[i].want, "%s (%s)",
       lay[i].what, zkr_layout_name(zkr_layout_of(lay[i].kids, lay[i].n)));
  return tap_done();
}
