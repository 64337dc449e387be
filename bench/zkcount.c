/* zkcount - a counting TCP relay for ZooKeeper client connections, for the
 * benchmark's herd scenario (S3): how many sessions a release wakes and how
 * many bytes the server sends for it, measured the same way for every
 * client library.
 *
 *   zkcount --target HOST:PORT --port-file FILE --stats-file FILE
 *
 * Listens on a free 127.0.0.1 port (written to --port-file) and relays each
 * accepted connection to a new connection to --target, byte for byte. It
 * follows ZooKeeper's framing (a 4-byte big-endian length, then the frame)
 * in both directions without changing anything: the first frame each way
 * is the connect request/response; after it a client frame starts with
 * (int32 xid, int32 type) and a server frame with (int32 xid, int64 zxid,
 * int32 err). Server frames with xid -1 are watch notifications, xid -2
 * ping replies; client frames of type 11 are pings.
 *
 * On SIGUSR1 it writes --stats-file (FILE.tmp, then rename) with cumulative
 * counters, one "key value" a line:
 *   snap        how many snapshots were written so far (this one included)
 *   conns       connections accepted so far
 *   s2c_frames  s2c_bytes   server frames and their bytes (length prefix
 *                           included), pings and connect responses excluded
 *   s2c_ping_bytes          server bytes of ping replies
 *   notifications           watch notifications relayed
 *   woken_conns  connections that got at least one notification since the
 *               previous snapshot (then forgotten: a per-window figure)
 *   c2s_frames  c2s_bytes   client requests and their bytes, pings and
 *                           connect requests excluded
 * SIGTERM or SIGINT ends it (exit 0).
 */
#define _GNU_SOURCE
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct parser {
  int first;            /* the next frame is the connect frame */
  int hlen;             /* bytes of the length prefix seen */
  unsigned char hdr[4]; /* the length prefix */
  uint32_t remain;      /* body bytes still to come */
  uint32_t len;         /* this frame's body length */
  int plen;             /* body bytes peeked */
  unsigned char peek[8];
  int done; /* this frame is classified */
};

struct conn;
struct end {
  struct conn *c;
  int fd;
  int s2c; /* 1: this end is the server side (reads server frames) */
};

struct conn {
  struct end cli, srv;
  struct parser pc, ps; /* client->server, server->client */
  int notified;         /* got a notification in this window */
  struct conn *next, *prev;
};

static volatile sig_atomic_t want_snap, want_quit;
static unsigned long long n_snap, n_conns, s2c_frames, s2c_bytes,
    s2c_ping_bytes, notifications, c2s_frames, c2s_bytes;
static struct conn *conns;
static const char *stats_file;

static void on_sig(int sig) {
  if (sig == SIGUSR1)
    want_snap = 1;
  else
    want_quit = 1;
}

static int32_t be32(const unsigned char *p) {
  return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                   (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}

static void classify(struct conn *c, struct parser *p, int s2c) {
  unsigned long long bytes = 4ULL + p->len;
  if (p->first) {
    p->first = 0;
    return;
  }
  int32_t xid = p->plen >= 4 ? be32(p->peek) : 0;
  if (s2c) {
    if (xid == -2) {
      s2c_ping_bytes += bytes;
      return;
    }
    if (xid == -1) {
      notifications++;
      c->notified = 1;
    }
    s2c_frames++;
    s2c_bytes += bytes;
  } else {
    int32_t type = p->plen >= 8 ? be32(p->peek + 4) : 0;
    if (type == 11)
      return;
    c2s_frames++;
    c2s_bytes += bytes;
  }
}

/* Follow the frames in @n bytes of one direction. */
static void parse(struct conn *c, struct parser *p, int s2c,
                  const unsigned char *b, size_t n) {
  while (n > 0) {
    if (p->hlen < 4) {
      p->hdr[p->hlen++] = *b++;
      n--;
      if (p->hlen == 4) {
        p->len = p->remain = (uint32_t)be32(p->hdr);
        p->plen = 0;
        p->done = 0;
        if (p->remain == 0) {
          classify(c, p, s2c);
          p->hlen = 0;
        }
      }
      continue;
    }
    size_t take = n < p->remain ? n : p->remain;
    for (size_t i = 0; i < take && p->plen < 8; i++)
      p->peek[p->plen++] = b[i];
    if (!p->done && (p->plen == 8 || take == p->remain)) {
      classify(c, p, s2c);
      p->done = 1;
    }
    p->remain -= (uint32_t)take;
    b += take;
    n -= take;
    if (p->remain == 0)
      p->hlen = 0;
  }
}

static void write_stats(void) {
  unsigned long long woken = 0;
  for (struct conn *c = conns; c; c = c->next) {
    woken += (unsigned long long)c->notified;
    c->notified = 0;
  }
  n_snap++;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", stats_file);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    perror("zkcount: stats file");
    return;
  }
  fprintf(f,
          "snap %llu\nconns %llu\ns2c_frames %llu\ns2c_bytes %llu\n"
          "s2c_ping_bytes %llu\nnotifications %llu\nwoken_conns %llu\n"
          "c2s_frames %llu\nc2s_bytes %llu\n",
          n_snap, n_conns, s2c_frames, s2c_bytes, s2c_ping_bytes, notifications,
          woken, c2s_frames, c2s_bytes);
  if (fclose(f) != 0 || rename(tmp, stats_file) != 0)
    perror("zkcount: stats file");
}

