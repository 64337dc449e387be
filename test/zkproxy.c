/* zkproxy - a fault-injecting TCP proxy for ZooKeeper client connections.
 *
 *   zkproxy --listen PORT|0 --target HOST:PORT [--port-file FILE]
 *           [--control-file FILE] [--event-file FILE] [--quit-on-eof]
 *
 * Listens on 127.0.0.1:PORT (0: a free port, chosen by the kernel) and relays
 * every accepted client connection to a new connection to HOST:PORT.  The
 * chosen port is printed on stdout as the first line (then flushed) and, with
 * --port-file, written to FILE (atomically: FILE.tmp then rename).
 *
 * It understands ZooKeeper's framing (a 4-byte big-endian length, then that
 * many bytes, in both directions) and forwards whole frames only, so a fault
 * never splits a frame.  The first client->server frame of a connection is
 * the ConnectRequest; every later one starts with a request header (int32
 * xid, int32 type).  The first server->client frame is the ConnectResponse;
 * every later one starts with a reply header (int32 xid, int64 zxid, int32
 * err).  A connection whose first bytes are not a plausible frame (a
 * four-letter word such as "ruok") is relayed raw, uninspected.
 *
 * Commands, one a line, from the control file and from stdin (unless stdin
 * is a terminal or closed; EOF on stdin stops reading it, or with
 * --quit-on-eof ends the proxy, so a parent holding a pipe to its stdin never
 * leaves it behind):
 *
 *   cut-after-request TYPE[,TYPE...] [/PATH]
 *       arm (one-shot, for every connection): the next client->server frame
 *       whose request type is listed (and, with /PATH, whose first field is
 *       a path that contains /PATH, such as the parent of a create) is
 *       forwarded to the server in full; then,
 *       before any further server->client byte of that connection is
 *       forwarded (its reply in particular), both sockets are closed, the
 *       client's with SO_LINGER 0 (RST), the server's normally (so the server
 *       reads, and applies, the request).  TYPE: a number or one of create,
 *       delete, exists, getdata, setdata, getacl, setacl, getchildren, sync,
 *       ping, getchildren2, check, multi, create2, createcontainer, createttl,
 *       auth, setwatches, setwatches2, addwatch, closesession (any case).
 *       Arming again replaces the list and the path.
 *   blackhole-after-request TYPE[,TYPE...] [/PATH]
 *       the same, but instead of the cut: the request is forwarded in full,
 *       then the proxy black-holes (as "blackhole") from that frame on, its
 *       reply in particular; "flow" ends it. Arming either kind replaces
 *       the other.
 *   cut-all       close every current connection (client side with RST)
 *   refuse        accept new connections and reset them at once
 *   accept        serve new connections again
 *   blackhole     read, but do not forward, frames in both directions
 *   flow          forward again (dropped frames stay dropped)
 *   quit          exit 0
 *
 * Blank lines and lines starting with '#' are ignored.
 *
 * The control file is polled every 10 ms.  When it is non-empty its lines are
 * run in order and the file is truncated (through the descriptor it was read
 * from).  Write it with a temporary file and rename():
 *     printf 'cut-after-request create\n' >FILE.tmp && mv FILE.tmp FILE
 * and wait for the "done" line (or for the file to be empty) before writing
 * the next batch: a rename over a batch not yet read replaces it.
 *
 * Event file (--event-file, append mode, one line per event, flushed):
 *   done <command>                  a command was executed
 *   fired <type> xid=<xid>          an armed cut-after-request or
 *                                   blackhole-after-request fired
 *                                   (<type>: its name, or its number)
 *   error <message>                 a command was rejected
 *   conn <id> open                  a client connection was accepted
 *   conn <id> closed <reason>       and closed (eof, reset, cut, cut-all, ...)
 *   refused                         a connection was refused
 *
 * ZKPROXY_DEBUG=1 prints every frame (direction, xid, type or zxid/err) to
 * stderr.  SIGTERM and SIGINT end it cleanly (exit 0).  Exit status: 0 on
 * quit or a signal, 1 on a fatal error, 64 on bad arguments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (64 * 1024 * 1024) /* larger: not ZooKeeper, relay raw */
