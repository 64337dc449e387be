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
 * Exit status: 0; 2 -r listed the rest but skipped some subtrees; 64 usage;
 * 69 no server reachable; 1 another error.
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkr/zkr.h>

#include "cli.h"

const char *prog = "zkr-ls";
static int json;
static int64_t op_timeout_ms = 10000;
static int locks_shown;
static int skipped;  /* -r left out a subtree */
static long permits; /* --permits: the limit of the semaphores; 0 unknown */

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
         "Show the queue of the lock at PATH: position, role, sequence,\n"
         "fencing token, owner session, the contender's id, host and pid,\n"
         "how long ago it queued, and its node name. A semaphore shows its\n"
         "leases and waiters; an election its participants, leader first.\n"
         "\n"
         "  -s, --servers HOSTS       ZooKeeper connection string (default:\n"
         "                            $ZKR_SERVERS, else 127.0.0.1:2181)\n"
         "  -r, --recursive           every lock in the tree under PATH\n"
         "  -j, --json                JSON output\n"
         "      --permits N           the limit of a semaphore at PATH, to\n"
         "                            tell its waiting lease node (1 to %d)\n"
         "      --connect-timeout MS  how long to try to reach a server\n"
         "                            (default 10000; then exit 69)\n"
         "  -h, --help                this help\n"
         "  -V, --version             print the zkr version\n"
         "\n"
         "Exit status: 0; 2 with -r, some subtrees could not be listed and\n"
         "were skipped (warnings on stderr; the rest was listed); 64 usage;\n"
         "69 no server reachable; 1 other errors.\n",
         prog, ZKR_SEMAPHORE_MAX);
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
  size_t n = strlen(name);
  if (n < 10)
    return "lock";
  size_t end = n - 10;
  if (ends_with_at(name, end, "__READ__") ||
      ends_with_at(name, end, "__rlock__"))
    return "read";
  if (ends_with_at(name, end, "__WRIT__") ||
      ends_with_at(name, end, "__lock__"))
    return "write";
  return "lock";
}

/* The kind of a participant of an election: "latch" (Curator's
 * LeaderLatch layout, zkr_election_start()), "selector" (a "-lock-" node:
 * LeaderSelector's, zkr_election_run()), else as for a lock. */
static const char *elect_kind_of(const char *name) {
  size_t n = strlen(name);
  if (n >= 10 && ends_with_at(name, n - 10, "-latch-"))
    return "latch";
  if (n >= 10 && ends_with_at(name, n - 10, "-lock-"))
    return "selector";
  return kind_of(name);
}

/* Is one of @kids, the children of a node, a latch participant's? */
static int elect_layout(char *const *kids, size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(kids[i]);
    if (has_seq(kids[i]) && ends_with_at(kids[i], len - 10, "-latch-"))
      return 1;
  }
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
      snprintf(id, sizeof id, "%.63s", o.id[0] ? o.id : "-");
      snprintf(host, sizeof host, "%.63s", o.host);
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

static int fail(int rc, const char *what, const char *path) {
  fprintf(stderr, "%s: %s %s: %s\n", prog, what, esc(path), zkr_strerror(rc));
  return rc == ZKR_EBADPATH ? EX_USAGE : 1;
}

/* -r: leave out the subtree at @path, with a warning. */
static void skip(const char *path, const char *why) {
  fprintf(stderr, "%s: warning: skipped %s: %s\n", prog, esc(path), why);
  skipped = 1;
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
  int rc = elect ? zkr_election_participants(s, path, op_timeout_ms, &p, &n)
                 : zkr_rwlock_participants(s, path, op_timeout_ms, &p, &n);
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
  int rc = zkr_semaphore_participants(s, path, (int)permits, op_timeout_ms, &l,
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

static void show(const char *path, const struct view *v, int always) {
  if (v->n == 0 && !always)
    return;
  if (json && locks_shown)
    putchar(',');
  show_queue(path, v);
  if (!json && !always)
    putchar('\n');
  locks_shown++;
}

static int list_one(zkr_session *s, const char *path) {
  char **kids = NULL;
  size_t nk = 0;
  int rc = zkr_session_children(s, path, op_timeout_ms, &kids, &nk);
  if (rc != ZKR_OK && rc != ZKR_ENONODE)
    return fail(rc, "cannot read", path);
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
  int rc = zkr_session_children(s, path, op_timeout_ms, &kids, &n);
  if (rc == ZKR_ENONODE)
    return 0; /* gone meanwhile */
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

int main(int argc, char **argv) {
  const char *servers = default_servers();
  int recursive = 0;
  long connect_ms = 10000;
  enum { OPT_PERMITS = OPT_NEXT };
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"recursive", no_argument, NULL, 'r'},
      {"json", no_argument, NULL, 'j'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":s:rjhV", longopts, NULL)) != -1) {
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
    case OPT_CONNECT:
      if (parse_long(optarg, 1, INT_MAX, &connect_ms) != 0)
        usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                    esc(optarg), INT_MAX);
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &permits) != 0)
        usage_error("invalid --permits '%s': the limit of the semaphore, a "
                    "plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    case 'h':
      help();
      return 0;
    case 'V':
      printf("zkr-ls (zkr) %s\n", zkr_version());
      return 0;
    default:
      option_error(c, argv, longopts);
    }
  }
  if (optind >= argc)
    usage_error("missing PATH");
  if (optind + 1 < argc)
    usage_error("one PATH only (extra '%s')", esc(argv[optind + 1]));
  const char *path = argv[optind];
  /* the library checks the rest once connected (also exit 64) */
  if (path[0] != '/')
    usage_error("invalid path '%s': %s", esc(path), zkr_strerror(ZKR_EBADPATH));

  zkr_session_opts *so = NULL;
  int rc = zkr_session_opts_new(&so);
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_connect_timeout(so, (int)connect_ms);
  /* no new session after a loss: a listing is short-lived */
  if (rc == ZKR_OK)
    rc = zkr_session_opts_set_renew(so, 0);
  zkr_session *s = NULL;
  if (rc == ZKR_OK)
    rc = zkr_session_new(&s, servers, so);
  zkr_session_opts_free(so);
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    fprintf(stderr, "%s: cannot reach ZooKeeper at %s: %s\n", prog,
            esc(servers), zkr_strerror(rc));
    return rc == ZKR_ENOMEM ? 1 : EX_UNAVAILABLE;
  }
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
  zkr_session_close(s);
  return status;
}
