/*
 * zkr-elect --leader and --observe (see elect-leader.h): the leader of an
 * election read once, or followed until a signal, and printed one line at
 * a time as text (id, host, pid, token, node) or as JSON.
 *
 * Owns: the lines printed. Must not touch: the election's nodes (it only
 * reads them; taking part is zkr-elect.c's).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elect-leader.h"

/* One line for @p, the leader of @path (NULL: none): text or JSON. */
static void print_leader(const char *path, const zkr_participant *p, int json) {
  char node[2048] = "";
  struct owner o;
  int ours = 0;
  if (p) {
    snprintf(node, sizeof node, "%s/%s", strcmp(path, "/") ? path : "",
             p->node);
    ours = parse_owner(p->data, &o);
  }
  if (json) {
    printf("{\"path\":");
    json_string(stdout, path);
    printf(",\"leader\":");
    if (!p) {
      printf("null}\n");
    } else {
      printf("{\"node\":");
      json_string(stdout, node);
      printf(",\"token\":%" PRId64 ",\"session\":\"0x%" PRIx64 "\"", p->czxid,
             (uint64_t)p->session_id);
      if (ours)
        json_owner(stdout, &o);
      printf(",\"data\":");
      json_string(stdout, p->data);
      printf(",\"joined_at_ms\":%" PRId64 "}}\n", p->ctime_ms);
    }
  } else if (!p) {
    printf("none\n");
  } else if (ours) {
    printf("id=%s host=%s pid=%ld token=%" PRId64 " node=%s\n",
           o.id[0] ? esc(o.id) : "-", esc(o.host), o.pid, p->czxid, esc(node));
  } else {
    /* another library's participant (Curator's latch: its id as data) */
    printf("id=%s host=- pid=- token=%" PRId64 " node=%s\n",
           p->data && p->data[0] ? esc(p->data) : "-", p->czxid, esc(node));
  }
  fflush(stdout);
}

int elect_show_leader(zkr_session *s, const char *path, int json,
                      int64_t timeout_ms) {
  zkr_participant p;
  memset(&p, 0, sizeof p);
  int rc = zkr_election_leader(s, path, timeout_ms, &p);
  if (rc == ZKR_EBADPATH) {
    zkr_session_close(s);
    usage_error("invalid election path '%s': %s", esc(path), zkr_strerror(rc));
  }
  if (rc == ZKR_ENONODE && chroot_missing(s, NULL, timeout_ms)) {
    msg("cannot read %s: %s", esc(path), chroot_missing_text(NULL));
    return exit_for(rc);
  }
  if (rc == ZKR_ENONODE) {
    if (json)
      print_leader(path, NULL, json);
    else if (verbose)
      msg("%s has no leader", esc(path));
    return 1;
  }
  if (rc != ZKR_OK) {
    msg("cannot read %s: %s", esc(path), zkr_strerror(rc));
    return rc == ZKR_ETIMEDOUT ? EX_TEMPFAIL : exit_for(rc);
  }
  print_leader(path, &p, json);
  free(p.node);
  free(p.data);
  return 0;
}

/* What on_change() prints for. */
struct observed {
  const char *path;
  int json;
};

static void on_change(zkr_election_observer *o, const zkr_participant *leader,
                      void *ud) {
  (void)o;
  const struct observed *w = ud;
  print_leader(w->path, leader, w->json);
}

int elect_observe(zkr_session *s, const char *path, int json, int sfd) {
  zkr_election_observer *o = NULL;
  struct observed w = {path, json}; /* (the observer is freed below) */
  int rc = zkr_election_observe(s, path, on_change, &w, &o);
  if (rc == ZKR_EBADPATH) {
    zkr_session_close(s);
    usage_error("invalid election path '%s': %s", esc(path), zkr_strerror(rc));
  }
  if (rc != ZKR_OK) {
    msg("cannot observe %s: %s", esc(path), zkr_strerror(rc));
    return exit_for(rc);
  }
  int sig = 0;
  while (!sig) {
    struct pollfd pf = {sfd, POLLIN, 0};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      break;
    }
    if (pf.revents)
      sig = take_signal(sfd);
  }
  zkr_election_observer_free(o);
  zkr_session_close(s);
  return sig ? die_by_signal(sig) : EX_SOFTWARE;
}
