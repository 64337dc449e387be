/*
 * semworker: one semaphore acquisition from the shell, for the interop
 * tests (tools/zkr-lock has no semaphore option yet).
 *
 *   semworker HOSTS PATH LIMIT N TIMEOUT_MS [HOLD-FILE]
 *
 * Takes N leases of the semaphore at PATH (limit LIMIT) within TIMEOUT_MS
 * (0: try once, negative: no deadline). On success prints "HELD" and the
 * lease nodes on one line, keeps them until HOLD-FILE exists (or releases
 * them at once without one) and exits 0. On failure prints "ERR" and the
 * error's name (ZKR_EFOREIGN, ZKR_ETIMEDOUT, ...) and exits 1. 64: usage.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <zkr/zkr.h>

int main(int argc, char **argv) {
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: semworker HOSTS PATH LIMIT N TIMEOUT_MS "
                    "[HOLD-FILE]\n");
    return 64;
  }
  char *e1 = NULL, *e2 = NULL;
  long limit_l = strtol(argv[3], &e1, 10), n_l = strtol(argv[4], &e2, 10);
  if (*e1 || *e2 || e1 == argv[3] || e2 == argv[4] || limit_l < 0 ||
      limit_l > 1000000) {
    fprintf(stderr, "semworker: LIMIT and N are numbers\n");
    return 64;
  }
  int limit = (int)limit_l, n = (int)n_l;
  long long timeout = atoll(argv[5]);
  if (n < 1 || n > 16) {
    fprintf(stderr, "semworker: N must be 1..16\n");
    return 64;
  }
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, argv[1], NULL);
  if (rc != ZKR_OK) {
    printf("ERR %s\n", zkr_err_name(rc));
    return 1;
  }
  zkr_semaphore *sem = NULL;
  rc = zkr_semaphore_new(&sem, s, argv[2], limit, NULL);
  zkr_lease *l[16];
  if (rc == ZKR_OK)
    rc = zkr_semaphore_acquire(sem, n, timeout, l);
  if (rc != ZKR_OK) {
    printf("ERR %s\n", zkr_err_name(rc));
  } else {
    printf("HELD");
    for (int i = 0; i < n; i++) {
      char node[600];
      if (zkr_hold_node(zkr_lease_hold(l[i]), node, sizeof node) == ZKR_OK)
        printf(" %s", node);
    }
    printf("\n");
    fflush(stdout);
    while (argc == 7 && access(argv[6], F_OK) != 0)
      usleep(20000);
    for (int i = 0; i < n; i++)
      zkr_lease_free(l[i]); /* (releases it) */
  }
  zkr_semaphore_free(sem);
  zkr_session_close(s);
  return rc == ZKR_OK ? 0 : 1;
}
