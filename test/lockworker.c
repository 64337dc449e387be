/*
 * lockworker: one contending process for the multi-process mutex tests.
 *
 *   lockworker --servers HOSTS --path PATH [options]
 *     --iterations N      acquire/release N times (default 1)
 *     --hold-ms MS        hold each time for MS (default 10)
 *     --timeout-ms MS     acquire timeout (default -1: no limit)
 *     --session-ms MS     session timeout (default 10000)
 *     --log FILE          append "ACQ pid seq token t_ms K N" / "REL pid seq
 *                         token t_ms K" lines (K: R or W; N: readers inside)
 *     --resource FILE     the shared resource: while holding, create
 *                         FILE.holder with O_EXCL (an existing one means
 *                         two holders at once: exit 3), remove it before
 *                         releasing
 *     --hold-forever      acquire once, print "HELD <node> <token>" on
 *                         stdout, then keep checking zkr_mutex_is_held()
 *                         every 10 ms: while held, append "TOUCH pid t_ms"
 *                         to --log (t_ms: the time right before the
 *                         check, as in every TOUCH line of every recipe);
 *                         when not held, print "LOST" and exit 75
 *     --id TEXT           contender id stored in the node
 *     --recipe R          mutex (default); read or write: that side of the
 *                         read-write lock; mixed: each iteration reads
 *                         with probability 0.8, else writes. With
 *                         --resource, a reader creates FILE.r.<pid> and
 *                         checks that FILE.holder does not exist; a writer
 *                         creates FILE.holder and checks that no FILE.r.*
 *                         exists (either side sees an overlap). ACQ lines
 *                         end with R or W and the number of readers
 *                         inside, the caller's included.
 *                         semaphore: the counting semaphore, one lease
 *                         per acquisition, limit --permits. With
 *                         --resource, a holder creates FILE.lease.<pid>,
 *                         then counts the FILE.lease.* files: more than
 *                         the limit is an overlap. ACQ and REL lines end
 *                         with S; ACQ lines then give the leases inside,
 *                         the caller's included, and at exit the worker
 *                         prints "MAX n" (the most it saw inside) on
 *                         stdout and appends "MAX pid n" to --log. Before
 *                         each write to the resource (the lease file,
 *                         each TOUCH) it checks its lease: while SUSPECT
 *                         it waits, once LOST (zkr_lease_state_get() or
 *                         the state callback, which also appends "STATE
 *                         pid NAME t_ms" to --log) it prints "LOST" and
 *                         exits 75 without writing.
 *     --permits N         the semaphore's limit (default 1)
 *                         latch: the leader election's latch
 *                         (zkr_election_start()); each iteration is one
 *                         term: wait to lead (--timeout-ms), append "ACQ
 *                         pid seq token t_ms L" (token: the leader's
 *                         fencing token), then every 10 ms for --hold-ms
 *                         check zkr_election_is_leader() and, while it
 *                         leads, write "TOUCH pid token t_ms" to --log
 *                         (the shared resource); append "REL pid seq token
 *                         t_ms L" and leave the leadership as --end says.
 *                         With --resource, a leader creates FILE.holder
 *                         with O_EXCL after its ACQ line (an existing one
 *                         is an overlap: exit 3) and removes it before its
 *                         REL line. When it no longer leads in a term it
 *                         appends "LOST pid token t_ms", prints "LOST" and
 *                         exits 75 without writing. Held forever: lead
 *                         once, print "HELD <node> <token>", then TOUCH
 *                         every 10 ms while leading (--resource unused).
 *                         At start it prints "SESSION <id in hex>".
 *                         selector: the same terms with zkr_election_run()
 *                         and requeue: each run of the function is one
 *                         term; after --iterations terms the participant
 *                         is freed. ACQ/REL lines end with E.
 *     --end resign|free   latch: after each term resign (queue again at
 *                         the back, the default) or free the participant
 *                         (its node is deleted; the next term joins with a
 *                         new one)
 *     --release-file FILE (latch, selector) end each term only once FILE
 *                         exists as well (the test hands leadership on,
 *                         on cue); (mutex, read, write, mixed) the same
 *                         for each hold: release after --hold-ms and
 *                         once FILE exists
 *     --suspend drop|keep the election's ZKR_ELECTION_SUSPEND_* (default
 *                         drop)
 * Exit: 0 done, 1 acquire failed, 3 overlap seen, 75 lock lost, 64 usage.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <zkr/zkr.h>

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void append(const char *file, const char *line) {
  if (!file)
    return;
  int fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    return;
  ssize_t w = write(fd, line, strlen(line)); /* one write: atomic append */
  (void)w;
  close(fd);
}

