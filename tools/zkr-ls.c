/*
 * zkr-ls - show the queue of a lock: who holds it and who waits, in order.
 *
 *   zkr-ls [-s HOSTS] [--json] [-r] [--permits N] PATH
 *
 * Reads zkr's and Curator's layouts alike (any ephemeral child whose name
 * ends in a ZooKeeper sequence number is a contender; a persistent node is
 * never one); with -r, every lock in the tree under PATH, skipping with a
 * warning the subtrees it may not read or whose paths are too long for the
 * library. A semaphore (Curator's InterProcessSemaphoreV2 layout: PATH
 * has the child "leases", maybe "locks", and no other) is shown as one:
 * its lease nodes, then the contenders queued for admission, with the
 * limit --permits if given. An election (a child named like Curator's
 * LeaderLatch nodes, "...-latch-<seq>", maybe with selector "-lock-"
 * nodes among them) is shown as one: its participants in order, the
 * leader first. Read-only: it creates, changes and watches nothing.
 * --watch [SECONDS] shows the listing again every SECONDS (2), in place on
 * a terminal, as blocks one after the other otherwise, until SIGINT or
 * SIGTERM (exit 0). --prometheus [ROOT] shows every lock under ROOT (/)
 * as metrics in Prometheus's text exposition format, computed from the
 * nodes alone, on stdout or, with -o FILE, into FILE replaced atomically
 * (node_exporter's textfile collector). zkr-exporter (zkr-exporter.c)
 * includes this file with main() renamed and serves the same metrics
 * over HTTP.
 * A missing chroot (-s HOST:PORT/CHROOT) is an error, not an empty tree;
 * -o through a symbolic link replaces the file it leads to, and refuses
 * anything but a regular file.
 * Exit status: 0; 2 -r listed the rest but skipped some subtrees; 64 usage;
 * 69 no server reachable; 1 another error (also a write error on stdout).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

#include "cli.h"

const char *prog = "zkr-ls";
static int json;
static int64_t op_timeout_ms = 10000;
static int locks_shown;
static int skipped;  /* -r left out this many subtrees */
static long permits; /* --permits: the limit of the semaphores; 0 unknown */
/* Monotonic time (now_ms()) by which a listing must end; 0: none. */
static int64_t deadline;
/* Errors and warnings go to msgs[] instead of stderr (--watch shows them
 * in its block; zkr-exporter logs them when they change). */
static int quiet;
static char msgs[2048];
static size_t msgs_len;
/* The connection string, to tell a missing chroot from a missing node. */
static const char *conn_servers;

/* What is shown for one path: the contenders of a lock, of a
 * semaphore its lease nodes ("leases/NAME") and then the contenders
 * queued for admission ("locks/NAME"), or of an election its
 * participants. */
struct view {
  zkr_participant *p;
  size_t n;
  int sem;
  int elect;
};

#define EX_PARTIAL 2
#define PATH_MAX_BYTES 1024 /* what the library accepts */

static void help(void) {
  printf("Usage: %s [options] PATH\n"
         "       %s --prometheus [-o FILE] [options] [ROOT]\n"
         "Show the queue of the lock at PATH: position, role, sequence,\n"
         "fencing token, owner session, the contender's id, host and pid,\n"
         "how long ago it queued, and its node name. A semaphore shows its\n"
         "leases and waiters; an election its participants, leader first.\n"
         "\n"
         "  -s, --servers HOSTS       ZooKeeper connection string (default:\n"
         "                            $ZKR_SERVERS, else 127.0.0.1:2181)\n"
         "  -r, --recursive           every lock in the tree under PATH\n"
         "  -j, --json                JSON output\n"
         "      --watch [SECONDS]     show it again every SECONDS (default 2,\n"
         "                            at least 0.1), in place on a terminal,\n"
         "                            until interrupted\n"
         "      --prometheus          every lock, read-write lock, semaphore\n"
         "                            and election under PATH (default /) as\n"
         "                            Prometheus metrics\n"
         "  -o, --output FILE         with --prometheus: write FILE (replaced\n"
         "                            atomically; a regular file, or a\n"
         "                            symbolic link to one) instead of stdout\n"
         "      --permits N           the limit of a semaphore at PATH, to\n"
         "                            tell its waiting lease node (1 to %d)\n"
         "      --connect-timeout MS  how long to try to reach a server\n"
         "                            (default 10000; then exit 69)\n"
         "      --timeout SECONDS     how long reading one path's queue (its\n"
         "                            children and each contender's data) may\n"
         "                            take (default 10; then exit 1)\n"
         "  -h, --help                this help\n"
         "  -V, --version             print the zkr version\n"
         "\n"
         "Exit status: 0; 2 with -r, some subtrees could not be listed and\n"
         "were skipped (warnings on stderr; the rest was listed); 64 usage;\n"
         "69 no server reachable; 1 other errors (a write error too).\n",
         prog, prog, ZKR_SEMAPHORE_MAX);
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if @name ends in a ZooKeeper sequence number: "%010d", so 10 digits,
 * or a minus sign and 9 digits once the counter wrapped past 2^31-1. */
static int has_seq(const char *name) {
  size_t n = strlen(name);
  if (n < 10)
    return 0;
  for (size_t i = n - 10; i < n; i++)
    if (!isdigit((unsigned char)name[i]) && !(i == n - 10 && name[i] == '-'))
      return 0;
  return 1;
}

/* Printable form of arbitrary node data for the table. */
static void shown_data(const char *data, char *buf, size_t len) {
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)data;
       p && *p && k + 5 < len; p++)
    buf[k++] = (*p >= 0x20 && *p < 0x7f) ? (char)*p : '?';
  buf[k] = '\0';
}

/* @s for a column of the table: escaped as messages are (node data may
 * hold control characters), at most @len - 1 bytes, cut between two UTF-8
 * characters. */
static void column(char *buf, size_t len, const char *s) {
  const char *e = esc(s);
  size_t n = strlen(e);
  if (n >= len) {
    n = len - 1;
    while (n > 0 && ((unsigned char)e[n] & 0xc0) == 0x80)
      n--;
  }
  memcpy(buf, e, n);
  buf[n] = '\0';
}

