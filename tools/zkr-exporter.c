/*
 * zkr-exporter - serve the Prometheus view of a ZooKeeper tree of locks
 * over HTTP: every lock, read-write lock, semaphore and election under
 * ROOT, computed from the nodes alone (so every client counts: zkr,
 * Curator, kazoo), at /metrics.
 *
 *   zkr-exporter [--listen ADDR:PORT] [-s HOSTS] [--permits N]
 *                [--connect-timeout MS] [--scrape-timeout SECONDS]
 *                [--max-connections N] [ROOT]
 *
 * The metrics are those of zkr-ls --prometheus, made by the same code
 * (prom.c, the tree read by ls-walk.c). The HTTP side is libmicrohttpd's,
 * with one internal thread, so scrapes are served one at a time; each
 * reads the tree afresh, within --scrape-timeout. The thread waits with epoll
 * (poll where the library has no epoll), not select(), whose 1024 descriptors
 * idle connections once filled so that no scrape got through; at most
 * --max-connections are open at once (the open file limit is raised to fit
 * them), and one idle for 10 s is closed. One ZooKeeper session serves every
 * scrape (renewed by the library if lost). A scrape that cannot read the tree
 * (no server reachable, a read failed or took too long) answers zkr_up 0, and
 * the error is logged on stderr when it differs from the last one logged. A bad
 * listen address ends zkr-exporter at start: 64 if it is malformed, 69 if
 * nothing can listen there; SIGINT and SIGTERM end it with 0 (unless ignored at
 * start: they stay ignored, as in zkr-lock).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zkr/zkr.h>

#include "cli.h"
#include "ls-walk.h"
#include "prom.h"

const char *prog = "zkr-exporter";

#if MHD_VERSION < 0x00097002
typedef int mhd_result; /* before 0.9.71 the handlers returned int */
#else
typedef enum MHD_Result mhd_result;
#endif

#define DEFAULT_LISTEN "127.0.0.1:9787"
#define IDLE_TIMEOUT_S 10u        /* an idle HTTP connection is closed */
#define MAX_CONNECTIONS 4096      /* --max-connections by default */
#define MAX_CONNECTIONS_MAX 65536 /* and at most */
/* Descriptors beside the HTTP connections: stdio, the listening socket,
 * epoll's, libmicrohttpd's and the ZooKeeper client's pipes and socket. */
#define FD_SPARE 64

static struct {
  const char *servers;
  const char *root;
  long connect_ms;
  int64_t scrape_ms;
  long max_conn;
  zkr_session *s;
  char logged[sizeof ls_msgs]; /* the last errors logged; "" once all is well */
} ex;

static void exporter_help(void) {
  printf(
      "Usage: %s [options] [ROOT]\n"
      "Serve over HTTP, at /metrics, the Prometheus metrics of every lock,\n"
      "read-write lock, semaphore and election under the ZooKeeper path\n"
      "ROOT (default /): contenders, holders, waiters, the age of the\n"
      "oldest holder and waiter, each holder's identity. The same metrics\n"
      "as zkr-ls --prometheus.\n"
      "\n"
      "  -l, --listen ADDR:PORT      where to serve (default %s);\n"
      "                              HOST:PORT, [IPV6]:PORT, or :PORT for\n"
      "                              every address; port 0 takes a free one\n"
      "  -s, --servers HOSTS         ZooKeeper connection string (default:\n"
      "                              $ZKR_SERVERS, else 127.0.0.1:2181)\n"
      "      --permits N             the limit of the semaphores under ROOT\n"
      "                              (1 to %d), to tell their waiting lease\n"
      "                              node\n"
      "      --connect-timeout MS    how long to try to reach a server, at\n"
      "                              start and at a scrape (default 5000)\n"
      "      --scrape-timeout SECONDS  reading the tree must take no longer\n"
      "                              (default 8), else zkr_up is 0\n"
      "      --max-connections N     HTTP connections open at once, 1 to\n"
      "                              %d (default %d; the open file limit\n"
      "                              is raised to fit); an idle one is\n"
      "                              closed after %u s\n"
      "  -h, --help                  this help\n"
      "  -V, --version               print the zkr version\n"
      "\n"
      "Exit status: 0 after SIGINT or SIGTERM; 64 usage (also a malformed\n"
      "listen address); 69 cannot listen at the address; 70 internal\n"
      "error.\n",
      prog, DEFAULT_LISTEN, ZKR_SEMAPHORE_MAX, MAX_CONNECTIONS_MAX,
      MAX_CONNECTIONS, IDLE_TIMEOUT_S);
}