static void drop(int ep, struct conn *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->cli.fd, NULL);
  epoll_ctl(ep, EPOLL_CTL_DEL, c->srv.fd, NULL);
  close(c->cli.fd);
  close(c->srv.fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  free(c);
}

/* Write all of @n bytes to a blocking socket. */
static int send_all(int fd, const unsigned char *b, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

static void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int main(int argc, char **argv) {
  const char *target = NULL, *port_file = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--target"))
      target = argv[i + 1];
    else if (!strcmp(argv[i], "--port-file"))
      port_file = argv[i + 1];
    else if (!strcmp(argv[i], "--stats-file"))
      stats_file = argv[i + 1];
  }
  if (!target || !port_file || !stats_file || argc != 7) {
    fprintf(stderr, "usage: zkcount --target HOST:PORT --port-file FILE "
                    "--stats-file FILE\n");
    return 64;
  }
  struct sockaddr_in to = {.sin_family = AF_INET};
  const char *colon = strrchr(target, ':');
  char host[256];
  if (!colon || (size_t)(colon - target) >= sizeof host) {
    fprintf(stderr, "zkcount: bad --target %s\n", target);
    return 64;
  }
  memcpy(host, target, (size_t)(colon - target));
  host[colon - target] = '\0';
  char *pend;
  long port = strtol(colon + 1, &pend, 10);
  if (!colon[1] || *pend || port < 1 || port > 65535) {
    fprintf(stderr, "zkcount: bad port in --target %s\n", target);
    return 64;
  }
  to.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &to.sin_addr) != 1) {
    fprintf(stderr, "zkcount: --target needs a numeric IPv4 address\n");
    return 64;
  }

  struct sigaction sa = {.sa_handler = on_sig};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in la = {.sin_family = AF_INET};
  la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof la;
  if (bind(lfd, (struct sockaddr *)&la, sizeof la) != 0 ||
      listen(lfd, 4096) != 0 ||
      getsockname(lfd, (struct sockaddr *)&la, &sl) != 0) {
    perror("zkcount: listen");
    return 1;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
  FILE *pf = fopen(tmp, "w");
  if (!pf || fprintf(pf, "%d\n", ntohs(la.sin_port)) < 0 || fclose(pf) != 0 ||
      rename(tmp, port_file) != 0) {
    perror("zkcount: port file");
    return 1;
  }

  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  static unsigned char buf[65536];
  struct epoll_event evs[256];
  while (!want_quit) {
    if (want_snap) {
      want_snap = 0;
      write_stats();
    }
    int n = epoll_wait(ep, evs, 256, 1000);
    for (int i = 0; i < n; i++) {
      struct end *e = evs[i].data.ptr;
      if (!e) {
        int cfd;
        while ((cfd = accept4(lfd, NULL, NULL, 0)) >= 0) {
          int sfd = socket(AF_INET, SOCK_STREAM, 0);
          if (sfd < 0 || connect(sfd, (struct sockaddr *)&to, sizeof to)) {
            perror("zkcount: connect to target");
            close(cfd);
            if (sfd >= 0)
              close(sfd);
            continue;
          }
          nodelay(cfd);
          nodelay(sfd);
          struct conn *c = calloc(1, sizeof *c);
          if (!c) {
            close(cfd);
            close(sfd);
            continue;
          }
          c->cli = (struct end){c, cfd, 0};
          c->srv = (struct end){c, sfd, 1};
          c->pc.first = c->ps.first = 1;
          c->next = conns;
          if (conns)
            conns->prev = c;
          conns = c;
          n_conns++;
          struct epoll_event ce = {.events = EPOLLIN, .data.ptr = &c->cli};
          struct epoll_event se = {.events = EPOLLIN, .data.ptr = &c->srv};
          epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ce);
          epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &se);
        }
        continue;
      }
      struct conn *c = e->c;
      ssize_t r = recv(e->fd, buf, sizeof buf, MSG_DONTWAIT);
      if (r < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      int other = e->s2c ? c->cli.fd : c->srv.fd;
      if (r <= 0 || send_all(other, buf, (size_t)r) != 0) {
        /* Another event of this pair may be pending in evs: mark it. */
        for (int j = i + 1; j < n; j++) {
          struct end *o = evs[j].data.ptr;
          if (o && o->c == c)
            evs[j].data.ptr = NULL, evs[j].events = 0;
        }
        drop(ep, c);
        continue;
      }
      parse(c, e->s2c ? &c->ps : &c->pc, e->s2c, buf, (size_t)r);
    }
  }
  while (conns)
    drop(ep, conns);
  close(lfd);
  close(ep);
  return 0;
}
