/* Error table: every code named, distinct, in range; ZooKeeper codes
 * pass through to zerror(); the mapping from ZooKeeper codes. */
#include "config.h"

#include <string.h>

#include "tap.h"
#include "zkr-private.h"

int main(void) {
  tap_init(10);
  static const int codes[] = {
#define XX(name, val, msg) ZKR_##name,
      ZKR_ERRNO_MAP(XX)
#undef XX
  };
  int n = (int)(sizeof codes / sizeof codes[0]);
  int all_ok = 1;
  for (int i = 0; i < n; i++) {
    if (codes[i] > -500 || codes[i] < -599)
      all_ok = 0;
    if (strcmp(zkr_strerror(codes[i]), "unknown error") == 0)
      all_ok = 0;
    if (strncmp(zkr_err_name(codes[i]), "ZKR_E", 5) != 0)
      all_ok = 0;
    for (int j = 0; j < i; j++)
      if (codes[i] == codes[j])
        all_ok = 0;
  }
  ok(all_ok, "%d zkr codes are distinct, in [-599,-500], named", n);
  ok(strcmp(zkr_strerror(ZKR_OK), "success") == 0, "ZKR_OK is success");
  is(strcmp(zkr_err_name(ZKR_ETIMEDOUT), "ZKR_ETIMEDOUT"), 0,
     "zkr_err_name(ZKR_ETIMEDOUT)");
  ok(strcmp(zkr_strerror(ZNONODE), zerror(ZNONODE)) == 0,
     "a ZooKeeper code is named by zerror(): %s", zkr_strerror(ZNONODE));
  ok(strcmp(zkr_err_name(ZCONNECTIONLOSS), "ZOO_ERROR") == 0,
     "a ZooKeeper code's name is ZOO_ERROR");
  ok(strcmp(zkr_strerror(-1000), "unknown error") == 0, "unknown code");
  ok(strcmp(zkr_strerror(42), "unknown error") == 0, "positive code");
  is(zkr__from_zk(ZOK), ZKR_OK, "ZOK maps to ZKR_OK");
  is(zkr__from_zk(ZCONNECTIONLOSS), ZKR_ECONNLOSS, "connection loss");
  is(zkr__from_zk(ZOPERATIONTIMEOUT), ZKR_ECONNLOSS, "operation timeout");
  is(zkr__from_zk(ZSESSIONEXPIRED), ZKR_ESESSIONLOST, "session expired");
  is(zkr__from_zk(ZNONODE), ZKR_ENONODE, "no node");
  is(zkr__from_zk(ZNODEEXISTS), ZKR_EEXISTS, "node exists");
  is(zkr__from_zk(ZNOAUTH), ZKR_ENOAUTH, "no auth");
  is(zkr__from_zk(ZBADVERSION), ZKR_EBADVERSION, "bad version");
  is(zkr__from_zk(ZNOCHILDRENFOREPHEMERALS), ZKR_EEPHEMERAL,
     "no children for ephemerals");
  is(zkr__from_zk(ZUNIMPLEMENTED), ZKR_EZK, "anything else is ZKR_EZK");
  ok(zkr__retryable(ZCONNECTIONLOSS) && zkr__retryable(ZOPERATIONTIMEOUT) &&
         !zkr__retryable(ZNONODE) && !zkr__retryable(ZSESSIONEXPIRED),
     "only connection loss and time-out are retried");
  int mono = 1;
  for (int i = 1; i < 20; i++)
    if (zkr__backoff_ms(i) < zkr__backoff_ms(i - 1) ||
        zkr__backoff_ms(i) > 1000)
      mono = 0;
  ok(mono && zkr__backoff_ms(0) == 10 && zkr__backoff_ms(30) == 1000,
     "back-off grows from 10 ms and is capped at 1 s");
  ok(strcmp(zkr_version(), ZKR_VERSION) == 0, "zkr_version() %s",
     zkr_version());
  is(zkr_version_num(), ZKR_VERSION_NUM, "zkr_version_num()");
  ok(zkr_set_log_hook(zkr_log_stderr, 0, NULL) == ZKR_EINVAL,
     "log level 0 refused");
  ok(zkr_set_log_hook(zkr_log_stderr, 9, NULL) == ZKR_EINVAL,
     "log level 9 refused");
  ok(zkr_set_log_hook(NULL, 0, NULL) == ZKR_OK, "level ignored without a hook");
  ok(zkr_set_log_hook(NULL, ZKR_LOG_INFO, NULL) == ZKR_OK, "quiet hook");
  return tap_done();
}
