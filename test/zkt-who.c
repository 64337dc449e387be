/* zkr test helpers: an election participant (see zkt-who.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "zkt-who.h"
#include "zkt.h"

static void listener(zkr_election *e, int is_leader, void *ud) {
  zkt_who *w = ud;
  (void)e;
  pthread_mutex_lock(&w->mu);
  if (w->ntold < ZKT_WHO_MAX) {
    w->told[w->ntold] = is_leader;
    w->at[w->ntold] = zkt_now_ms();
  }
  w->ntold++;
  pthread_mutex_unlock(&w->mu);
}

void zkt_who_open(zkt_who *w, const char *hosts, const char *path,
                  const char *id, int suspend, int timeout) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  w->s = zkt_connect(hosts, timeout);
  zkr_election_options o = {
      .id = id, .listener = listener, .listener_user_data = w};
  if (suspend >= 0)
    o.suspend = (zkr_election_suspend)suspend;
  if (zkr_election_new(&w->e, w->s, path, &o) != ZKR_OK)
    tap_bail("zkr_election_new");
}

void zkt_who_close(zkt_who *w) {
  if (w->e)
    zkr_election_free(w->e);
  zkr_session_close(w->s);
  pthread_mutex_destroy(&w->mu);
}

const char *zkt_who_told(zkt_who *w) {
  static _Thread_local char buf[4][64];
  static _Thread_local int k;
  char *b = buf[k++ % 4];
  b[0] = '\0';
  pthread_mutex_lock(&w->mu);
  for (int i = 0; i < w->ntold && i < ZKT_WHO_MAX; i++)
    snprintf(b + strlen(b), 64 - strlen(b), "%s%d", i ? "," : "", w->told[i]);
  pthread_mutex_unlock(&w->mu);
  return b;
}

int zkt_who_told_is(zkt_who *w, const char *want) {
  return strcmp(zkt_who_told(w), want) == 0;
}

struct told_arg {
  zkt_who *w;
  const char *want;
};
static int told_becomes(void *arg) {
  struct told_arg *t = arg;
  return zkt_who_told_is(t->w, t->want);
}
int zkt_who_wait_told(zkt_who *w, const char *want, int64_t ms) {
  struct told_arg t = {w, want};
  return zkt_wait_for(told_becomes, &t, ms);
}

int64_t zkt_who_told_at(zkt_who *w, int v, int nth) {
  int64_t t = -1;
  pthread_mutex_lock(&w->mu);
  for (int i = 0; i < w->ntold && i < ZKT_WHO_MAX; i++)
    if (w->told[i] == v && nth-- == 0) {
      t = w->at[i];
      break;
    }
  pthread_mutex_unlock(&w->mu);
  return t;
}
