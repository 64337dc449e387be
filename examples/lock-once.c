/* lock-once: take a zkr lock, do a guarded write under it, release.
 * Usage: lock-once [HOSTS [LOCK-PATH]] (defaults: $ZKR_SERVERS or
 * 127.0.0.1:2181, and /zkr-examples/lock-once). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <zkr/zkr.h>

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  const char *path = argc > 2 ? argv[2] : "/zkr-examples/lock-once";
  if (!hosts)
    hosts = "127.0.0.1:2181";
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, hosts, NULL);
  if (rc != ZKR_OK) {
    fprintf(stderr, "lock-once: %s: %s\n", hosts, zkr_strerror(rc));
    return 1;
  }
  zkr_mutex *m = NULL;
  rc = zkr_mutex_new(&m, s, path,
                     &(zkr_mutex_options){.id = "lock-once example"});
  if (rc == ZKR_OK)
    rc = zkr_mutex_acquire(m, 10000); /* wait at most 10 s */
  if (rc != ZKR_OK) {
    fprintf(stderr, "lock-once: %s: %s\n", path, zkr_strerror(rc));
    zkr_mutex_free(m);
    zkr_session_close(s);
    return 1;
  }
  zkr_hold *h = zkr_mutex_hold(m);
  char node[1100];
  zkr_hold_node(h, node, sizeof node);
  printf("holding %s as %s\n  fencing token %lld, session 0x%llx\n", path, node,
         (long long)zkr_hold_token(h), (unsigned long long)zkr_session_id(s));

  /* The work under the lock: here, a write that ZooKeeper applies only
   * while our lock node exists. */
  rc = zkr_hold_guarded_set(h, path, "done", 4, -1, 5000);
  printf("  guarded write: %s\n", zkr_strerror(rc));

  rc = zkr_mutex_release(m);
  printf("released: %s\n", zkr_strerror(rc));
  zkr_mutex_free(m);
  zkr_session_close(s);
  return 0;
}