static void fmt_age(int64_t ms, char *buf, size_t len) {
  if (ms < 0)
    ms = 0;
  if (ms < 60000)
    snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
  else if (ms < 3600000)
    snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000,
             (ms / 1000) % 60);
  else
    snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000,
             (ms / 60000) % 60);
}

static int ends_with_at(const char *name, size_t end, const char *marker) {
  size_t ml = strlen(marker);
  return end >= ml && memcmp(name + end - ml, marker, ml) == 0;
}

/* Does @marker stand right before the sequence number that @name ends
 * with? "%010d" writes ten characters ("0000000042", "-000000005"), but
 * eleven below -999999999 ("-1000000005", without a leading zero): the
 * readers and writers of a lock whose counter wrapped that far were once
 * all shown as "lock". */
static int marked(const char *name, const char *marker) {
  size_t n = strlen(name);
  if (n < 10)
    return 0;
  if (ends_with_at(name, n - 10, marker))
    return 1;
  return n >= 11 && name[n - 11] == '-' && name[n - 10] >= '1' &&
         name[n - 10] <= '9' && ends_with_at(name, n - 11, marker);
}

/* The kind of a contender: of a semaphore, from its place, "lease" or
 * "admission" (queued for the admission mutex); of a lock, from the
 * marker before its sequence number: "read" (Curator's and zkr's
 * __READ__, kazoo's __rlock__), "write" (__WRIT__, kazoo's WriteLock
 * __lock__), else "lock" (a mutex's node: exclusive, and a writer to a
 * read-write lock). */
static const char *kind_of(const char *name) {
  if (strncmp(name, "leases/", 7) == 0)
    return "lease";
  if (strncmp(name, "locks/", 6) == 0)
    return "admission";
  if (marked(name, "__READ__") || marked(name, "__rlock__"))
    return "read";
  if (marked(name, "__WRIT__") || marked(name, "__lock__"))
    return "write";
  return "lock";
}

/* The kind of a participant of an election: "latch" (Curator's
 * LeaderLatch layout, zkr_election_start()), "selector" (a "-lock-" node:
 * LeaderSelector's, zkr_election_run()), else as for a lock. */
static const char *elect_kind_of(const char *name) {
  if (marked(name, "-latch-"))
    return "latch";
  if (marked(name, "-lock-"))
    return "selector";
  return kind_of(name);
}

/* Is one of @kids, the children of a node, a latch participant's? */
static int elect_layout(char *const *kids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (has_seq(kids[i]) && marked(kids[i], "-latch-"))
      return 1;
  return 0;
}

/* The line above a semaphore's table: leases held (of the limit, if
 * known) and contenders waiting (each queued once for admission). */
static void sem_heading(const char *path, const struct view *v) {
  size_t held = 0, waiting = 0;
  for (size_t i = 0; i < v->n; i++) {
    if (strcmp(kind_of(v->p[i].node), "lease") == 0)
      held += v->p[i].is_holder != 0;
    else
      waiting++;
  }
  printf("%s: semaphore, %zu lease%s held", esc(path), held,
         held == 1 ? "" : "s");
  if (permits)
    printf(" of %ld", permits);
  printf(", %zu waiting%s\n", waiting, v->n ? "" : " (free)");
}

static const char *kind_in(const struct view *v, const char *name) {
  return v->elect ? elect_kind_of(name) : kind_of(name);
}

static void show_queue(const char *path, const struct view *v) {
  const zkr_participant *p = v->p;
  size_t n = v->n;
  int64_t now = wall_ms();
  if (json) {
    printf("{\"path\":");
    json_string(stdout, path);
    if (v->sem)
      printf(",\"type\":\"semaphore\"");
    if (v->elect)
      printf(",\"type\":\"election\"");
    if (v->sem && permits)
      printf(",\"permits\":%ld", permits);
    printf(",\"contenders\":[");
    for (size_t i = 0; i < n; i++) {
      struct owner o;
      int ours = parse_owner(p[i].data, &o);
      printf("%s{\"position\":%zu,\"node\":", i ? "," : "", i + 1);
      json_string(stdout, p[i].node);
      printf(",\"seq\":%" PRId32 ",\"role\":\"%s\",\"kind\":\"%s\","
             "\"token\":%" PRId64 ",\"session\":\"0x%" PRIx64 "\"",
             p[i].seq, p[i].is_holder ? "holder" : "waiter",
             kind_in(v, p[i].node), p[i].czxid, (uint64_t)p[i].session_id);
      if (ours)
        json_owner(stdout, &o);
      printf(",\"data\":");
      json_string(stdout, p[i].data);
      printf(",\"queued_at_ms\":%" PRId64 ",\"age_ms\":%" PRId64 "}",
             p[i].ctime_ms, now - p[i].ctime_ms > 0 ? now - p[i].ctime_ms : 0);
    }
    printf("]}");
    return;
  }
  if (v->sem)
    sem_heading(path, v);
  else if (v->elect)
    printf("%s: election, %zu participant%s%s\n", esc(path), n,
           n == 1 ? "" : "s", n ? ", the first leads" : " (no leader)");
  else
    printf("%s: %zu contender%s%s\n", esc(path), n, n == 1 ? "" : "s",
           n ? "" : " (free)");
  if (n == 0)
    return;
  int kw = 5; /* the KIND column: as wide as its widest value */
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(kind_in(v, p[i].node)) > kw)
      kw = (int)strlen(kind_in(v, p[i].node));
  printf("%-4s %-6s %-11s %-12s %-18s %-8s %-16s %-16s %-7s %-*s %s\n", "POS",
         "ROLE", "SEQ", "TOKEN", "SESSION", "AGE", "ID", "HOST", "PID", kw,
         "KIND", "NODE");
  for (size_t i = 0; i < n; i++) {
    struct owner o;
    char id[64], host[64], pid[16], age[32], sess[24];
    if (parse_owner(p[i].data, &o)) {
      column(id, sizeof id, o.id[0] ? o.id : "-");
      column(host, sizeof host, o.host);
      snprintf(pid, sizeof pid, "%ld", o.pid);
    } else {
      char d[40];
      shown_data(p[i].data, d, sizeof d);
      snprintf(id, sizeof id, "data:%s", d[0] ? d : "-");
      snprintf(host, sizeof host, "-");
      snprintf(pid, sizeof pid, "-");
    }
    fmt_age(now - p[i].ctime_ms, age, sizeof age);
    snprintf(sess, sizeof sess, "0x%" PRIx64, (uint64_t)p[i].session_id);
    printf("%-4zu %-6s %010" PRId32 "  %-12" PRId64
           " %-18s %-8s %-16s %-16s %-7s %-*s %s\n",
           i + 1, p[i].is_holder ? "holder" : "waiter", p[i].seq, p[i].czxid,
           sess, age, id, host, pid, kw, kind_in(v, p[i].node), esc(p[i].node));
  }
}