static int32_t seq_of(const char *node) {
  size_t n = strlen(node);
  return n >= 10 ? (int32_t)strtol(node + n - 10, NULL, 10) : -1;
}

/* How many "<base><suffix>*" files are in @res's directory. */
static int files_inside(const char *res, const char *suffix) {
  char dirbuf[4096], basebuf[4096], prefix[4200];
  snprintf(dirbuf, sizeof dirbuf, "%s", res);
  snprintf(basebuf, sizeof basebuf, "%s", res);
  snprintf(prefix, sizeof prefix, "%s%s", basename(basebuf), suffix);
  DIR *d = opendir(dirname(dirbuf));
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
      n++;
  closedir(d);
  return n;
}

static int readers_inside(const char *res) {
  return files_inside(res, ".r.");
}

/* The semaphore's lease state as the state callback tells it. */
static const char *state_log;
static atomic_int lease_lost;

static void on_lease_state(zkr_hold *lease, zkr_lock_state st, void *ud) {
  (void)lease;
  (void)ud;
  char line[200];
  snprintf(line, sizeof line, "STATE %ld %s %lld\n", (long)getpid(),
           zkr_lock_state_name(st), (long long)now_ms());
  append(state_log, line);
  if (st == ZKR_LOCK_LOST)
    atomic_store(&lease_lost, 1);
}

/* May the holder of @l write to the resource now? 1: held; 0: lost.
 * While the lease is SUSPECT (the connection dropped, or the session
 * clock cannot vouch for the session) it waits for the session manager
 * to decide either way. */
static int lease_usable(zkr_lease *l) {
  for (;;) {
    zkr_lock_state st = zkr_lease_state_get(l);
    if (atomic_load(&lease_lost) || st == ZKR_LOCK_LOST ||
        st == ZKR_LOCK_UNLOCKED)
      return 0;
    if (st == ZKR_LOCK_HELD)
      return 1;
    usleep(10000);
  }
}

/* --recipe semaphore: @iterations acquisitions of one lease each (or one
 * held forever), the shared resource being the FILE.lease.* files and,
 * held forever, the TOUCH lines. Returns the exit status. */
static int run_semaphore(zkr_session *s, const char *path, int permits,
                         const char *id, long iterations, long hold_ms,
                         long timeout_ms, int forever, const char *logf,
                         const char *res) {
  zkr_semaphore_options so = {0};
  if (id)
    so.id = id;
  state_log = logf;
  so.state_fn = on_lease_state;
  zkr_semaphore *sem = NULL;
  int rc = zkr_semaphore_new(&sem, s, path, permits, &so);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker: %s\n", zkr_strerror(rc));
    return 1;
  }
  char mine[4200] = "", line[600], node[1200];
  if (res)
    snprintf(mine, sizeof mine, "%s.lease.%ld", res, (long)getpid());
  int status = 0, max_inside = 0;
  for (long it = 0; it < (forever ? 1 : iterations); it++) {
    zkr_lease *lease = NULL;
    atomic_store(&lease_lost, 0);
    rc = zkr_semaphore_acquire(sem, 1, timeout_ms, &lease);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker %ld: acquire: %s\n", (long)getpid(),
              zkr_strerror(rc));
      status = 1;
      break;
    }
    zkr_hold_node(zkr_lease_hold(lease), node, sizeof node);
    int64_t token = zkr_hold_token(zkr_lease_hold(lease));
    if (!lease_usable(lease)) {
      printf("LOST\n");
      snprintf(line, sizeof line, "LOST %ld %lld\n", (long)getpid(),
               (long long)now_ms());
      append(logf, line);
      zkr_lease_release(lease);
      status = 75;
      break;
    }
    int overlap = 0, inside = 0;
    if (res) {
      /* first announce, then count: of any holders inside together, the
       * last to announce sees them all */
      int fd = open(mine, O_WRONLY | O_CREAT, 0644);
      if (fd >= 0)
        close(fd);
      inside = files_inside(res, ".lease.");
      overlap = inside > permits;
      if (inside > max_inside)
        max_inside = inside;
    }
    snprintf(line, sizeof line, "ACQ %ld %d %lld %lld S %d\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms(), inside);
    append(logf, line);
    if (overlap) {
      fprintf(stderr, "lockworker %ld: OVERLAP: %d leases inside, limit %d\n",
              (long)getpid(), inside, permits);
      status = 3;
      break;
    }
    if (forever) {
      printf("HELD %s %lld\n", node, (long long)token);
      int fd = logf ? open(logf, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
      for (;;) {
        snprintf(line, sizeof line, "TOUCH %ld %lld\n", (long)getpid(),
                 (long long)now_ms());
        /* the check right before the write: a pause can still fall
         * between the two (no check can close that window; a guarded
         * write or a fencing token does), but it is a few instructions
         * wide instead of a whole loop */
        if (!lease_usable(lease)) {
          printf("LOST\n");
          snprintf(line, sizeof line, "LOST %ld %lld\n", (long)getpid(),
                   (long long)now_ms());
          append(logf, line);
          if (fd >= 0)
            close(fd);
          /* the state callback tells LOST too (the tests look for its
           * STATE line); the lease's state can say so a moment before
           * the callback runs, and none runs once the lease is freed */
          for (int i = 0; i < 500 && !atomic_load(&lease_lost); i++)
            usleep(10000);
          zkr_lease_release(lease); /* ZKR_ELOCKLOST */
          status = 75;
          goto done; /* (returning here leaked the semaphore: LeakSanitizer
                        made the exit status 1 in the ASan run) */
        }
        if (fd >= 0) {
          ssize_t w = write(fd, line, strlen(line));
          (void)w;
        }
        usleep(10000);
      }
    }
    usleep((useconds_t)hold_ms * 1000);
    if (res)
      unlink(mine);
    snprintf(line, sizeof line, "REL %ld %d %lld %lld S\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms());
    append(logf, line);
    rc = zkr_lease_release(lease);
    zkr_lease_free(lease);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker: release: %s\n", zkr_strerror(rc));
      status = rc == ZKR_ELOCKLOST ? 75 : 1;
      break;
    }
  }
  printf("MAX %d\n", max_inside);
  snprintf(line, sizeof line, "MAX %ld %d\n", (long)getpid(), max_inside);
  append(logf, line);
done:
  zkr_semaphore_free(sem);
  return status;
}

