/*
 * multiworker: one process of the multi-lock stress test
 * (test/t-multilock-ensemble.sh).
 *
 *   multiworker --servers HOSTS --root PATH --store SOCKET --id ID
 *               [--paths K] [--rounds N] [--seed S]
 *
 * Each round takes 2 or 3 of the K paths ROOT/p0 .. ROOT/p(K-1), drawn at
 * random in a random order, as one zkr_multilock set (deadline 60 s), and
 * while holding it uses each path's key of the fenced store
 * (test/fencestore.py): enters it (the store counts who is inside: more
 * than one is an overlap), reads its counter and writes it plus one with
 * the set's fencing token (a write refused as stale means a newer holder
 * wrote: the round is done again), leaves it, and releases the set. An
 * acquisition that fails (a lost session during a fault, a time-out) is
 * tried again, up to 40 times in a row.
 *
 * Prints "DONE ID ROUNDS OVERLAPS RETRIES" and exits 0 when every round
 * completed without an overlap; 1 otherwise; 2 on a usage or setup error.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static FILE *sin_, *sout;

/* One request line, its reply into @buf. 0, or -1 if the store is gone. */
static int ask(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ask(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(sout, fmt, ap);
  va_end(ap);
  fputc('\n', sout);
  fflush(sout);
  if (!fgets(buf, (int)len, sin_))
    return -1;
  return 0;
}

static int num(const char *s) {
  return (int)strtol(s, NULL, 10);
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  const char *servers = NULL, *root = NULL, *store = NULL, *id = "w";
  int npaths = 5, rounds = 50;
  unsigned seed = (unsigned)getpid();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--servers"))
      servers = argv[i + 1];
    else if (!strcmp(argv[i], "--root"))
      root = argv[i + 1];
    else if (!strcmp(argv[i], "--store"))
      store = argv[i + 1];
    else if (!strcmp(argv[i], "--id"))
      id = argv[i + 1];
    else if (!strcmp(argv[i], "--paths"))
      npaths = num(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds"))
      rounds = num(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      seed = (unsigned)num(argv[i + 1]);
    else {
      fprintf(stderr, "multiworker: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!servers || !root || !store || npaths < 3 || npaths > 16) {
    fprintf(stderr, "multiworker: --servers, --root and --store are needed; "
                    "--paths 3 to 16\n");
    return 2;
  }
  srand(seed);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", store);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    perror("multiworker: store");
    return 2;
  }
  sin_ = fdopen(fd, "r");
  sout = fdopen(dup(fd), "w");
  char line[256];
  if (!sin_ || !sout || ask(line, sizeof line, "H %s %d", id, (int)getpid()))
    return 2;
  zkr_session *s = NULL;
  zkr_session_options so = {.session_timeout_ms = 8000};
  if (zkr_session_new(&s, servers, &so) != ZKR_OK ||
      zkr_session_wait_connected(s, 20000) != ZKR_OK) {
    fprintf(stderr, "multiworker %s: no session\n", id);
    return 2;
  }
  char paths[16][512];
  for (int i = 0; i < npaths; i++)
    snprintf(paths[i], sizeof paths[i], "%s/p%d", root, i);
  int done = 0, overlaps = 0, retries = 0, fails = 0;
  while (done < rounds && fails < 40) {
    /* 2 or 3 distinct paths, in a random order */
    int idx[16];
    for (int i = 0; i < npaths; i++)
      idx[i] = i;
    for (int i = npaths - 1; i > 0; i--) {
      int j = rand() % (i + 1), t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
    }
    int k = 2 + rand() % 2;
    zkr_multilock_member m[3];
    for (int i = 0; i < k; i++)
      m[i] = (zkr_multilock_member){paths[idx[i]], ZKR_MULTILOCK_MUTEX};
    zkr_multilock *ml = NULL;
    if (zkr_multilock_new(&ml, s, m, k, NULL) != ZKR_OK) {
      fprintf(stderr, "multiworker %s: zkr_multilock_new\n", id);
      return 2;
    }
    int rc = zkr_multilock_acquire(ml, 60000);
    if (rc != ZKR_OK) {
      fprintf(stderr, "multiworker %s: acquire: %s\n", id, zkr_strerror(rc));
      zkr_multilock_free(ml);
      fails++;
      retries++;
      nap_ms(200);
      continue;
    }
    fails = 0;
    long long tok = (long long)zkr_hold_token(zkr_multilock_hold(ml));
    int stale = 0;
    for (int i = 0; i < k; i++) {
      const char *key = paths[idx[i]];
      if (ask(line, sizeof line, "E %s %s %lld", key, id, tok))
        return 2;
      if (num(line) != 1) {
        overlaps++;
        fprintf(stderr, "multiworker %s: %d inside %s (token %lld)\n", id,
                num(line), key, tok);
      }
      long long v = 0, mx = 0;
      if (ask(line, sizeof line, "R %s", key) ||
          sscanf(line, "v %lld %lld", &v, &mx) != 2)
        return 2;
      if (ask(line, sizeof line, "W %s %lld %s %lld", key, tok, id, v + 1))
        return 2;
      if (strncmp(line, "ok", 2) != 0)
        stale = 1;
    }
    nap_ms(2);
    for (int i = 0; i < k; i++)
      if (ask(line, sizeof line, "X %s %s held", paths[idx[i]], id))
        return 2;
    zkr_multilock_release(ml);
    zkr_multilock_free(ml);
    if (stale) {
      retries++; /* the set was lost meanwhile: again */
      continue;
    }
    done++;
  }
  printf("DONE %s %d %d %d\n", id, done, overlaps, retries);
  zkr_session_close(s);
  return done == rounds && overlaps == 0 ? 0 : 1;
}
