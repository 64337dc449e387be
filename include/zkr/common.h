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
     "upgrade refused: this thread holds the read lock; release it first")

/** Error codes; see zkr_strerror(). */
typedef enum zkr_error {
  ZKR_OK = 0,
#define ZKR__ERR_ENUM(name, val, msg) ZKR_##name = (val),
  ZKR_ERRNO_MAP(ZKR__ERR_ENUM)
#undef ZKR__ERR_ENUM
      ZKR__ERR_MIN = -599
} zkr_error;

/**
 * zkr_strerror - a static, human-readable message for an error code.
 * @code: ZKR_OK, a ZKR_E* code, or a ZooKeeper client code (ZOO_ERRORS),
 *        which is named by the ZooKeeper client's zerror().
 * Returns: a string with static storage, never NULL; "unknown error" for
 *          a code that is neither.
 */
ZKR_EXTERN const char *zkr_strerror(int code);

/**
 * zkr_err_name - the symbolic name of an error code, e.g. "ZKR_ETIMEDOUT".
 * Returns a static string; "ZKR_OK" for 0; "ZOO_ERROR" for a ZooKeeper code;
 * "UNKNOWN" for anything else.
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
 * zkr_set_log_hook - route zkr's and the ZooKeeper client's log lines.
 * @fn: the hook, or NULL to discard every line (the default: zkr is quiet).
 * @max_level: lines above this level are dropped before the hook; it also
 *   sets the ZooKeeper client's own (process-wide) level, so ZKR_LOG_DEBUG
 *   turns on the client's debug lines. Ignored when @fn is NULL.
 * @user_data: passed to @fn.
 *
 * The ZooKeeper client's logging is process-wide, so this hook is too: it is
 * the one piece of process-global state zkr keeps. It applies to every
 * session, including ones opened before the call. After it returns the old
 * hook is never called again.
 * Returns ZKR_OK, or ZKR_EINVAL if @fn is not NULL and @max_level is not one
 * of the zkr_log_level values.
 */
ZKR_EXTERN int zkr_set_log_hook(zkr_log_fn fn, zkr_log_level max_level,
                                void *user_data);

/**
 * zkr_log_stderr - a ready-made hook that writes "zkr: LEVEL: msg" lines to
 * stderr. Pass it to zkr_set_log_hook().
 */
ZKR_EXTERN void zkr_log_stderr(zkr_log_level level, const char *msg,
                               void *user_data);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_COMMON_H */
