/*
 * zkr-elect - run a command while leading a zkr election, in the manner
 * of `etcdctl elect`, with zkr-lock's options, signals, process group,
 * guard process and exit statuses (all shared through cli.h).
 *
 *   zkr-elect [options] PATH [--] COMMAND [ARG...]
 *   zkr-elect --leader [--json] PATH
 *   zkr-elect --observe [--json] PATH
 *
 * The participant is a latch (zkr_election_start(): Curator's LeaderLatch
 * layout, nodes _c_<uuid>-latch-<seq>), so it shares PATH with Java
 * services using LeaderLatch. The election's listener writes one byte to
 * the wake pipe; one poll() loop waits for leadership and for signals, and
 * run_command() then runs COMMAND, asking zkr_election_is_leader() after
 * each wake-up. Losing leadership while COMMAND runs sends SIGTERM to its
 * process group, SIGKILL --kill-after later. A dropped connection ends
 * leadership at once (the library's default, ZKR_ELECTION_SUSPEND_DROP)
 * unless --keep-on-suspend (ZKR_ELECTION_SUSPEND_KEEP).
 *
 * Without --requeue: one term; zkr-elect leaves the election when COMMAND
 * ends and exits with its status, or 75 if leadership was lost. With
 * --requeue: after COMMAND ends it resigns (queues again at the back) and
 * runs COMMAND again the next time it leads, until a signal: a signal
 * while waiting ends it (after it left the queue) as that signal would;
 * one while COMMAND runs is passed on, and zkr-elect exits with COMMAND's
 * status once it has ended. A term shorter than 10 s is followed by a
 * back-off out of the election (1 s, doubling up to 60 s, forgotten after
 * a term of 60 s or more); a COMMAND that cannot be run (126, 127) ends
 * zkr-elect with that status.
 *
 * --leader and --observe read the election without taking part
 * (elect-leader.c).
 *
 * --stats prints on stderr, at exit, how long zkr-elect waited to lead
 * and led (summed over the terms with --requeue), as it measured them,
 * and how it ended; one JSON object with --json.
 *
 * Exit status: COMMAND's (128+N if a signal N ended it); --leader: 0 a
 * leader, 1 none; 64 usage; 69 no server reachable (or ZooKeeper refused);
 * 70 internal error; 75 leadership lost (COMMAND was terminated) or the
 * session lost while joining; 126/127 COMMAND could not be run.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zkr/zkr.h>

#include "cli.h"
#include "elect-leader.h"

const char *prog = "zkr-elect";
static int json;
static int64_t op_timeout_ms = 10000;

static void help(void) {
  printf(
      "Usage: %s [options] PATH [--] COMMAND [ARG...]\n"
      "       %s --leader [--json] PATH\n"
      "       %s --observe [--json] PATH\n"
      "Join the leader election at the ZooKeeper path PATH and run COMMAND\n"
      "while leading; exit with COMMAND's exit status. --leader prints the\n"
      "current leader; --observe prints one line per change of leader.\n"
      "\n"
      "      --requeue              when COMMAND ends or leadership is lost,\n"
      "                             queue again and run COMMAND again the\n"
      "                             next time it leads, until signalled;\n"
      "                             after a term under 10 s, first wait out\n"
      "                             of the election (1 s, doubling, <= 60 s)\n"
      "      --keep-on-suspend      keep leading (and COMMAND running) while\n"
      "                             the connection is down, until the session\n"
      "                             is declared lost; default: a dropped\n"
      "                             connection ends leadership at once\n"
      "  -l, --leader               print the current leader and exit (1 if\n"
      "                             there is none)\n"
      "  -o, --observe              print the leader, then one line per "
      "change\n"
      "                             of leader, until interrupted\n"
      "  -j, --json                 JSON output for --leader, --observe and\n"
      "                             --stats\n"
      "  -s, --servers HOSTS        ZooKeeper connection string (default:\n"
      "                             $ZKR_SERVERS, else 127.0.0.1:2181)\n"
      "      --session-timeout MS   ZooKeeper session timeout, 100 to\n"
      "                             1073741823 (default 10000)\n"
      "      --connect-timeout MS   how long to try to reach a server\n"
      "                             (default 10000; then exit 69)\n"
      "      --auth USER:PASSWORD   digest credentials for the session\n"
      "      --acl open|creator     ACL of the nodes created: open to anyone\n"
      "                             (default), or every right for --auth's\n"
      "                             credentials and read for anyone\n"
      "      --id TEXT              participant id stored in its node\n"
      "                             (default: COMMAND's name)\n"
      "      --kill-after SECONDS   if leadership is lost, SIGKILL COMMAND\n"
      "                             this long after SIGTERM (default 10)\n"
      "  -v, --verbose              progress on stderr; -vv adds the\n"
      "                             library's warnings, -vvv its log\n"
      "      --stats                at exit, how long it waited to lead and\n"
      "                             led, and how it ended, on stderr (JSON\n"
      "                             with --json)\n"
      "  -h, --help                 this help\n"
      "  -V, --version              print the zkr version\n"
      "\n"
      "COMMAND gets ZKR_FENCING_TOKEN and ZKR_LEADER_NODE in its environment.\n"
      "Exit status: COMMAND's (128+N if signal N ended it); --leader: 0, or\n"
      "1 no leader; 64 usage; 69 no server reachable; 75 leadership lost\n"
      "(COMMAND was terminated); 126/127 COMMAND could not be run.\n",
      prog, prog, prog);
}

/* ---- --stats ---- */