/* "prog: MESSAGE" on stderr, the exporter's log. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  fprintf(stderr, "%s: libmicrohttpd: ", prog);
  vfprintf(stderr, fmt, ap);
  size_t n = strlen(fmt);
  if (n == 0 || fmt[n - 1] != '\n')
    fputc('\n', stderr);
}

/* Connect, waiting at most @wait_ms; the session is renewed by the
 * library if it is lost later. On failure the reason is said (into
 * ls_msgs, as the walk's errors). A connection string the library
 * refuses is a usage error. With @sigs (at start), a signal of them
 * ends the wait: 1, with the signal in *@sig. */
static int connect_zk(long wait_ms, const sigset_t *sigs, int *sig) {
  /* static: a connecting thread a signal leaves behind reads it */
  static zkr_session_options so;
  so = (zkr_session_options){.connect_timeout_ms = (int)wait_ms};
  int rc = sigs ? session_new_interruptible(&ex.s, ex.servers, &so,
                                            cli_sigset_wait, (void *)sigs, sig)
                : zkr_session_new(&ex.s, ex.servers, &so);
  if (rc == ZKR_ECANCELED)
    return 1; /* the connection goes on: the caller ends the process */
  if (rc == ZKR_EBADCONN || rc == ZKR_EBADPATH)
    usage_error("invalid servers '%s': %s", esc(ex.servers), zkr_strerror(rc));
  if (rc != ZKR_OK) {
    ex.s = NULL;
    ls_say("cannot reach ZooKeeper at %s: %s", esc(ex.servers),
           zkr_strerror(rc));
  }
  return 0;
}

/* Log this scrape's errors and warnings if they are not those logged
 * last; say so once when all is well again. */
static void log_change(int up) {
  if (strcmp(ls_msgs, ex.logged) == 0)
    return;
  if (ls_msgs[0])
    ls_put_msgs(stderr, "");
  else if (up)
    note("reading %s at %s again", esc(ex.root), esc(ex.servers));
  memcpy(ex.logged, ls_msgs, sizeof ex.logged);
}

/* One scrape: the metrics into @f. */
static void scrape_into(FILE *f) {
  int64_t t0 = now_ms();
  ls_deadline = t0 + ex.scrape_ms;
  ls_msgs_len = 0;
  ls_msgs[0] = '\0';
  struct prom_result sc = {ex.root, 0, 0.0};
  if (!ex.s) {
    int64_t wait = ex.connect_ms < ex.scrape_ms ? ex.connect_ms : ex.scrape_ms;
    connect_zk((long)wait, NULL, NULL);
  }
  if (ex.s) {
    zkr_session_state st = zkr_session_state_get(ex.s);
    if (st != ZKR_STATE_CONNECTED)
      ls_say("not connected to ZooKeeper at %s (session %s)", esc(ex.servers),
             zkr_session_state_name(st));
    else
      prom_scrape(ex.s, ex.root, &sc);
  }
  sc.duration = (double)(now_ms() - t0) / 1000.0;
  ls_deadline = 0;
  prom_write(f, &sc);
  log_change(sc.up);
}

static mhd_result reply(struct MHD_Connection *con, unsigned status,
                        const char *type, char *body, size_t len) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  mhd_result ret = MHD_queue_response(con, status, r);
  MHD_destroy_response(r);
  return ret;
}

static mhd_result reply_text(struct MHD_Connection *con, unsigned status,
                             const char *text) {
  char *body = strdup(text);
  if (!body)
    return MHD_NO;
  return reply(con, status, "text/plain; charset=utf-8", body, strlen(body));
}

/* Every request: GET or HEAD of /metrics (a scrape) or / (a pointer to
 * it); anything else 404 or 405. */
static mhd_result answer(void *cls, struct MHD_Connection *con, const char *url,
                         const char *method, const char *version,
                         const char *upload_data, size_t *upload_data_size,
                         void **req_cls) {
  (void)cls;
  (void)version;
  (void)upload_data;
  (void)upload_data_size;
  (void)req_cls;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return reply_text(con, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "only GET and HEAD are served\n");
  if (strcmp(url, "/") == 0)
    return reply_text(con, MHD_HTTP_OK,
                      "zkr-exporter: the metrics are at /metrics\n");
  if (strcmp(url, "/metrics") != 0)
    return reply_text(con, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
  char *body = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&body, &len);
  if (!f)
    return MHD_NO;
  scrape_into(f);
  if (fclose(f) != 0) {
    free(body);
    return MHD_NO;
  }
  return reply(con, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
               body, len);
}

