/* Creator-only ACLs (zkr_session_options.acl = ZKR_ACL_CREATOR) against a
 * real server: the ACL of every node zkr creates (contender nodes of the
 * mutex, the semaphore and the election, and the parents zkr creates), what
 * a client without the credentials (or with others) can no longer do, what
 * a client with the same credentials still does, the credentials after a
 * dropped connection and after an expiry, a creator-mode client under a
 * parent with the open ACL, and bad input. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zkr-private.h"
#include "zkt.h"

static const char *hosts;

/* A session with @cred ("user:password", digest; NULL: none) and @acl. */
static zkr_session *sess(const char *via, const char *cred, int acl) {
  zkr_session_options o = {0};
  zkr_session *s = NULL;
  o.session_timeout_ms = 6000;
  zkr_auth auth = {"digest", cred};
  if (cred) {
    o.auth = &auth;
    o.auth_count = 1;
  }
  o.acl = acl ? ZKR_ACL_CREATOR : ZKR_ACL_OPEN;
  int rc = zkr_session_new(&s, via, &o);
  if (rc != ZKR_OK)
    tap_bail("session to %s: %s", via, zkr_strerror(rc));
  return s;
}

/* The ACL of @path read through @s: "PERMS:SCHEME:ID,..." with the id cut
 * at its first ':' for the digest scheme (user only), or "ERR <zrc>". */
static const char *acl_str(zkr_session *s, const char *path) {
  static char buf[512];
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(s, &zh, &gen) != ZKR_OK)
    return "no handle";
  struct ACL_vector v;
  struct Stat st;
  memset(&v, 0, sizeof v);
  int zrc = zoo_get_acl(zh, path, &v, &st);
  zkr__session_put_zh(s);
  if (zrc != ZOK) {
    snprintf(buf, sizeof buf, "ERR %d", zrc);
    return buf;
  }
  buf[0] = '\0';
  for (int i = 0; i < v.count; i++) {
    char id[128];
    snprintf(id, sizeof id, "%s", v.data[i].id.id);
    if (strcmp(v.data[i].id.scheme, "digest") == 0 && strchr(id, ':'))
      *strchr(id, ':') = '\0';
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d:%s:%s",
             i ? "," : "", v.data[i].perms, v.data[i].id.scheme, id);
  }
  deallocate_ACL_vector(&v);
  return buf;
}

/* A raw request through @s's handle: delete, set data or set the ACL
 * (open) of @path; the ZooKeeper return code. */
enum raw { RAW_DELETE, RAW_SET, RAW_SETACL, RAW_CREATE };
static int raw(zkr_session *s, enum raw what, const char *path) {
  zhandle_t *zh;
  uint64_t gen;
  if (zkr__session_get_zh(s, &zh, &gen) != ZKR_OK)
    return -9999;
  int zrc;
  switch (what) {
  case RAW_DELETE:
    zrc = zoo_delete(zh, path, -1);
    break;
  case RAW_SET:
    zrc = zoo_set(zh, path, "x", 1, -1);
    break;
  case RAW_SETACL:
    zrc = zoo_set_acl(zh, path, -1, &ZOO_OPEN_ACL_UNSAFE);
    break;
  default:
    zrc = zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    break;
  }
  zkr__session_put_zh(s);
  return zrc;
}

static const char *want_creator = "31:digest:app,1:world:anyone";

