/* zkr-ls's Prometheus view and --watch argument handling, without a
 * server (tools/prom.c and tools/ls-watch.c, linked from the tools'
 * library as zkr-ls links them): label values escaped as the text
 * exposition format requires, the figures of each recipe's queue
 * (mutex, read-write lock, semaphore, election) from participants made
 * up here, the holder's identity from zkr's and from other clients'
 * node data, and "--watch SECONDS" taken as the interval only where it
 * can be one. t-zkr-prometheus.sh checks the same against a server, with
 * promtool. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ls-watch.h"
#include "prom.h"
#include "tap.h"

const char *prog = "zkr-ls";

/* prom_value(@s, @max) as a string (static, overwritten by each call). */
static const char *label(const char *s, size_t max) {
  static char buf[1024];
  memset(buf, 0, sizeof buf);
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  if (!f)
    tap_bail("fmemopen");
  prom_value(f, s, max);
  fclose(f);
  return buf;
}

/* A participant as the library gives it: role @role, node @node, holder
 * or not, created @age_ms ago, with @data. */
static zkr_participant part(zkr_role role, const char *node, int holder,
                            int64_t age_ms, const char *data) {
  zkr_participant p;
  memset(&p, 0, sizeof p);
  p.role = role;
  p.node = (char *)node;
  p.is_holder = holder;
  p.session_id = 0x1234;
  p.czxid = 7;
  p.ctime_ms = ls_wall_ms() - age_ms;
  p.data = (char *)data;
  return p;
}

/* The whole output of prom_write() for the locks recorded. */
static char *metrics(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    tap_bail("open_memstream");
  struct prom_result sc = {"/r", 1, 0.001};
  prom_write(f, &sc);
  fclose(f);
  return buf;
}

/* The value of the sample whose line starts with @prefix ("name{labels}"),
 * or -1 if there is none. */
static double sample(const char *text, const char *prefix) {
  size_t pl = strlen(prefix);
  for (const char *l = text; l && *l;
       l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, prefix, pl) == 0 && l[pl] == ' ')
      return strtod(l + pl + 1, NULL);
  return -1;
}

/* ls_watch_args() on @in (NULL-terminated), joined with '|'. */
static const char *rewritten(const char *const *in) {
  static char out[256];
  int argc = 0;
  while (in[argc])
    argc++;
  char **args = ls_watch_args(argc, (char **)in);
  out[0] = '\0';
  for (int i = 0; args && args[i]; i++) {
    if (i)
      strcat(out, "|");
    strcat(out, args[i]);
    int given = 0; /* else made by ls_watch_args(): ours to free */
    for (int k = 0; k < argc; k++)
      given |= args[i] == in[k];
    if (!given)
      free(args[i]);
  }
  free(args);
  return out;
}

