/*
 * What zkr-ls makes of the nodes it reads (see ls.h): which children are
 * contenders (a sequence number), the kind of each (lock, read, write,
 * lease, admission, latch, selector), which layouts are a semaphore's or
 * an election's, the type of a lock, and its queue printed as a table or
 * as JSON.
 *
 * Owns: the table's columns and the JSON of one queue. Must not touch:
 * ZooKeeper (ls-walk.c reads the nodes), the metrics (prom.c).
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ls.h"

int ls_json;
long ls_permits;

int64_t ls_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if @name ends in a ZooKeeper sequence number: "%010d", so 10 digits,
 * or a minus sign and 9 digits once the counter wrapped past 2^31-1. */
int ls_has_seq(const char *name) {
  size_t n = strlen(name);
  if (n < 10)
    return 0;
  for (size_t i = n - 10; i < n; i++)
    if (!isdigit((unsigned char)name[i]) && !(i == n - 10 && name[i] == '-'))
      return 0;
  return 1;
}

/* Printable form of arbitrary node data for the table. */
static void shown_data(const char *data, char *buf, size_t len) {
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)data;
       p && *p && k + 5 < len; p++)
    buf[k++] = (*p >= 0x20 && *p < 0x7f) ? (char)*p : '?';
  buf[k] = '\0';
}

/* @s for a column of the table: escaped as messages are (node data may
 * hold control characters), at most @len - 1 bytes, cut between two UTF-8
 * characters. */
void ls_column(char *buf, size_t len, const char *s) {
  const char *e = esc(s);
  size_t n = strlen(e);
  if (n >= len) {
    n = len - 1;
    while (n > 0 && ((unsigned char)e[n] & 0xc0) == 0x80)
      n--;
  }
  memcpy(buf, e, n);
  buf[n] = '\0';
}

static void fmt_age(int64_t ms, char *buf, size_t len) {
  if (ms < 0)
    ms = 0;
  if (ms < 60000)
    snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
  else if (ms < 3600000)
    snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000,
             (ms / 1000) % 60);
  else
    snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000,
             (ms / 60000) % 60);
}

/* The type of lock @v is: a semaphore, an election, else what its
 * contenders' names show (a read-write lock, or a lock). */
const char *ls_type_of(const struct ls_view *v) {
  if (v->sem)
    return "semaphore";
  if (v->elect)
    return "election";
  char **names = calloc(v->n ? v->n : 1, sizeof *names);
  if (!names)
    return "lock";
  for (size_t i = 0; i < v->n; i++)
    names[i] = v->p[i].node;
  zkr_layout l = zkr_layout_of(names, v->n);
  free(names);
  return l == ZKR_LAYOUT_RWLOCK ? "rwlock" : "lock";
}

/* The line above a semaphore's table: leases held (of the limit, if
 * known) and contenders waiting (each queued once for admission). */
static void sem_heading(const char *path, const struct ls_view *v) {
  size_t held = 0, waiting = 0;
  for (size_t i = 0; i < v->n; i++) {
    if (v->p[i].role == ZKR_ROLE_LEASE)
      held += v->p[i].is_holder != 0;
    else
      waiting++;
  }
  printf("%s: semaphore, %zu lease%s held", esc(path), held,
         held == 1 ? "" : "s");
  if (ls_permits)
    printf(" of %ld", ls_permits);
  printf(", %zu waiting%s\n", waiting, v->n ? "" : " (free)");
}

void ls_show_queue(const char *path, const struct ls_view *v) {
  const zkr_participant *p = v->p;
  size_t n = v->n;
  int64_t now = ls_wall_ms();
  if (ls_json) {
    printf("{\"path\":");
    json_string(stdout, path);
    if (v->sem)
      printf(",\"type\":\"semaphore\"");
    if (v->elect)
      printf(",\"type\":\"election\"");
    if (v->sem && ls_permits)
      printf(",\"permits\":%ld", ls_permits);
    printf(",\"contenders\":[");
    for (size_t i = 0; i < n; i++) {
      struct owner o;
      int ours = parse_owner(p[i].data, &o);
      printf("%s{\"position\":%zu,\"node\":", i ? "," : "", i + 1);
      json_string(stdout, p[i].node);
      printf(",\"seq\":%" PRId32 ",\"role\":\"%s\",\"kind\":\"%s\","
             "\"token\":%" PRId64 ",\"session\":\"0x%" PRIx64 "\"",
             p[i].seq, p[i].is_holder ? "holder" : "waiter",
             zkr_role_name(p[i].role), p[i].czxid, (uint64_t)p[i].session_id);
      if (ours)
        json_owner(stdout, &o);
      if (p[i].data && strcmp(p[i].data, "__REVOKE__") == 0)
        printf(",\"revocation_requested\":true");
      printf(",\"data\":");
      json_string(stdout, p[i].data);
      printf(",\"queued_at_ms\":%" PRId64 ",\"age_ms\":%" PRId64 "}",
             p[i].ctime_ms, now - p[i].ctime_ms > 0 ? now - p[i].ctime_ms : 0);
    }
    printf("]}");
    return;
  }
  if (v->sem)
    sem_heading(path, v);
  else if (v->elect)
    printf("%s: election, %zu participant%s%s\n", esc(path), n,
           n == 1 ? "" : "s", n ? ", the first leads" : " (no leader)");
  else
    printf("%s: %zu contender%s%s\n", esc(path), n, n == 1 ? "" : "s",
           n ? "" : " (free)");
  if (n == 0)
    return;
  int kw = 5; /* the KIND column: as wide as its widest value */
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(zkr_role_name(p[i].role)) > kw)
      kw = (int)strlen(zkr_role_name(p[i].role));
  printf("%-4s %-6s %-11s %-12s %-18s %-8s %-16s %-16s %-7s %-*s %s\n", "POS",
         "ROLE", "SEQ", "TOKEN", "SESSION", "AGE", "ID", "HOST", "PID", kw,
         "KIND", "NODE");
  for (size_t i = 0; i < n; i++) {
    struct owner o;
    char id[64], host[64], pid[16], age[32], sess[24];
    if (p[i].data && strcmp(p[i].data, "__REVOKE__") == 0) {
      snprintf(id, sizeof id, "revocation-requested");
      snprintf(host, sizeof host, "-");
      snprintf(pid, sizeof pid, "-");
    } else if (parse_owner(p[i].data, &o)) {
      char idt[600];
      if (o.set)
        snprintf(idt, sizeof idt, "%s[set of %d]", o.id[0] ? o.id : "", o.set);
      ls_column(id, sizeof id, o.set ? idt : o.id[0] ? o.id : "-");
      ls_column(host, sizeof host, o.host);
      snprintf(pid, sizeof pid, "%ld", o.pid);
    } else {
      char d[40];
      shown_data(p[i].data, d, sizeof d);
      snprintf(id, sizeof id, "data:%s", d[0] ? d : "-");
      snprintf(host, sizeof host, "-");
      snprintf(pid, sizeof pid, "-");
    }
    fmt_age(now - p[i].ctime_ms, age, sizeof age);
    snprintf(sess, sizeof sess, "0x%" PRIx64, (uint64_t)p[i].session_id);
    printf("%-4zu %-6s %010" PRId32 "  %-12" PRId64
           " %-18s %-8s %-16s %-16s %-7s %-*s %s\n",
           i + 1, p[i].is_holder ? "holder" : "waiter", p[i].seq, p[i].czxid,
           sess, age, id, host, pid, kw, zkr_role_name(p[i].role),
           esc(p[i].node));
  }
}
