/*
 * The Prometheus view of a tree of locks (see prom.h), for zkr-ls
 * --prometheus and zkr-exporter: each lock the walk finds recorded with
 * its figures and its holders, and every metric written in the text
 * exposition format (version 0.0.4), label values escaped as it requires.
 *
 * Owns: the locks recorded by the last read (prom_free() frees them), the
 * metrics' names, help and labels. Must not touch: where the metrics go
 * (a file, prom-file.c; an HTTP reply, zkr-exporter.c).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls-walk.h"
#include "prom.h"

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
  size_t revokes; /* nodes carrying a revocation request */
  int64_t oldest_holder_ms, oldest_waiter_ms; /* ctime, if any */
  struct prom_holder *h;
  size_t nh;
};

static struct prom_lock *prom;
static size_t prom_n, prom_cap;
static int prom_oom; /* a lock could not be recorded */

static void prom_lock_free(struct prom_lock *l) {
  for (size_t i = 0; i < l->nh; i++) {
    free(l->h[i].node);
    free(l->h[i].data);
  }
  free(l->h);
  free(l->path);
}

void prom_free(void) {
  for (size_t i = 0; i < prom_n; i++)
    prom_lock_free(&prom[i]);
  free(prom);
  prom = NULL;
  prom_n = prom_cap = 0;
  prom_oom = 0;
}

size_t prom_count(void) {
  return prom_n;
}

/* Is @p, a waiting lease node of the semaphore @v, the same contender
 * as one of its admission nodes (the admitted one: same session)? */
static int admitted_elsewhere(const struct ls_view *v,
                              const zkr_participant *p) {
  for (size_t i = 0; i < v->n; i++)
    if (v->p[i].role == ZKR_ROLE_ADMISSION &&
        v->p[i].session_id == p->session_id)
      return 1;
  return 0;
}

/* The figures of one lock. Every node is one contender, a holder or a
 * waiter; but a semaphore's admitted contender waiting for a lease has
 * two nodes, its admission node and its lease node, and counts once. */
void prom_collect(const char *path, const struct ls_view *v) {
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
  l->type = ls_type_of(v);
  l->h = calloc(v->n ? v->n : 1, sizeof *l->h);
  if (!l->path || !l->h) {
    prom_lock_free(l);
    prom_oom = 1;
    return;
  }
  for (size_t i = 0; i < v->n; i++) {
    const zkr_participant *p = &v->p[i];
    if (p->data && strcmp(p->data, "__REVOKE__") == 0)
      l->revokes++;
    if (!p->is_holder) {
      /* its admission node (older) stands for it */
      if (v->sem && p->role == ZKR_ROLE_LEASE && admitted_elsewhere(v, p))
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
    h->kind = zkr_role_name(p->role);
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
void prom_value(FILE *f, const char *s, size_t max) {
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

/* Every metric, in the text exposition format (version 0.0.4): the
 * state of the read, then, if it succeeded, each figure of each lock
 * found (prom[]). */
void prom_write(FILE *f, const struct prom_result *sc) {
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
  fprintf(f, "\"} %d\n", ls_skipped);
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
  int64_t now = ls_wall_ms();
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
  prom_family(f, "zkr_lock_revocation_requests",
              "Contenders whose node carries a revocation request (Apache "
              "Curator's __REVOKE__ data, written by zkr-lock --revoke, "
              "zkr_revoke() or Curator's Revoker): asked to let go, not "
              "gone yet.");
  for (size_t i = 0; i < prom_n; i++) {
    fputs("zkr_lock_revocation_requests", f);
    prom_lock_labels(f, &prom[i]);
    fprintf(f, " %zu\n", prom[i].revokes);
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
int prom_scrape(zkr_session *s, const char *root, struct prom_result *sc) {
  prom_free();
  ls_shown = 0;
  ls_skipped = 0;
  int64_t t0 = now_ms();
  ls_collect = prom_collect;
  int status = ls_walk(s, root, 1);
  ls_collect = NULL;
  if (status == 0 && prom_oom)
    status = ls_fail(ZKR_ENOMEM, "cannot read", root);
  sc->root = root;
  sc->up = status == 0;
  sc->duration = (double)(now_ms() - t0) / 1000.0;
  if (status == 0 && ls_skipped)
    status = EX_PARTIAL;
  return status;
}
