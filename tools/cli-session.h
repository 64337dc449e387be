/* The tools' ZooKeeper session (cli-session.c): connecting, and what a
 * failure is told as. */
#ifndef ZKR_TOOLS_CLI_SESSION_H
#define ZKR_TOOLS_CLI_SESSION_H

#include <stdint.h>

#include <zkr/zkr.h>

struct run_opts;

/* The chroot of the connection string @servers ("/app" of
 * "zk1:2181,zk2:2181/app"), or NULL if it has none. */
const char *chroot_of(const char *servers);
/* After an operation of @s, connected with @servers (NULL: the session
 * of run_session()), failed with ZKR_ENONODE: 1 if @servers has a chroot
 * whose node does not exist (the server asked, within @timeout_ms), else
 * 0. Below a missing chroot every operation fails so, which reads as if
 * the path were at fault. */
int chroot_missing(zkr_session *s, const char *servers, int64_t timeout_ms);
/* "the chroot /app of the connection string does not exist", for
 * @servers (NULL: run_session()'s), escaped; it lives as esc()'s results
 * do. */
const char *chroot_missing_text(const char *servers);

/* The exit status for an error @rc of joining a queue: 75 for a lost
 * session or connection, 69 for what ZooKeeper refused, else 70. */
int exit_for(int rc);
/* Why an operation of @s, made by run_session(), failed with @rc, for a
 * message: zkr_strerror(@rc), or chroot_missing_text() for a ZKR_ENONODE
 * under a chroot that does not exist (asked of the server). */
const char *why_failed(zkr_session *s, int rc);
/* why_failed() for an acquisition at @path, told more where the server can
 * say it: for ZKR_ENOAUTH the node whose ACL refused (the deepest existing
 * of, for a @semaphore, its admission child (zkr_role_of()), then @path and
 * its ancestors), for ZKR_EFOREIGN the layout found at @path. A static
 * buffer. */
const char *why_acquire_failed(zkr_session *s, int rc, const char *path,
                               int semaphore);

/* zkr_session_new() on a thread of its own, while @wait_signal(@ud) is
 * called again and again (it waits a moment, say 50 ms, and returns a
 * signal that came, or 0): if one comes first, ZKR_ECANCELED with it in
 * *@sig, and the connection goes on on its own thread, so the caller
 * must end the process at once (and @so, with what it points to, must
 * outlive it: make it static). So a signal ends a tool at once while no
 * server answers, rather than after the connect timeout. */
int session_new_interruptible(zkr_session **s, const char *servers,
                              const zkr_session_options *so,
                              int (*wait_signal)(void *), void *ud, int *sig);

/* Connect as @o says, renewing a lost session unless !@renew; with -v a
 * listener tells the session's events. A bad connection string is a usage
 * error. Returns 0 with *@out, or (said) 69 or 70; or, when a handled
 * signal came while connecting (after signals_setup()), 128 + that signal
 * with session_signal set (nothing is created yet: the caller ends as the
 * signal would, die_by_signal()). */
int run_session(const struct run_opts *o, int renew, zkr_session **out);
extern int session_signal;

#endif