/* ---- the election: --recipe latch and --recipe selector ---- */

typedef struct term_cfg {
  const char *logf, *res, *release;
  long hold_ms, iterations;
  int forever;
  char kind; /* 'L' latch, 'E' selector */
  /* the selector's function reports through these */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long terms;
  int status; /* 0, 3 overlap, 75 lost */
} term_cfg;

/* What the election's listener said last: 2 * (number of calls) + the
 * value, in one word. A term starts once the listener has told a new 1
 * and ends at its next call (a 0: it is called once per change), so a
 * short loss that is_leader() polling could miss (a cut connection that
 * comes back within 10 ms) is still a loss. */
static atomic_long told;
static long told_used;

static void on_leader(zkr_election *e, int is_leader, void *ud) {
  (void)e;
  (void)ud;
  long t = atomic_load(&told);
  atomic_store(&told, (t / 2 + 1) * 2 + (is_leader != 0));
}

/* Does the participant still lead in the term that began at the
 * listener's call @at? */
static int still_leads(zkr_election *e, long at) {
  return zkr_election_is_leader(e) && atomic_load(&told) == at;
}

/* Append "LOST pid token t_ms" and say so on stdout. */
static void note_lost(const term_cfg *c, int64_t token) {
  char line[200];
  printf("LOST\n");
  snprintf(line, sizeof line, "LOST %ld %lld %lld\n", (long)getpid(),
           (long long)token, (long long)now_ms());
  append(c->logf, line);
}

/* One term of the leader @e: ACQ, the writes (each right after a check
 * that it still leads), REL. Returns 0, 3 (overlap) or 75 (lost: nothing
 * written after the check that found it). Held forever it returns only
 * 75. */
