/*
 * The node layouts of every recipe, in one table: which name plays which
 * role, and which recipe a node's children show. zkr writes Curator's
 * names; it reads Curator's, kazoo's and its own.
 */
#include "config.h"

#include <string.h>

#include "layout.h"
#include "zkr-private.h"

/* The marker right before the sequence number, per library, and the role
 * it gives under a lock's or an election's path. */
static const struct {
  const char *marker;
  zkr_role in_lock;
  zkr_role in_election;
} table[] = {
    {"-" ZKR__MARK_LOCK, ZKR_ROLE_LOCK, ZKR_ROLE_SELECTOR}, /* Curator, zkr */
    {ZKR__MARK_READ, ZKR_ROLE_READ, ZKR_ROLE_READ},         /* Curator, zkr */
    {ZKR__MARK_WRITE, ZKR_ROLE_WRITE, ZKR_ROLE_WRITE},      /* Curator, zkr */
    {"__rlock__", ZKR_ROLE_READ, ZKR_ROLE_READ},            /* kazoo */
    {"__lock__", ZKR_ROLE_WRITE, ZKR_ROLE_WRITE}, /* kazoo (Lock, WriteLock) */
    {"-" ZKR__MARK_LATCH, ZKR_ROLE_LOCK, ZKR_ROLE_LATCH},  /* Curator, zkr */
    {"-" ZKR__MARK_LEASE, ZKR_ROLE_LEASE, ZKR_ROLE_LEASE}, /* Curator, zkr */
};
#define NTABLE (sizeof table / sizeof *table)

int zkr__is_reader(const char *name) {
  return zkr__seq_marked(name, ZKR__MARK_READ) ||
         zkr__seq_marked(name, "__rlock__");
}

zkr_role zkr__role_of(const char *name, zkr__place place) {
  int32_t seq;
  if (!name || !zkr__seq_parse(name, &seq))
    return ZKR_ROLE_OTHER;
  if (place == ZKR__IN_LEASES)
    return ZKR_ROLE_LEASE;
  if (place == ZKR__IN_ADMISSION)
    return ZKR_ROLE_ADMISSION;
  for (size_t i = 0; i < NTABLE; i++)
    if (zkr__seq_marked(name, table[i].marker))
      return place == ZKR__IN_ELECTION ? table[i].in_election
                                       : table[i].in_lock;
  /* a contender named by another library: exclusive by default */
  return ZKR_ROLE_LOCK;
}

zkr_role zkr_role_of(const char *name, zkr_layout layout) {
  if (!name)
    return ZKR_ROLE_OTHER;
  if (layout == ZKR_LAYOUT_SEMAPHORE) {
    if (strcmp(name, ZKR__SEM_LEASES) == 0)
      return ZKR_ROLE_LEASE;
    if (strcmp(name, ZKR__SEM_ADMISSION) == 0)
      return ZKR_ROLE_ADMISSION;
  }
  return zkr__role_of(name, layout == ZKR_LAYOUT_ELECTION ? ZKR__IN_ELECTION
                                                          : ZKR__IN_LOCK);
}

int zkr__semaphore_child(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, ZKR__SEM_ADMISSION) == 0 ||
         strcmp(name, ZKR__SEM_LEASES) == 0;
}

/* 32 lower-case hex digits and nothing else: kazoo's lease node (a uuid). */
static int hex32(const char *name) {
  size_t i = 0;
  for (; name[i]; i++)
    if (!((name[i] >= '0' && name[i] <= '9') ||
          (name[i] >= 'a' && name[i] <= 'f')))
      return 0;
  return i == 32;
}

zkr_layout zkr_layout_of(char *const *children, size_t n) {
  if (!children || n == 0)
    return ZKR_LAYOUT_NONE;
  int leases = 0, others = 0, latch = 0, rw = 0, lock = 0, kazoo_sem = 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = children[i];
    if (!k)
      continue;
    if (strcmp(k, ZKR__SEM_LEASES) == 0) {
      leases = 1;
      continue;
    }
    if (strcmp(k, ZKR__SEM_ADMISSION) != 0)
      others = 1;
    if (hex32(k)) {
      kazoo_sem = 1;
      continue;
    }
    switch (zkr__role_of(k, ZKR__IN_ELECTION)) {
    case ZKR_ROLE_LATCH:
      latch = 1;
      break;
    case ZKR_ROLE_READ:
      rw = 1;
      break;
    case ZKR_ROLE_WRITE:
      /* kazoo's Lock and WriteLock both write "__lock__" */
      if (zkr__seq_marked(k, ZKR__MARK_WRITE))
        rw = 1;
      else
        lock = 1;
      break;
    case ZKR_ROLE_LEASE: /* a lease node right under the path */
      kazoo_sem = 1;
      break;
    case ZKR_ROLE_LOCK:
    case ZKR_ROLE_SELECTOR:
      lock = 1;
      break;
    default:
      break;
    }
  }
  if (leases && !others)
    return ZKR_LAYOUT_SEMAPHORE;
  if (latch)
    return ZKR_LAYOUT_ELECTION;
  if (kazoo_sem)
    return ZKR_LAYOUT_KAZOO_SEMAPHORE;
  if (rw)
    return ZKR_LAYOUT_RWLOCK;
  if (lock)
    return ZKR_LAYOUT_LOCK;
  return ZKR_LAYOUT_OTHER;
}

const char *zkr_role_name(zkr_role role) {
  switch (role) {
  case ZKR_ROLE_LOCK:
    return "lock";
  case ZKR_ROLE_READ:
    return "read";
  case ZKR_ROLE_WRITE:
    return "write";
  case ZKR_ROLE_LEASE:
    return "lease";
  case ZKR_ROLE_ADMISSION:
    return "admission";
  case ZKR_ROLE_LATCH:
    return "latch";
  case ZKR_ROLE_SELECTOR:
    return "selector";
  default:
    return "other";
  }
}

const char *zkr_layout_name(zkr_layout layout) {
  switch (layout) {
  case ZKR_LAYOUT_NONE:
    return "none";
  case ZKR_LAYOUT_LOCK:
    return "lock";
  case ZKR_LAYOUT_RWLOCK:
    return "rwlock";
  case ZKR_LAYOUT_SEMAPHORE:
    return "semaphore";
  case ZKR_LAYOUT_KAZOO_SEMAPHORE:
    return "kazoo-semaphore";
  case ZKR_LAYOUT_ELECTION:
    return "election";
  default:
    return "other";
  }
}