#define HIGH_WATER (4 * 1024 * 1024) /* stop reading while this is queued */
#define READ_CHUNK 65536
#define CONTROL_POLL_MS 10
#define MAX_ARMED 32
#define DRAIN_MS 2000 /* how long a closed server socket is drained */

/* ------------------------------------------------------------ utilities */

static const char *prog = "zkproxy";
static int debug;
static FILE *events;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnx(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbg(const char *fmt, ...) {
  va_list ap;
  if (!debug)
    return;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...) {
  va_list ap;
  if (!events)
    return;
  va_start(ap, fmt);
  vfprintf(events, fmt, ap);
  va_end(ap);
  fputc('\n', events);
  fflush(events);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int32_t get32(const unsigned char *p) {
  return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                   ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int64_t get64(const unsigned char *p) {
  return (int64_t)(((uint64_t)(uint32_t)get32(p) << 32) |
                   (uint64_t)(uint32_t)get32(p + 4));
}

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return -1;
  return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* close with SO_LINGER 0: the peer gets a RST, not a FIN */
static void close_rst(int fd) {
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
}

/* ------------------------------------------------------------ op types */

static const struct {
  const char *name;
  int type;
} op_names[] = {
    {"create", 1},
    {"delete", 2},
    {"exists", 3},
    {"getdata", 4},
    {"setdata", 5},
    {"getacl", 6},
    {"setacl", 7},
    {"getchildren", 8},
    {"sync", 9},
    {"ping", 11},
    {"getchildren2", 12},
    {"check", 13},
    {"multi", 14},
    {"create2", 15},
    {"reconfig", 16},
    {"checkwatches", 17},
    {"removewatches", 18},
    {"createcontainer", 19},
    {"deletecontainer", 20},
    {"createttl", 21},
    {"multiread", 22},
    {"auth", 100},
    {"setwatches", 101},
    {"sasl", 102},
    {"getephemerals", 103},
    {"getallchildrennumber", 104},
    {"setwatches2", 105},
    {"addwatch", 106},
    {"whoami", 107},
    {"createsession", -10},
    {"closesession", -11},
};

static const char *op_name(int type) {
  for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
    if (op_names[i].type == type)
      return op_names[i].name;
  return NULL;
}

/* a type by name or number; 0 on success */
static int op_parse(const char *s, int *type) {
  char *end;
  long v;
  for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
    if (strcasecmp(op_names[i].name, s) == 0) {
      *type = op_names[i].type;
      return 0;
    }
  errno = 0;
  v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v < INT32_MIN || v > INT32_MAX)
    return -1;
  *type = (int)v;
  return 0;
}

/* ------------------------------------------------------------ buffers */

typedef struct {
  unsigned char *data;
  size_t off, len, cap; /* live bytes: data[off, off + len) */
} buf;

static void buf_free(buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

static void buf_reserve(buf *b, size_t extra) {
  if (b->off > 0 && (b->off + b->len + extra > b->cap || b->len == 0)) {
    memmove(b->data, b->data + b->off, b->len);
    b->off = 0;
  }
  if (b->len + extra > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
      cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d)
      die("out of memory");
    b->data = d;
    b->cap = cap;
  }
}

static void buf_append(buf *b, const unsigned char *p, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->off + b->len, p, n);
  b->len += n;
}

static void buf_consume(buf *b, size_t n) {
  b->off += n;
  b->len -= n;
  if (b->len == 0)
    b->off = 0;
}

/* ------------------------------------------------------------ connections */

enum { C2S, S2C };

typedef struct conn {
  int id;
  int fd[2];     /* [C2S] = client socket (source of C2S), [S2C] = server */
  int connected; /* the connection to the server is established */
  int raw;       /* not ZooKeeper framing: relay bytes as they come */
  int cutting;   /* cut-after-request fired: close once C2S is flushed */
  int eof[2];    /* the source of a direction sent EOF */
  int failed;    /* the server socket had an error */
  long frames[2];
  buf in[2];  /* bytes read from the direction's source, not yet framed */
  buf out[2]; /* whole frames to write to the direction's destination */
  struct conn *next;
} conn;

/* source and destination sockets of a direction */
#define SRC(c, d) ((c)->fd[(d) == C2S ? 0 : 1])
#define DST(c, d) ((c)->fd[(d) == C2S ? 1 : 0])

static conn *conns;
static int next_id = 1;
static int refusing, blackholed;
static int armed_types[MAX_ARMED], n_armed;
static char armed_path[512]; /* "" or what the request's path must contain */
static int armed_blackhole;  /* armed: blackhole-after-request, not a cut */

static struct sockaddr_storage target_addr;
static socklen_t target_len;

/* Server sockets of closed connections: half-closed (FIN after every byte
 * forwarded, never a RST, so the server reads and applies them all) and
 * drained until the server closes them or DRAIN_MS pass. */
typedef struct {
  int fd;
  int64_t deadline;
} drain;

static drain *drains;
static size_t n_drains, cap_drains;

static void drain_add(int fd) {
  if (n_drains == cap_drains) {
    size_t cap = cap_drains ? cap_drains * 2 : 16;
    drain *d = realloc(drains, cap * sizeof *d);
    if (!d)
      die("out of memory");
    drains = d;
    cap_drains = cap;
  }
  shutdown(fd, SHUT_WR);
  drains[n_drains].fd = fd;
  drains[n_drains].deadline = now_ms() + DRAIN_MS;
  n_drains++;
}

static void drain_remove(size_t i) {
  close(drains[i].fd);
  drains[i] = drains[--n_drains];
}

/* Close @c: the client socket with a RST if @rst_client, else with a FIN;
 * the server socket is drained unless it is already at its end. */
static void conn_close(conn *c, int rst_client, const char *reason) {
  conn **pp;
  for (pp = &conns; *pp && *pp != c; pp = &(*pp)->next)
    ;
  if (*pp)
    *pp = c->next;
  if (rst_client)
    close_rst(c->fd[0]);
  else
    close(c->fd[0]);
  if (c->fd[1] >= 0) {
    if (c->connected && !c->eof[S2C] && !c->failed)
      drain_add(c->fd[1]);
    else
      close(c->fd[1]);
  }
  for (int d = 0; d < 2; d++) {
    buf_free(&c->in[d]);
    buf_free(&c->out[d]);
  }
  dbg("conn %d closed (%s)", c->id, reason);
  event("conn %d closed %s", c->id, reason);
  free(c);
}

static void close_all(int rst_client, const char *reason) {
  while (conns)
    conn_close(conns, rst_client, reason);
}

static void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void conn_new(int cfd) {
  conn *c = calloc(1, sizeof *c);
  if (!c)
    die("out of memory");
  c->id = next_id++;
  c->fd[0] = cfd;
  c->fd[1] = -1;
  c->next = conns;
  conns = c;
  event("conn %d open", c->id);
  dbg("conn %d open", c->id);
  set_nodelay(cfd);
  int sfd = socket(target_addr.ss_family, SOCK_STREAM, 0);
  if (sfd < 0 || set_nonblock(sfd) < 0) {
    warnx("socket: %s", strerror(errno));
    if (sfd >= 0)
      close(sfd);
    conn_close(c, 1, "no-socket");
    return;
  }
  c->fd[1] = sfd;
  set_nodelay(sfd);
  if (connect(sfd, (struct sockaddr *)&target_addr, target_len) == 0)
    c->connected = 1;
  else if (errno != EINPROGRESS) {
    dbg("conn %d: connect: %s", c->id, strerror(errno));
    conn_close(c, 1, "connect-failed");
  }
}

static int type_armed(int type) {
  for (int i = 0; i < n_armed; i++)
    if (armed_types[i] == type)
      return 1;
  return 0;
}

/* Does a request body that starts with a path (a 4-byte length, then its
 * bytes) contain the armed path? Always, if none is armed. */
static int path_armed(const unsigned char *body, int32_t len) {
  if (!armed_path[0])
    return 1;
  if (len < 4)
    return 0;
  int32_t n = get32(body);
  if (n < 0 || n > len - 4)
    return 0;
  size_t want = strlen(armed_path);
  for (int32_t i = 0; i + (int32_t)want <= n; i++)
    if (memcmp(body + 4 + i, armed_path, want) == 0)
      return 1;
  return 0;
}

static void type_text(int type, char *s, size_t n) {
  const char *name = op_name(type);
  if (name)
    snprintf(s, n, "%s", name);
  else
    snprintf(s, n, "%d", type);
}

/* Look at one whole frame of direction @d; return whether it fires what
 * is armed: 1 the cut, 2 the black hole. */
static int inspect(conn *c, int d, const unsigned char *f, int32_t len) {
  long n = c->frames[d]++;
  char t[32];
  if (d == C2S) {
    if (n == 0) {
      if (len >= 28)
        dbg("conn %d c>s len=%d ConnectRequest protocol=%d timeout=%d "
            "session=0x%llx",
            c->id, len, get32(f), get32(f + 12),
            (unsigned long long)get64(f + 16));
      else
        dbg("conn %d c>s len=%d ConnectRequest (short)", c->id, len);
      return 0;
    }
    if (len < 8) {
      dbg("conn %d c>s len=%d (no request header)", c->id, len);
      return 0;
    }
    int32_t xid = get32(f), type = get32(f + 4);
    type_text(type, t, sizeof t);
    dbg("conn %d c>s len=%d xid=%d type=%d (%s)", c->id, len, xid, type, t);
    if (n_armed > 0 && !blackholed && type_armed(type) &&
        path_armed(f + 8, len - 8)) {
      n_armed = 0;
      event("fired %s xid=%d", t, xid);
      dbg("conn %d: %s-after-request fired on %s xid=%d", c->id,
          armed_blackhole ? "blackhole" : "cut", t, xid);
      return armed_blackhole ? 2 : 1;
    }
    return 0;
  }
  if (n == 0) {
    if (len >= 16)
      dbg("conn %d s>c len=%d ConnectResponse protocol=%d timeout=%d "
          "session=0x%llx",
          c->id, len, get32(f), get32(f + 4), (unsigned long long)get64(f + 8));
    else
      dbg("conn %d s>c len=%d ConnectResponse (short)", c->id, len);
  } else if (len >= 16) {
    dbg("conn %d s>c len=%d xid=%d zxid=0x%llx err=%d", c->id, len, get32(f),
        (unsigned long long)get64(f + 4), get32(f + 12));
  } else {
    dbg("conn %d s>c len=%d (no reply header)", c->id, len);
  }
  return 0;
}

/* Move whole frames (or, raw, every byte) of direction @d from in to out. */
static void frame(conn *c, int d) {
  buf *in = &c->in[d], *out = &c->out[d];
  while (in->len > 0 && !c->cutting) {
    if (!c->raw) {
      if (in->len < 4)
        return;
      int32_t len = get32(in->data + in->off);
      if (len < 0 || len > MAX_FRAME) {
        c->raw = 1;
        dbg("conn %d: no ZooKeeper framing (length %d), relaying raw", c->id,
            len);
      } else {
        if (in->len < 4 + (size_t)len)
          return;
        int cut = inspect(c, d, in->data + in->off + 4, len);
        if (!blackholed)
          buf_append(out, in->data + in->off, 4 + (size_t)len);
        buf_consume(in, 4 + (size_t)len);
        if (cut == 2) {
          blackholed = 1; /* the request went; nothing more does */
        } else if (cut) {
          c->cutting = 1;
          buf_free(in); /* later frames are never forwarded */
        }
        continue;
      }
    }
    if (!blackholed)
      buf_append(out, in->data + in->off, in->len);
    buf_consume(in, in->len);
  }
}

/* Write what is queued for direction @d; -1 on a write error. */
static int flush(conn *c, int d) {
  buf *out = &c->out[d];
  int fd = DST(c, d);
  if (d == C2S && !c->connected)
    return 0;
  if (d == S2C && c->cutting)
    return 0; /* nothing more reaches the client */
  while (out->len > 0) {
    ssize_t n = send(fd, out->data + out->off, out->len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
      dbg("conn %d: write to %s: %s", c->id, d == C2S ? "server" : "client",
          strerror(errno));
      if (d == C2S)
        c->failed = 1;
      return -1;
    }
    buf_consume(out, (size_t)n);
  }
  return 0;
}

/* After any progress: close the connection if it is finished.  Returns 1 if
 * @c was freed. */
static int settle(conn *c) {
  if (c->cutting && c->out[C2S].len == 0 && c->connected) {
    conn_close(c, 1, "cut");
    return 1;
  }
  for (int d = 0; d < 2; d++) {
    /* a source said EOF: once its data is delivered, end the connection */
    if (c->eof[d] && c->out[d].len == 0 && !c->cutting) {
      conn_close(c, 0, d == C2S ? "client-eof" : "server-eof");
      return 1;
    }
  }
  return 0;
}

/* Read from the source of direction @d; returns 1 if @c was freed. */
static int on_readable(conn *c, int d) {
  unsigned char tmp[READ_CHUNK];
  for (;;) {
    ssize_t n = recv(SRC(c, d), tmp, sizeof tmp, 0);
    if (n > 0) {
      buf_append(&c->in[d], tmp, (size_t)n);
      if ((size_t)n < sizeof tmp)
        break;
      if (c->in[d].len + c->out[d].len > HIGH_WATER)
        break;
      continue;
    }
    if (n == 0) {
      c->eof[d] = 1;
      break;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      break;
    dbg("conn %d: read from %s: %s", c->id, d == C2S ? "client" : "server",
        strerror(errno));
    if (d == S2C)
      c->failed = 1;
    conn_close(c, 1, d == C2S ? "client-error" : "server-error");
    return 1;
  }
  frame(c, d);
  if (flush(c, d) < 0) {
    conn_close(c, 1, "write-error");
    return 1;
  }
  return settle(c);
}

static int on_writable(conn *c, int d) {
  if (flush(c, d) < 0) {
    conn_close(c, 1, "write-error");
    return 1;
  }
  return settle(c);
}

static int on_connected(conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    err = errno;
  if (err != 0) {
    dbg("conn %d: connect: %s", c->id, strerror(err));
    conn_close(c, 1, "connect-failed");
    return 1;
  }
  c->connected = 1;
  return on_writable(c, C2S);
}

/* ------------------------------------------------------------ commands */

static volatile sig_atomic_t quit_flag;

static void command(char *line) {
  char *s = line, *e;
  while (*s == ' ' || *s == '\t')
    s++;
  e = s + strlen(s);
  while (e > s &&
         (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
    *--e = '\0';
  if (*s == '\0' || *s == '#')
    return;
  dbg("command: %s", s);
  size_t kw = strncmp(s, "cut-after-request", 17) == 0         ? 17
              : strncmp(s, "blackhole-after-request", 23) == 0 ? 23
                                                               : 0;
  if (kw && (s[kw] == ' ' || s[kw] == '\t' || s[kw] == '\0')) {
    char list[512], path[512] = "", *save = NULL, *tok;
    int types[MAX_ARMED], n = 0;
    const char *arg = s + kw;
    while (*arg == ' ' || *arg == '\t')
      arg++;
    snprintf(list, sizeof list, "%s", arg);
    for (tok = strtok_r(list, ", \t", &save); tok;
         tok = strtok_r(NULL, ", \t", &save)) {
      if (tok[0] == '/' && !path[0]) {
        snprintf(path, sizeof path, "%s", tok);
        continue;
      }
      if (n == MAX_ARMED || op_parse(tok, &types[n]) < 0) {
        warnx("bad request type '%s' in: %s", tok, s);
        event("error bad request type '%s' in: %s", tok, s);
        return;
      }
      n++;
    }
    if (n == 0) {
      warnx("no request type in: %s", s);
      event("error no request type in: %s", s);
      return;
    }
    memcpy(armed_types, types, sizeof types[0] * (size_t)n);
    n_armed = n;
    armed_blackhole = kw == 23;
    snprintf(armed_path, sizeof armed_path, "%s", path);
  } else if (strcmp(s, "cut-all") == 0) {
    close_all(1, "cut-all");
  } else if (strcmp(s, "refuse") == 0) {
    refusing = 1;
  } else if (strcmp(s, "accept") == 0) {
    refusing = 0;
  } else if (strcmp(s, "blackhole") == 0) {
    blackholed = 1;
  } else if (strcmp(s, "flow") == 0) {
    blackholed = 0;
  } else if (strcmp(s, "quit") == 0) {
    quit_flag = 1;
  } else {
    warnx("unknown command: %s", s);
    event("error unknown command: %s", s);
    return;
  }
  event("done %s", s);
}

/* Run every complete line of @b (and, if @all, a last unterminated one). */
static void run_lines(buf *b, int all) {
  while (b->len > 0) {
    unsigned char *p = b->data + b->off;
    unsigned char *nl = memchr(p, '\n', b->len);
    size_t n;
    if (!nl && !all)
      return;
    n = nl ? (size_t)(nl - p) : b->len;
    char *line = malloc(n + 1);
    if (!line)
      die("out of memory");
    memcpy(line, p, n);
    line[n] = '\0';
    buf_consume(b, nl ? n + 1 : n);
    command(line);
    free(line);
  }
}

static void poll_control_file(const char *path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat st;
  buf b = {0};
  if (fd < 0)
    return;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    unsigned char tmp[4096];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0)
      buf_append(&b, tmp, (size_t)n);
    if (b.len > 0 && ftruncate(fd, 0) < 0)
      warnx("truncate %s: %s", path, strerror(errno));
  }
  close(fd);
  run_lines(&b, 1);
  buf_free(&b);
}

/* ------------------------------------------------------------ main */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig) {
  int saved = errno;
  unsigned char c = (unsigned char)sig;
  quit_flag = 1;
  if (write(sig_pipe[1], &c, 1) < 0) {
    /* the pipe is full: a wake-up is already pending */
  }
  errno = saved;
}

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s --listen PORT|0 --target HOST:PORT [--port-file FILE]\n"
          "       [--control-file FILE] [--event-file FILE] [--quit-on-eof]\n"
          "A fault-injecting proxy for ZooKeeper client connections.\n"
          "Commands (control file, or stdin lines): cut-after-request "
          "TYPE[,TYPE...] [/PATH],\n"
          "blackhole-after-request TYPE[,TYPE...] [/PATH],\n"
          "cut-all, refuse, accept, blackhole, flow, quit.\n"
          "ZKPROXY_DEBUG=1 logs every frame to stderr.\n",
          prog);
}

