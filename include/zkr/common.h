/*
 * zkr -- ZooKeeper recipes for C.
 * common.h: export macro, error codes, time values, the log hook.
 *
 * THREAD SAFETY: every function declared here is thread-safe.
 */
#ifndef ZKR_COMMON_H
#define ZKR_COMMON_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ZKR_BUILDING) && defined(__GNUC__)
#define ZKR_EXTERN __attribute__((visibility("default")))
#else
#define ZKR_EXTERN
#endif

/*
 * Error codes. Every zkr function returns ZKR_OK (0) or a negative code.
 * zkr's own codes live in [-599, -500] so they can never collide with the
 * ZooKeeper C client's ZOO_ERRORS (0 .. -127); zkr_strerror() names
 * those too, for programs that also call the ZooKeeper client directly.
 * Values are never renumbered or reused.
 *
 * XX(NAME, value, "message")
 */
#define ZKR_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, -500, "invalid argument")                                         \
  XX(ENOMEM, -501, "out of memory")                                            \
  XX(EBADPATH, -502, "invalid znode path")                                     \
  XX(EBADCONN, -503, "malformed connection string")                            \
  XX(ECONNECT, -504, "could not connect to ZooKeeper before the deadline")     \
  XX(ETIMEDOUT, -505, "deadline passed")                                       \
  XX(ECLOSED, -506, "session closed")                                          \
  XX(ESESSIONLOST, -507, "ZooKeeper session lost (expired or declared lost)")  \
  XX(ECONNLOSS, -508, "connection to ZooKeeper lost")                          \
  XX(EAUTH, -509, "authentication failed")                                     \
  XX(ENOAUTH, -510, "not authorized by the node's ACL")                        \
  XX(ENONODE, -511, "no such node")                                            \
  XX(EEXISTS, -512, "node already exists")                                     \
  XX(ENOTEMPTY, -513, "node has children")                                     \
  XX(EDEADLK, -514, "blocking call from a zkr callback thread")                \
  XX(ECANCELED, -515, "operation canceled")                                    \
  XX(EBUSY, -516, "an operation is already in progress on this object")        \
  XX(ENOTHELD, -517, "not held by the caller")                                 \
  XX(ELOCKLOST, -518, "lock lost")                                             \
  XX(ESYS, -519, "system error")                                               \
  XX(EZK, -520, "unexpected ZooKeeper error")                                  \
  XX(EWOULDBLOCK, -521, "held by another contender")                           \
  XX(EBADVERSION, -522, "node version does not match")                         \
  XX(EEPHEMERAL, -523,                                                         \
     "parent is an ephemeral node (it cannot have children)")                  \
  XX(EUPGRADE, -524,                                                           \
     "upgrade refused: this thread holds the read lock; release it first")     \
  XX(EFOREIGN, -525, "the path holds another recipe's layout")                 \
  XX(EBADCOUNT, -526, "the shared count node does not hold a 4-byte count")

/** Error codes; see zkr_strerror(). */
typedef enum zkr_error {
  ZKR_OK = 0,
#define ZKR__ERR_ENUM(name, val, msg) ZKR_##name = (val),
  ZKR_ERRNO_MAP(ZKR__ERR_ENUM)
#undef ZKR__ERR_ENUM
      ZKR__ERR_MIN = -599
} zkr_error;

/**
 * zkr_strerror - describe a zkr or ZooKeeper error code
 *
 * zkr_strerror() returns a short, human-readable message for @code, for use in
 * log lines and diagnostics.
 *
 * @code may be ZKR_OK (the message is "success"), one of the negative ZKR_E...
 * codes that every zkr function returns, or a code of the ZooKeeper C client
 * (its `ZOO_ERRORS` enumeration, 0 to -127), which is described with the
 * client's own zerror(). zkr's codes lie in [-599, -500] and therefore never
 * collide with the client's. Any other value gives "unknown error".
 *
 * The string has static storage: do not modify or free it. The function never
 * blocks.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_strerror() is thread-safe and may be called from any thread, including
 * from zkr callbacks and from a log hook.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   int connect_or_complain(const char *hosts, zkr_session **out) {
 *     int rc = zkr_session_new(out, hosts, NULL);
 *     if (rc != ZKR_OK)
 *       fprintf(stderr, "cannot connect to %s: %s (%s)\n", hosts,
 *               zkr_strerror(rc), zkr_err_name(rc));
 *     return rc;
 *   }
 *
 * See also: zkr_err_name(), zkr_session_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_strerror(int code);

/**
 * zkr_err_name - the symbolic name of a zkr error code
 *
 * zkr_err_name() returns the name of the constant that has the value @code,
 * such as "ZKR_ETIMEDOUT" for ZKR_ETIMEDOUT. It is meant for logs and test
 * output, where the name is easier to search for than the number or the
 * message.
 *
 * ZKR_OK gives "ZKR_OK". A code of the ZooKeeper C client (-1 to -127) gives
 * the generic name "ZOO_ERROR"; use zkr_strerror() to tell those apart. Any
 * other value gives "UNKNOWN".
 *
 * The string has static storage: do not modify or free it. The function never
 * blocks.
 *
 * Returns:
 * A pointer to a static, NUL-terminated string; never NULL.
 *
 * Thread safety:
 * zkr_err_name() is thread-safe and may be called from any thread, including
 * from zkr callbacks and from a log hook.
 *
 * Example:
 *   #include <stdio.h>
 *   #include <zkr/zkr.h>
 *
 *   void log_result(const char *what, int rc) {
 *     if (rc != ZKR_OK)
 *       fprintf(stderr, "%s failed: %s: %s\n", what, zkr_err_name(rc),
 *               zkr_strerror(rc));
 *   }
 *
 * See also: zkr_strerror()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN const char *zkr_err_name(int code);

/** Log levels of the log hook (mirrors the ZooKeeper client's). */
typedef enum zkr_log_level {
  ZKR_LOG_ERROR = 1,
  ZKR_LOG_WARN = 2,
  ZKR_LOG_INFO = 3,
  ZKR_LOG_DEBUG = 4
} zkr_log_level;

