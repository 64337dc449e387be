/*
 * The wait-for search of a multi-lock that has waited long while first in
 * some of its queues (multilock.c): is there a cycle of waits through the
 * set, among its own queues and their siblings (the other children of
 * their parents, up to WF_SIBLINGS per parent: locks taken together tend
 * to share a parent, and a cycle may run through one the set does not
 * take)? Each contender is placed by its node's
 * ephemeral owner (its ZooKeeper session), not by its data, except the
 * set's own nodes (known by name), which are one contender of their own:
 * another object of the same session is another contender. A contender
 * waits for another when one of its nodes does not hold and a node of the
 * other, earlier in the same queue, blocks it by the queue's rule (a
 * reader by earlier writers and mutex nodes, every other node by every
 * earlier node).
 *
 * Owns: nothing kept; reads the queues (zkr_rwlock_participants()).
 * Must not touch: the set (its caller passes paths and node names).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zkr-private.h"

struct wf {
  int64_t *who; /* a contender's session; who[0] is the set */
  int nwho;
  int *from, *to; /* the waits, as contender indexes */
  int nedges;
};

/* The index of the contender of @p at @qi (-1: out of memory). */
static int contender(struct wf *g, const zkr_participant *p, const char *ours) {
  if (ours && strcmp(p->node, ours) == 0)
    return 0;
  for (int i = 1; i < g->nwho; i++)
    if (g->who[i] == p->session_id)
      return i;
  int64_t *nw = realloc(g->who, (size_t)(g->nwho + 1) * sizeof *nw);
  if (!nw)
    return -1;
  g->who = nw;
  g->who[g->nwho] = p->session_id;
  return g->nwho++;
}

static int add_wait(struct wf *g, int a, int b) {
  for (int k = 0; k < g->nedges; k++)
    if (g->from[k] == a && g->to[k] == b)
      return 0;
  int *nf = realloc(g->from, (size_t)(g->nedges + 1) * sizeof *nf);
  if (nf)
    g->from = nf;
  int *nt = realloc(g->to, (size_t)(g->nedges + 1) * sizeof *nt);
  if (nt)
    g->to = nt;
  if (!nf || !nt)
    return -1;
  g->from[g->nedges] = a;
  g->to[g->nedges++] = b;
  return 0;
}

/* A lock contender's node (not a lease, a participant of an election or
 * any other sequential child). */
static int lockish(const zkr_participant *p) {
  return p->session_id != 0 &&
         (p->role == ZKR_ROLE_LOCK || p->role == ZKR_ROLE_READ ||
          p->role == ZKR_ROLE_WRITE);
}

static int blocks(const zkr_participant *earlier, const zkr_participant *p) {
  if (p->role == ZKR_ROLE_READ)
    return earlier->role != ZKR_ROLE_READ;
  return 1;
}

/* Add @path/@node to the NULL-ended list @l (*@nl entries); -1: out of
 * memory. */
static int add_ahead(char ***l, int *nl, const char *path, const char *node) {
  char **nw = realloc(*l, (size_t)(*nl + 2) * sizeof *nw);
  if (!nw)
    return -1;
  *l = nw;
  nw[*nl] = zkr__path_join(path, node);
  nw[*nl + 1] = NULL;
  if (!nw[*nl])
    return -1;
  ++*nl;
  return 0;
}

void zkr__waitfor_free(char **ahead) {
  for (int i = 0; ahead && ahead[i]; i++)
    free(ahead[i]);
  free(ahead);
}

/* The most siblings read per parent; a parent with more is not read. */
#define WF_SIBLINGS 64

struct search {
  zkr_session *s;
  int64_t timeout_ms;
  struct wf g;
  char ***ahead;
  int nahead;
  char first_wait[300];
};

/* The waits in the queue at @path, where the set's node is @ours (NULL:
 * none). 0, or an error of zkr_rwlock_participants() (ZKR_ENONODE: no
 * queue there). */
