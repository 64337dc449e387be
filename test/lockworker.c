/*
 * lockworker: one contending process for the multi-process mutex tests.
 *
 *   lockworker --servers HOSTS --path PATH [options]
 *     --iterations N      acquire/release N times (default 1)
 *     --hold-ms MS        hold each time for MS (default 10)
 *     --timeout-ms MS     acquire timeout (default -1: no limit)
 *     --session-ms MS     session timeout (default 10000)
 *     --log FILE          append "ACQ pid seq token t_ms" / "REL ..." lines
 *     --resource FILE     the shared resource: while holding, create
 *                         FILE.holder with O_EXCL (an existing one means
 *                         two holders at once: exit 3), remove it before
 *                         releasing
 *     --hold-forever      acquire once, print "HELD <node> <token>" on
 *                         stdout, then keep checking zkr_mutex_is_held()
 *                         every 10 ms: while held, append "TOUCH pid t_ms"
 *                         to --log; when not held, print "LOST" and exit 75
 *     --id TEXT           contender id stored in the node
 * Exit: 0 done, 1 acquire failed, 3 overlap seen, 75 lock lost, 64 usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void usage(void) {
  fprintf(stderr, "usage: lockworker --servers HOSTS --path PATH [--iterations"
                  " N] [--hold-ms MS] [--timeout-ms MS] [--session-ms MS] "
                  "[--log FILE] [--resource FILE] [--hold-forever] "
                  "[--id TEXT] [--recipe mutex]\n");
  exit(64);
}

int main(int argc, char **argv) {
  const char *servers = NULL, *path = NULL, *logf = NULL, *res = NULL,
             *id = NULL;
  long iterations = 1, hold_ms = 10, timeout_ms = -1, session_ms = 10000;
  int forever = 0;
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
    else if (strcmp(a, "--recipe") == 0) {
      /* the recipe this worker contends with: the read-write lock, the
       * semaphore and the election add theirs here */
      if (strcmp(v, "mutex") != 0) {
        fprintf(stderr, "lockworker: unknown recipe '%s' (known: mutex)\n", v);
        exit(64);
      }
    } else
      usage();
  }
  if (!servers || !path)
    usage();
  setvbuf(stdout, NULL, _IOLBF, 0);
  zkr_session_opts *so = NULL;
  zkr_session_opts_new(&so);
  zkr_session_opts_set_session_timeout(so, (int)session_ms);
  zkr_session_opts_set_connect_timeout(so, 20000);
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, servers, so);
  zkr_session_opts_free(so);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker: connect: %s\n", zkr_strerror(rc));
    return 1;
  }
  zkr_mutex_opts *mo = NULL;
  zkr_mutex_opts_new(&mo);
  if (id)
    zkr_mutex_opts_set_id(mo, id);
  zkr_mutex *m = NULL;
  rc = zkr_mutex_new(&m, s, path, mo);
  zkr_mutex_opts_free(mo);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lockworker: %s\n", zkr_strerror(rc));
    return 1;
  }
  char holder[4096] = "";
  if (res)
    snprintf(holder, sizeof holder, "%s.holder", res);
  char line[600], node[1200];
  int status = 0;
  for (long it = 0; it < (forever ? 1 : iterations); it++) {
    rc = zkr_mutex_acquire(m, timeout_ms);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker %ld: acquire: %s\n", (long)getpid(),
              zkr_strerror(rc));
      status = 1;
      break;
    }
    zkr_mutex_node(m, node, sizeof node);
    int64_t token = zkr_mutex_fencing_token(m);
    snprintf(line, sizeof line, "ACQ %ld %d %lld %lld\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms());
    append(logf, line);
    if (forever) {
      printf("HELD %s %lld\n", node, (long long)token);
      for (;;) {
        if (!zkr_mutex_is_held(m)) {
          printf("LOST\n");
          snprintf(line, sizeof line, "LOST %ld %lld\n", (long)getpid(),
                   (long long)now_ms());
          append(logf, line);
          return 75;
        }
        snprintf(line, sizeof line, "TOUCH %ld %lld\n", (long)getpid(),
                 (long long)now_ms());
        append(logf, line);
        usleep(10000);
      }
    }
    if (res) {
      int fd = open(holder, O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd < 0) {
        fprintf(stderr, "lockworker %ld: OVERLAP: %s exists\n", (long)getpid(),
                holder);
        status = 3;
        break;
      }
      close(fd);
    }
    usleep((useconds_t)hold_ms * 1000);
    if (res)
      unlink(holder);
    snprintf(line, sizeof line, "REL %ld %d %lld %lld\n", (long)getpid(),
             seq_of(node), (long long)token, (long long)now_ms());
    append(logf, line);
    rc = zkr_mutex_release(m);
    if (rc != ZKR_OK) {
      fprintf(stderr, "lockworker: release: %s\n", zkr_strerror(rc));
      status = 1;
      break;
    }
  }
  zkr_mutex_free(m);
  zkr_session_close(s);
  return status;
}