static int lead_term(zkr_election *e, term_cfg *c) {
  char node[1200] = "", line[600], holder[4200] = "";
  /* the listener's 1 for this leadership (it may come a moment after
   * await()) */
  int64_t until = now_ms() + 10000;
  long up;
  while ((up = atomic_load(&told)) <= told_used || up % 2 == 0) {
    if (!zkr_election_is_leader(e) || now_ms() > until) {
      note_lost(c, 0);
      return 75;
    }
    usleep(1000);
  }
  told_used = up;
  if (zkr_hold_node(zkr_election_hold(e), node, sizeof node) != ZKR_OK ||
      !still_leads(e, up)) {
    note_lost(c, 0);
    return 75;
  }
  int64_t token = zkr_hold_token(zkr_election_hold(e));
  snprintf(line, sizeof line, "ACQ %ld %d %lld %lld %c\n", (long)getpid(),
           seq_of(node), (long long)token, (long long)now_ms(), c->kind);
  append(c->logf, line);
  if (c->forever) {
    printf("HELD %s %lld\n", node, (long long)token);
    int fd = c->logf ? open(c->logf, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
    for (;;) {
      snprintf(line, sizeof line, "TOUCH %ld %lld %lld\n", (long)getpid(),
               (long long)token, (long long)now_ms());
      /* the check right before the write: a pause can still fall between
       * the two (no check can close that window; a fencing token does),
       * but it is a few instructions wide */
      if (!still_leads(e, up)) {
        if (fd >= 0)
          close(fd);
        note_lost(c, token);
        return 75;
      }
      if (fd >= 0) {
        ssize_t w = write(fd, line, strlen(line));
        (void)w;
      }
      usleep(10000);
    }
  }
  if (c->res) {
    snprintf(holder, sizeof holder, "%s.holder", c->res);
    int fd = open(holder, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      fprintf(stderr, "lockworker %ld: OVERLAP: another leader inside\n",
              (long)getpid());
      return 3;
    }
    close(fd);
  }
  int64_t end = now_ms() + c->hold_ms;
  do {
    /* the time before the check, as above */
    snprintf(line, sizeof line, "TOUCH %ld %lld %lld\n", (long)getpid(),
             (long long)token, (long long)now_ms());
    if (!still_leads(e, up)) {
      note_lost(c, token);
      return 75; /* (the holder file stays: nobody else may write) */
    }
    append(c->logf, line);
    usleep(10000);
  } while (now_ms() < end || (c->release && access(c->release, F_OK) != 0));
  if (c->res)
    unlink(holder);
  snprintf(line, sizeof line, "REL %ld %d %lld %lld %c\n", (long)getpid(),
           seq_of(node), (long long)token, (long long)now_ms(), c->kind);
  append(c->logf, line);
  return 0;
}

static zkr_election_options opts_for(const char *id, int keep) {
  return (zkr_election_options){.listener = on_leader,
                                .id = id,
                                .suspend = keep ? ZKR_ELECTION_SUSPEND_KEEP
                                                : ZKR_ELECTION_SUSPEND_DROP};
}

/* --recipe latch: @c->iterations terms (or one forever). */
static int run_latch(zkr_session *s, const char *path, const char *id, int keep,
                     int end_free, long timeout_ms, term_cfg *c) {
  zkr_election_options o = opts_for(id, keep);
  zkr_election *e = NULL;
  int status = 0, rc = ZKR_OK;
  for (long it = 0; it < (c->forever ? 1 : c->iterations); it++) {
    if (!e) {
      rc = zkr_election_new(&e, s, path, &o);
      if (rc == ZKR_OK)
        rc = zkr_election_start(e);
    }
    if (rc == ZKR_OK)
      rc = zkr_election_await(e, timeout_ms);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker %ld: lead: %s\n", (long)getpid(),
              zkr_strerror(rc));
      status = 1;
      break;
    }
    status = lead_term(e, c);
    if (status != 0)
      break;
    if (end_free) {
      zkr_election_free(e);
      e = NULL;
    } else if ((rc = zkr_election_resign(e)) != ZKR_OK) {
      fprintf(stderr, "lockworker %ld: resign: %s\n", (long)getpid(),
              zkr_strerror(rc));
      status = 1;
      break;
    }
  }
  zkr_election_free(e);
  return status;
}

static void selector_term(zkr_election *e, void *ud) {
  term_cfg *c = ud;
  pthread_mutex_lock(&c->mu);
  int go = c->status == 0 && c->terms < c->iterations;
  pthread_mutex_unlock(&c->mu);
  int st = go ? lead_term(e, c) : 0;
  pthread_mutex_lock(&c->mu);
  if (go) {
    c->terms++;
    if (st != 0 && c->status == 0)
      c->status = st;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* --recipe selector: terms run by zkr_election_run() with requeue, until
 * @c->iterations are done (or one forever, or a loss). */
static int run_selector(zkr_session *s, const char *path, const char *id,
                        int keep, term_cfg *c) {
  zkr_election_options o = opts_for(id, keep);
  zkr_election *e = NULL;
  int rc = zkr_election_new(&e, s, path, &o);
  if (c->forever)
    c->iterations = 1;
  if (rc == ZKR_OK)
    rc = zkr_election_run(e, selector_term, c, 1);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker %ld: run: %s\n", (long)getpid(),
            zkr_strerror(rc));
    zkr_election_free(e);
    return 1;
  }
  pthread_mutex_lock(&c->mu);
  while (c->status == 0 && c->terms < c->iterations)
    pthread_cond_wait(&c->cv, &c->mu);
  int status = c->status;
  pthread_mutex_unlock(&c->mu);
  zkr_election_free(e); /* waits for a running function */
  return status;
}