/* ---- the listening socket ---- */

/* @a, "HOST:PORT", "[IPV6]:PORT" or ":PORT", into @host ("" for every
 * address) and @port (0 to 65535). 0, or -1 if @a is not such. */
static int parse_listen(const char *a, char *host, size_t hl, char *port,
                        size_t pl) {
  const char *h = a, *he, *p;
  if (a[0] == '[') {
    h = a + 1;
    he = strchr(h, ']');
    if (!he || he[1] != ':' || he == h)
      return -1;
    p = he + 2;
  } else {
    const char *colon = strrchr(a, ':');
    if (!colon)
      return -1;
    he = colon;
    p = colon + 1;
  }
  long v;
  if ((size_t)(he - h) >= hl || strlen(p) >= pl ||
      parse_long(p, 0, 65535, &v) != 0)
    return -1;
  memcpy(host, h, (size_t)(he - h));
  host[he - h] = '\0';
  snprintf(port, pl, "%ld", v);
  return 0;
}

/* A socket listening on @host:@port: every address (IPv6 and IPv4, or
 * IPv4 alone) for an empty @host, else the first address of @host that
 * can be bound. -1 with the reason in @why on failure. */
static int listen_on(const char *host, const char *port, char *why, size_t wl) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const char *node = host[0] ? host : "::";
  int g = getaddrinfo(node, port, &hints, &res);
  if (g != 0 && !host[0])
    g = getaddrinfo(node = "0.0.0.0", port, &hints, &res);
  if (g != 0) {
    snprintf(why, wl, "%s",
             g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    return -1;
  }
  int fd = -1;
  int err = 0;
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && !host[0])
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    /* a long queue: a burst of connections is not dropped (and retried
     * seconds later) while the HTTP thread accepts them */
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0 && !host[0] && strcmp(node, "::") == 0)
    return listen_on("0.0.0.0", port, why, wl); /* no IPv6 here */
  if (fd < 0)
    snprintf(why, wl, "%s", strerror(err));
  return fd;
}

/* The address @fd listens on, as ADDR:PORT ([ADDR]:PORT for IPv6). */
static void bound_name(int fd, char *buf, size_t len) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char a[INET6_ADDRSTRLEN] = "?";
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    snprintf(buf, len, "?");
    return;
  }
  if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
    snprintf(buf, len, "[%s]:%u", a, (unsigned)ntohs(s6->sin6_port));
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
    snprintf(buf, len, "%s:%u", a, (unsigned)ntohs(s4->sin_port));
  }
}

/* Room for @want HTTP connections: the soft open file limit raised to
 * fit them and FD_SPARE more, as far as the hard limit allows. Returns
 * how many fit: @want, or fewer (logged) when the hard limit is lower. */
static long fit_connections(long want) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return want;
  rlim_t need = (rlim_t)want + FD_SPARE;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
    struct rlimit up = rl;
    up.rlim_cur =
        rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0)
      rl.rlim_cur = up.rlim_cur;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
    return want;
  long fit = rl.rlim_cur > FD_SPARE ? (long)(rl.rlim_cur - FD_SPARE) : 1;
  note("the open file limit (%llu) leaves room for %ld HTTP connections, not "
       "%ld: serving at most %ld at once",
       (unsigned long long)rl.rlim_cur, fit, want, fit);
  return fit;
}