static struct {
  int on;
  const char *path;
  int64_t waiting_since; /* now_ms() when the current wait began; -1 */
  int64_t leading_since; /* when the current term began; -1 */
  int64_t wait_total, hold_total, wait_max, hold_max;
  int terms;
  int64_t token;
  char node[2048];
} stats = {0, NULL, -1, -1, 0, 0, 0, 0, 0, 0, ""};

/* A term begins: the wait before it ends. */
static void stats_lead(int64_t token, const char *node) {
  int64_t now = now_ms();
  if (stats.waiting_since >= 0) {
    int64_t w = now - stats.waiting_since;
    stats.wait_total += w;
    if (w > stats.wait_max)
      stats.wait_max = w;
  }
  stats.waiting_since = -1;
  stats.leading_since = now;
  stats.token = token;
  snprintf(stats.node, sizeof stats.node, "%s", node);
}

/* The term ends (COMMAND ended or was ended). */
static void stats_term_end(void) {
  if (stats.leading_since < 0)
    return;
  int64_t h = now_ms() - stats.leading_since;
  stats.hold_total += h;
  if (h > stats.hold_max)
    stats.hold_max = h;
  stats.leading_since = -1;
  stats.terms++;
}

/* With --stats, the figures on stderr: @outcome (ended, lost,
 * interrupted, error) and the exit status @code. Returns @code. */
static int stats_end(const char *outcome, int code) {
  if (!stats.on)
    return code;
  stats_term_end();
  int queued = stats.waiting_since >= 0 || stats.terms > 0;
  if (stats.waiting_since >= 0) {
    int64_t w = now_ms() - stats.waiting_since;
    stats.wait_total += w;
    if (w > stats.wait_max)
      stats.wait_max = w;
    stats.waiting_since = -1;
  }
  if (json) {
    fprintf(stderr, "{\"tool\":\"zkr-elect\",\"path\":");
    json_string(stderr, stats.path);
    fprintf(stderr, ",\"outcome\":\"%s\",\"led\":%s,\"terms\":%d", outcome,
            stats.terms ? "true" : "false", stats.terms);
    if (queued)
      fprintf(stderr, ",\"wait_ms\":%lld,\"max_wait_ms\":%lld",
              (long long)stats.wait_total, (long long)stats.wait_max);
    else
      fprintf(stderr, ",\"wait_ms\":null,\"max_wait_ms\":null");
    if (stats.terms) {
      fprintf(stderr,
              ",\"hold_ms\":%lld,\"max_hold_ms\":%lld,\"token\":%lld,"
              "\"node\":",
              (long long)stats.hold_total, (long long)stats.hold_max,
              (long long)stats.token);
      json_string(stderr, stats.node);
    } else {
      fprintf(stderr, ",\"hold_ms\":null,\"max_hold_ms\":null,\"token\":null,"
                      "\"node\":null");
    }
    fprintf(stderr, ",\"exit_status\":%d}\n", code);
    return code;
  }
  char w[48] = "not queued", h[64] = "never led";
  if (queued)
    snprintf(w, sizeof w, "waited %.3f s", (double)stats.wait_total / 1000.0);
  if (stats.terms)
    snprintf(h, sizeof h, "led %.3f s in %d term%s",
             (double)stats.hold_total / 1000.0, stats.terms,
             stats.terms == 1 ? "" : "s");
  msg("stats: %s: %s, %s; %s, exit status %d", esc(stats.path), w, h, outcome,
      code);
  return code;
}