/**
 * A log hook. @level is the message's level, @msg a NUL-terminated line
 * without trailing newline (valid only during the call), @user_data what was
 * given to zkr_set_log_hook(). Called from any thread (the ZooKeeper
 * client's I/O and completion threads among them), one call at a time under
 * a lock: it must be quick, must not block and must not call into zkr.
 */
typedef void (*zkr_log_fn)(zkr_log_level level, const char *msg,
                           void *user_data);

/**
 * zkr_set_log_hook - route zkr's and the ZooKeeper client's log lines
 *
 * zkr_set_log_hook() installs @fn as the function that receives every log line
 * of zkr and of the ZooKeeper C client (libzookeeper_mt) that zkr uses,
 * replacing any hook installed before.
 *
 * By default no hook is installed and zkr is quiet: nothing is written to
 * stderr or anywhere else. Passing NULL as @fn restores that.
 *
 * Lines whose level is above @max_level are dropped before the hook is called;
 * the levels, from most to least severe, are ZKR_LOG_ERROR, ZKR_LOG_WARN,
 * ZKR_LOG_INFO and ZKR_LOG_DEBUG. @max_level must be one of them when @fn is
 * not NULL; it is ignored when @fn is NULL.
 *
 * The hook is called with the line's @level, the line itself in @msg
 * (NUL-terminated, without a trailing newline, valid only during the call; very
 * long lines may be truncated), and the @user_data given here. Lines from the
 * ZooKeeper client keep the client's own format (time stamp, thread, function)
 * and get the level the client gave them. zkr sets the client's own
 * (process-wide) verbosity to @max_level too, so that the client formats only
 * lines the hook will get: ZKR_LOG_DEBUG turns on the client's debug lines;
 * with a NULL hook the client is set to errors only.
 *
 * The ZooKeeper client's logging is configured per process, so the hook is too:
 * it applies to every session, including sessions opened before the call. It is
 * the only process-wide state zkr keeps.
 *
 * Once zkr_set_log_hook() returns, the previous hook will not be called again,
 * so its @user_data may be released.
 *
 * The hook runs on whichever thread logs: the ZooKeeper client's I/O and
 * completion threads, a session's internal threads, or a thread calling a zkr
 * function. Calls are serialized under a lock, one at a time. The hook must
 * return quickly (a slow hook delays the client's I/O thread, and with it the
 * pings that keep the session alive), and it must not call any zkr function.
 *
 * Returns:
 *   ZKR_OK      The hook was installed.
 *   ZKR_EINVAL  @fn is not NULL and @max_level is not one of the ZKR_LOG_*
 *               values; the previous hook stays in place.
 *
 * Thread safety:
 * zkr_set_log_hook() is thread-safe: it may be called at any time, from any
 * thread except from inside a log hook.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <syslog.h>
 *   #include <zkr/zkr.h>
 *
 *   static void to_syslog(zkr_log_level level, const char *msg, void *ud) {
 *     static const int prio[] = {LOG_DEBUG, LOG_ERR, LOG_WARNING, LOG_INFO,
 *                                LOG_DEBUG};
 *     (void)ud;
 *     int i = level >= ZKR_LOG_ERROR && level <= ZKR_LOG_DEBUG ? level : 0;
 *     syslog(prio[i], "%s", msg);
 *   }
 *
 *   void setup_logging(int debug) {
 *     if (debug)
 *       zkr_set_log_hook(zkr_log_stderr, ZKR_LOG_DEBUG, NULL);
 *     else
 *       zkr_set_log_hook(to_syslog, ZKR_LOG_WARN, NULL);
 *   }
 *
 * See also: zkr_log_stderr(), zkr_session_new()
 *
 * Since: 0.1.0
 * Synopsis: zkr_log_level, zkr_log_fn
 */
ZKR_EXTERN int zkr_set_log_hook(zkr_log_fn fn, zkr_log_level max_level,
                                void *user_data);

/**
 * zkr_log_stderr - a ready-made log hook that writes to stderr
 *
 * zkr_log_stderr() is a log hook for zkr_set_log_hook(). It writes one line per
 * call to the standard error stream, in the form
 *
 *     zkr: @level: @msg
 *
 * where @level is "error", "warn", "info" or "debug" ("?" for a value that is
 * not a ZKR_LOG_* level). @user_data is ignored; pass NULL.
 *
 * Applications do not normally call it directly: they pass it to
 * zkr_set_log_hook().
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * zkr_log_stderr() is thread-safe: it writes each line with a single stdio call
 * on @stderr, which stdio locks.
 *
 * Example:
 *   #include <stddef.h>
 *   #include <zkr/zkr.h>
 *
 *   int main(void) {
 *     // Show warnings and errors from zkr and the ZooKeeper client.
 *     return zkr_set_log_hook(zkr_log_stderr, ZKR_LOG_WARN, NULL) == ZKR_OK ? 0
 *                                                                          : 1;
 *   }
 *
 * See also: zkr_set_log_hook()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_log_stderr(zkr_log_level level, const char *msg,
                               void *user_data);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_COMMON_H */
