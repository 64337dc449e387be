/* What zkr-ls makes of the nodes it reads (ls.c): contenders and their
 * types (by the library's layouts), and one queue printed as a table or
 * as JSON. */
#ifndef ZKR_TOOLS_LS_H
#define ZKR_TOOLS_LS_H

#include <stddef.h>
#include <stdint.h>

#include <zkr/zkr.h>

#include "cli.h"

/* What is shown for one path: the contenders of a lock, of a
 * semaphore its lease nodes ("leases/NAME") and then the contenders
 * queued for admission ("locks/NAME"), or of an election its
 * participants. */
struct ls_view {
  zkr_participant *p;
  size_t n;
  int sem;
  int elect;
};

/* -j: JSON output. */
extern int ls_json;
/* --permits: the limit of the semaphores; 0 unknown. */
extern long ls_permits;

/* The wall clock in milliseconds (the nodes' ctime is on it). */
int64_t ls_wall_ms(void);
/* 1 if @name ends in a ZooKeeper sequence number: "%010d", so 10 digits,
 * or a minus sign and 9 digits once the counter wrapped past 2^31-1. */
int ls_has_seq(const char *name);
/* @s for a column of the table: escaped as messages are, at most
 * @len - 1 bytes, cut between two UTF-8 characters. */
void ls_column(char *buf, size_t len, const char *s);
/* The type of lock @v is: "semaphore", "election", "rwlock" or "lock".
 * (Each contender's kind is its role, zkr_role_name().) */
const char *ls_type_of(const struct ls_view *v);
/* The queue @v of @path on stdout: a table with its heading line, or
 * (ls_json) one JSON object without a newline. */
void ls_show_queue(const char *path, const struct ls_view *v);

#endif
