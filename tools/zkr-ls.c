/*
 * zkr-ls - show the queue of a lock: who holds it and who waits, in order.
 *
 *   zkr-ls [-s HOSTS] [--json] [-r] [--permits N] PATH
 *
 * Reads zkr's and Curator's layouts alike (any ephemeral child whose name
 * ends in a ZooKeeper sequence number is a contender; a persistent node is
 * never one); with -r, every lock in the tree under PATH, skipping with a
 * warning the subtrees it may not read or whose paths are too long for the
 * library. A semaphore (Curator's InterProcessSemaphoreV2 layout: PATH
 * has the child "leases", maybe "locks", and no other) is shown as one:
 * its lease nodes, then the contenders queued for admission, with the
 * limit --permits if given. An election (a child named like Curator's
 * LeaderLatch nodes, "...-latch-<seq>", maybe with selector "-lock-"
 * nodes among them) is shown as one: its participants in order, the
 * leader first. Read-only: it creates, changes and watches nothing.
 * --watch [SECONDS] shows the listing again every SECONDS (2), in place on
 * a terminal, as blocks one after the other otherwise, until SIGINT or
 * SIGTERM (exit 0). --prometheus [ROOT] shows every lock under ROOT (/)
 * as metrics in Prometheus's text exposition format, computed from the
 * nodes alone, on stdout or, with -o FILE, into FILE replaced atomically
 * (node_exporter's textfile collector). zkr-exporter serves the same
 * metrics over HTTP, made by the same code (prom.c).
 * A missing chroot (-s HOST:PORT/CHROOT) is an error, not an empty tree;
 * -o through a symbolic link replaces the file it leads to, and refuses
 * anything but a regular file.
 * --deadlocks PATH... reads the queues of the locks at the PATHs and
 * prints a cycle of ZooKeeper sessions each waiting for the next (exit 3),
 * or that there is none (exit 0).
 * Exit status: 0; 2 -r listed the rest but skipped some subtrees; 64 usage;
 * 69 no server reachable; 1 another error (also a write error on stdout).
 *
 * This file holds the options and main(); the reading of the nodes is in
 * ls-walk.c, their kinds and the table in ls.c, --watch in ls-watch.c,
 * the metrics in prom.c and prom-file.c.
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <zkr/zkr.h>

#include "cli.h"
#include "ls-deadlock.h"
#include "ls-walk.h"
#include "ls-watch.h"
#include "prom-file.h"
#include "prom.h"

const char *prog = "zkr-ls";

static void help(void) {
  printf(
      "Usage: %s [options] PATH\n"
      "       %s --prometheus [-o FILE] [options] [ROOT]\n"
      "       %s --deadlocks [options] PATH...\n"
      "Show the queue of the lock at PATH: position, role, sequence,\n"
      "fencing token, owner session, the contender's id, host and pid,\n"
      "how long ago it queued, and its node name. A semaphore shows its\n"
      "leases and waiters; an election its participants, leader first.\n"
      "\n"
      "  -s, --servers HOSTS       ZooKeeper connection string (default:\n"
      "                            $ZKR_SERVERS, else 127.0.0.1:2181)\n"
      "  -r, --recursive           every lock in the tree under PATH\n"
      "  -j, --json                JSON output\n"
      "      --watch [SECONDS]     show it again every SECONDS (default 2,\n"
      "                            at least 0.1), in place on a terminal,\n"
      "                            until interrupted\n"
      "      --prometheus          every lock, read-write lock, semaphore\n"
      "                            and election under PATH (default /) as\n"
      "                            Prometheus metrics\n"
      "      --deadlocks           a wait-for cycle among the queues of the\n"
      "                            locks at the PATHs (exit 3), or none\n"
      "                            (exit 0)\n"
      "  -o, --output FILE         with --prometheus: write FILE (replaced\n"
      "                            atomically; a regular file, or a\n"
      "                            symbolic link to one) instead of stdout\n"
      "      --permits N           the limit of a semaphore at PATH, to\n"
      "                            tell its waiting lease node (1 to %d)\n"
      "      --connect-timeout MS  how long to try to reach a server\n"
      "                            (default 10000; then exit 69)\n"
      "      --timeout SECONDS     how long reading one path's queue (its\n"
      "                            children and each contender's data) may\n"
      "                            take (default 10; then exit 1)\n"
      "  -h, --help                this help\n"
      "  -V, --version             print the zkr version\n"
      "\n"
      "Exit status: 0; 2 with -r, some subtrees could not be listed and\n"
      "were skipped (warnings on stderr; the rest was listed); 64 usage;\n"
      "69 no server reachable; 1 other errors (a write error too);\n"
      "--deadlocks: 3 a cycle was found.\n",
      prog, prog, prog, ZKR_SEMAPHORE_MAX);
}

int main(int argc, char **argv) {
  const char *servers = default_servers();
  int recursive = 0, prometheus = 0, watching = 0;
  int64_t interval_ms = 2000;
  const char *out = NULL;
  long connect_ms = 10000;
  enum {
    OPT_PERMITS = OPT_NEXT,
    OPT_WATCH,
    OPT_PROMETHEUS,
    OPT_TIMEOUT,
    OPT_DEADLOCKS
  };
  int deadlocks = 0;
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"recursive", no_argument, NULL, 'r'},
      {"json", no_argument, NULL, 'j'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"watch", optional_argument, NULL, OPT_WATCH},
      {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
      {"output", required_argument, NULL, 'o'},
      {"deadlocks", no_argument, NULL, OPT_DEADLOCKS},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  char **args = ls_watch_args(argc, argv);
  if (!args) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return 1;
  }
  argc = 0;
  while (args[argc])
    argc++;
  argv = args;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":s:rjo:hV", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      servers = optarg;
      break;
    case 'r':
      recursive = 1;
      break;
    case 'j':
      ls_json = 1;
      break;
    case 'o':
      out = optarg;
      break;
    case OPT_CONNECT:
      if (parse_long(optarg, 1, INT_MAX, &connect_ms) != 0)
        usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                    esc(optarg), INT_MAX);
      break;
    case OPT_TIMEOUT:
      if (parse_seconds(optarg, &ls_op_timeout_ms) != 0 ||
          ls_op_timeout_ms < 1 ||
          ls_op_timeout_ms > (int64_t)(INT_MAX / 1000) * 1000)
        usage_error("invalid --timeout '%s': seconds as a plain decimal, "
                    "at least 0.001 and at most %d",
                    esc(optarg), INT_MAX / 1000);
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &ls_permits) != 0)
        usage_error("invalid --permits '%s': the limit of the semaphore, a "
                    "plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    case OPT_WATCH:
      watching = 1;
      if (optarg &&
          (parse_seconds(optarg, &interval_ms) != 0 || interval_ms < 100))
        usage_error("invalid --watch interval '%s': seconds as a plain "
                    "decimal, at least 0.1 and at most " SECONDS_MAX_TEXT,
                    esc(optarg));
      break;
    case OPT_PROMETHEUS:
      prometheus = 1;
      break;
    case OPT_DEADLOCKS:
      deadlocks = 1;
      break;
    case 'h':
      help();
      return stdout_failed();
    case 'V':
      printf("zkr-ls (zkr) %s\n", zkr_version());
      return stdout_failed();
    default:
      option_error(c, argv, longopts);
    }
  }
  if (out && !prometheus)
    usage_error("-o (--output) goes with --prometheus");
  if (prometheus && ls_json)
    usage_error("--prometheus and --json exclude each other");
  if (deadlocks && (prometheus || watching || recursive || ls_json))
    usage_error("--deadlocks takes no --prometheus, --watch, -r or --json");
  if (optind >= argc && !prometheus)
    usage_error("missing PATH");
  if (optind + 1 < argc && !deadlocks)
    usage_error("one PATH only (extra '%s')", esc(argv[optind + 1]));
  for (int i = optind; deadlocks && i < argc; i++)
    if (argv[i][0] != '/')
      usage_error("invalid path '%s': %s", esc(argv[i]),
                  zkr_strerror(ZKR_EBADPATH));
  const char *path = optind < argc ? argv[optind] : "/";
  ls_servers = servers;
  /* the library checks the rest once connected (also exit 64) */
  if (path[0] != '/')
    usage_error("invalid path '%s': %s", esc(path), zkr_strerror(ZKR_EBADPATH));

  /* --watch: SIGINT and SIGTERM end it, taken with sigtimedwait(); they
   * are blocked before the library's threads exist, which inherit that */
  sigset_t sigs;
  cli_end_signals(&sigs);
  if (watching)
    sigprocmask(SIG_BLOCK, &sigs, NULL);

  /* no new session after a loss: a listing is short-lived (not so
   * --watch). static: a connecting thread a signal leaves behind reads it */
  static zkr_session_options so;
  so = (zkr_session_options){.connect_timeout_ms = (int)connect_ms,
                             .no_renew = !watching};
  zkr_session *s = NULL;
  int64_t t0 = now_ms();
  int sig = 0;
  int rc = watching ? session_new_interruptible(&s, servers, &so,
                                                cli_sigset_wait, &sigs, &sig)
                    : zkr_session_new(&s, servers, &so);
  if (rc == ZKR_ECANCELED) {
    fflush(NULL);
    _exit(0); /* --watch ended by a signal while connecting */
  }
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    fprintf(stderr, "%s: cannot reach ZooKeeper at %s: %s\n", prog,
            esc(servers), zkr_strerror(rc));
    if (prometheus) {
      /* what the metrics say: zkr_up 0 */
      struct prom_result sc = {path, 0, (double)(now_ms() - t0) / 1000.0};
      if (out)
        prom_write_file(out, &sc);
      else
        prom_write(stdout, &sc);
    }
    return rc == ZKR_ENOMEM ? 1 : EX_UNAVAILABLE;
  }
  int status;
  if (deadlocks) {
    status = ls_deadlocks(s, argv + optind, argc - optind);
  } else if (watching) {
    status =
        ls_watch_loop(s, path, recursive, prometheus, out, interval_ms, &sigs);
  } else if (prometheus) {
    struct prom_result sc;
    status = prom_scrape(s, path, &sc);
    if (out ? prom_write_file(out, &sc) != 0 : (prom_write(stdout, &sc), 0))
      status = 1;
  } else {
    status = ls_listing(s, path, recursive);
  }
  prom_free();
  zkr_session_close(s);
  /* what was shown must have been written: else exit 1, as coreutils do
   * (the other errors keep their status) */
  if ((status == 0 || status == EX_PARTIAL) && stdout_failed())
    status = 1;
  return status;
}
