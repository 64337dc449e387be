/*
 * zkr-ls's reading of ZooKeeper (see ls-walk.h): the queue at one path
 * (a lock's, a read-write lock's, a semaphore's or an election's), and
 * every one in the tree under a path, depth first, skipping with a warning
 * the subtrees it may not read; its errors and warnings on stderr or kept
 * for the caller to show.
 *
 * Owns: the walk's counts (locks shown, subtrees skipped) and its kept
 * messages. Must not touch: how a queue is printed (ls.c) or made into
 * metrics (prom.c, through ls_collect).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls-walk.h"

#define PATH_MAX_BYTES 1024 /* what the library accepts */

int64_t ls_op_timeout_ms = 10000;
int ls_shown;
int ls_skipped;
int64_t ls_deadline;
int ls_quiet;
char ls_msgs[LS_MSGS_MAX];
size_t ls_msgs_len;
const char *ls_servers;
void (*ls_collect)(const char *path, const struct ls_view *v);

void ls_say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (!ls_quiet) {
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  } else if (ls_msgs_len + 1 < sizeof ls_msgs) {
    int w = vsnprintf(ls_msgs + ls_msgs_len, sizeof ls_msgs - ls_msgs_len - 1,
                      fmt, ap);
    if (w > 0)
      ls_msgs_len += (size_t)w < sizeof ls_msgs - ls_msgs_len - 1
                         ? (size_t)w
                         : sizeof ls_msgs - ls_msgs_len - 2;
    ls_msgs[ls_msgs_len++] = '\n';
    ls_msgs[ls_msgs_len] = '\0';
  }
  va_end(ap);
}

int ls_fail(int rc, const char *what, const char *path) {
  ls_say("%s %s: %s", what, esc(path), zkr_strerror(rc));
  return rc == ZKR_EBADPATH ? EX_USAGE : 1;
}

/* -r: leave out the subtree at @path, with a warning. */
static void skip(const char *path, const char *why) {
  ls_say("warning: skipped %s: %s", esc(path), why);
  ls_skipped++;
}

/* The time a read may take: ls_op_timeout_ms, and no later than the
 * deadline if there is one. */