static void bad_usage(const char *what, const char *arg) {
  fprintf(stderr, "%s: %s '%s'\n", prog, what, arg);
  usage(stderr);
  exit(64);
}

static int parse_port(const char *s, int allow_zero) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v < (allow_zero ? 0 : 1) ||
      v > 65535)
    return -1;
  return (int)v;
}

static void resolve_target(const char *spec) {
  char host[256];
  const char *colon = strrchr(spec, ':');
  struct addrinfo hints, *res = NULL;
  int rc;
  size_t hl;
  if (!colon || colon == spec || parse_port(colon + 1, 0) < 0)
    bad_usage("bad --target (want HOST:PORT):", spec);
  hl = (size_t)(colon - spec);
  if (spec[0] == '[' && colon[-1] == ']') { /* [v6addr]:port */
    spec++;
    hl -= 2;
  }
  if (hl >= sizeof host)
    bad_usage("bad --target (host too long):", spec);
  memcpy(host, spec, hl);
  host[hl] = '\0';
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  rc = getaddrinfo(host, colon + 1, &hints, &res);
  if (rc != 0 || !res)
    die("cannot resolve %s: %s", host, gai_strerror(rc));
  memcpy(&target_addr, res->ai_addr, res->ai_addrlen);
  target_len = res->ai_addrlen;
  freeaddrinfo(res);
}

