/*
 * The node follower (follow.c): reads a node's data or its children,
 * keeps a watch on it, reads again on every change, after a read lost
 * with the connection once it is back, and on a new ZooKeeper session
 * (which has none of our watches), and hands each read's result to its
 * owner on the event thread, one at a time, in order. A follower made
 * with ZKR__FOLLOW_ONCE sets no watch and reads only when asked.
 *
 * The semaphore's shared count and the election's observer are built on
 * it; anything that needs to follow a node should be.
 */
#ifndef ZKR_FOLLOW_H
#define ZKR_FOLLOW_H

#include "object.h"

typedef struct zkr__follow zkr__follow;

enum {
  ZKR__FOLLOW_DATA = 1,     /* the node's data and stat */
  ZKR__FOLLOW_CHILDREN = 2, /* the node's children */
  ZKR__FOLLOW_ONCE = 4,     /* no watch, no re-read: only when asked */
  ZKR__FOLLOW_USER = 8      /* fn is the user's callback (dispatch mode:
                               it runs in zkr_session_dispatch()) */
};

/* What one read found. @rc: ZKR_OK; ZKR_ENONODE (the node does not exist:
 * a watching follower watches for its creation); ZKR_ECONNLOSS or another
 * error of the read (a watching follower reads again once connected). */
typedef struct zkr__snapshot {
  uint64_t seq; /* the read's number: 1, 2, ... in the order they started */
  int rc;
  int zrc;                 /* the ZooKeeper client's code behind @rc */
  const char *data;        /* DATA: the value (NUL added; NULL for null data) */
  int datalen;             /* DATA: its length, -1 for null data */
  const struct Stat *stat; /* DATA: the node's stat */
  const struct String_vector *names; /* CHILDREN: the children */
  const char *child;                 /* CHILDREN with a pick: the child
                                        picked (NULL: none) */
  const char *child_data;            /* its data (NUL added) */
  int child_datalen;                 /* its length, -1 for null data */
  const struct Stat *child_stat;     /* its stat */
} zkr__snapshot;

/* Runs on the event thread, without the follower's lock; never after
 * zkr__follow_free() returned (but possibly while it is called from
 * another thread, which then waits for it). */
typedef void (*zkr__follow_fn)(zkr__follow *f, const zkr__snapshot *snap,
                               void *ud);
/* CHILDREN: which child's data to read with each listing (the index of a
 * name in @names, or -1 for none). A picked child found gone is listed
 * again. */
typedef int (*zkr__follow_pick)(const struct String_vector *names, void *ud);

/* Make a follower of @path (@what: ZKR__FOLLOW_* flags, DATA or CHILDREN
 * or both with ONCE) and start its first read. ZKR_OK, ZKR_ENOMEM. */
int zkr__follow_new(zkr__follow **out, zkr_session *s, const char *path,
                    int what, zkr__follow_pick pick, zkr__follow_fn fn,
                    void *ud);
/* Read again now (after the read under way, if any). Returns the number
 * (zkr__snapshot.seq) of the read that answers: a snapshot with a lower
 * one was read before the call. */
uint64_t zkr__follow_refresh(zkr__follow *f);
/* Stop it: no callback after it returns (unless called from that
 * callback itself), its watch is removed. NULL: nothing. */
void zkr__follow_free(zkr__follow *f);

#endif
