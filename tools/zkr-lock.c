/*
 * zkr-lock - run a command while holding a zkr mutex: flock(1) across
 * machines. With --read (--shared) or --write (--exclusive), the read or
 * the write side of the read-write lock at PATH instead; with --permits N,
 * one of the N leases of the counting semaphore at PATH.
 *
 *   zkr-lock [options] PATH [--] COMMAND [ARG...]
 *
 * The main thread blocks the signals it handles before any library thread
 * exists (so every thread inherits the mask) and takes them from a
 * signalfd; the library's callbacks (acquisition result, lock state) write
 * one byte to a pipe. One poll() loop serves both, first while waiting for
 * the lock, then while COMMAND runs. Signals ignored when zkr-lock starts
 * (nohup's SIGHUP, a background job's SIGINT) are not taken: they stay
 * ignored, in zkr-lock and in COMMAND.
 *
 * COMMAND runs in a process group of its own, under a small guard process
 * (the signals, the guard and the loop while COMMAND runs are in cli.c,
 * shared with zkr-elect):
 *
 *   zkr-lock --fork--> guard --fork--> COMMAND (process group leader)
 *            life pipe:  the guard reads EOF when zkr-lock dies, however
 *                        it dies (SIGKILL too), and SIGKILLs the group
 *            status pipe: the guard tells COMMAND's pid, then its status
 *
 * so that on a lock loss zkr-lock signals the whole group (COMMAND's
 * background children too), and on zkr-lock's death the guard does. When
 * zkr-lock is in the foreground of its terminal, COMMAND's group is made
 * the terminal's foreground group (so ^C reaches it) and zkr-lock's is
 * made the foreground again when COMMAND ends.
 *
 * Exit status: COMMAND's (128+N if a signal N ended it); 1, or the
 * -E value, when the lock was not acquired in time; 64 usage; 69 no server
 * reachable; 70 internal error; 75 the lock was lost (while waiting: the
 * session ended; while COMMAND ran, or held for --max-hold: COMMAND was
 * terminated); 126/127
 * COMMAND could not be run. A signal that ends the wait ends zkr-lock with
 * that signal after it left the queue.
 *
 * --stats prints on stderr, at exit, how long zkr-lock waited for the
 * lock and held it (as it measured them, on the monotonic clock), and
 * how it ended; one JSON object with --json.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zkr/zkr.h>

#include "cli.h"
#include "lock-kind.h"

#define EX_CONFLICT_DEFAULT 1

const char *prog = "zkr-lock";

/* Written by library callbacks (event thread), read by the main thread
 * after a wake-up byte. */
static atomic_int acquire_done;
static atomic_int acquire_rc;
static atomic_int state_changed;
static atomic_int revoke_asked; /* --revocable: a request came */

static void acquired(int rc);
static void on_state(zkr_hold *h, zkr_lock_state st, void *ud);

