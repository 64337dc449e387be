/* zkr-ls's reading of ZooKeeper (ls-walk.c): the queue at a path, or every
 * one in the tree under it, and the messages of a read. */
#ifndef ZKR_TOOLS_LS_WALK_H
#define ZKR_TOOLS_LS_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <zkr/zkr.h>

#include "ls.h"

/* Exit status: -r listed the rest but skipped some subtrees. */
#define EX_PARTIAL 2
/* The room for the messages kept with ls_quiet. */
#define LS_MSGS_MAX 2048

/* --timeout: how long reading one path's queue may take (10000 ms). */
extern int64_t ls_op_timeout_ms;
/* Monotonic time (now_ms()) by which a read must end; 0: none. */
extern int64_t ls_deadline;
/* The connection string, to tell a missing chroot from a missing node. */
extern const char *ls_servers;
/* Errors and warnings go to ls_msgs (one a line, without "prog: ")
 * instead of stderr (--watch shows them in its block; zkr-exporter logs
 * them when they change). The caller empties it. */
extern int ls_quiet;
extern char ls_msgs[LS_MSGS_MAX];
extern size_t ls_msgs_len;
/* Locks shown and subtrees skipped by the last read. */
extern int ls_shown;
extern int ls_skipped;
/* When set, each lock the walk finds is handed to it instead of being
 * printed (--prometheus). */
extern void (*ls_collect)(const char *path, const struct ls_view *v);

/* "prog: MESSAGE" on stderr; with ls_quiet, "MESSAGE" into ls_msgs. */
void ls_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Say "@what @path: REASON" for the error @rc; the exit status: 64 for a
 * path the library refuses, else 1. */
int ls_fail(int rc, const char *what, const char *path);
/* Every lock at or under @path (@top: the path given), depth first, in
 * name order. A subtree that cannot be read is skipped with a warning
 * (ls_skipped); any other error ends the walk. 0, or the exit status. */
int ls_walk(zkr_session *s, const char *path, int top);
/* What one run of zkr-ls shows: the queue at @path, or with -r every
 * lock under it. Returns the exit status. */
int ls_listing(zkr_session *s, const char *path, int recursive);
/* The kept messages on @f, each line after @pre and "prog: ". */
void ls_put_msgs(FILE *f, const char *pre);

#endif
