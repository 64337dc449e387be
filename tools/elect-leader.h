/* zkr-elect --leader and --observe (elect-leader.c). */
#ifndef ZKR_TOOLS_ELECT_LEADER_H
#define ZKR_TOOLS_ELECT_LEADER_H

#include <stdint.h>

#include <zkr/zkr.h>

#include "cli.h"

/* --leader: print the leader of the election at @path (JSON with @json),
 * read within @timeout_ms. Returns the exit status: 0 a leader, 1 none,
 * else 69, 70 or 75 (said); a path the library refuses is a usage error
 * (@s closed first). */
int elect_show_leader(zkr_session *s, const char *path, int json,
                      int64_t timeout_ms);
/* --observe: print the leader of @path, then one line at each change of
 * leader, until a signal from the signalfd @sfd; then close @s and end
 * the process as that signal would have. Returns the exit status if it
 * could not observe (said; a refused path is a usage error). */
int elect_observe(zkr_session *s, const char *path, int json, int sfd);

#endif
