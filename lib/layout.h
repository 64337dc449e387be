/*
 * The node layouts of every recipe, in one table (layout.c): the markers
 * before a contender's sequence number, the children of a semaphore, and
 * the role each name plays where it is found.
 */
#ifndef ZKR_LAYOUT_H
#define ZKR_LAYOUT_H

#include <stddef.h>

#include "zkr/lock.h"

/* The markers zkr writes, right before the sequence number ZooKeeper
 * appends, after "_c_<uuid>-" (Curator's names). */
#define ZKR__MARK_LOCK "lock-"     /* a mutex's, a selector's, admission */
#define ZKR__MARK_READ "__READ__"  /* a read-write lock's reader */
#define ZKR__MARK_WRITE "__WRIT__" /* its writer */
#define ZKR__MARK_LATCH "latch-"   /* an election's latch participant */
#define ZKR__MARK_LEASE "lease-"   /* a semaphore's lease */

/* A semaphore's two children: its lease nodes, and the mutex that admits
 * one contender at a time. */
#define ZKR__SEM_LEASES "leases"
#define ZKR__SEM_ADMISSION "locks"

/* Where a contender was found. */
typedef enum {
  ZKR__IN_LOCK,      /* under a lock's path (mutex or read-write lock) */
  ZKR__IN_ELECTION,  /* under an election's path */
  ZKR__IN_LEASES,    /* under PATH/leases of a semaphore */
  ZKR__IN_ADMISSION, /* under PATH/locks of a semaphore */
} zkr__place;

/* The role of the contender named @name found at @place. */
zkr_role zkr__role_of(const char *name, zkr__place place);

/* Is @name a reader's node (any library's naming)? */
int zkr__is_reader(const char *name);

/* The markers of every library: the sequence number of a name that has
 * one starts right after it (seq.c; a list for an initializer, so that
 * the leaf seq.c needs no other file). */
#define ZKR__MARKERS                                                           \
  "-" ZKR__MARK_LOCK, "__lock__", "__rlock__", ZKR__MARK_READ,                 \
      ZKR__MARK_WRITE, "-" ZKR__MARK_LATCH, "-" ZKR__MARK_LEASE

/* Is @name one of a semaphore's children ("leases", "locks")? A policy's
 * "foreign" rule: a lock at a semaphore's path refuses to start. */
int zkr__semaphore_child(const char *name, void *ctx);

#endif