static void help(void) {
  printf(
      "Usage: %s [options] PATH [--] COMMAND [ARG...]\n"
      "       %s --revoke [-t SECONDS] [--grace SECONDS] PATH\n"
      "Run COMMAND while holding the zkr mutex at the ZooKeeper path PATH;\n"
      "exit with COMMAND's exit status. With --revoke, ask the holders of\n"
      "PATH to let go instead (and evict them after --grace).\n"
      "\n"
      "  -r, --read, --shared       take the read side of the read-write lock\n"
      "                             at PATH: readers run together\n"
      "  -w, --write, --exclusive   take its write side: alone, after the\n"
      "                             readers and writers queued before\n"
      "      --and PATH2            take PATH2 too, with PATH and every other\n"
      "                             --and path as one set: all or none, no\n"
      "                             deadlock between sets (--read/--write\n"
      "                             apply to every path)\n"
      "      --yield-after SECONDS  with --and: after waiting SECONDS while\n"
      "                             first in some of the set's queues, look\n"
      "                             for a wait-for cycle through the set (a\n"
      "                             client holding one lock while queueing\n"
      "                             for another) and, if found, yield and\n"
      "                             queue again (0 or at least 0.001, at most\n"
      "                             1000000000; default 30)\n"
      "      --permits N            take one of the N leases of the semaphore\n"
      "                             at PATH instead: up to N run at once\n"
      "                             (1 to %d; every user of PATH must give\n"
      "                             the same N)\n"
      "  -s, --servers HOSTS        ZooKeeper connection string (default:\n"
      "                             $ZKR_SERVERS, else 127.0.0.1:2181)\n"
      "  -t, --timeout SECONDS      wait at most SECONDS for the lock (0: try\n"
      "                             once; at most 1000000000); default: wait\n"
      "                             without limit\n"
      "  -E, --conflict-exit-code N exit status when the lock is not\n"
      "                             acquired in time (default 1)\n"
      "      --session-timeout MS   ZooKeeper session timeout, 100 to\n"
      "                             1073741823 (default 10000)\n"
      "      --connect-timeout MS   how long to try to reach a server\n"
      "                             (default 10000; then exit 69)\n"
      "      --auth USER:PASSWORD   digest credentials for the session\n"
      "      --acl open|creator     ACL of the nodes created: open to anyone\n"
      "                             (default), or every right for --auth's\n"
      "                             credentials and read for anyone\n"
      "      --id TEXT              contender id stored in the lock node\n"
      "                             (default: COMMAND's name)\n"
      "      --kill-after SECONDS   if the lock is lost, SIGKILL COMMAND this\n"
      "                             long after SIGTERM (default 10)\n"
      "      --revocable            on a revocation request (zkr-lock "
      "--revoke,\n"
      "                             Curator's Revoker), send COMMAND SIGTERM;\n"
      "                             the lock is released when it exits\n"
      "      --revoke               ask the holders of PATH to let go (see\n"
      "                             above); no COMMAND\n"
      "      --grace SECONDS        with --revoke: evict a holder still there\n"
      "                             after SECONDS (0 or at least 0.001)\n"
      "      --max-hold SECONDS     give the lock up once held this long\n"
      "                             (at least 0.001, at most 1000000000): its\n"
      "                             node is deleted and COMMAND terminated as\n"
      "                             on a loss (exit 75); default: no maximum\n"
      "  -v, --verbose              progress on stderr (contenders ahead,\n"
      "                             acquired, released); -vv adds the\n"
      "                             library's warnings, -vvv its log\n"
      "      --stats                at exit, how long the lock was waited\n"
      "                             for and held, and how it ended, on\n"
      "                             stderr\n"
      "      --json                 --stats as one JSON object\n"
      "  -h, --help                 this help\n"
      "  -V, --version              print the zkr version\n"
      "\n"
      "COMMAND gets ZKR_FENCING_TOKEN and ZKR_LOCK_NODE (the lease node with\n"
      "--permits) in its environment.\n"
      "Exit status: COMMAND's (128+N if signal N ended it); 1 (or -E) lock\n"
      "not acquired in time; 64 usage; 69 no server reachable; 75 lock lost\n"
      "(COMMAND was terminated); 126/127 COMMAND could not be run.\n"
      "--revoke: 0 released (or nothing held); 1 still held at -t (default\n"
      "10 s); 3 evicted after --grace; 69 eviction refused (ACL).\n",
      prog, prog, ZKR_SEMAPHORE_MAX);
}

/* ---- --stats ---- */

static struct {
  int on, json;
  const char *path;
  int64_t queued;   /* now_ms() when the acquisition began; -1: never */
  int64_t granted;  /* when it was acquired; -1: not acquired */
  int64_t released; /* when it was released; -1: not (yet) */
  int64_t token;
  char node[2048];
} stats = {0, 0, NULL, -1, -1, -1, 0, ""};

/* The kind of lock, for --stats. */
static const char *stats_lock(void) {
  return lk.permits       ? "semaphore"
         : lk.side == 'r' ? "read"
         : lk.side == 'w' ? "write"
                          : "mutex";
}