/* ---- taking part ---- */

static atomic_int changed; /* the listener was called */
/* The listener was told "not leading" since the term began. Leadership
 * dropped on a suspension comes back by itself on the reconnection (the
 * node is verified, same session); reading is_leader() alone after a
 * wake-up misses a drop that is over by then (seen under load), so the
 * term ends on the drop itself. */
static atomic_int dropped;

static void on_leading(zkr_election *e, int is_leader, void *ud) {
  (void)e;
  (void)ud;
  if (!is_leader)
    dropped = 1;
  changed = 1;
  wake();
}

/* What elect_lost() needs to say what happened. */
struct term {
  zkr_election *e;
  const char *path;
  const char *cmd;
};

/* While COMMAND runs, after each wake-up: 1 when leadership was lost. */
static int elect_lost(pid_t group, void *ud) {
  struct term *t = ud;
  if (!dropped && zkr_election_is_leader(t->e))
    return 0;
  msg("leadership of %s lost while %s ran (connection or session lost, or "
      "node deleted): sending SIGTERM to its process group %ld",
      t->path, t->cmd, (long)group);
  return 1;
}

/* Wait until the participant leads. 0 when it does; a signal that came
 * (it is to end zkr-elect); or, for an error, -1 with *@err. */
static int await_leading(zkr_election *e, const char *path, int sfd, int *err) {
  int64_t t0 = now_ms();
  if (verbose)
    msg("joined the election at %s; waiting to lead", path);
  for (;;) {
    changed = 0;
    int rc = zkr_election_await(e, 0);
    if (rc == ZKR_OK) {
      if (verbose)
        msg("leading %s after %.3f s", path, (double)(now_ms() - t0) / 1000.0);
      return 0;
    }
    if (rc != ZKR_ETIMEDOUT) {
      *err = rc;
      return -1;
    }
    struct pollfd pf[2] = {{sfd, POLLIN, 0}, {wake_fd(), POLLIN, 0}};
    /* a bounded wait as well: the library's state is read above */
    if (poll(pf, 2, changed ? 0 : 1000) < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      *err = ZKR_ESYS;
      return -1;
    }
    if (pf[1].revents)
      drain(wake_fd());
    if (pf[0].revents) {
      int sig = take_signal(sfd);
      if (sig) {
        if (verbose)
          msg("%s while waiting: leaving the election", strsignal(sig));
        return sig;
      }
    }
  }
}

/* Leave the election (our node is deleted) and close the session. */
static void leave(zkr_election *e, zkr_session *s) {
  zkr_election_free(e);
  /* Closing a connected session makes the server delete our node at once;
   * a disconnected one leaves it until the session expires. */
  if (zkr_session_state_get(s) == ZKR_STATE_SUSPENDED)
    zkr_session_wait_connected(s, zkr_session_timeout(s));
  zkr_session_close(s);
}

/* --requeue's back-off: a term shorter than BACKOFF_SHORT_MS is followed by
 * a pause out of the election, 1 s, doubled after each such term up to
 * BACKOFF_MAX_MS, and forgotten after a term of BACKOFF_MAX_MS or more.
 * So a command that fails at once does not churn the election. */
#define BACKOFF_SHORT_MS 10000
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000

/* Wait @ms out of the election; 0, or the signal that came. */
static int backoff_wait(int64_t ms, int sfd) {
  int64_t until = now_ms() + ms;
  for (;;) {
    int64_t left = until - now_ms();
    if (left <= 0)
      return 0;
    struct pollfd pf = {sfd, POLLIN, 0};
    if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
      return 0;
    if (pf.revents) {
      int sig = take_signal(sfd);
      if (sig)
        return sig;
    }
  }
}