/* "prog: MESSAGE" on stderr; with quiet, "MESSAGE" into msgs[]. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (!quiet) {
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  } else if (msgs_len + 1 < sizeof msgs) {
    int w = vsnprintf(msgs + msgs_len, sizeof msgs - msgs_len - 1, fmt, ap);
    if (w > 0)
      msgs_len += (size_t)w < sizeof msgs - msgs_len - 1
                      ? (size_t)w
                      : sizeof msgs - msgs_len - 2;
    msgs[msgs_len++] = '\n';
    msgs[msgs_len] = '\0';
  }
  va_end(ap);
}

static int fail(int rc, const char *what, const char *path) {
  say("%s %s: %s", what, esc(path), zkr_strerror(rc));
  return rc == ZKR_EBADPATH ? EX_USAGE : 1;
}

/* -r: leave out the subtree at @path, with a warning. */
static void skip(const char *path, const char *why) {
  say("warning: skipped %s: %s", esc(path), why);
  skipped++;
}

/* The time a read may take: op_timeout_ms, and no later than the
 * deadline if there is one. */
static int64_t op_timeout(void) {
  if (!deadline)
    return op_timeout_ms;
  int64_t left = deadline - now_ms();
  return left < 1 ? 1 : left < op_timeout_ms ? left : op_timeout_ms;
}

/* Whether -r goes on after @rc for a node of the tree: the node may not be
 * read (no READ permission), or its path is one the library refuses. */
static int skippable(int rc) {
  return rc == ZKR_ENOAUTH || rc == ZKR_EBADPATH;
}

/* The contenders of the lock at @path, by the read-write lock's rules
 * (which are the mutex's for a queue of exclusive nodes: the first holds;
 * with readers, every reader before the first writer holds), without the
 * persistent nodes (ephemeralOwner 0: a sequential name alone, such as a
 * Unix time, does not make a contender). */
static int queue_of(zkr_session *s, const char *path, int elect,
                    struct view *v) {
  zkr_participant *p = NULL;
  size_t n = 0;
  int rc = elect ? zkr_election_participants(s, path, op_timeout(), &p, &n)
                 : zkr_rwlock_participants(s, path, op_timeout(), &p, &n);
  if (rc != ZKR_OK)
    return rc;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].session_id == 0) {
      free(p[i].node);
      free(p[i].data);
      continue;
    }
    p[k++] = p[i];
  }
  v->p = p;
  v->n = k;
  v->sem = 0;
  v->elect = elect;
  return ZKR_OK;
}

/* Are @kids, the children of a node, a semaphore's: "leases", maybe
 * "locks" (its admission mutex), and nothing else? ("locks" alone is a
 * semaphore's only between its first admission and its first lease node,
 * but lasts as the parent of a mutex at PATH/locks.) */
static int sem_layout(char *const *kids, size_t n) {
  int leases = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(kids[i], "leases") == 0)
      leases = 1;
    else if (strcmp(kids[i], "locks") != 0)
      return 0;
  }
  return leases;
}

/* "@prefix/@name" in place of @name; 0 when out of memory. */
static int prefix_node(char **name, const char *prefix) {
  size_t len = strlen(prefix) + strlen(*name) + 2;
  char *full = malloc(len);
  if (!full)
    return 0;
  snprintf(full, len, "%s/%s", prefix, *name);
  free(*name);
  *name = full;
  return 1;
}

/* The semaphore at @path: its lease nodes, holders by the library's rule
 * with the limit --permits; without it, the newest lease node of the
 * admitted contender waits (its owner is admitted while it waits, and
 * leaves the admission queue as soon as it holds). Then the contenders
 * queued for admission, every one of them waiting for a lease. */
static int sem_view(zkr_session *s, const char *path, struct view *v) {
  zkr_participant *l = NULL, *w = NULL;
  size_t nl = 0, nw = 0;
  int rc = zkr_semaphore_participants(s, path, (int)permits, op_timeout(), &l,
                                      &nl, &w, &nw);
  if (rc != ZKR_OK)
    return rc;
  if (!permits && nl > 0 && nw > 0 && l[nl - 1].session_id == w[0].session_id)
    l[nl - 1].is_holder = 0;
  zkr_participant *all = calloc(nl + nw ? nl + nw : 1, sizeof *all);
  if (!all) {
    zkr_participants_free(l, nl);
    zkr_participants_free(w, nw);
    return ZKR_ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < nl; i++)
    all[k++] = l[i];
  for (size_t i = 0; i < nw; i++) {
    all[k] = w[i];
    all[k++].is_holder = 0;
  }
  free(l);
  free(w);
  for (size_t i = 0; i < k; i++)
    if (!prefix_node(&all[i].node, i < nl ? "leases" : "locks")) {
      zkr_participants_free(all, k);
      return ZKR_ENOMEM;
    }
  v->p = all;
  v->n = k;
  v->sem = 1;
  return ZKR_OK;
}

/* --prometheus: what show() does instead of printing. */
static int collecting;
static void prom_collect(const char *path, const struct view *v);

static void show(const char *path, const struct view *v, int always) {
  if (v->n == 0 && !always)
    return;
  if (collecting) {
    prom_collect(path, v);
    locks_shown++;
    return;
  }
  if (json && locks_shown)
    putchar(',');
  show_queue(path, v);
  if (!json && !always)
    putchar('\n');
  locks_shown++;
}

/* @path has no node: under a chroot that does not exist, an error (1,
 * said), rather than an empty lock or tree; else 0. */
