/* session-info: connect to ZooKeeper and print what the session manager
 * negotiated. Usage: session-info [HOSTS] (default $ZKR_SERVERS, else
 * 127.0.0.1:2181). */
#include <stdio.h>
#include <stdlib.h>

#include <zkr/zkr.h>

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_SERVERS");
  if (!hosts)
    hosts = "127.0.0.1:2181";
  zkr_session *s = NULL;
  int rc = zkr_session_new(&s, hosts, NULL);
  if (rc != ZKR_OK) {
    fprintf(stderr, "session-info: %s: %s\n", hosts, zkr_strerror(rc));
    return 1;
  }
  printf("zkr %s: session 0x%llx on %s, timeout %d ms, state %s\n",
         zkr_version(), (unsigned long long)zkr_session_id(s), hosts,
         zkr_session_timeout(s),
         zkr_session_state_name(zkr_session_state_get(s)));
  zkr_session_close(s);
  return 0;
}