static int64_t op_timeout(void) {
  if (!ls_deadline)
    return ls_op_timeout_ms;
  int64_t left = ls_deadline - now_ms();
  return left < 1 ? 1 : left < ls_op_timeout_ms ? left : ls_op_timeout_ms;
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
                    struct ls_view *v) {
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

/* The semaphore at @path: its lease nodes, holders by the library's rule
 * with the limit --permits; without it, the newest lease node of the
 * admitted contender waits (its owner is admitted while it waits, and
 * leaves the admission queue as soon as it holds). Then the contenders
 * queued for admission, every one of them waiting for a lease. */
static int sem_view(zkr_session *s, const char *path, struct ls_view *v) {
  zkr_participant *l = NULL, *w = NULL;
  size_t nl = 0, nw = 0;
  int rc = zkr_semaphore_participants(s, path, (int)ls_permits, op_timeout(),
                                      &l, &nl, &w, &nw);
  if (rc != ZKR_OK)
    return rc;
  if (!ls_permits && nl > 0 && nw > 0 &&
      l[nl - 1].session_id == w[0].session_id)
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
  v->p = all;
  v->n = k;
  v->sem = 1;
  return ZKR_OK;
}

/* A lock found: printed, or handed to ls_collect when it is set. */
static void show(const char *path, const struct ls_view *v, int always) {
  if (v->n == 0 && !always)
    return;
  if (ls_collect) {
    ls_collect(path, v);
    ls_shown++;
    return;
  }
  if (ls_json && ls_shown)
    putchar(',');
  ls_show_queue(path, v);
  if (!ls_json && !always)
    putchar('\n');
  ls_shown++;
}

/* @path has no node: under a chroot that does not exist, an error (1,
 * said), rather than an empty lock or tree; else 0. */
static int no_node(zkr_session *s, const char *path) {
  if (!chroot_missing(s, ls_servers, op_timeout()))
    return 0;
  ls_say("cannot read %s: %s", esc(path), chroot_missing_text(ls_servers));
  return 1;
}

static int list_one(zkr_session *s, const char *path) {
  char **kids = NULL;
  size_t nk = 0;
  int rc = zkr_session_children(s, path, op_timeout(), &kids, &nk);
  if (rc != ZKR_OK && rc != ZKR_ENONODE)
    return ls_fail(rc, "cannot read", path);
  if (rc == ZKR_ENONODE && no_node(s, path))
    return 1;
  struct ls_view v = {NULL, 0, 0, 0};
  zkr_layout l = rc == ZKR_OK ? zkr_layout_of(kids, nk) : ZKR_LAYOUT_NONE;
  rc = l == ZKR_LAYOUT_SEMAPHORE
           ? sem_view(s, path, &v)
           : queue_of(s, path, l == ZKR_LAYOUT_ELECTION, &v);
  zkr_children_free(kids, nk);
  if (rc != ZKR_OK)
    return ls_fail(rc, "cannot read", path);
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
int ls_walk(zkr_session *s, const char *path, int top) {
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
    return ls_fail(rc, "cannot list", path);
  zkr_layout layout = zkr_layout_of(kids, n);
  if (layout == ZKR_LAYOUT_SEMAPHORE) {
    /* a semaphore: shown as one; its locks and leases are its own */
    struct ls_view v = {NULL, 0, 0, 0};
    rc = sem_view(s, path, &v);
    zkr_children_free(kids, n);
    if (rc != ZKR_OK && skippable(rc)) {
      skip(path, zkr_strerror(rc));
      return 0;
    }
    if (rc != ZKR_OK)
      return ls_fail(rc, "cannot read", path);
    show(path, &v, 0);
    zkr_participants_free(v.p, v.n);
    return 0;
  }
  int is_lock = 0;
  for (size_t i = 0; i < n; i++)
    if (ls_has_seq(kids[i]))
      is_lock = 1;
  struct ls_view v = {NULL, 0, 0, 0};
  char **ephemeral = NULL; /* the contenders' names, sorted */
  if (is_lock) {
    rc = queue_of(s, path, layout == ZKR_LAYOUT_ELECTION, &v);
    if (rc != ZKR_OK && skippable(rc)) {
      skip(path, zkr_strerror(rc)); /* its queue; its subtree goes on */
    } else if (rc != ZKR_OK) {
      zkr_children_free(kids, n);
      return ls_fail(rc, "cannot read", path);
    } else {
      show(path, &v, 0);
      ephemeral = calloc(v.n ? v.n : 1, sizeof *ephemeral);
      if (!ephemeral) {
        zkr_participants_free(v.p, v.n);
        zkr_children_free(kids, n);
        return ls_fail(ZKR_ENOMEM, "cannot list", path);
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
      status = ls_fail(ZKR_ENOMEM, "cannot list", path);
      break;
    }
    snprintf(child, len, "%s/%s", strcmp(path, "/") == 0 ? "" : path, kids[i]);
    status = ls_walk(s, child, 0);
    free(child);
  }
  free(ephemeral);
  zkr_participants_free(v.p, v.n);
  zkr_children_free(kids, n);
  return status;
}

/* What one run of zkr-ls shows: the queue at @path, or with -r every
 * lock under it. Returns the exit status. */
int ls_listing(zkr_session *s, const char *path, int recursive) {
  ls_shown = 0;
  ls_skipped = 0;
  int status;
  if (recursive) {
    if (ls_json)
      printf("{\"locks\":[");
    status = ls_walk(s, path, 1);
    if (ls_json)
      printf("]}\n");
    else if (status == 0 && ls_shown == 0)
      printf("no locks under %s%s\n", esc(path),
             ls_skipped ? " (some subtrees skipped)" : "");
    if (status == 0 && ls_skipped)
      status = EX_PARTIAL;
  } else {
    status = list_one(s, path);
    if (ls_json)
      putchar('\n');
  }
  return status;
}

/* The messages kept (ls_msgs) on @f, each line after @pre and
 * "prog: ". */
void ls_put_msgs(FILE *f, const char *pre) {
  for (const char *p = ls_msgs; *p;) {
    size_t n = strcspn(p, "\n");
    fprintf(f, "%s%s: %.*s\n", pre, prog, (int)n, p);
    p += n;
    if (*p)
      p++;
  }
}