/* With --stats, the figures on stderr: @outcome (released, lost,
 * not-acquired, interrupted, error) and the exit status @code. Returns
 * @code. */
static int stats_end(const char *outcome, int code) {
  if (!stats.on)
    return code;
  int64_t end = now_ms();
  int64_t wait = stats.queued < 0     ? -1
                 : stats.granted >= 0 ? stats.granted - stats.queued
                                      : end - stats.queued;
  int64_t hold = stats.granted < 0     ? -1
                 : stats.released >= 0 ? stats.released - stats.granted
                                       : end - stats.granted;
  if (stats.json) {
    fprintf(stderr, "{\"tool\":\"zkr-lock\",\"path\":");
    json_string(stderr, stats.path);
    fprintf(stderr, ",\"lock\":\"%s\"", stats_lock());
    if (lk.permits)
      fprintf(stderr, ",\"permits\":%ld", lk.permits);
    fprintf(stderr, ",\"outcome\":\"%s\",\"acquired\":%s", outcome,
            stats.granted >= 0 ? "true" : "false");
    if (wait >= 0)
      fprintf(stderr, ",\"wait_ms\":%lld", (long long)wait);
    else
      fprintf(stderr, ",\"wait_ms\":null");
    if (hold >= 0) {
      fprintf(stderr,
              ",\"hold_ms\":%lld,\"token\":%lld,\"node\":", (long long)hold,
              (long long)stats.token);
      json_string(stderr, stats.node);
    } else {
      fprintf(stderr, ",\"hold_ms\":null,\"token\":null,\"node\":null");
    }
    fprintf(stderr, ",\"exit_status\":%d}\n", code);
    return code;
  }
  char w[48] = "not queued", h[48] = "not acquired";
  if (wait >= 0)
    snprintf(w, sizeof w, "waited %.3f s", (double)wait / 1000.0);
  if (hold >= 0)
    snprintf(h, sizeof h, "held %.3f s", (double)hold / 1000.0);
  msg("stats: %s: %s, %s; %s, exit status %d", esc(stats.path), w, h, outcome,
      code);
  return code;
}

static void acquired(int rc) {
  acquire_rc = rc;
  acquire_done = 1;
  wake();
}

static void on_state(zkr_hold *h, zkr_lock_state st, void *ud) {
  (void)h;
  (void)st;
  (void)ud;
  state_changed = 1;
  wake();
}

static void on_revoke(zkr_hold *h, int64_t requested_ms, void *ud) {
  (void)h;
  (void)requested_ms;
  (void)ud;
  revoke_asked = 1;
  wake();
}

/* What lock_lost() needs to say what happened. */
struct watch {
  const char *path;
  const char *cmd;
  int suspect;
  int revoked; /* --revocable: SIGTERM sent for a request */
};

/* How the hold was lost, for messages. */
static const char *lost_how(void) {
  switch (zkr_hold_lost_cause(lock_hold())) {
  case ZKR_LOST_MAX_HOLD:
    return "held for --max-hold; given up";
  case ZKR_LOST_DELETED:
    return "node deleted";
  case ZKR_LOST_SESSION:
    return "session expired or lost";
  default:
    return "session expired or node deleted";
  }
}

/* While COMMAND runs, after each wake-up: says what changed (with -v) and
 * returns 1 when the lock was lost. */
static int lock_lost(pid_t group, void *ud) {
  struct watch *wt = ud;
  if (revoke_asked && !wt->revoked) {
    wt->revoked = 1;
    msg("revocation of %s requested: sending SIGTERM to %s's process group "
        "%ld; the %s is released when it exits",
        wt->path, wt->cmd, (long)group, lock_noun());
    kill(-group, SIGTERM);
  }
  if (!state_changed)
    return 0;
  state_changed = 0;
  zkr_lock_state st = zkr_hold_state(lock_hold());
  if (st == ZKR_LOCK_LOST) {
    msg("%s %s lost while %s ran (%s): sending SIGTERM to its process "
        "group %ld",
        lk.permits ? "lease of" : "lock", wt->path, wt->cmd, lost_how(),
        (long)group);
    return 1;
  }
  if (verbose && st == ZKR_LOCK_SUSPECT && !wt->suspect)
    msg("connection to ZooKeeper lost; the %s may be lost", lock_noun());
  else if (verbose && st == ZKR_LOCK_HELD && wt->suspect)
    msg("reconnected; the %s is still held", lock_noun());
  wt->suspect = st == ZKR_LOCK_SUSPECT;
  return 0;
}