int main(int argc, char **argv) {
  const char *listen_addr = DEFAULT_LISTEN;
  ex.servers = default_servers();
  ex.connect_ms = 5000;
  ex.scrape_ms = 8000;
  ex.max_conn = MAX_CONNECTIONS;
  enum { OPT_PERMITS = OPT_NEXT, OPT_SCRAPE, OPT_MAX_CONN };
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, 'l'},
      {"servers", required_argument, NULL, 's'},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"scrape-timeout", required_argument, NULL, OPT_SCRAPE},
      {"max-connections", required_argument, NULL, OPT_MAX_CONN},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":l:s:hV", longopts, NULL)) != -1) {
    switch (c) {
    case 'l':
      listen_addr = optarg;
      break;
    case 's':
      ex.servers = optarg;
      break;
    case OPT_PERMITS:
      if (parse_long(optarg, 1, ZKR_SEMAPHORE_MAX, &ls_permits) != 0)
        usage_error("invalid --permits '%s': the limit of the semaphores, a "
                    "plain decimal from 1 to %d",
                    esc(optarg), ZKR_SEMAPHORE_MAX);
      break;
    case OPT_CONNECT:
      if (parse_long(optarg, 1, INT_MAX, &ex.connect_ms) != 0)
        usage_error("invalid connect timeout '%s': milliseconds, 1 to %d",
                    esc(optarg), INT_MAX);
      break;
    case OPT_SCRAPE:
      if (parse_seconds(optarg, &ex.scrape_ms) != 0 || ex.scrape_ms < 1)
        usage_error("invalid --scrape-timeout '%s': seconds as a plain "
                    "decimal, at least 0.001 and at most " SECONDS_MAX_TEXT,
                    esc(optarg));
      break;
    case OPT_MAX_CONN:
      if (parse_long(optarg, 1, MAX_CONNECTIONS_MAX, &ex.max_conn) != 0)
        usage_error("invalid --max-connections '%s': a plain decimal from 1 "
                    "to %d",
                    esc(optarg), MAX_CONNECTIONS_MAX);
      break;
    case 'h':
      exporter_help();
      return stdout_failed();
    case 'V':
      printf("zkr-exporter (zkr) %s\n", zkr_version());
      return stdout_failed();
    default:
      option_error(c, argv, longopts);
    }
  }
  if (optind + 1 < argc)
    usage_error("one ROOT only (extra '%s')", esc(argv[optind + 1]));
  ex.root = optind < argc ? argv[optind] : "/";
  ls_servers = ex.servers;
  if (ex.root[0] != '/')
    usage_error("invalid root '%s': %s", esc(ex.root),
                zkr_strerror(ZKR_EBADPATH));
  char host[256], port[8];
  if (parse_listen(listen_addr, host, sizeof host, port, sizeof port) != 0)
    usage_error("invalid listen address '%s': HOST:PORT, [IPV6]:PORT or "
                ":PORT, the port a plain decimal from 0 to 65535",
                esc(listen_addr));

  /* the socket first: a bad address ends us before anything else */
  char why[256];
  int fd = listen_on(host, port, why, sizeof why);
  if (fd < 0) {
    note("cannot listen on %s: %s", esc(listen_addr), why);
    return EX_UNAVAILABLE;
  }
  char where[INET6_ADDRSTRLEN + 16];
  bound_name(fd, where, sizeof where);

  /* SIGINT and SIGTERM end us, taken with sigwait(): blocked before any
   * thread (libmicrohttpd's, the library's) exists */
  sigset_t sigs;
  cli_end_signals(&sigs);
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  ls_quiet = 1; /* the walk's messages are logged by log_change() */
  int sig = 0;
  if (connect_zk(ex.connect_ms, &sigs, &sig)) {
    note("%s while connecting: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    _exit(0);
  }
  if (!ex.s) {
    ls_put_msgs(stderr, "");
    memcpy(ex.logged, ls_msgs, sizeof ex.logged);
  }
  ls_msgs_len = 0;
  ls_msgs[0] = '\0';

  /* epoll (else poll): select() serves no descriptor past 1024, so that
   * a thousand idle connections once shut every scrape out */
  unsigned flags = MHD_USE_ERROR_LOG;
  if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
    flags |= MHD_USE_EPOLL_INTERNAL_THREAD;
  else if (MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES)
    flags |= MHD_USE_POLL_INTERNAL_THREAD;
  else
    flags |= MHD_USE_INTERNAL_POLLING_THREAD;
  long max_conn = fit_connections(ex.max_conn);
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
      NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
      IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conn,
      MHD_OPTION_END);
  if (!d) {
    note("cannot start the HTTP server on %s", where);
    close(fd);
    zkr_session_close(ex.s);
    return EX_SOFTWARE;
  }
  note("serving http://%s/metrics for ZooKeeper at %s, root %s", where,
       esc(ex.servers), esc(ex.root));

  if (sigismember(&sigs, SIGINT) || sigismember(&sigs, SIGTERM)) {
    while (sigwait(&sigs, &sig) != 0)
      ;
  } else {
    for (;;)
      pause(); /* both ignored at start: until another signal ends us */
  }
  note("%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  MHD_stop_daemon(d);
  close(fd);
  prom_free();
  if (ex.s)
    zkr_session_close(ex.s);
  return 0;
}