static int add_queue(struct search *x, const char *path, const char *ours) {
  zkr_participant *p = NULL;
  size_t np = 0;
  int rc = zkr_rwlock_participants(x->s, path, x->timeout_ms, &p, &np);
  if (rc != ZKR_OK)
    return rc;
  for (size_t a = 0; a < np && rc == 0; a++) {
    if (p[a].is_holder || !lockish(&p[a]))
      continue;
    int w = contender(&x->g, &p[a], ours);
    for (size_t b = 0; b < a && w >= 0; b++) {
      if (!lockish(&p[b]) || !blocks(&p[b], &p[a]))
        continue;
      int t = contender(&x->g, &p[b], ours);
      if (t < 0 || (t != w && add_wait(&x->g, w, t) != 0))
        w = -1;
      else if (w == 0 && t != 0 &&
               add_ahead(x->ahead, &x->nahead, path, p[b].node) != 0)
        w = -1;
      else if (w == 0 && t != 0 && !x->first_wait[0])
        snprintf(x->first_wait, sizeof x->first_wait, "%s (behind %s)", path,
                 p[b].node);
    }
    if (w < 0)
      rc = ZKR_ENOMEM;
  }
  zkr_participants_free(p, np);
  return rc;
}

/* The queues beside the set's: the other children of the parents of
 * @paths (a parent read once; not "/"). Unreadable ones are left out. */
static int add_siblings(struct search *x, char *const *paths, int n) {
  for (int i = 0; i < n; i++) {
    const char *slash = strrchr(paths[i], '/');
    size_t plen = slash ? (size_t)(slash - paths[i]) : 0;
    int seen = plen == 0;
    for (int j = 0; j < i && !seen; j++)
      seen = strncmp(paths[j], paths[i], plen + 1) == 0 &&
             strchr(paths[j] + plen + 1, '/') == NULL;
    if (seen)
      continue;
    char *parent = zkr__strdup(paths[i]);
    if (!parent)
      return ZKR_ENOMEM;
    parent[plen] = '\0';
    zkr__result r;
    memset(&r, 0, sizeof r);
    int rc = zkr__zk_children(x->s, parent, zkr__deadline(x->timeout_ms), &r);
    for (int k = 0;
         rc == ZKR_OK && r.names.count <= WF_SIBLINGS && k < r.names.count;
         k++) {
      char *sib = zkr__path_join(parent, r.names.data[k]);
      if (!sib) {
        rc = ZKR_ENOMEM;
        break;
      }
      int own = 0;
      for (int j = 0; j < n && !own; j++)
        own = strcmp(paths[j], sib) == 0;
      int e = own ? ZKR_OK : add_queue(x, sib, NULL);
      free(sib);
      if (e == ZKR_ENOMEM)
        rc = e;
    }
    zkr__result_clear(&r);
    free(parent);
    if (rc == ZKR_ENOMEM)
      return rc;
  }
  return ZKR_OK;
}

int zkr__waitfor_cycle(zkr_session *s, char *const *paths, char *const *nodes,
                       int n, int64_t timeout_ms, char *why, size_t whylen,
                       char ***ahead) {
  struct search x = {.s = s, .timeout_ms = timeout_ms, .ahead = ahead};
  struct wf *g = &x.g;
  *ahead = NULL;
  int rc = 0;
  g->who = malloc(sizeof *g->who);
  if (!g->who)
    return ZKR_ENOMEM;
  g->who[0] = 0;
  g->nwho = 1;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = add_queue(&x, paths[i], nodes[i]);
    if (rc == ZKR_ENONODE)
      rc = 0;
  }
  if (rc == 0)
    rc = add_siblings(&x, paths, n);
  if (rc == 0) {
    /* is the set reachable from itself? (breadth first) */
    int *seen = calloc((size_t)g->nwho, sizeof *seen);
    int *todo = calloc((size_t)g->nwho + 1, sizeof *todo);
    int head = 0, tail = 0;
    if (!seen || !todo)
      rc = ZKR_ENOMEM;
    else
      todo[tail++] = 0;
    while (rc == 0 && head < tail) {
      int v = todo[head++];
      for (int k = 0; k < g->nedges && rc == 0; k++) {
        if (g->from[k] != v)
          continue;
        if (g->to[k] == 0)
          rc = 1;
        else if (!seen[g->to[k]]) {
          seen[g->to[k]] = 1;
          todo[tail++] = g->to[k];
        }
      }
    }
    free(seen);
    free(todo);
  }
  if (rc != 1) {
    zkr__waitfor_free(*ahead);
    *ahead = NULL;
  }
  if (rc == 1 && why && whylen)
    snprintf(why, whylen,
             "waits at %s, and a contender it waits for waits for it",
             x.first_wait);
  free(g->who);
  free(g->from);
  free(g->to);
  return rc;
}