enum {
  OPT_PERMITS = OPT_NEXT,
  OPT_STATS,
  OPT_JSON,
  OPT_MAX_HOLD,
  OPT_REVOCABLE,
  OPT_REVOKE,
  OPT_GRACE,
  OPT_AND,
  OPT_YIELD_AFTER
};

/* --revoke: ask the holders of @path to let go (and evict them after
 * --grace); the exit status as documented. */
static int revoke_main(struct run_opts *ro, const char *path,
                       int64_t timeout_ms, int64_t grace_ms) {
  zkr_session *s = NULL;
  int code = run_session(ro, 1, &s);
  if (code != 0)
    return session_signal ? die_by_signal(session_signal) : code;
  zkr_revoke_result r;
  int rc =
      zkr_revoke(s, path, timeout_ms < 0 ? 10000 : timeout_ms, grace_ms, &r);
  if (rc == ZKR_EBADPATH) {
    zkr_session_close(s);
    usage_error("invalid lock path '%s': %s", esc(path), zkr_strerror(rc));
  }
  if (verbose || rc != ZKR_OK)
    msg("%s: %d holder(s) asked: %d released, %d evicted, %d still held%s",
        path, r.holders, r.released, r.evicted, r.held,
        r.refused ? " (the node's ACL refused: add --auth)" : "");
  if (rc == ZKR_ENOAUTH)
    msg("cannot %s %s: %s", grace_ms >= 0 ? "evict the holder of" : "ask", path,
        zkr_strerror(rc));
  zkr_session_close(s);
  if (rc == ZKR_OK)
    return r.evicted > 0 ? 3 : 0;
  if (rc == ZKR_ETIMEDOUT)
    return 1;
  if (rc != ZKR_ENOAUTH)
    msg("cannot revoke %s: %s", path, zkr_strerror(rc));
  return exit_for(rc);
}

