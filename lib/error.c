/* Error names and messages, generated from ZKR_ERRNO_MAP. */
#include "config.h"

#include "zkr-private.h"

const char *zkr_strerror(int code) {
  switch (code) {
  case ZKR_OK:
    return "success";
#define XX(name, val, msg)                                                     \
  case ZKR_##name:                                                             \
    return msg;
    ZKR_ERRNO_MAP(XX)
#undef XX
  default:
    break;
  }
  if (code < 0 && code >= -127)
    return zerror(code);
  return "unknown error";
}

const char *zkr_err_name(int code) {
  switch (code) {
  case ZKR_OK:
    return "ZKR_OK";
#define XX(name, val, msg)                                                     \
  case ZKR_##name:                                                             \
    return "ZKR_" #name;
    ZKR_ERRNO_MAP(XX)
#undef XX
  default:
    break;
  }
  if (code < 0 && code >= -127)
    return "ZOO_ERROR";
  return "UNKNOWN";
}

int zkr__from_zk(int zrc) {
  switch (zrc) {
  case ZOK:
    return ZKR_OK;
  case ZCONNECTIONLOSS:
  case ZOPERATIONTIMEOUT:
    return ZKR_ECONNLOSS;
  case ZSESSIONEXPIRED:
  case ZSESSIONMOVED:
    return ZKR_ESESSIONLOST;
  case ZCLOSING:
  case ZINVALIDSTATE:
    return ZKR_ESESSIONLOST;
  case ZNONODE:
    return ZKR_ENONODE;
  case ZNODEEXISTS:
    return ZKR_EEXISTS;
  case ZNOTEMPTY:
    return ZKR_ENOTEMPTY;
  case ZNOAUTH:
    return ZKR_ENOAUTH;
  case ZAUTHFAILED:
    return ZKR_EAUTH;
  case ZBADVERSION:
    return ZKR_EBADVERSION;
  case ZBADARGUMENTS:
    return ZKR_EINVAL;
  case ZSYSTEMERROR:
    return ZKR_ESYS;
  case ZNOCHILDRENFOREPHEMERALS:
    return ZKR_EEPHEMERAL;
  default:
    return ZKR_EZK;
  }
}

/* The retry policy of the whole library: only a lost connection or an
 * operation time-out may be retried (the request may not have been
 * applied); the back-off doubles from 10 ms up to 1 s. */
int zkr__zk_class(int zrc) {
  switch (zrc) {
  case ZCONNECTIONLOSS:
  case ZOPERATIONTIMEOUT:
    return ZKR__ZC_RETRY;
  case ZSESSIONEXPIRED:
  case ZCLOSING:
  case ZINVALIDSTATE:
  case ZSESSIONMOVED:
    return ZKR__ZC_WAIT;
  default:
    return ZKR__ZC_FINAL;
  }
}

int64_t zkr__backoff_ms(int attempt) {
  int64_t ms = 10;
  for (int i = 0; i < attempt && ms < 1000; i++)
    ms *= 2;
  return ms > 1000 ? 1000 : ms;
}
