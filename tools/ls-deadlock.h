/* zkr-ls --deadlocks (ls-deadlock.c): a wait-for cycle among lock queues. */
#ifndef ZKR_TOOLS_LS_DEADLOCK_H
#define ZKR_TOOLS_LS_DEADLOCK_H

#include <zkr/zkr.h>

/* Read the queues of the locks (mutexes, read-write locks) at @paths,
 * place every waiting session by its nodes' ephemeral owner, and print a
 * cycle of sessions each waiting for the next, or that there is none.
 * Returns the exit status: 0 none, 3 a cycle, 1 (or 64 for a bad path)
 * an error. */
int ls_deadlocks(zkr_session *s, char *const *paths, int npaths);

#endif
