/*
 * What every recipe hands out (hold.c): a zkr_hold stands for one hold of
 * one queue object, a term, named by its node's czxid (which no other
 * node of the ensemble's history has). Its views and its guarded writes
 * answer for that term only: once the queue object holds another node,
 * or none, the hold is over.
 *
 * Owns: the public zkr_hold_* functions and the guarded writes. Must not
 * touch: the engine's internals (queue.h only), any recipe.
 */
#ifndef ZKR_HOLD_H
#define ZKR_HOLD_H

#include <stdatomic.h>

#include "list.h"
#include "queue.h"

struct zkr_hold {
  zkr__queue *q;
  _Atomic int64_t czxid; /* the term's node; 0: released (or not yet held) */
  /* a multi-lock set's hold: its @nset members' queues (q is the first),
   * all holding nodes of the one czxid; NULL and 0 for one queue */
  zkr__queue **set;
  int nset;
};

/* Point @h (whose q, @q, its owner set when it made it) at the term @q
 * holds now: 1 if it holds one (then h->czxid is its node's czxid), 0 if
 * not (@h unchanged). */
int zkr__hold_take(zkr_hold *h, zkr__queue *q);
/* The hold given up (released): it reports UNLOCKED from now on. */
void zkr__hold_end(zkr_hold *h);

#endif