static int no_node(zkr_session *s, const char *path) {
  if (!chroot_missing(s, conn_servers, op_timeout()))
    return 0;
  say("cannot read %s: %s", esc(path), chroot_missing_text(conn_servers));
  return 1;
}

static int list_one(zkr_session *s, const char *path) {
  char **kids = NULL;
  size_t nk = 0;
  int rc = zkr_session_children(s, path, op_timeout(), &kids, &nk);
  if (rc != ZKR_OK && rc != ZKR_ENONODE)
    return fail(rc, "cannot read", path);
  if (rc == ZKR_ENONODE && no_node(s, path))
    return 1;
  struct view v = {NULL, 0, 0, 0};
  rc = rc == ZKR_OK && sem_layout(kids, nk)
           ? sem_view(s, path, &v)
           : queue_of(s, path, rc == ZKR_OK && elect_layout(kids, nk), &v);
  zkr_children_free(kids, nk);
  if (rc != ZKR_OK)
    return fail(rc, "cannot read", path);
  show(path, &v, 1);
  zkr_participants_free(v.p, v.n);
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every lock at or under @path, depth first, in name order. A subtree
 * that cannot be read is skipped with a warning (exit status 2 in the
 * end); any other error ends the walk. */
static int walk(zkr_session *s, const char *path, int top) {
  if (strcmp(path, "/zookeeper") == 0)
    return 0;
  if (!top && strlen(path) > PATH_MAX_BYTES) {
    skip(path, "path longer than 1024 bytes");
    return 0;
  }
  char **kids = NULL;
  size_t n = 0;
  int rc = zkr_session_children(s, path, op_timeout(), &kids, &n);
  if (rc == ZKR_ENONODE)
    return top ? no_node(s, path) : 0; /* (else gone meanwhile) */
  if (rc != ZKR_OK && skippable(rc) && !(top && rc == ZKR_EBADPATH)) {
    skip(path, zkr_strerror(rc));
    return 0;
  }
  if (rc != ZKR_OK)
    return fail(rc, "cannot list", path);
  if (sem_layout(kids, n)) {
    /* a semaphore: shown as one; its locks and leases are its own */
    struct view v = {NULL, 0, 0, 0};
    rc = sem_view(s, path, &v);
    zkr_children_free(kids, n);
    if (rc != ZKR_OK && skippable(rc)) {
      skip(path, zkr_strerror(rc));
      return 0;
    }
    if (rc != ZKR_OK)
      return fail(rc, "cannot read", path);
    show(path, &v, 0);
    zkr_participants_free(v.p, v.n);
    return 0;
  }
  int is_lock = 0;
  for (size_t i = 0; i < n; i++)
    if (has_seq(kids[i]))
      is_lock = 1;
  struct view v = {NULL, 0, 0, 0};
  char **ephemeral = NULL; /* the contenders' names, sorted */
  if (is_lock) {
    rc = queue_of(s, path, elect_layout(kids, n), &v);
    if (rc != ZKR_OK && skippable(rc)) {
      skip(path, zkr_strerror(rc)); /* its queue; its subtree goes on */
    } else if (rc != ZKR_OK) {
      zkr_children_free(kids, n);
      return fail(rc, "cannot read", path);
    } else {
      show(path, &v, 0);
      ephemeral = calloc(v.n ? v.n : 1, sizeof *ephemeral);
      if (!ephemeral) {
        zkr_participants_free(v.p, v.n);
        zkr_children_free(kids, n);
        return fail(ZKR_ENOMEM, "cannot list", path);
      }
      for (size_t i = 0; i < v.n; i++)
        ephemeral[i] = v.p[i].node;
      qsort(ephemeral, v.n, sizeof *ephemeral, name_cmp);
    }
  }
  int status = 0;
  for (size_t i = 0; i < n && status == 0; i++) {
    /* a contender has no children; a node with a sequential name that is
     * not one (persistent) is walked like any other, and so is every child
     * when the queue could not be read (a contender's list is empty) */
    if (ephemeral &&
        bsearch(&kids[i], ephemeral, v.n, sizeof *ephemeral, name_cmp))
      continue;
    size_t len = strlen(path) + strlen(kids[i]) + 2;
    char *child = malloc(len);
    if (!child) {
      status = fail(ZKR_ENOMEM, "cannot list", path);
      break;
    }
    snprintf(child, len, "%s/%s", strcmp(path, "/") == 0 ? "" : path, kids[i]);
    status = walk(s, child, 0);
    free(child);
  }
  free(ephemeral);
  zkr_participants_free(v.p, v.n);
  zkr_children_free(kids, n);
  return status;
}

/* ---- --prometheus: the metrics of a tree of locks ---- */

/* A holder of a lock, as the metrics show it. */
struct prom_holder {
  char *node;
  const char *kind;
  int64_t session;
  int64_t ctime_ms;
  char *data;
};

/* A lock found under the root: its figures and its holders. */
struct prom_lock {
  char *path;
  const char *type; /* "lock", "rwlock", "semaphore", "election" */
  size_t contenders, holders, waiters;
  int64_t oldest_holder_ms, oldest_waiter_ms; /* ctime, if any */
  struct prom_holder *h;
  size_t nh;
};

static struct prom_lock *prom;
static size_t prom_n, prom_cap;
static int prom_oom; /* a lock could not be recorded */

/* The type of lock @v is: a semaphore, an election, a read-write lock
 * (a reader, or a writer by zkr's and Curator's marker), else a lock
 * (a mutex's nodes; kazoo's Lock and WriteLock name theirs alike). */
static const char *lock_type(const struct view *v) {
  if (v->sem)
    return "semaphore";
  if (v->elect)
    return "election";
  for (size_t i = 0; i < v->n; i++)
    if (strcmp(kind_of(v->p[i].node), "read") == 0 ||
        marked(v->p[i].node, "__WRIT__"))
      return "rwlock";
  return "lock";
}

static void prom_lock_free(struct prom_lock *l) {
  for (size_t i = 0; i < l->nh; i++) {
    free(l->h[i].node);
    free(l->h[i].data);
  }
  free(l->h);
  free(l->path);
}

static void prom_free(void) {
  for (size_t i = 0; i < prom_n; i++)
    prom_lock_free(&prom[i]);
  free(prom);
  prom = NULL;
  prom_n = prom_cap = 0;
  prom_oom = 0;
}

/* Is @p, a waiting lease node of the semaphore @v, the same contender
 * as one of its admission nodes (the admitted one: same session)? */
static int admitted_elsewhere(const struct view *v, const zkr_participant *p) {
  for (size_t i = 0; i < v->n; i++)
    if (strcmp(kind_of(v->p[i].node), "admission") == 0 &&
        v->p[i].session_id == p->session_id)
      return 1;
  return 0;
}

/* The figures of one lock. Every node is one contender, a holder or a
 * waiter; but a semaphore's admitted contender waiting for a lease has
 * two nodes, its admission node and its lease node, and counts once. */
static void prom_collect(const char *path, const struct view *v) {
  if (prom_n == prom_cap) {
    size_t cap = prom_cap ? prom_cap * 2 : 16;
    struct prom_lock *np = realloc(prom, cap * sizeof *np);
    if (!np) {
      prom_oom = 1;
      return;
    }
    prom = np;
    prom_cap = cap;
  }
  struct prom_lock *l = &prom[prom_n];
  memset(l, 0, sizeof *l);
  l->path = strdup(path);
  l->type = lock_type(v);
  l->h = calloc(v->n ? v->n : 1, sizeof *l->h);
  if (!l->path || !l->h) {
    prom_lock_free(l);
    prom_oom = 1;
    return;
  }
  for (size_t i = 0; i < v->n; i++) {
    const zkr_participant *p = &v->p[i];
    if (!p->is_holder) {
      /* its admission node (older) stands for it */
      if (v->sem && strcmp(kind_of(p->node), "lease") == 0 &&
          admitted_elsewhere(v, p))
        continue;
      if (l->waiters++ == 0 || p->ctime_ms < l->oldest_waiter_ms)
        l->oldest_waiter_ms = p->ctime_ms;
      continue;
    }
    struct prom_holder *h = &l->h[l->nh];
    h->node = strdup(p->node);
    h->data = strdup(p->data ? p->data : "");
    if (!h->node || !h->data) {
      free(h->node);
      free(h->data);
      prom_lock_free(l);
      prom_oom = 1;
      return;
    }
    h->kind = kind_in(v, p->node);
    h->session = p->session_id;
    h->ctime_ms = p->ctime_ms;
    l->nh++;
    if (l->holders++ == 0 || p->ctime_ms < l->oldest_holder_ms)
      l->oldest_holder_ms = p->ctime_ms;
  }
  l->contenders = l->holders + l->waiters;
  prom_n++;
}

/* @s as the value of a label: '\\', '"' and newline escaped as the format
 * requires; other control characters and bytes that are not UTF-8 as
 * U+FFFD; at most @max bytes of @s, cut between two characters ("..."
 * marks the cut). */
static void prom_value(FILE *f, const char *s, size_t max) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  const unsigned char *start = p;
  while (*p) {
    uint32_t cp;
    int n = utf8_seq(p, &cp);
    if ((size_t)(p - start) + (n ? (size_t)n : 1) > max) {
      fputs("...", f);
      break;
    }
    if (n == 0) {
      fputs("\xef\xbf\xbd", f);
      p++;
    } else if (cp == '\\' || cp == '"') {
      fprintf(f, "\\%c", (int)cp);
      p++;
    } else if (cp == '\n') {
      fputs("\\n", f);
      p++;
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      fputs("\xef\xbf\xbd", f);
      p += n;
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
}

#define PROM_DATA_MAX 128 /* bytes of foreign node data in a label */

static void prom_family(FILE *f, const char *name, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* {path="...",type="..."} of a lock. */
static void prom_lock_labels(FILE *f, const struct prom_lock *l) {
  fputs("{path=\"", f);
  prom_value(f, l->path, SIZE_MAX);
  fprintf(f, "\",type=\"%s\"}", l->type);
}

static double age_s(int64_t now, int64_t ctime_ms) {
  return now > ctime_ms ? (double)(now - ctime_ms) / 1000.0 : 0.0;
}

/* The result of one read of the tree, for prom_write(). */
struct scrape {
  const char *root;
  int up;          /* the tree was read (maybe with subtrees skipped) */
  double duration; /* seconds */
};

/* Every metric, in the text exposition format (version 0.0.4): the
 * state of the read, then, if it succeeded, each figure of each lock
 * found (prom[]). */
static void prom_write(FILE *f, const struct scrape *sc) {
  static const char *const types[] = {"lock", "rwlock", "semaphore",
                                      "election"};
  prom_family(f, "zkr_up",
              "1 if the tree of locks under root was read from ZooKeeper, "
              "0 if not (no server reachable, a read failed or timed out).");
  fputs("zkr_up{root=\"", f);
  prom_value(f, sc->root, SIZE_MAX);
  fprintf(f, "\"} %d\n", sc->up);
  prom_family(f, "zkr_scrape_duration_seconds",
              "How long reading the tree of locks under root took.");
  fputs("zkr_scrape_duration_seconds{root=\"", f);
  prom_value(f, sc->root, SIZE_MAX);
  fprintf(f, "\"} %.3f\n", sc->duration);
  if (!sc->up)
    return;
  prom_family(f, "zkr_scrape_skipped_subtrees",
              "Subtrees under root left out because they could not be "
              "listed (no READ permission, a path over 1024 bytes).");
  fputs("zkr_scrape_skipped_subtrees{root=\"", f);
  prom_value(f, sc->root, SIZE_MAX);
  fprintf(f, "\"} %d\n", skipped);
  prom_family(f, "zkr_locks",
              "Paths under root with contenders, by type: lock (a mutex), "
              "rwlock, semaphore, election.");
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    size_t count = 0;
    for (size_t i = 0; i < prom_n; i++)
      count += strcmp(prom[i].type, types[t]) == 0;
    fputs("zkr_locks{root=\"", f);
    prom_value(f, sc->root, SIZE_MAX);
    fprintf(f, "\",type=\"%s\"} %zu\n", types[t], count);
  }
  if (prom_n == 0)
    return;
  int64_t now = wall_ms();
  prom_family(f, "zkr_lock_contenders",
              "Contenders of the lock: its holders and its waiters.");
  for (size_t i = 0; i < prom_n; i++) {
    fputs("zkr_lock_contenders", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %zu\n", prom[i].contenders);
  }
  prom_family(f, "zkr_lock_holders",
              "Contenders holding the lock: 1 for a mutex, an election (its "
              "leader) or a read-write lock's writer, the readers at the "
              "head of a read-write lock's queue, the leases held of a "
              "semaphore.");
  for (size_t i = 0; i < prom_n; i++) {
    fputs("zkr_lock_holders", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %zu\n", prom[i].holders);
  }
  prom_family(f, "zkr_lock_waiters", "Contenders waiting for the lock.");
  for (size_t i = 0; i < prom_n; i++) {
    fputs("zkr_lock_waiters", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %zu\n", prom[i].waiters);
  }
  prom_family(f, "zkr_lock_oldest_holder_age_seconds",
              "Age of the oldest holder's node (the time since it queued, "
              "an upper bound on how long it has held the lock); absent "
              "without a holder.");
  for (size_t i = 0; i < prom_n; i++) {
    if (!prom[i].holders)
      continue;
    fputs("zkr_lock_oldest_holder_age_seconds", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %.3f\n", age_s(now, prom[i].oldest_holder_ms));
  }
  prom_family(f, "zkr_lock_oldest_waiter_age_seconds",
              "How long the longest waiting contender has waited (the age "
              "of its node); absent without a waiter.");
  for (size_t i = 0; i < prom_n; i++) {
    if (!prom[i].waiters)
      continue;
    fputs("zkr_lock_oldest_waiter_age_seconds", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %.3f\n", age_s(now, prom[i].oldest_waiter_ms));
  }
  prom_family(f, "zkr_lock_holder_age_seconds",
              "Age of each holder's node, with the holder's identity: id, "
              "host and pid from zkr's node data, else the data itself.");
  for (size_t i = 0; i < prom_n; i++) {
    for (size_t k = 0; k < prom[i].nh; k++) {
      const struct prom_holder *h = &prom[i].h[k];
      struct owner o;
      int ours = parse_owner(h->data, &o);
      fputs("zkr_lock_holder_age_seconds{path=\"", f);
      prom_value(f, prom[i].path, SIZE_MAX);
      fprintf(f, "\",type=\"%s\",kind=\"%s\",node=\"", prom[i].type, h->kind);
      prom_value(f, h->node, SIZE_MAX);
      fprintf(f, "\",session=\"0x%" PRIx64 "\",id=\"", (uint64_t)h->session);
      if (ours) {
        prom_value(f, o.id, SIZE_MAX);
        fputs("\",host=\"", f);
        prom_value(f, o.host, SIZE_MAX);
        fprintf(f, "\",pid=\"%ld\"}", o.pid);
      } else {
        fputs("\",host=\"\",pid=\"\",data=\"", f);
        prom_value(f, h->data, PROM_DATA_MAX);
        fputs("\"}", f);
      }
      fprintf(f, " %.3f\n", age_s(now, h->ctime_ms));
    }
  }
}

/* Read the tree under @root into prom[] (freed first) and fill *@sc.
 * Returns what -r would: 0, 2 (subtrees skipped), or 1, 64 (said). */
static int prom_scrape(zkr_session *s, const char *root, struct scrape *sc) {
  prom_free();
  locks_shown = 0;
  skipped = 0;
  int64_t t0 = now_ms();
  collecting = 1;
  int status = walk(s, root, 1);
  collecting = 0;
  if (status == 0 && prom_oom)
    status = fail(ZKR_ENOMEM, "cannot read", root);
  sc->root = root;
  sc->up = status == 0;
  sc->duration = (double)(now_ms() - t0) / 1000.0;
  if (status == 0 && skipped)
    status = EX_PARTIAL;
  return status;
}

/* The file that -o @file writes: @file itself, or, if it is a symbolic
 * link, the file it leads to (a relative link read from the link's
 * directory), which need not exist yet: the link stays, as with a plain
 * write through it. NULL (said) if the links loop or nest more than 40
 * deep, or out of memory. */
static char *output_target(const char *file) {
  char *cur = strdup(file);
  for (int hops = 0; cur; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      return cur; /* not there (created), or not a link */
    if (hops == 40) {
      fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file),
              strerror(ELOOP));
      free(cur);
      return NULL;
    }
    size_t cap = (size_t)st.st_size + 2; /* a /proc link says 0 */
    char *link = NULL;
    ssize_t n = -1;
    for (;;) {
      free(link);
      link = malloc(cap);
      if (!link)
        break;
      n = readlink(cur, link, cap);
      if (n < 0 || (size_t)n < cap)
        break;
      cap *= 2; /* it grew meanwhile */
    }
    if (!link || n < 0) {
      if (link)
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file),
                strerror(errno));
      else
        fprintf(stderr, "%s: out of memory\n", prog);
      free(link);
      free(cur);
      return NULL;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash) {
      free(cur);
      cur = link;
      continue;
    }
    size_t dl = (size_t)(slash - cur) + 1; /* the directory, with its '/' */
    char *next = malloc(dl + (size_t)n + 1);
    if (next) {
      memcpy(next, cur, dl);
      memcpy(next + dl, link, (size_t)n + 1);
    }
    free(link);
    free(cur);
    cur = next;
  }
  fprintf(stderr, "%s: out of memory\n", prog);
  return NULL;
}

/* 0 if @target, the file -o writes, may be replaced: it is a regular file
 * or does not exist; else -1 (said): the metrics replace a file, never a
 * device, a FIFO, a socket or a directory. */
static int replaceable(const char *file, const char *target) {
  struct stat st;
  if (lstat(target, &st) != 0 || S_ISREG(st.st_mode))
    return 0;
  if (strcmp(file, target) == 0)
    fprintf(stderr, "%s: cannot write %s: not a regular file\n", prog,
            esc(file));
  else
    fprintf(stderr,
            "%s: cannot write %s: %s, where it leads, is not a "
            "regular file\n",
            prog, esc(file), esc(target));
  return -1;
}

/* The metrics into @file, atomically: a temporary file in the same
 * directory, renamed over it once complete, so that a reader (the
 * textfile collector) sees the old file or the new one, never a part.
 * Through a symbolic link, the file it leads to is replaced (in that
 * file's directory). Only a regular file is replaced. 0, or -1 (said). */
static int write_atomically(const char *file, const struct scrape *sc) {
  char *target = output_target(file);
  if (!target)
    return -1;
  if (replaceable(file, target) != 0) {
    free(target);
    return -1;
  }
  size_t len = strlen(target) + 16;
  char *tmp = malloc(len);
  if (!tmp) {
    fprintf(stderr, "%s: out of memory\n", prog);
    free(target);
    return -1;
  }
  snprintf(tmp, len, "%s.tmp.XXXXXX", target);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(tmp),
            strerror(errno));
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(tmp);
    free(target);
    return -1;
  }
  /* mkstemp() made it 0600: give it the mode a new file would get */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  prom_write(f, sc);
  int bad = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  /* (again: it may have been replaced meanwhile) */
  int refused = !bad && replaceable(file, target) != 0;
  if (!bad && !refused && rename(tmp, target) != 0) {
    bad = 1;
    e = errno;
  }
  if (bad)
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file), strerror(e));
  if (bad || refused)
    unlink(tmp);
  free(tmp);
  free(target);
  return bad || refused ? -1 : 0;
}