static int terms(zkr_session *s, const char *path, char **cmd,
                 const struct run_opts *ro, const zkr_election_options *eo,
                 int requeue, int sfd, const sigset_t *oldmask) {
  zkr_election *e = NULL;
  int64_t backoff = 0; /* the next back-off, 0 after a long term */
  int rc = zkr_election_new(&e, s, path, eo);
  if (rc != ZKR_OK) {
    zkr_session_close(s);
    if (rc == ZKR_EBADPATH)
      usage_error("invalid election path '%s': %s", esc(path),
                  zkr_strerror(rc));
    msg("%s", zkr_strerror(rc));
    return stats_end("error", EX_SOFTWARE);
  }
  stats.waiting_since = now_ms();
  rc = zkr_election_start(e);
  if (rc != ZKR_OK) {
    msg("cannot join the election at %s: %s", path,
        why_acquire_failed(s, rc, path, 0));
    leave(e, s);
    return stats_end("error", exit_for(rc));
  }
  for (;;) {
    int err = ZKR_OK;
    int sig = await_leading(e, path, sfd, &err);
    if (sig > 0) {
      leave(e, s);
      stats_end("interrupted", 128 + sig);
      return die_by_signal(sig); /* as the signal would have */
    }
    if (sig < 0) {
      msg("cannot join the election at %s: %s", path,
          why_acquire_failed(s, err, path, 0));
      leave(e, s);
      return stats_end("error", exit_for(err));
    }
    dropped = 0; /* the term begins: a drop from here on ends it */
    zkr_hold *term = zkr_election_hold(e);
    int64_t token = zkr_hold_token(term);
    char node[2048];
    if (token == 0 || !zkr_election_is_leader(e) ||
        zkr_hold_node(term, node, sizeof node) != ZKR_OK)
      continue; /* lost at once: wait again */
    stats_lead(token, node);
    if (verbose)
      msg("running %s (token %lld, node %s)", cmd[0], (long long)token, node);
    char **env = child_env("ZKR_LEADER_NODE", token, node);
    if (!env) {
      msg("out of memory");
      leave(e, s);
      return stats_end("error", EX_SOFTWARE);
    }
    int64_t started = now_ms();
    struct term t = {e, path, cmd[0]};
    struct run_cmd run = {.cmd = cmd,
                          .env = env,
                          .oldmask = oldmask,
                          .sfd = sfd,
                          .kill_after_ms = ro->kill_after_ms,
                          .holding = "leads",
                          .lost_fn = elect_lost,
                          .ud = &t};
    int code = run_command(&run);
    stats_term_end();
    free_env(env);
    int lost = run.lost;
    if (!lost && (dropped || !zkr_election_is_leader(e))) {
      lost = 1; /* between COMMAND's end and here */
      msg("leadership of %s was lost while %s ran", path, cmd[0]);
    }
    if (verbose)
      msg("%s ended with status %d after %.3f s%s", cmd[0], code,
          (double)(now_ms() - started) / 1000.0,
          lost ? ", leadership lost" : "");
    if (!requeue || run.forwarded || code == 126 || code == 127) {
      /* (126, 127: COMMAND cannot be run; running it again will not help) */
      leave(e, s);
      return lost ? stats_end("lost", EX_TEMPFAIL) : stats_end("ended", code);
    }
    int64_t ran = now_ms() - started;
    if (ran >= BACKOFF_MAX_MS)
      backoff = 0;
    if (ran < BACKOFF_SHORT_MS) {
      /* a short term: out of the election for a while (our node is
       * deleted, the next participant leads), then join again */
      backoff = backoff ? backoff * 2 : BACKOFF_FIRST_MS;
      if (backoff > BACKOFF_MAX_MS)
        backoff = BACKOFF_MAX_MS;
      zkr_election_free(e);
      e = NULL;
      if (verbose)
        msg("%s ran %.3f s (less than %d s): out of the election at %s for "
            "%.0f s",
            cmd[0], (double)ran / 1000.0, BACKOFF_SHORT_MS / 1000, path,
            (double)backoff / 1000.0);
      int bsig = backoff_wait(backoff, sfd);
      if (bsig) {
        leave(e, s);
        stats_end("interrupted", 128 + bsig);
        return die_by_signal(bsig); /* as the signal would have */
      }
      rc = zkr_election_new(&e, s, path, eo);
      if (rc == ZKR_OK)
        rc = zkr_election_start(e);
      if (rc != ZKR_OK) {
        msg("cannot join the election at %s again: %s", path, zkr_strerror(rc));
        leave(e, s);
        return stats_end("error", exit_for(rc));
      }
      stats.waiting_since = now_ms();
      continue;
    }
    /* --requeue: give leadership up if still leading, and queue again at
     * the back; after a loss the latch has queued again by itself. */
    if (!lost) {
      rc = zkr_election_resign(e);
      if (rc != ZKR_OK) {
        msg("cannot queue again at %s: %s", path, zkr_strerror(rc));
        leave(e, s);
        return stats_end("error", exit_for(rc));
      }
      if (verbose)
        msg("resigned; queued again at %s", path);
    }
    stats.waiting_since = now_ms();
  }
}

