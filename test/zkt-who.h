/* zkr test helpers: an election participant with a session of its own and
 * a record of its listener's calls (each with its time). */
#ifndef ZKR_TEST_ZKT_WHO_H
#define ZKR_TEST_ZKT_WHO_H

#include <stdint.h>

#include <pthread.h>

#include "zkr/zkr.h"

#define ZKT_WHO_MAX 16 /* listener calls recorded (more are counted) */

typedef struct zkt_who {
  zkr_session *s;
  zkr_election *e;
  pthread_mutex_t mu;
  int told[ZKT_WHO_MAX];
  int64_t at[ZKT_WHO_MAX];
  int ntold;
} zkt_who;

/* Connect to @hosts (within @timeout ms, the session timeout too) and
 * make the participant at @path with id @id and the listener; @suspend:
 * a zkr_election_suspend mode, or -1 for the default. Not started. Bails
 * out of the test on failure. */
void zkt_who_open(zkt_who *w, const char *hosts, const char *path,
                  const char *id, int suspend, int timeout);
/* Free the participant (if any) and close the session. */
void zkt_who_close(zkt_who *w);
/* The listener's calls so far as "1,0,1" (one of 4 static buffers). */
const char *zkt_who_told(zkt_who *w);
/* Whether the calls so far are exactly @want. */
int zkt_who_told_is(zkt_who *w, const char *want);
/* Wait up to @ms for the calls to be exactly @want; 1 if they became so. */
int zkt_who_wait_told(zkt_who *w, const char *want, int64_t ms);
/* When the listener was told @v the @nth time (0: first), or -1. */
int64_t zkt_who_told_at(zkt_who *w, int v, int nth);

#endif