/* ---- one listing, and --watch ---- */

/* What one run of zkr-ls shows: the queue at @path, or with -r every
 * lock under it. Returns the exit status. */
static int listing(zkr_session *s, const char *path, int recursive) {
  locks_shown = 0;
  skipped = 0;
  int status;
  if (recursive) {
    if (json)
      printf("{\"locks\":[");
    status = walk(s, path, 1);
    if (json)
      printf("]}\n");
    else if (status == 0 && locks_shown == 0)
      printf("no locks under %s%s\n", esc(path),
             skipped ? " (some subtrees skipped)" : "");
    if (status == 0 && skipped)
      status = EX_PARTIAL;
  } else {
    status = list_one(s, path);
    if (json)
      putchar('\n');
  }
  return status;
}

/* The argument vector with "--watch SECONDS" made "--watch=SECONDS":
 * getopt_long takes an optional argument only after '='. The word after
 * --watch (or an abbreviation of it) is its interval unless it is a PATH
 * (a leading '/') or another option (a '-' not followed by a digit or a
 * '.'); "--" ends the options. NULL when out of memory. */
static char **watch_args(int argc, char **argv) {
  static char **args;
  args = calloc((size_t)argc + 1, sizeof *args);
  if (!args)
    return NULL;
  int k = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    size_t al = strlen(a);
    int is_watch = i > 0 && al >= 3 && strncmp(a, "--watch", al) == 0;
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (is_watch && next && next[0] != '/' &&
        (next[0] != '-' || next[1] == '.' ||
         (next[1] >= '0' && next[1] <= '9'))) {
      size_t len = strlen(next) + 9;
      char *joined = malloc(len);
      if (!joined)
        return NULL;
      snprintf(joined, len, "--watch=%s", next);
      args[k++] = joined;
      i++;
      continue;
    }
    args[k++] = argv[i];
    if (i > 0 && strcmp(a, "--") == 0) {
      while (++i < argc)
        args[k++] = argv[i];
    }
  }
  args[k] = NULL;
  return args;
}

