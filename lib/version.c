/* Run-time version. */
#include "config.h"

#include "zkr-private.h"

const char *zkr_version(void) {
  return ZKR_VERSION;
}

unsigned zkr_version_num(void) {
  return ZKR_VERSION_NUM;
}
