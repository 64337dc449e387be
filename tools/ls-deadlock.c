/*
 * zkr-ls --deadlocks PATH...: a wait-for cycle among the queues of the
 * locks at the paths (see ls-deadlock.h).
 *
 * Each waiter is placed by its node's ephemeral owner (its ZooKeeper
 * session), not by its data, so a node whose data a revocation request
 * overwrote is still placed. A session waits for another when one of its
 * nodes is not holding and a node of the other, earlier in the same queue,
 * blocks it by the queue's rule (a reader is blocked by earlier writers
 * and mutex nodes, everyone else by every earlier node). A cycle of such
 * waits among sessions is a deadlock: none of them can go on until one
 * lets go. Read-only.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls-deadlock.h"
#include "ls-walk.h"

struct edge {
  int from, to;     /* session indexes */
  const char *path; /* where */
  const char *waiter, *blocker;
};

struct graph {
  int64_t *sess;
  char **who; /* a session's id, as its nodes' data gives it */
  int nsess;
  struct edge *e;
  int ne;
};

static int session_index(struct graph *g, int64_t sid, const char *data) {
  for (int i = 0; i < g->nsess; i++)
    if (g->sess[i] == sid) {
      if (!g->who[i] && data && strcmp(data, "__REVOKE__") != 0)
        g->who[i] = strdup(data);
      return i;
    }
  int64_t *ns = realloc(g->sess, (size_t)(g->nsess + 1) * sizeof *ns);
  char **nw = realloc(g->who, (size_t)(g->nsess + 1) * sizeof *nw);
  if (ns)
    g->sess = ns;
  if (nw)
    g->who = nw;
  if (!ns || !nw)
    return -1;
  g->sess[g->nsess] = sid;
  g->who[g->nsess] =
      data && strcmp(data, "__REVOKE__") != 0 ? strdup(data) : NULL;
  return g->nsess++;
}

static int blocks(const zkr_participant *earlier, const zkr_participant *p) {
  if (p->role == ZKR_ROLE_READ)
    return earlier->role != ZKR_ROLE_READ;
  return 1;
}

/* The waits in one queue. */
static int add_queue(struct graph *g, const char *path, zkr_participant *p,
                     size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i].is_holder || p[i].session_id == 0)
      continue;
    int w = session_index(g, p[i].session_id, p[i].data);
    if (w < 0)
      return -1;
    for (size_t j = 0; j < i; j++) {
      if (p[j].session_id == p[i].session_id || !blocks(&p[j], &p[i]))
        continue;
      int b = session_index(g, p[j].session_id, p[j].data);
      struct edge *ne = realloc(g->e, (size_t)(g->ne + 1) * sizeof *ne);
      if (b < 0 || !ne)
        return -1;
      g->e = ne;
      g->e[g->ne++] = (struct edge){w, b, path, p[i].node, p[j].node};
    }
  }
  return 0;
}

/* Depth first from @v: 1 with the cycle's edges in @stack (*@depth of
 * them) once one closes. */
static int dfs(struct graph *g, int v, int *state, int *stack, int *depth) {
  state[v] = 1; /* on the path */
  for (int k = 0; k < g->ne; k++) {
    if (g->e[k].from != v)
      continue;
    int t = g->e[k].to;
    stack[(*depth)++] = k;
    if (state[t] == 1) {
      /* keep the cycle only: from the first edge leaving t */
      int first = 0;
      while (g->e[stack[first]].from != t)
        first++;
      memmove(stack, stack + first, (size_t)(*depth - first) * sizeof *stack);
      *depth -= first;
      return 1;
    }
    if (state[t] == 0 && dfs(g, t, state, stack, depth))
      return 1;
    (*depth)--;
  }
  state[v] = 2; /* done: no cycle through it */
  return 0;
}

static void say_session(const struct graph *g, int i) {
  printf("session 0x%" PRIx64, (uint64_t)g->sess[i]);
  if (g->who[i])
    printf(" (%s)", esc(g->who[i]));
}

int ls_deadlocks(zkr_session *s, char *const *paths, int npaths) {
  struct graph g = {0};
  zkr_participant **qs = calloc((size_t)npaths, sizeof *qs);
  size_t *qn = calloc((size_t)npaths, sizeof *qn);
  int *state = NULL, *stack = NULL;
  int status = 0, nodes = 0, found = 0, depth = 0;
  if (!qs || !qn) {
    ls_say("out of memory");
    status = 1;
    goto out;
  }
  /* every queue read first (the edges point into them) */
  for (int i = 0; i < npaths; i++) {
    int rc =
        zkr_rwlock_participants(s, paths[i], ls_op_timeout_ms, &qs[i], &qn[i]);
    if (rc == ZKR_ENONODE)
      continue; /* nothing queued there */
    if (rc != ZKR_OK) {
      status = ls_fail(rc, "cannot read", paths[i]);
      goto out;
    }
    nodes += (int)qn[i];
    if (add_queue(&g, paths[i], qs[i], qn[i]) != 0) {
      ls_say("out of memory");
      status = 1;
      goto out;
    }
  }
  state = calloc((size_t)g.nsess + 1, sizeof *state);
  stack = calloc((size_t)g.ne + 1, sizeof *stack);
  if (!state || !stack) {
    ls_say("out of memory");
    status = 1;
    goto out;
  }
  for (int v = 0; v < g.nsess && !found; v++)
    if (state[v] == 0)
      found = dfs(&g, v, state, stack, &depth);
  if (found) {
    printf("deadlock: %d sessions wait for each other in a cycle:\n", depth);
    for (int k = 0; k < depth; k++) {
      const struct edge *e = &g.e[stack[k]];
      printf("  ");
      say_session(&g, e->from);
      printf("\n    waits at %s (node %s) for ", esc(e->path), esc(e->waiter));
      say_session(&g, e->to);
      printf(" (node %s)\n", esc(e->blocker));
    }
    status = 3;
  } else {
    printf("no wait-for cycle among %d queue%s (%d contender%s)\n", npaths,
           npaths == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
  }
out:
  for (int i = 0; qs && i < npaths; i++)
    zkr_participants_free(qs[i], qn[i]);
  free(qs);
  free(qn);
  free(state);
  free(stack);
  for (int i = 0; i < g.nsess; i++)
    free(g.who[i]);
  free(g.who);
  free(g.sess);
  free(g.e);
  return status;
}