int main(void) {
  tap_init(300);
  hosts = zkt_start(1);
  const char *root = zkt_root("t-acl");
  char path[512], node[1400], node2[1400], kid[700];

  /* ---- bad input ---- */
  zkr_session *bad = NULL;
  is(zkr_session_new(&bad, hosts,
                     &(zkr_session_options){.acl = (zkr_acl_mode)7}),
     ZKR_EINVAL, "an unknown ACL mode is refused");
  is(zkr_session_new(&bad, hosts,
                     &(zkr_session_options){.acl = ZKR_ACL_CREATOR}),
     ZKR_EINVAL,
     "creator mode without credentials: zkr_session_new refuses it");
  ok(bad == NULL, "and makes no session");

  zkr_session *admin = sess(hosts, NULL, 0);
  int port = zkt_proxy_start(hosts);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%d", port);
  zkr_session *s1 = sess(via, "app:secret", 1); /* through the proxy */
  zkr_session *s2 = sess(hosts, "app:secret", 1);
  zkr_session *other = sess(hosts, "intruder:pw", 1);
  zkr_session *anon = sess(hosts, NULL, 0);
  zkt_create_parents(admin, root, zkr__deadline(5000));

  /* ---- the mutex: node and parent creator-only ---- */
  snprintf(path, sizeof path, "%s/m/lock", root);
  zkr_mutex *m1 = NULL, *m2 = NULL, *ma = NULL;
  zkr_mutex_new(&m1, s1, path, NULL);
  is(zkr_mutex_acquire(m1, 10000), ZKR_OK,
     "a creator-mode mutex creates its parents and holds");
  zkr_hold_node(zkr_mutex_hold(m1), node, sizeof node);
  is(strcmp(acl_str(admin, node), want_creator), 0,
     "its node: every right for app, read for anyone (%s)",
     acl_str(admin, node));
  is(strcmp(acl_str(admin, path), want_creator), 0,
     "the lock path zkr created: the same (%s)", acl_str(admin, path));
  char mid[512];
  snprintf(mid, sizeof mid, "%s/m", root);
  is(strcmp(acl_str(admin, mid), "31:world:anyone"), 0,
     "its parent, shared with other locks: the open ACL (%s)",
     acl_str(admin, mid));

  is(raw(anon, RAW_DELETE, node), ZNOAUTH,
     "without credentials: its node cannot be deleted");
  is(raw(anon, RAW_SET, node), ZNOAUTH, "nor overwritten");
  is(raw(anon, RAW_SETACL, node), ZNOAUTH, "nor its ACL changed");
  is(raw(other, RAW_DELETE, node), ZNOAUTH,
     "with other credentials: not deleted either");
  is(raw(other, RAW_SET, node), ZNOAUTH, "nor overwritten");
  is(raw(other, RAW_SETACL, node), ZNOAUTH, "nor its ACL changed");
  snprintf(kid, sizeof kid, "%s/intruder", path);
  is(raw(anon, RAW_CREATE, kid), ZNOAUTH,
     "nor can a node be put in the queue by hand");
  zkr_mutex_new(&ma, anon, path, NULL);
  is(zkr_mutex_acquire(ma, 5000), ZKR_ENOAUTH,
     "an open-mode mutex without the credentials cannot queue: ZKR_ENOAUTH");
  ok(strstr(zkr_strerror(ZKR_ENOAUTH), "ACL") != NULL,
     "with a message that names the ACL (%s)", zkr_strerror(ZKR_ENOAUTH));
  zkr_mutex_free(ma);
  is(zkt_children(admin, path), 1, "nothing changed: one node, m1's");
  ok(zkr_mutex_is_held(m1), "m1 still holds");

  zkr_mutex_new(&m2, s2, path, NULL);
  is(zkr_mutex_acquire(m2, 0), ZKR_EWOULDBLOCK,
     "a session with the same credentials queues: it does not get it now");

  /* the connection dropped and back: the client sends the credentials
   * again, and m1 can still release and queue again */
  zkt_proxy_cmd("cut-all");
  ok(zkt_proxy_wait("done cut-all", 1, 5000), "m1's connection cut");
  int64_t sid1 = zkr_session_id(s1);
  is(zkr_mutex_release(m1), ZKR_OK, "after the cut, m1 releases (a delete)");
  is(zkr_session_id(s1), sid1, "in the same session");
  is(zkr_mutex_acquire(m2, 10000), ZKR_OK, "m2 gets it");
  is(zkt_settled_children(s1, admin, path), 1, "m1's node is gone");
  is(zkr_mutex_release(m2), ZKR_OK, "m2 releases");
  is(zkr_mutex_acquire(m1, 10000), ZKR_OK,
     "m1 creates a node again after the reconnection");
  is(zkr_mutex_release(m1), ZKR_OK, "and releases it");

  /* after an expiry the session manager adds them to the new session */
  ok(zkt_expire(hosts, s2) == 0, "s2's session expired");
  is(zkr_mutex_acquire(m2, 20000), ZKR_OK,
     "in its new session m2 still creates under the creator-only parent");
  zkr_hold_node(zkr_mutex_hold(m2), node2, sizeof node2);
  is(strcmp(acl_str(admin, node2), want_creator), 0, "with the same ACL");
  is(zkr_mutex_release(m2), ZKR_OK, "and releases");
  zkr_mutex_free(m1);
  zkr_mutex_free(m2);

  /* ---- a creator-only lock does not close its shared parents ---- */
  {
    char alice[600], bob[600], team[512];
    snprintf(team, sizeof team, "%s/team", root);
    snprintf(alice, sizeof alice, "%s/alice/job", team);
    snprintf(bob, sizeof bob, "%s/bob/job", team);
    zkr_mutex *ma1 = NULL, *mb = NULL;
    zkr_mutex_new(&ma1, s2, alice, NULL);
    is(zkr_mutex_acquire(ma1, 10000), ZKR_OK,
       "a creator-only lock at team/alice/job, team/ made by zkr");
    is(strcmp(acl_str(admin, team), "31:world:anyone"), 0,
       "team/ has the open ACL (%s)", acl_str(admin, team));
    is(strcmp(acl_str(admin, alice), want_creator), 0,
       "the lock path is creator-only (%s)", acl_str(admin, alice));
    zkr_mutex_new(&mb, anon, bob, NULL);
    is(zkr_mutex_acquire(mb, 10000), ZKR_OK,
       "another client without credentials locks team/bob/job beside it");
    zkr_mutex_release(mb);
    zkr_mutex_free(mb);
    zkr_mutex_release(ma1);
    zkr_mutex_free(ma1);
  }

  /* ---- a creator-mode client under a parent with the open ACL ---- */
  snprintf(path, sizeof path, "%s/open/lock", root);
  zkt_create_parents(admin, path, zkr__deadline(5000));
  is(strcmp(acl_str(admin, path), "31:world:anyone"), 0,
     "a parent made by an open client: open");
  zkr_mutex_new(&m1, s2, path, NULL);
  is(zkr_mutex_acquire(m1, 10000), ZKR_OK, "a creator-mode mutex holds there");
  zkr_hold_node(zkr_mutex_hold(m1), node, sizeof node);
  is(strcmp(acl_str(admin, node), want_creator), 0, "its node is creator-only");
  is(raw(anon, RAW_SET, node), ZNOAUTH, "no one else can overwrite it");
  is(raw(anon, RAW_DELETE, node), ZOK,
     "but the open parent lets anyone delete it (as documented)");
  snprintf(kid, sizeof kid, "%s/open/data", root);
  raw(admin, RAW_CREATE, kid);
  is(zkr_hold_guarded_set(zkr_mutex_hold(m1), kid, "v", 1, -1, 5000),
     ZKR_ELOCKLOST,
     "the holder learns it at its next guarded write: ZKR_ELOCKLOST");
  zkr_mutex_release(m1);
  zkr_mutex_free(m1);
  /* an open-mode client on that open parent works beside it */
  zkr_mutex_new(&ma, anon, path, NULL);
  is(zkr_mutex_acquire(ma, 10000), ZKR_OK, "an open-mode mutex there: fine");
  zkr_hold_node(zkr_mutex_hold(ma), node, sizeof node);
  is(strcmp(acl_str(admin, node), "31:world:anyone"), 0,
     "its node has the open ACL");
  zkr_mutex_release(ma);
  zkr_mutex_free(ma);

  /* ---- the semaphore: lease, admission and their parents ---- */
  snprintf(path, sizeof path, "%s/sem", root);
  zkr_semaphore *sem = NULL;
  zkr_lease *lease = NULL;
  is(zkr_semaphore_new(&sem, s2, path, 2, NULL), ZKR_OK, "a semaphore");
  is(zkr_semaphore_acquire(sem, 1, 10000, &lease), ZKR_OK, "one lease");
  snprintf(kid, sizeof kid, "%s/leases", path);
  is(strcmp(acl_str(admin, kid), want_creator), 0, "leases/ is creator-only");
  snprintf(kid, sizeof kid, "%s/locks", path);
  is(strcmp(acl_str(admin, kid), want_creator), 0, "locks/ too");
  {
    zhandle_t *zh;
    uint64_t gen;
    struct String_vector kids = {0, NULL};
    snprintf(kid, sizeof kid, "%s/leases", path);
    if (zkr__session_get_zh(admin, &zh, &gen) == ZKR_OK) {
      zoo_get_children(zh, kid, 0, &kids);
      zkr__session_put_zh(admin);
    }
    is(kids.count, 1, "one lease node");
    if (kids.count == 1) {
      snprintf(node, sizeof node, "%s/%s", kid, kids.data[0]);
      is(strcmp(acl_str(admin, node), want_creator), 0,
         "the lease node is creator-only (%s)", acl_str(admin, node));
      is(raw(anon, RAW_DELETE, node), ZNOAUTH,
         "and cannot be deleted without the credentials");
    } else {
      ok(0, "the lease node is creator-only");
      ok(0, "and cannot be deleted without the credentials");
    }
    deallocate_String_vector(&kids);
  }
  is(zkr_lease_release(lease), ZKR_OK, "released");
  zkr_semaphore_free(sem);

  /* ---- the election ---- */
  snprintf(path, sizeof path, "%s/elect", root);
  zkr_election *e = NULL;
  is(zkr_election_new(&e, s2, path, NULL), ZKR_OK, "a participant");
  is(zkr_election_start(e), ZKR_OK, "joins");
  is(zkr_election_await(e, 10000), ZKR_OK, "leads");
  zkr_hold_node(zkr_election_hold(e), node, sizeof node);
  is(strcmp(acl_str(admin, node), want_creator), 0,
     "its latch node is creator-only");
  is(raw(other, RAW_DELETE, node), ZNOAUTH,
     "no other credentials can depose it by deleting its node");
  ok(zkr_election_is_leader(e), "it still leads");
  zkr_election_free(e);

  zkr_session_close(s1);
  zkr_session_close(s2);
  zkr_session_close(other);
  zkr_session_close(anon);
  zkr_session_close(admin);
  is(zkt_proxy_stop(), 0, "the proxy exits cleanly");
  return tap_done();
}