enum { OPT_REQUEUE = OPT_NEXT, OPT_KEEP, OPT_STATS };

int main(int argc, char **argv) {
  struct run_opts ro;
  run_opts_init(&ro);
  int requeue = 0, keep = 0, mode = 0; /* mode: 'l' --leader, 'o' --observe */

  static const struct option longopts[] = {
      CLI_RUN_LONGOPTS,
      {"requeue", no_argument, NULL, OPT_REQUEUE},
      {"keep-on-suspend", no_argument, NULL, OPT_KEEP},
      {"leader", no_argument, NULL, 'l'},
      {"observe", no_argument, NULL, 'o'},
      {"json", no_argument, NULL, 'j'},
      {"stats", no_argument, NULL, OPT_STATS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int c;
  /* "+": stop at the first non-option, so COMMAND's options stay its own */
  while ((c = getopt_long(argc, argv, "+:s:lojvhV", longopts, NULL)) != -1) {
    if (run_opt(&ro, c, optarg))
      continue;
    switch (c) {
    case OPT_REQUEUE:
      requeue = 1;
      break;
    case OPT_KEEP:
      keep = 1;
      break;
    case 'l':
    case 'o':
      if (mode && mode != c)
        usage_error("--leader and --observe exclude each other");
      mode = c;
      break;
    case 'j':
      json = 1;
      break;
    case OPT_STATS:
      stats.on = 1;
      break;
    case 'h':
      help();
      return 0;
    default:
      option_error(c, argv, longopts);
    }
  }
  if (optind >= argc)
    usage_error("missing PATH");
  const char *path = argv[optind++];
  char **cmd = NULL;
  if (mode) {
    if (optind < argc)
      usage_error("--%s takes PATH only (extra '%s')",
                  mode == 'l' ? "leader" : "observe", esc(argv[optind]));
    if (requeue || keep)
      usage_error("--requeue and --keep-on-suspend go with a COMMAND, not "
                  "with --%s",
                  mode == 'l' ? "leader" : "observe");
    if (stats.on)
      usage_error("--stats goes with a COMMAND, not with --%s",
                  mode == 'l' ? "leader" : "observe");
  } else {
    if (json && !stats.on)
      usage_error("--json goes with --leader, --observe or --stats");
    if (optind < argc && strcmp(argv[optind], "--") == 0)
      optind++;
    if (optind >= argc)
      usage_error("missing COMMAND");
    cmd = argv + optind;
  }
  if (path[0] != '/')
    usage_error("invalid election path '%s': %s", esc(path),
                zkr_strerror(ZKR_EBADPATH));
  stats.path = path;

  sigset_t oldmask;
  int sfd = signals_setup(&oldmask);
  if (sfd < 0)
    return EX_SOFTWARE;

  /* Options of the participant: bad input is a usage error, before
   * connecting. */
  zkr_election_options eo = {.listener = on_leading};
  if (!mode) {
    eo.id = ro.id ? ro.id : base_name(cmd[0]);
    if (!id_valid(eo.id))
      usage_error("invalid --id '%s': 1 to 256 bytes, no control characters",
                  esc(eo.id));
    if (keep)
      eo.suspend = ZKR_ELECTION_SUSPEND_KEEP;
  }

  zkr_session *s = NULL;
  int code = run_session(&ro, mode != 'l', &s);
  if (code != 0) {
    if (session_signal) {
      stats_end("interrupted", code);
      return die_by_signal(session_signal); /* as the signal would have */
    }
    return stats_end("error", code);
  }
  if (mode == 'l') {
    code = elect_show_leader(s, path, json, op_timeout_ms);
    zkr_session_close(s);
    return code;
  }
  if (mode == 'o')
    return elect_observe(s, path, json, sfd);
  return terms(s, path, cmd, &ro, &eo, requeue, sfd, &oldmask);
}
