/* The Prometheus view of a tree of locks (prom.c): each lock's figures
 * and holders, and the metrics in the text exposition format. */
#ifndef ZKR_TOOLS_PROM_H
#define ZKR_TOOLS_PROM_H

#include <stddef.h>
#include <stdio.h>

#include <zkr/zkr.h>

#include "ls.h"

/* The result of one read of the tree, for prom_write(). */
struct prom_result {
  const char *root;
  int up;          /* the tree was read (maybe with subtrees skipped) */
  double duration; /* seconds */
};

/* Read the tree under @root (ls_walk()) and record each lock, the locks
 * recorded before freed first; fill *@sc. Returns what -r would: 0, 2
 * (subtrees skipped), or 1, 64 (said). */
int prom_scrape(zkr_session *s, const char *root, struct prom_result *sc);
/* Record the figures and the holders of the lock @v at @path. */
void prom_collect(const char *path, const struct ls_view *v);
/* How many locks are recorded. */
size_t prom_count(void);
/* Free the locks recorded. */
void prom_free(void);
/* Every metric on @f: the state of the read @sc, then, if it succeeded,
 * each figure of each lock recorded. */
void prom_write(FILE *f, const struct prom_result *sc);
/* @s as the value of a label on @f: '\\', '"' and newline escaped; other
 * control characters and bytes that are not UTF-8 as U+FFFD; at most @max
 * bytes of @s, cut between two characters ("..." marks the cut). */
void prom_value(FILE *f, const char *s, size_t max);

#endif