static void usage(void) {
  fprintf(stderr,
          "usage: lockworker --servers HOSTS --path PATH [--iterations"
          " N] [--hold-ms MS] [--timeout-ms MS] [--session-ms MS] "
          "[--log FILE] [--resource FILE] [--hold-forever] "
          "[--id TEXT] [--recipe mutex|read|write|mixed|semaphore|latch|"
          "selector] [--permits N] [--end resign|free] "
          "[--suspend drop|keep] [--release-file FILE]\n");
  exit(64);
}

int main(int argc, char **argv) {
  const char *servers = NULL, *path = NULL, *logf = NULL, *res = NULL,
             *id = NULL, *release = NULL;
  long iterations = 1, hold_ms = 10, timeout_ms = -1, session_ms = 10000,
       permits = 1;
  int forever = 0, end_free = 0, keep = 0;
  const char *recipe = "mutex";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--hold-forever") == 0) {
      forever = 1;
      continue;
    }
    if (!v)
      usage();
    i++;
    if (strcmp(a, "--servers") == 0)
      servers = v;
    else if (strcmp(a, "--path") == 0)
      path = v;
    else if (strcmp(a, "--iterations") == 0)
      iterations = strtol(v, NULL, 10);
    else if (strcmp(a, "--hold-ms") == 0)
      hold_ms = strtol(v, NULL, 10);
    else if (strcmp(a, "--timeout-ms") == 0)
      timeout_ms = strtol(v, NULL, 10);
    else if (strcmp(a, "--session-ms") == 0)
      session_ms = strtol(v, NULL, 10);
    else if (strcmp(a, "--log") == 0)
      logf = v;
    else if (strcmp(a, "--resource") == 0)
      res = v;
    else if (strcmp(a, "--id") == 0)
      id = v;
    else if (strcmp(a, "--release-file") == 0)
      release = v;
    else if (strcmp(a, "--end") == 0) {
      if (strcmp(v, "resign") != 0 && strcmp(v, "free") != 0)
        usage();
      end_free = strcmp(v, "free") == 0;
    } else if (strcmp(a, "--suspend") == 0) {
      if (strcmp(v, "drop") != 0 && strcmp(v, "keep") != 0)
        usage();
      keep = strcmp(v, "keep") == 0;
    } else if (strcmp(a, "--permits") == 0) {
      char *end;
      permits = strtol(v, &end, 10);
      if (*end || permits < 1 || permits > ZKR_SEMAPHORE_MAX) {
        fprintf(stderr, "lockworker: bad --permits '%s'\n", v);
        exit(64);
      }
    } else if (strcmp(a, "--recipe") == 0) {
      /* the recipe this worker contends with */
      if (strcmp(v, "mutex") != 0 && strcmp(v, "read") != 0 &&
          strcmp(v, "write") != 0 && strcmp(v, "mixed") != 0 &&
          strcmp(v, "semaphore") != 0 && strcmp(v, "latch") != 0 &&
          strcmp(v, "selector") != 0) {
        fprintf(stderr,
                "lockworker: unknown recipe '%s' (known: mutex, read, "
                "write, mixed, semaphore, latch, selector)\n",
                v);
        exit(64);
      }
      recipe = v;
    } else
      usage();
  }
  if (!servers || !path)
    usage();
  setvbuf(stdout, NULL, _IOLBF, 0);
  zkr_session_options so = {0};
  so.session_timeout_ms = (int)session_ms;
  so.connect_timeout_ms = 20000;
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, servers, &so);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker: connect: %s\n", zkr_strerror(rc));
    return 1;
  }
  if (strcmp(recipe, "semaphore") == 0) {
    int st = run_semaphore(s, path, (int)permits, id, iterations, hold_ms,
                           timeout_ms, forever, logf, res);
    zkr_session_close(s);
    return st;
  }
  if (strcmp(recipe, "latch") == 0 || strcmp(recipe, "selector") == 0) {
    term_cfg c = {.logf = logf,
                  .res = res,
                  .release = release,
                  .hold_ms = hold_ms,
                  .iterations = iterations,
                  .forever = forever,
                  .kind = recipe[0] == 'l' ? 'L' : 'E'};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    printf("SESSION %llx\n", (unsigned long long)zkr_session_id(s));
    int st = c.kind == 'L'
                 ? run_latch(s, path, id, keep, end_free, timeout_ms, &c)
                 : run_selector(s, path, id, keep, &c);
    zkr_session_close(s);
    return st;
  }
  zkr_mutex_options mo = {0};
  if (id)
    mo.id = id;
  zkr_mutex *m = NULL;
  zkr_rwlock *rw = NULL;
  if (strcmp(recipe, "mutex") == 0)
    rc = zkr_mutex_new(&m, s, path, &mo);
  else
    rc = zkr_rwlock_new(&rw, s, path, &mo);
  srand((unsigned)getpid());
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker: %s\n", zkr_strerror(rc));
    return 1;
  }
  char holder[4096] = "", mine[4200] = "";
  if (res) {
    snprintf(holder, sizeof holder, "%s.holder", res);
    snprintf(mine, sizeof mine, "%s.r.%ld", res, (long)getpid());
  }
  char line[600], node[1200];
  int status = 0;
  for (long it = 0; it < (forever ? 1 : iterations); it++) {
    int reading = strcmp(recipe, "read") == 0 ||
                  (strcmp(recipe, "mixed") == 0 && rand() % 10 < 8);
    if (rw)
      m = reading ? zkr_rwlock_read_lock(rw) : zkr_rwlock_write_lock(rw);
    rc = zkr_mutex_acquire(m, timeout_ms);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker %ld: acquire: %s\n", (long)getpid(),
              zkr_strerror(rc));
      status = 1;
      break;
    }
    zkr_hold_node(zkr_mutex_hold(m), node, sizeof node);
    int64_t token = zkr_hold_token(zkr_mutex_hold(m));
    int overlap = 0, inside = 0;
    if (res && reading) {
      /* first announce, then look: a writer does the same the other way
       * round, so one of the two sees the other */
      int fd = open(mine, O_WRONLY | O_CREAT, 0644);
      if (fd >= 0)
        close(fd);
      overlap = access(holder, F_OK) == 0;
      inside = readers_inside(res);
    } else if (res) {
      int fd = open(holder, O_WRONLY | O_CREAT | O_EXCL, 0644);
      overlap = fd < 0;
      if (fd >= 0)
        close(fd);
      if (!overlap && rw)
        overlap = readers_inside(res) > 0;
    }
    snprintf(line, sizeof line, "ACQ %ld %d %lld %lld %c %d\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms(),
             reading ? 'R' : 'W', inside);
    append(logf, line);
    if (overlap) {
      fprintf(stderr, "lockworker %ld: OVERLAP: a %s found %s\n",
              (long)getpid(), reading ? "reader" : "writer",
              reading ? "a writer inside" : "another holder inside");
      status = 3;
      break;
    }
    if (forever) {
      printf("HELD %s %lld\n", node, (long long)token);
      int fd = logf ? open(logf, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
      for (;;) {
        /* the time first, then the check, then the write (as the
         * semaphore and the latch do): a pause can still fall between
         * the check and the write, and the line then lands after the
         * next holder's ACQ, but with a time before it (the tests allow
         * that one write in flight and nothing else) */
        snprintf(line, sizeof line, "TOUCH %ld %lld\n", (long)getpid(),
                 (long long)now_ms());
        if (!zkr_mutex_is_held(m)) {
          if (fd >= 0)
            close(fd);
          printf("LOST\n");
          snprintf(line, sizeof line, "LOST %ld %lld\n", (long)getpid(),
                   (long long)now_ms());
          append(logf, line);
          return 75;
        }
        if (fd >= 0) {
          ssize_t w = write(fd, line, strlen(line));
          (void)w;
        }
        usleep(10000);
      }
    }
    usleep((useconds_t)hold_ms * 1000);
    while (release && access(release, F_OK) != 0)
      usleep(10000); /* the test releases on cue */
    if (res)
      unlink(reading ? mine : holder);
    snprintf(line, sizeof line, "REL %ld %d %lld %lld %c\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms(),
             reading ? 'R' : 'W');
    append(logf, line);
    rc = zkr_mutex_release(m);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker: release: %s\n", zkr_strerror(rc));
      status = 1;
      break;
    }
  }
  if (rw)
    zkr_rwlock_free(rw);
  else
    zkr_mutex_free(m);
  zkr_session_close(s);
  return status;
}
