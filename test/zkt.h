/* zkr test helpers: the ZooKeeper sandbox from C, and a private root. */
#ifndef ZKR_TEST_ZKT_H
#define ZKR_TEST_ZKT_H

#include <stddef.h>
#include <stdint.h>

#include "tap.h"

/* Start @n servers with scripts/zk-sandbox (in $ZKR_SANDBOX_DIR, set by
 * test/with-zk) and return the connection string (static storage).
 * Skips the whole program, with the reason, if no sandbox can run. */
const char *zkt_start(int n);
/* Run "zk-sandbox ARGS" and return its stdout (malloc'd, trailing newline
 * removed), or NULL if it failed. */
char *zkt_sandbox(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Send a four-letter word to server @id and return the reply (malloc'd). */
char *zkt_4lw(int id, const char *cmd);
/* The value of "key\tvalue" in an mntr reply, or -1. */
int64_t zkt_mntr(int id, const char *key);
/* How many data watches session @sid holds on server @id (from "wchc"),
 * and the first watched path into @first; -1 if wchc failed. */
int zkt_watches_of(int id, int64_t sid, char *first, size_t len);
/* Expire the ZooKeeper session of @s (see zkt.c); 0 once it is gone. */
struct zkr_session;
int zkt_expire(const char *hosts, struct zkr_session *s);
/* A root path private to this test program: /zkr-test/<name>-<pid>. */
const char *zkt_root(const char *name);
/* Milliseconds on the monotonic clock. */
int64_t zkt_now_ms(void);
/* Poll @cond (evaluated by the callback) every 10 ms until it holds or
 * @timeout_ms passes; returns whether it held. */
int zkt_wait_for(int (*cond)(void *), void *arg, int64_t timeout_ms);

/* test/zkproxy between the client and @target ("host:port"): returns the
 * port it listens on (in a directory of its own under the sandbox's). */
int zkt_proxy_start(const char *target);
/* Send the proxy a command (see test/zkproxy.c: "cut-after-request OP",
 * "refuse", "accept", ...). */
void zkt_proxy_cmd(const char *cmd);
/* How many lines of the proxy's event file start with @prefix; wait until
 * at least @n do. */
int zkt_proxy_seen(const char *prefix);
int zkt_proxy_wait(const char *prefix, int n, int64_t timeout_ms);
/* Stop the proxy; its exit status (0: clean). */
int zkt_proxy_stop(void);

#endif