/* The line above each block of --watch: the interval, the command and
 * the local time, as watch(1) has it. */
static void watch_heading(int64_t interval_ms, const char *path,
                          int recursive) {
  char when[64];
  time_t t = time(NULL);
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
  printf("Every %.1fs: zkr-ls%s %s    %s\n\n", (double)interval_ms / 1000.0,
         recursive ? " -r" : "", esc(path), when);
}

/* The messages of a block (msgs[]) on @f, each line after @pre and
 * "prog: ". */
static void put_msgs(FILE *f, const char *pre) {
  for (const char *p = msgs; *p;) {
    size_t n = strcspn(p, "\n");
    fprintf(f, "%s%s: %.*s\n", pre, prog, (int)n, p);
    p += n;
    if (*p)
      p++;
  }
}

/* --watch: the listing (or the metrics) again and again, every
 * @interval_ms, until SIGINT or SIGTERM, which end it with status 0. On
 * a terminal each block replaces the last (clear, home); otherwise the
 * blocks follow one another, each after an empty line (text: a heading
 * line "Every ..." first; JSON: one document a line). A failed read is
 * shown in its block and the next one tries again; a bad PATH (found by
 * the first) ends it with 64. @sigs are blocked. */
static int watch_loop(zkr_session *s, const char *path, int recursive,
                      int prometheus, const char *out, int64_t interval_ms,
                      const sigset_t *sigs) {
  int tty = isatty(STDOUT_FILENO);
  quiet = 1;
  for (int first = 1;; first = 0) {
    int64_t t0 = now_ms();
    msgs_len = 0;
    msgs[0] = '\0';
    if (tty)
      fputs("\033[H\033[2J", stdout);
    else if (!first && !json)
      putchar('\n');
    int status;
    FILE *said = stdout; /* where this block's messages go */
    const char *pre = "";
    if (prometheus) {
      struct scrape sc;
      status = prom_scrape(s, path, &sc);
      if (!out)
        prom_write(stdout, &sc);
      else if (write_atomically(out, &sc) != 0 && first)
        return 1;
      pre = "# "; /* a comment in the exposition format */
      if (out)
        said = stderr;
    } else {
      if (!json)
        watch_heading(interval_ms, path, recursive);
      status = listing(s, path, recursive);
      if (json)
        said = stderr;
    }
    put_msgs(said, pre);
    if (stdout_failed())
      return 1; /* (said) nothing can be shown any more */
    if (first && status == EX_USAGE) {
      if (said != stderr)
        put_msgs(stderr, "");
      return EX_USAGE;
    }
    int64_t left = interval_ms - (now_ms() - t0);
    if (left < 0)
      left = 0;
    struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000};
    int sig;
    do
      sig = sigtimedwait(sigs, NULL, &ts);
    while (sig < 0 && errno == EINTR);
    if (sig > 0)
      return 0;
  }
}