static void write_port_file(const char *path, int port) {
  size_t n = strlen(path) + 5;
  char *tmp = malloc(n);
  FILE *f;
  if (!tmp)
    die("out of memory");
  snprintf(tmp, n, "%s.tmp", path);
  f = fopen(tmp, "w");
  if (!f)
    die("%s: %s", tmp, strerror(errno));
  fprintf(f, "%d\n", port);
  if (fclose(f) != 0 || rename(tmp, path) != 0)
    die("%s: %s", path, strerror(errno));
  free(tmp);
}

static void accept_all(int lfd) {
  for (;;) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
        warnx("accept: %s", strerror(errno));
      return;
    }
    if (refusing) {
      close_rst(fd);
      dbg("refused a connection");
      event("refused");
      continue;
    }
    if (set_nonblock(fd) < 0) {
      close_rst(fd);
      continue;
    }
    conn_new(fd);
  }
}

int main(int argc, char **argv) {
  const char *port_file = NULL, *control_file = NULL, *event_file = NULL;
  const char *target = NULL, *e;
  int listen_port = -1, quit_on_eof = 0, stdin_open;
  buf stdin_buf = {0};
  struct pollfd *pfd = NULL;
  conn **pconn = NULL;
  size_t pcap = 0;
  int64_t next_control = 0;

  if (argc > 0 && argv[0][0]) {
    const char *slash = strrchr(argv[0], '/');
    prog = slash ? slash + 1 : argv[0];
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--quit-on-eof") == 0) {
      quit_on_eof = 1;
      continue;
    }
    if (strcmp(a, "--listen") && strcmp(a, "--target") &&
        strcmp(a, "--port-file") && strcmp(a, "--control-file") &&
        strcmp(a, "--event-file"))
      bad_usage("unknown argument", a);
    if (i + 1 >= argc)
      bad_usage("missing the value of", a);
    const char *v = argv[++i];
    if (strcmp(a, "--listen") == 0) {
      listen_port = parse_port(v, 1);
      if (listen_port < 0)
        bad_usage("bad --listen port", v);
    } else if (strcmp(a, "--target") == 0) {
      target = v;
    } else if (strcmp(a, "--port-file") == 0) {
      port_file = v;
    } else if (strcmp(a, "--control-file") == 0) {
      control_file = v;
    } else {
      event_file = v;
    }
  }
  if (listen_port < 0 || !target)
    bad_usage("required:", "--listen and --target");
  e = getenv("ZKPROXY_DEBUG");
  debug = e && *e && strcmp(e, "0") != 0;
  resolve_target(target);

  if (event_file) {
    events = fopen(event_file, "a");
    if (!events)
      die("%s: %s", event_file, strerror(errno));
  }

  /* signals: a self-pipe wakes poll() */
  if (pipe(sig_pipe) < 0 || set_nonblock(sig_pipe[0]) < 0 ||
      set_nonblock(sig_pipe[1]) < 0)
    die("pipe: %s", strerror(errno));
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (lfd < 0)
    die("socket: %s", strerror(errno));
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = htons((uint16_t)listen_port);
  if (bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0)
    die("bind 127.0.0.1:%d: %s", listen_port, strerror(errno));
  if (listen(lfd, 128) < 0 || set_nonblock(lfd) < 0)
    die("listen: %s", strerror(errno));
  socklen_t sl = sizeof sin;
  if (getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0)
    die("getsockname: %s", strerror(errno));
  int port = ntohs(sin.sin_port);
  if (port_file)
    write_port_file(port_file, port);
  printf("%d\n", port);
  fflush(stdout);
  dbg("listening on 127.0.0.1:%d, target %s", port, target);

  stdin_open = fcntl(0, F_GETFL) >= 0 && !isatty(0);

  while (!quit_flag) {
    size_t n = 0, need = 3 + n_drains;
    for (conn *c = conns; c; c = c->next)
      need += 2;
    if (need > pcap) {
      pcap = need * 2;
      pfd = realloc(pfd, pcap * sizeof *pfd);
      pconn = realloc(pconn, pcap * sizeof *pconn);
      if (!pfd || !pconn)
        die("out of memory");
    }
    pfd[n] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
    pconn[n++] = NULL;
    pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
    pconn[n++] = NULL;
    if (stdin_open) {
      pfd[n] = (struct pollfd){.fd = 0, .events = POLLIN};
      pconn[n++] = NULL;
    }
    size_t first_conn = n;
    for (conn *c = conns; c; c = c->next) {
      short ev[2] = {0, 0}; /* client socket, server socket */
      for (int d = 0; d < 2; d++) {
        int src = d == C2S ? 0 : 1;
        if (!c->eof[d] && !c->cutting &&
            c->in[d].len + c->out[d].len <= HIGH_WATER)
          ev[src] |= POLLIN;
        if (c->out[d].len > 0 && !(d == S2C && c->cutting))
          ev[1 - src] |= POLLOUT;
      }
      if (!c->connected)
        ev[1] = POLLOUT;
      for (int k = 0; k < 2; k++) {
        pfd[n] = (struct pollfd){.fd = c->fd[k], .events = ev[k]};
        pconn[n++] = c;
      }
    }
    size_t first_drain = n;
    int64_t wake = control_file ? next_control : INT64_MAX;
    for (size_t i = 0; i < n_drains; i++) {
      pfd[n] = (struct pollfd){.fd = drains[i].fd, .events = POLLIN};
      pconn[n++] = NULL;
      if (drains[i].deadline < wake)
        wake = drains[i].deadline;
    }
    int timeout = -1;
    if (wake != INT64_MAX) {
      int64_t left = wake - now_ms();
      timeout = left < 0 ? 0 : left > 60000 ? 60000 : (int)left;
    }
    int rc = poll(pfd, (nfds_t)n, timeout);
    if (rc < 0 && errno != EINTR)
      die("poll: %s", strerror(errno));
    if (quit_flag)
      break;
    if (rc > 0) {
      if (pfd[0].revents) {
        unsigned char drainbuf[64];
        while (read(sig_pipe[0], drainbuf, sizeof drainbuf) > 0)
          ;
      }
      if (stdin_open && pfd[2].revents) {
        unsigned char tmp[4096];
        ssize_t r = read(0, tmp, sizeof tmp);
        if (r > 0) {
          buf_append(&stdin_buf, tmp, (size_t)r);
          run_lines(&stdin_buf, 0);
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          run_lines(&stdin_buf, 1);
          stdin_open = 0;
          dbg("stdin closed");
          if (quit_on_eof)
            quit_flag = 1;
        }
      }
      /* connections: a command may have closed some already, and handling
       * one never frees another, so check membership first */
      for (size_t i = first_conn; i + 1 < first_drain && !quit_flag; i += 2) {
        conn *c = pconn[i], *x;
        short rc_cli = pfd[i].revents, rc_srv = pfd[i + 1].revents;
        for (x = conns; x && x != c; x = x->next)
          ;
        if (!x)
          continue;
        if (!c->connected) {
          if (rc_srv & (POLLOUT | POLLERR | POLLHUP)) {
            if (on_connected(c))
              continue;
          }
          if (!c->connected) {
            if ((rc_cli & (POLLIN | POLLHUP | POLLERR)) && on_readable(c, C2S))
              continue;
            continue;
          }
          rc_srv &= ~POLLOUT;
        }
        if ((rc_cli & POLLOUT) && on_writable(c, S2C))
          continue;
        if ((rc_srv & POLLOUT) && on_writable(c, C2S))
          continue;
        if (c->cutting)
          continue; /* nothing more is read: the connection is going */
        if (!c->eof[C2S] && (rc_cli & (POLLIN | POLLHUP | POLLERR)) &&
            on_readable(c, C2S))
          continue;
        if (!c->eof[S2C] && (rc_srv & (POLLIN | POLLHUP | POLLERR)) &&
            on_readable(c, S2C))
          continue;
      }
      /* drains: discard what the server still sends, close at its EOF.
       * Closing one moves the last entry into its slot, so go backwards
       * over the entries that were polled (new ones are appended). */
      for (size_t k = n - first_drain; k-- > 0;) {
        if (!pfd[first_drain + k].revents)
          continue;
        unsigned char tmp[4096];
        ssize_t r;
        while ((r = recv(drains[k].fd, tmp, sizeof tmp, 0)) > 0)
          ;
        if (r == 0 ||
            (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
          drain_remove(k);
      }
      if (!quit_flag && (pfd[1].revents & POLLIN))
        accept_all(lfd);
    }
    for (size_t k = n_drains; k-- > 0;)
      if (now_ms() >= drains[k].deadline)
        drain_remove(k);
    if (control_file && now_ms() >= next_control) {
      poll_control_file(control_file);
      next_control = now_ms() + CONTROL_POLL_MS;
    }
  }

  dbg("exiting");
  close_all(0, "exit");
  while (n_drains > 0)
    drain_remove(n_drains - 1);
  free(drains);
  close(lfd);
  close(sig_pipe[0]);
  close(sig_pipe[1]);
  buf_free(&stdin_buf);
  free(pfd);
  free(pconn);
  if (events)
    fclose(events);
  return 0;
}