int main(int argc, char **argv) {
  struct run_opts ro;
  run_opts_init(&ro);
  int64_t timeout_ms = -1, max_hold_ms = 0, grace_ms = -1, yield_ms = -2;
  int revocable = 0, revoke = 0;
  long conflict = EX_CONFLICT_DEFAULT;

  static const struct option longopts[] = {
      CLI_RUN_LONGOPTS,
      {"timeout", required_argument, NULL, 't'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"help", no_argument, NULL, 'h'},
      {"read", no_argument, NULL, 'r'},
      {"shared", no_argument, NULL, 'r'},
      {"write", no_argument, NULL, 'w'},
      {"exclusive", no_argument, NULL, 'w'},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"stats", no_argument, NULL, OPT_STATS},
      {"json", no_argument, NULL, OPT_JSON},
      {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
      {"revocable", no_argument, NULL, OPT_REVOCABLE},
      {"revoke", no_argument, NULL, OPT_REVOKE},
      {"grace", required_argument, NULL, OPT_GRACE},
      {"and", required_argument, NULL, OPT_AND},
      {"yield-after", required_argument, NULL, OPT_YIELD_AFTER},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int c;
  /* "+": stop at the first non-option, so COMMAND's options stay its own */
  while ((c = getopt_long(argc, argv, "+:s:t:E:rwvhV", longopts, NULL)) != -1) {
    if (run_opt(&ro, c, optarg))
      continue;
    switch (c) {
    case 't':
      if (parse_seconds(optarg, &timeout_ms) != 0)
        usage_error(
            "invalid timeout '%s': seconds as a plain decimal, 0 "
            "(try once) or at least 0.001 (1 ms), at most " SECONDS_MAX_TEXT,
            esc(optarg));
      break;
    case 'E':
      if (parse_long(optarg, 0, 255, &conflict) != 0)
        usage_error("invalid conflict exit code '%s': 0 to 255", esc(optarg));
      break;
    case 'h':
      help();
      return 0;
    case 'r':
    case 'w':
      if (lk.side && lk.side != c)
        usage_error("--read (--shared) and --write (--exclusive) exclude "
                    "each other");
      lk.side = c;
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &lk.permits) != 0)
        usage_error("invalid --permits '%s': the number of leases of the "
                    "semaphore, a plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    case OPT_STATS:
      stats.on = 1;
      break;
    case OPT_JSON:
      stats.json = 1;
      break;
    case OPT_MAX_HOLD:
      seconds_opt("--max-hold", optarg, 0, &max_hold_ms);
      break;
    case OPT_REVOCABLE:
      revocable = 1;
      break;
    case OPT_REVOKE:
      revoke = 1;
      break;
    case OPT_GRACE:
      seconds_opt("--grace", optarg, 1, &grace_ms);
      break;
    case OPT_YIELD_AFTER:
      seconds_opt("--yield-after", optarg, 1, &yield_ms);
      break;
    case OPT_AND:
      if (lk.nand + 1 >= ZKR_MULTILOCK_MAX)
        usage_error("too many --and paths: at most %d locks in all",
                    ZKR_MULTILOCK_MAX);
      lk.and_paths[lk.nand++] = optarg;
      break;
    default:
      option_error(c, argv, longopts);
    }
  }
  if (lk.permits && lk.side)
    usage_error("--permits (a lease of the semaphore) and --read/--write "
                "(a side of the read-write lock) exclude each other");
  if (stats.json && !stats.on)
    usage_error("--json goes with --stats");
  if (grace_ms >= 0 && !revoke)
    usage_error("--grace goes with --revoke");
  if (yield_ms != -2 && !lk.nand)
    usage_error("--yield-after goes with --and (a set of locks)");
  if (lk.nand && lk.permits)
    usage_error("--and (several locks as one set) and --permits (a lease "
                "of the semaphore) exclude each other");
  if (revoke && (revocable || lk.side || lk.permits || max_hold_ms ||
                 stats.on || lk.nand))
    usage_error("--revoke asks the holders of any lock at PATH: it takes no "
                "--revocable, --read, --write, --permits, --max-hold, --and or "
                "--stats");
  if (optind >= argc)
    usage_error("missing PATH");
  const char *path = argv[optind++];
  if (revoke) {
    if (optind < argc && strcmp(argv[optind], "--") == 0)
      optind++;
    if (optind < argc)
      usage_error("--revoke takes no COMMAND ('%s')", esc(argv[optind]));
    return revoke_main(&ro, path, timeout_ms, grace_ms);
  }
  stats.path = path;
  if (lk.permits && strlen(path) > ZKR_SEMAPHORE_PATH_MAX)
    usage_error("invalid lock path: with --permits at most %d bytes (its "
                "child leases must stay within 1024), not %zu",
                ZKR_SEMAPHORE_PATH_MAX, strlen(path));
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  if (optind >= argc)
    usage_error("missing COMMAND");
  char **cmd = argv + optind;
  const char *id = ro.id ? ro.id : base_name(cmd[0]);

  sigset_t oldmask;
  int sfd = signals_setup(&oldmask);
  if (sfd < 0)
    return EX_SOFTWARE;

  /* Options of the lock: bad input is a usage error, before connecting. */
  for (int i = 0; i < lk.nand; i++)
    for (int j = -1; j < i; j++)
      if (strcmp(lk.and_paths[i], j < 0 ? path : lk.and_paths[j]) == 0)
        usage_error("--and '%s': a path named twice", esc(lk.and_paths[i]));
  if (lock_opts_set(id, acquired, on_state) != ZKR_OK)
    usage_error("invalid --id '%s': 1 to 256 bytes, no control characters",
                esc(id));
  lk.mo.max_hold_ms = max_hold_ms;
  lk.so.max_hold_ms = max_hold_ms;
  lk.mlo.max_hold_ms = max_hold_ms;
  if (yield_ms != -2) /* (0: look for a cycle at once: 1 ms) */
    lk.mlo.yield_after_ms = yield_ms > 0 ? yield_ms : 1;
  if (revocable) {
    lk.mo.revoke_fn = on_revoke;
    lk.so.revoke_fn = on_revoke;
    lk.mlo.revoke_fn = on_revoke;
  }

  zkr_session *s = NULL;
  int code = run_session(&ro, 1, &s);
  if (code != 0) {
    if (session_signal) {
      stats_end("interrupted", code);
      return die_by_signal(session_signal); /* as the signal would have */
    }
    return stats_end("error", code);
  }
  int rc = lock_new(s, path);
  if (rc != ZKR_OK) {
    if (rc == ZKR_EBADPATH) {
      /* which one (a set of one of each path sends nothing) */
      const char *bad = path;
      for (int i = -1; i < lk.nand; i++) {
        const char *p = i < 0 ? path : lk.and_paths[i];
        zkr_multilock_member m = {p, ZKR_MULTILOCK_MUTEX};
        zkr_multilock *t = NULL;
        if (zkr_multilock_new(&t, s, &m, 1, NULL) == ZKR_EBADPATH) {
          bad = p;
          break;
        }
        zkr_multilock_free(t);
      }
      zkr_session_close(s);
      usage_error("invalid lock path '%s': %s", esc(bad), zkr_strerror(rc));
    }
    zkr_session_close(s);
    msg("%s", zkr_strerror(rc));
    return stats_end("error", EX_SOFTWARE);
  }

  /* ---- wait for the lock ---- */
  int64_t t0 = now_ms();
  stats.queued = t0;
  rc = lock_acquire_async(timeout_ms);
  if (rc != ZKR_OK) {
    msg("cannot start acquiring %s: %s", path, zkr_strerror(rc));
    lock_free();
    zkr_session_close_within(s, 0);
    return stats_end("error",
                     rc == ZKR_ESESSIONLOST ? EX_TEMPFAIL : EX_SOFTWARE);
  }
  int got_signal = 0;
  char last_said[128] = "";
  int64_t next_report = t0 + 200, last_report = t0;
  while (!acquire_done) {
    struct pollfd pf[2] = {{sfd, POLLIN, 0}, {wake_fd(), POLLIN, 0}};
    int wait = -1;
    if (verbose && !got_signal) {
      int64_t d = next_report - now_ms();
      wait = d < 0 ? 0 : (int)d;
    }
    int pr = poll(pf, 2, wait);
    if (pr < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      break;
    }
    if (pf[1].revents)
      drain(wake_fd());
    if (pf[0].revents) {
      int sig = take_signal(sfd);
      if (sig && !got_signal) {
        got_signal = sig;
        if (verbose)
          msg("%s while waiting: leaving the queue", strsignal(sig));
        lock_cancel();
      }
    }
    if (verbose && !got_signal && !acquire_done && now_ms() >= next_report) {
      /* What the library knows already: reading it sends nothing to
       * ZooKeeper. */
      char buf[128];
      const char *said = lock_waiting(buf, sizeof buf);
      int64_t waited = now_ms() - t0;
      if (said && strcmp(said, last_said) != 0) {
        msg("waiting for %s: %s (%.1f s)", path, said, (double)waited / 1000.0);
        snprintf(last_said, sizeof last_said, "%s", said);
        last_report = now_ms();
      } else if (said && now_ms() - last_report >= 10000) {
        msg("still waiting for %s: %s (%.0f s)", path, said,
            (double)waited / 1000.0);
        last_report = now_ms();
      }
      next_report = now_ms() + 250;
    }
  }
  int arc = acquire_rc;
  if (got_signal || arc != ZKR_OK) {
    lock_free(); /* leaves the queue: our node is deleted */
    /* (asked before the session goes: a missing chroot reads as a
     * missing node) */
    const char *why =
        got_signal || arc == ZKR_ETIMEDOUT || arc == ZKR_EWOULDBLOCK
            ? ""
            : why_acquire_failed(s, arc, path, lk.permits != 0);
    /* Give up now: a deletion that cannot reach the server (it does not
     * answer) is left to the end of the ZooKeeper session. */
    zkr_session_close_within(s, 0);
    if (got_signal) {
      stats_end("interrupted", 128 + got_signal);
      return die_by_signal(got_signal); /* as the signal would have */
    }
    if (arc == ZKR_ETIMEDOUT || arc == ZKR_EWOULDBLOCK) {
      if (verbose && lk.permits)
        msg("no lease of %s is free (%ld permits); not "
            "acquired %s",
            path, lk.permits, timeout_ms == 0 ? "(tried once)" : "in time");
      else if (verbose)
        msg("%s is held by another; not acquired %s", path,
            timeout_ms == 0 ? "(tried once)" : "in time");
      return stats_end("not-acquired", (int)conflict);
    }
    msg("cannot acquire %s: %s", path, why);
    return stats_end("error", exit_for(arc));
  }

  stats.granted = now_ms();
  int64_t token = zkr_hold_token(lock_hold());
  char node[2048];
  zkr_hold_node(lock_hold(), node, sizeof node);
  stats.token = token;
  snprintf(stats.node, sizeof stats.node, "%s", node);
  if (verbose)
    msg("acquired %s after %.3f s (token %lld, node %s)", path,
        (double)(now_ms() - t0) / 1000.0, (long long)token, node);

  /* ---- run COMMAND ---- */
  char **env = child_env("ZKR_LOCK_NODE", token, node);
  if (!env) {
    msg("out of memory");
    lock_free();
    zkr_session_close(s);
    return stats_end("error", EX_SOFTWARE);
  }
  int64_t started = now_ms();
  struct watch wt = {path, cmd[0], 0, 0};
  struct run_cmd run = {.cmd = cmd,
                        .env = env,
                        .oldmask = &oldmask,
                        .sfd = sfd,
                        .kill_after_ms = ro.kill_after_ms,
                        .holding = "holds the lock",
                        .lost_fn = lock_lost,
                        .ud = &wt};
  code = run_command(&run);
  free_env(env);
  int lost = run.lost;
  /* The connection is down: wait for the verdict (reconnected: still
   * held; or lost), so that the exit status says whether COMMAND may have
   * run without the lock, and so that the release below reaches the
   * server now rather than the lock staying blocked until our session
   * expires. At most one session timeout. */
  int64_t verdict_by = now_ms() + zkr_session_timeout(s);
  while (!lost && zkr_hold_state(lock_hold()) == ZKR_LOCK_SUSPECT &&
         now_ms() < verdict_by) {
    struct pollfd pf = {wake_fd(), POLLIN, 0};
    if (poll(&pf, 1, 100) > 0)
      drain(wake_fd());
  }
  if (!lost && zkr_hold_state(lock_hold()) == ZKR_LOCK_LOST) {
    lost = 1;
    msg("%s %s was lost while %s ran (%s)", lk.permits ? "lease of" : "lock",
        path, cmd[0], lost_how());
  }
  int rrc = lock_release();
  stats.released = now_ms();
  if (verbose && rrc == ZKR_OK)
    msg("released %s after %.3f s", path,
        (double)(now_ms() - started) / 1000.0);
  lock_free();
  /* Closing a connected session makes the server delete our node at once;
   * a disconnected one leaves it until the session expires. */
  if (zkr_session_state_get(s) == ZKR_STATE_SUSPENDED)
    zkr_session_wait_connected(s, zkr_session_timeout(s));
  zkr_session_close(s);
  if (lost) {
    if (verbose)
      msg("%s ended with status %d after the %s was lost", cmd[0], code,
          lock_noun());
    return stats_end("lost", EX_TEMPFAIL);
  }
  return stats_end("released", code);
}
