/* The log hook. The ZooKeeper client's logging is process-wide, so the
 * hook is the one piece of process-global state zkr keeps; it is guarded
 * by a mutex so that it can be changed while sessions log. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zkr-private.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static zkr_log_fn log_fn;
static void *log_ud;
static zkr_log_level log_max = ZKR_LOG_INFO;

int zkr_set_log_hook(zkr_log_fn fn, zkr_log_level max_level, void *user_data) {
  if (fn && (max_level < ZKR_LOG_ERROR || max_level > ZKR_LOG_DEBUG))
    return ZKR_EINVAL;
  pthread_mutex_lock(&log_mu);
  log_fn = fn;
  log_ud = user_data;
  log_max = fn ? max_level : ZKR_LOG_ERROR;
  /* The client's own level is process-wide too: let it format only what
   * the hook wants (ZOO_LOG_LEVEL_* share zkr's numbering). */
  zoo_set_debug_level((ZooLogLevel)log_max);
  pthread_mutex_unlock(&log_mu);
  return ZKR_OK;
}

void zkr_log_stderr(zkr_log_level level, const char *msg, void *user_data) {
  static const char *names[] = {"?", "error", "warn", "info", "debug"};
  (void)user_data;
  fprintf(stderr, "zkr: %s: %s\n",
          names[level >= ZKR_LOG_ERROR && level <= ZKR_LOG_DEBUG ? level : 0],
          msg);
}

static void emit(zkr_log_level level, const char *msg) {
  pthread_mutex_lock(&log_mu);
  zkr_log_fn fn = log_fn;
  void *ud = log_ud;
  int pass = fn != NULL && level <= log_max;
  /* The hook runs under the lock so that after zkr_set_log_hook(NULL, ...)
   * returns, the old hook is never called again. */
  if (pass)
    fn(level, msg, ud);
  pthread_mutex_unlock(&log_mu);
}

void zkr__log(zkr_log_level level, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  emit(level, buf);
}

void zkr__zk_log_cb(const char *message) {
  /* The client formats lines as "...:ZOO_LEVEL@function@line: text". */
  zkr_log_level level = ZKR_LOG_DEBUG;
  if (strstr(message, "ZOO_ERROR@"))
    level = ZKR_LOG_ERROR;
  else if (strstr(message, "ZOO_WARN@"))
    level = ZKR_LOG_WARN;
  else if (strstr(message, "ZOO_INFO@"))
    level = ZKR_LOG_INFO;
  char buf[1024];
  size_t n = strlen(message);
  if (n >= sizeof buf)
    n = sizeof buf - 1;
  memcpy(buf, message, n);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  buf[n] = '\0';
  emit(level, buf);
}

int zkr__reserved_check(const unsigned char *tail, size_t n, const char *type) {
  for (size_t i = 0; i < n; i++)
    if (tail[i]) {
      zkr__log(ZKR_LOG_ERROR,
               "%s: reserved_[%zu] is not zero (a field of a newer zkr, or "
               "an uninitialised struct: initialise it with {0} or "
               "designated initializers)",
               type, i);
      return ZKR_EINVAL;
    }
  return ZKR_OK;
}