/* The signals that end --watch (and zkr-exporter) into @set: SIGINT and
 * SIGTERM, but not one ignored at start, which stays ignored (as in
 * zkr-lock: a background job of a script starts with SIGINT ignored). */
static void end_signals(sigset_t *set) {
  static const int ends[] = {SIGINT, SIGTERM};
  sigemptyset(set);
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
    struct sigaction sa;
    if (sigaction(ends[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
      continue;
    sigaddset(set, ends[i]);
  }
}

/* For session_new_interruptible(): one of the signals @ud (a sigset_t,
 * blocked in every thread) within 50 ms, or 0. */
static int sigset_wait(void *ud) {
  struct timespec ts = {0, 50 * 1000000};
  int got = sigtimedwait(ud, NULL, &ts);
  return got > 0 ? got : 0;
}

/* zkr-ls's own main, renamed by those that include this file. */
int main(int argc, char **argv) {
  const char *servers = default_servers();
  int recursive = 0, prometheus = 0, watching = 0;
  int64_t interval_ms = 2000;
  const char *out = NULL;
  long connect_ms = 10000;
  enum { OPT_PERMITS = OPT_NEXT, OPT_WATCH, OPT_PROMETHEUS, OPT_TIMEOUT };
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"recursive", no_argument, NULL, 'r'},
      {"json", no_argument, NULL, 'j'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"watch", optional_argument, NULL, OPT_WATCH},
      {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  char **args = watch_args(argc, argv);
  if (!args) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return 1;
  }
  argc = 0;
  while (args[argc])
    argc++;
  argv = args;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":s:rjo:hV", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      servers = optarg;
      break;
    case 'r':
      recursive = 1;
      break;
    case 'j':
      json = 1;
      break;
    case 'o':
      out = optarg;
      break;
    case OPT_CONNECT:
      if (parse_long(optarg, 1, INT_MAX, &connect_ms) != 0)
        usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                    esc(optarg), INT_MAX);
      break;
    case OPT_TIMEOUT:
      if (parse_seconds(optarg, &op_timeout_ms) != 0 || op_timeout_ms < 1 ||
          op_timeout_ms > (int64_t)(INT_MAX / 1000) * 1000)
        usage_error("invalid --timeout '%s': seconds as a plain decimal, "
                    "at least 0.001 and at most %d",
                    esc(optarg), INT_MAX / 1000);
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &permits) != 0)
        usage_error("invalid --permits '%s': the limit of the semaphore, a "
                    "plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    case OPT_WATCH:
      watching = 1;
      if (optarg &&
          (parse_seconds(optarg, &interval_ms) != 0 || interval_ms < 100))
        usage_error("invalid --watch interval '%s': seconds as a plain "
                    "decimal, at least 0.1 and at most " SECONDS_MAX_TEXT,
                    esc(optarg));
      break;
    case OPT_PROMETHEUS:
      prometheus = 1;
      break;
    case 'h':
      help();
      return stdout_failed();
    case 'V':
      printf("zkr-ls (zkr) %s\n", zkr_version());
      return stdout_failed();
    default:
      option_error(c, argv, longopts);
    }
  }
  if (out && !prometheus)
    usage_error("-o (--output) goes with --prometheus");
  if (prometheus && json)
    usage_error("--prometheus and --json exclude each other");
  if (optind >= argc && !prometheus)
    usage_error("missing PATH");
  if (optind + 1 < argc)
    usage_error("one PATH only (extra '%s')", esc(argv[optind + 1]));
  const char *path = optind < argc ? argv[optind] : "/";
  conn_servers = servers;
  /* the library checks the rest once connected (also exit 64) */
  if (path[0] != '/')
    usage_error("invalid path '%s': %s", esc(path), zkr_strerror(ZKR_EBADPATH));

  /* --watch: SIGINT and SIGTERM end it, taken with sigtimedwait(); they
   * are blocked before the library's threads exist, which inherit that */
  sigset_t sigs;
  end_signals(&sigs);
  if (watching)
    sigprocmask(SIG_BLOCK, &sigs, NULL);

  zkr_session_opts *so = NULL;
  int rc = zkr_session_opts_new(&so);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_connect_timeout(so, (int)connect_ms);
  /* no new session after a loss: a listing is short-lived (not so
   * --watch) */
  if (rc == ZKR_OK && !watching)
    rc = zkr_session_opts_set_renew(so, 0);
  zkr_session *s = NULL;
  int64_t t0 = now_ms();
  int sig = 0;
  if (rc == ZKR_OK && watching)
    rc = session_new_interruptible(&s, servers, so, sigset_wait, &sigs, &sig);
  else if (rc == ZKR_OK)
    rc = zkr_session_new(&s, servers, so);
  if (rc == ZKR_ECANCELED) {
    fflush(NULL);
    _exit(0); /* --watch ended by a signal while connecting */
  }
  zkr_session_opts_free(so);
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    fprintf(stderr, "%s: cannot reach ZooKeeper at %s: %s\n", prog,
            esc(servers), zkr_strerror(rc));
    if (prometheus) {
      /* what the metrics say: zkr_up 0 */
      struct scrape sc = {path, 0, (double)(now_ms() - t0) / 1000.0};
      if (out)
        write_atomically(out, &sc);
      else
        prom_write(stdout, &sc);
    }
    return rc == ZKR_ENOMEM ? 1 : EX_UNAVAILABLE;
  }
  int status;
  if (watching) {
    status =
        watch_loop(s, path, recursive, prometheus, out, interval_ms, &sigs);
  } else if (prometheus) {
    struct scrape sc;
    status = prom_scrape(s, path, &sc);
    if (out ? write_atomically(out, &sc) != 0 : (prom_write(stdout, &sc), 0))
      status = 1;
  } else {
    status = listing(s, path, recursive);
  }
  prom_free();
  zkr_session_close(s);
  /* what was shown must have been written: else exit 1, as coreutils do
   * (the other errors keep their status) */
  if ((status == 0 || status == EX_PARTIAL) && stdout_failed())
    status = 1;
  return status;
}