int main(void) {
  tap_init(30);

  /* ---- label values ---- */
  ok(strcmp(label("/jobs/a", SIZE_MAX), "/jobs/a") == 0, "plain text as is");
  ok(strcmp(label("a\"b\\c\nd", SIZE_MAX), "a\\\"b\\\\c\\nd") == 0,
     "quote, backslash and newline escaped: %s", label("a\"b\\c\nd", SIZE_MAX));
  ok(strcmp(label("\xc3\xbcn\xe2\x9c\x93", SIZE_MAX),
            "\xc3\xbcn\xe2\x9c\x93") == 0,
     "valid UTF-8 as is");
  ok(strcmp(label("a\tb\x01\x7f", SIZE_MAX), "a\xef\xbf\xbd"
                                             "b\xef\xbf\xbd\xef\xbf\xbd") == 0,
     "other control characters as U+FFFD");
  ok(strcmp(label("x\xff\xc3(", SIZE_MAX), "x\xef\xbf\xbd\xef\xbf\xbd(") == 0,
     "bytes that are not UTF-8 as U+FFFD: %s", label("x\xff\xc3(", SIZE_MAX));
  ok(strcmp(label("abcdef", 4), "abcd...") == 0, "cut at the limit: %s",
     label("abcdef", 4));
  ok(strcmp(label("ab\xe2\x9c\x93", 4), "ab...") == 0,
     "cut between characters, not inside one: %s", label("ab\xe2\x9c\x93", 4));

  /* ---- --watch SECONDS ---- */
  {
    const char *a[] = {"zkr-ls", "--watch", "5", "/p", NULL};
    ok(strcmp(rewritten(a), "zkr-ls|--watch=5|/p") == 0, "--watch 5 /p: %s",
       rewritten(a));
    const char *b[] = {"zkr-ls", "--watch", "/p", NULL};
    ok(strcmp(rewritten(b), "zkr-ls|--watch|/p") == 0,
       "--watch /p: the path is no interval");
    const char *c[] = {"zkr-ls", "--watch", "-r", "/p", NULL};
    ok(strcmp(rewritten(c), "zkr-ls|--watch|-r|/p") == 0,
       "--watch -r: an option is no interval");
    const char *d[] = {"zkr-ls", "--watch", "-1", "/p", NULL};
    ok(strcmp(rewritten(d), "zkr-ls|--watch=-1|/p") == 0,
       "--watch -1: a negative interval, refused later");
    const char *e[] = {"zkr-ls", "/p", "--wat", "0.5", NULL};
    ok(strcmp(rewritten(e), "zkr-ls|/p|--watch=0.5") == 0,
       "after PATH, abbreviated: %s", rewritten(e));
    const char *f[] = {"zkr-ls", "--", "--watch", "2", NULL};
    ok(strcmp(rewritten(f), "zkr-ls|--|--watch|2") == 0, "not after --");
    const char *g[] = {"zkr-ls", "--watch=3", "/p", NULL};
    ok(strcmp(rewritten(g), "zkr-ls|--watch=3|/p") == 0, "--watch=3 as is");
    const char *h[] = {"zkr-ls", "-j", "--watch", NULL};
    ok(strcmp(rewritten(h), "zkr-ls|-j|--watch") == 0, "--watch last");
  }

  /* ---- the figures of each recipe ---- */
  char zdata[] = "host=h1 pid=42 id=job \"x\"";
  zkr_participant mx[] = {
      part(ZKR_ROLE_LOCK, "_c_a-lock-0000000001", 1, 9000, zdata),
      part(ZKR_ROLE_LOCK, "_c_b-lock-0000000002", 0, 5000,
           "host=h2 pid=43 id=w1"),
      part(ZKR_ROLE_LOCK, "_c_c-lock-0000000003", 0, 2000, "10.0.0.7"),
  };
  struct ls_view v = {mx, 3, 0, 0};
  prom_collect("/r/mutex", &v);

  zkr_participant rw[] = {
      part(ZKR_ROLE_READ, "_c_a-__READ__0000000001", 1, 4000,
           "host=h pid=1 id=r1"),
      part(ZKR_ROLE_READ, "_c_b-__READ__0000000002", 1, 3000,
           "host=h pid=2 id=r2"),
      part(ZKR_ROLE_WRITE, "_c_c-__WRIT__0000000003", 0, 2000,
           "host=h pid=3 id=w"),
      part(ZKR_ROLE_READ, "_c_d-__READ__0000000004", 0, 1000,
           "host=h pid=4 id=r3"),
  };
  v = (struct ls_view){rw, 4, 0, 0};
  prom_collect("/r/rw", &v);

  /* a semaphore of 1: one lease held, the admitted contender's waiting
   * lease node, and two contenders queued for admission (the first of
   * them the admitted one) */
  zkr_participant sem[] = {
      part(ZKR_ROLE_LEASE, "leases/_c_a-lease-0000000000", 1, 8000,
           "host=h pid=5 id=s1"),
      part(ZKR_ROLE_LEASE, "leases/_c_b-lease-0000000001", 0, 3000,
           "host=h pid=6 id=s2"),
      part(ZKR_ROLE_ADMISSION, "locks/_c_b-lock-0000000001", 0, 3500,
           "host=h pid=6 id=s2"),
      part(ZKR_ROLE_ADMISSION, "locks/_c_c-lock-0000000002", 0, 1000,
           "host=h pid=7 id=s3"),
  };
  sem[0].session_id = 1;
  sem[1].session_id = sem[2].session_id = 2; /* the admitted contender */
  sem[3].session_id = 3;
  v = (struct ls_view){sem, 4, 1, 0};
  prom_collect("/r/sem", &v);

  /* a waiting lease node without an admission node of its session (a
   * client of another layout, or one that left admission early): a
   * waiter of its own */
  zkr_participant sem2[] = {
      part(ZKR_ROLE_LEASE, "leases/_c_a-lease-0000000000", 1, 4000,
           "host=h pid=8 id=t1"),
      part(ZKR_ROLE_LEASE, "leases/_c_b-lease-0000000001", 0, 2000,
           "host=h pid=9 id=t2"),
  };
  sem2[0].session_id = 8;
  sem2[1].session_id = 9;
  v = (struct ls_view){sem2, 2, 1, 0};
  prom_collect("/r/sem2", &v);

  zkr_participant el[] = {
      part(ZKR_ROLE_LATCH, "_c_a-latch-0000000000", 1, 6000, "sched-1"),
      part(ZKR_ROLE_LATCH, "_c_b-latch-0000000001", 0, 2000, "sched-2"),
  };
  v = (struct ls_view){el, 2, 0, 1};
  prom_collect("/r/elect", &v);

  /* kazoo's Lock: "__lock__" nodes, a lock (not a read-write lock) */
  zkr_participant kz[] = {
      part(ZKR_ROLE_WRITE, "abc__lock__0000000000", 1, 1000, "kazoo")};
  v = (struct ls_view){kz, 1, 0, 0};
  prom_collect("/r/kazoo", &v);

  /* a holder asked to let go: its data is the revocation request */
  zkr_participant rv[] = {
      part(ZKR_ROLE_LOCK, "_c_r-lock-0000000000", 1, 1000, "__REVOKE__"),
      part(ZKR_ROLE_LOCK, "_c_s-lock-0000000001", 0, 500, "host=h pid=1")};
  v = (struct ls_view){rv, 2, 0, 0};
  prom_collect("/r/revoked", &v);

  char *m = metrics();
  is(prom_count(), 7, "seven locks recorded");
  is(sample(m, "zkr_lock_revocation_requests{path=\"/r/revoked\",type="
               "\"lock\"}"),
     1, "a pending revocation request counted");
  is(sample(m, "zkr_lock_revocation_requests{path=\"/r/mutex\",type="
               "\"lock\"}"),
     0, "none on the mutex");
  is(sample(m, "zkr_up{root=\"/r\"}"), 1, "zkr_up 1");
  is(sample(m, "zkr_locks{root=\"/r\",type=\"lock\"}"), 3,
     "three locks of type lock (zkr's, kazoo's, the revoked one)");
  is(sample(m, "zkr_locks{root=\"/r\",type=\"rwlock\"}"), 1, "one rwlock");
  is(sample(m, "zkr_locks{root=\"/r\",type=\"semaphore\"}"), 2,
     "two semaphores");
  is(sample(m, "zkr_locks{root=\"/r\",type=\"election\"}"), 1, "one election");

  is(sample(m, "zkr_lock_contenders{path=\"/r/mutex\",type=\"lock\"}"), 3,
     "mutex: 3 contenders");
  is(sample(m, "zkr_lock_holders{path=\"/r/mutex\",type=\"lock\"}"), 1,
     "mutex: 1 holder");
  is(sample(m, "zkr_lock_waiters{path=\"/r/mutex\",type=\"lock\"}"), 2,
     "mutex: 2 waiters");
  double oh = sample(
      m, "zkr_lock_oldest_holder_age_seconds{path=\"/r/mutex\",type=\"lock\"}");
  double ow = sample(
      m, "zkr_lock_oldest_waiter_age_seconds{path=\"/r/mutex\",type=\"lock\"}");
  ok(oh >= 9.0 && oh < 60, "mutex: the holder's age (%.3f s)", oh);
  ok(ow >= 5.0 && ow < oh, "mutex: the oldest waiter's age (%.3f s)", ow);
  ok(strstr(m, "zkr_lock_holder_age_seconds{path=\"/r/mutex\",type=\"lock\","
               "kind=\"lock\",node=\"_c_a-lock-0000000001\",session=\"0x1234\","
               "id=\"job \\\"x\\\"\",host=\"h1\",pid=\"42\"} ") != NULL,
     "mutex: the holder's identity from zkr's data, escaped");

  is(sample(m, "zkr_lock_contenders{path=\"/r/rw\",type=\"rwlock\"}"), 4,
     "rwlock: 4 contenders");
  is(sample(m, "zkr_lock_holders{path=\"/r/rw\",type=\"rwlock\"}"), 2,
     "rwlock: 2 readers hold");
  is(sample(m, "zkr_lock_waiters{path=\"/r/rw\",type=\"rwlock\"}"), 2,
     "rwlock: a writer and a reader wait");
  ok(strstr(m, "kind=\"read\",node=\"_c_b-__READ__0000000002\"") != NULL,
     "rwlock: each reader holding has its own series");

  is(sample(m, "zkr_lock_holders{path=\"/r/sem\",type=\"semaphore\"}"), 1,
     "semaphore: 1 lease held");
  is(sample(m, "zkr_lock_waiters{path=\"/r/sem\",type=\"semaphore\"}"), 2,
     "semaphore: 2 waiting (the admitted one counted once)");
  is(sample(m, "zkr_lock_contenders{path=\"/r/sem\",type=\"semaphore\"}"), 3,
     "semaphore: 3 contenders");
  ow = sample(m, "zkr_lock_oldest_waiter_age_seconds{path=\"/r/sem\",type="
                 "\"semaphore\"}");
  ok(ow >= 3.5 && ow < 8,
     "semaphore: oldest waiter by its admission node "
     "(%.3f s)",
     ow);
  ok(strstr(m, "kind=\"lease\",node=\"leases/_c_a-lease-0000000000\"") != NULL,
     "semaphore: the lease holder's series");

  is(sample(m, "zkr_lock_waiters{path=\"/r/sem2\",type=\"semaphore\"}"), 1,
     "semaphore: a waiting lease node not admitted is a waiter of its own");
  ow = sample(m, "zkr_lock_oldest_waiter_age_seconds{path=\"/r/sem2\",type="
                 "\"semaphore\"}");
  ok(ow >= 2.0 && ow < 4, "semaphore: and its age is the oldest wait (%.3f s)",
     ow);
  is(sample(m, "zkr_lock_holders{path=\"/r/elect\",type=\"election\"}"), 1,
     "election: 1 leader");
  is(sample(m, "zkr_lock_waiters{path=\"/r/elect\",type=\"election\"}"), 1,
     "election: 1 waiting");
  ok(strstr(m,
            "kind=\"latch\",node=\"_c_a-latch-0000000000\",session="
            "\"0x1234\",id=\"\",host=\"\",pid=\"\",data=\"sched-1\"} ") != NULL,
     "election: a Curator latch's data as the data label");

  is(sample(m, "zkr_lock_holders{path=\"/r/kazoo\",type=\"lock\"}"), 1,
     "kazoo's Lock: 1 holder");
  ok(sample(m, "zkr_lock_oldest_waiter_age_seconds{path=\"/r/"
               "kazoo\",type=\"lock\"}") < 0,
     "no waiter: no oldest-waiter sample");
  ok(strstr(m, "# HELP zkr_lock_holder_age_seconds ") &&
         strstr(m, "# TYPE zkr_lock_holder_age_seconds gauge\n"),
     "HELP and TYPE lines");
  free(m);

  /* a scrape that failed: zkr_up 0 and nothing else about locks */
  prom_free();
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct prom_result down = {"/r", 0, 1.5};
  prom_write(f, &down);
  fclose(f);
  is(sample(buf, "zkr_up{root=\"/r\"}"), 0, "zkr_up 0 when the read failed");
  ok(strstr(buf, "zkr_lock") == NULL && strstr(buf, "zkr_locks") == NULL,
     "and no figures of locks");
  free(buf);
  return tap_done();
}
