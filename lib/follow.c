/*
 * The node follower (see follow.h): one read at a time (a change during
 * one makes it run again), its answers gathered on the ZooKeeper
 * completion thread, the result posted to the event thread and handed to
 * the owner there without the follower's lock.
 *
 * Owns: its watch, its session hook, the read under way. Must not touch:
 * what the result means to its owner, the session's internals.
 *
 * What the server does (ZooKeeper 3.8): getChildren and getData on a
 * missing node set no watch, so a watching follower that finds no node
 * sets an exists watch, which fires on the creation.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "follow.h"

struct zkr__follow {
  zkr__obj obj;
  char *path;
  int what;
  zkr__follow_pick pick;
  zkr__follow_fn fn;
  void *ud;
  zkr__hook *hook;
  uint64_t watch_id;
  zkr__watch_kind watch_kind;
  int busy;       /* a read under way */
  int again;      /* read again once it ends */
  int stale;      /* the last read failed: read again once connected */
  int out;        /* answers of the read under way still to come */
  uint64_t reads; /* reads started (the last one's number) */
  struct snap *cur;
};

/* One read's result, owned by the follower until handed over. */
struct snap {
  zkr__obj_call call;
  uint64_t seq;
  int zrc_data, zrc_kids, zrc_child, zrc_exists;
  char *data;
  int datalen;
  struct Stat stat;
  struct String_vector names;
  char *child, *child_data;
  int child_datalen;
  struct Stat child_stat;
};

static void snap_free(struct snap *sn) {
  if (!sn)
    return;
  free(sn->data);
  deallocate_String_vector(&sn->names);
  free(sn->child);
  free(sn->child_data);
  free(sn);
}

static char *copy_value(const char *v, int len, int *outlen) {
  *outlen = v && len >= 0 ? len : -1;
  if (!v || len < 0)
    return NULL;
  char *c = malloc((size_t)len + 1);
  if (c) {
    memcpy(c, v, (size_t)len);
    c[len] = '\0';
  }
  return c;
}

/* ---- handing a result over ---- */

static void deliver_call(zkr__obj *o, zkr__obj_call *c, int call) {
  zkr__follow *f = (zkr__follow *)o;
  struct snap *sn = (struct snap *)c;
  if (call) {
    zkr__snapshot v = {.seq = sn->seq};
    int zrc = sn->zrc_data != ZOK ? sn->zrc_data : sn->zrc_kids;
    if (zrc == ZOK && sn->child)
      zrc = sn->zrc_child;
    v.zrc = zrc;
    v.rc = zrc == ZOK ? ZKR_OK : zkr__from_zk(zrc);
    if (zrc == ZOK) {
      if (f->what & ZKR__FOLLOW_DATA) {
        v.data = sn->data;
        v.datalen = sn->datalen;
        v.stat = &sn->stat;
      }
      if (f->what & ZKR__FOLLOW_CHILDREN)
        v.names = &sn->names;
      if (sn->child) {
        v.child = sn->child;
        v.child_data = sn->child_data;
        v.child_datalen = sn->child_datalen;
        v.child_stat = &sn->child_stat;
      }
    }
    f->fn(f, &v, f->ud);
  }
  snap_free(sn);
}

static void deliver_job(zkr__obj *o, void *arg) {
  struct snap *sn = arg;
  if (o->freed) {
    snap_free(sn);
    return;
  }
  sn->call.fn = deliver_call;
  zkr__obj_defer(o, &sn->call); /* runs as this job lets the lock go */
}

/* ---- reading ---- */

static void follow_read(zkr__follow *f);

/* Under mu: the read under way has all its answers. */
static void read_end(zkr__follow *f) {
  struct snap *sn = f->cur;
  f->cur = NULL;
  f->busy = 0;
  int zrc = sn->zrc_data != ZOK ? sn->zrc_data : sn->zrc_kids;
  if (zrc == ZOK && sn->child && sn->zrc_child == ZNONODE) {
    f->again = 1; /* the picked child left meanwhile: list again */
    snap_free(sn);
    sn = NULL;
  } else if (zrc == ZNONODE && sn->zrc_exists == ZOK) {
    f->again = 1; /* created meanwhile */
    snap_free(sn);
    sn = NULL;
  } else if (zkr__transient(zrc) ||
             (zrc == ZOK && sn->child && zkr__transient(sn->zrc_child))) {
    f->stale = 1; /* (its watch may be gone with the connection) */
    if (f->watch_id && zkr__watch_unlink(f->obj.s, f->watch_id))
      zkr__obj_unref_locked(&f->obj);
    f->watch_id = 0;
  }
  if (sn && !f->obj.freed && zkr__obj_post(&f->obj, deliver_job, sn) != ZKR_OK)
    snap_free(sn); /* (out of memory: the next change reads again) */
  else if (sn && f->obj.freed)
    snap_free(sn);
  if (f->again && !f->obj.freed) {
    f->again = 0;
    follow_read(f);
  }
}

/* Under mu: one answer of the read under way is in. */
static void answer_in(zkr__follow *f) {
  if (--f->out == 0)
    read_end(f);
}

static void child_cb(int rc, const char *value, int len,
                     const struct Stat *stat, const void *data) {
  zkr__follow *f = (zkr__follow *)data;
  zkr__obj_lock(&f->obj);
  struct snap *sn = f->cur;
  sn->zrc_child = rc;
  if (rc == ZOK) {
    sn->child_data = copy_value(value, len, &sn->child_datalen);
    sn->child_stat = *stat;
  }
  answer_in(f);
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}

/* Under mu: send a read of the child @name of the node; 1 if sent. */
static int read_child(zkr__follow *f, const char *name) {
  struct snap *sn = f->cur;
  char *full = zkr__path_join(f->path, name);
  sn->child = zkr__strdup(name);
  zhandle_t *zh;
  uint64_t gen;
  int sent = 0;
  sn->zrc_child = ZCONNECTIONLOSS;
  if (full && sn->child && zkr__session_get_zh(f->obj.s, &zh, &gen) == ZKR_OK) {
    zkr__obj_ref(&f->obj);
    f->out++;
    if (zoo_aget(zh, full, 0, child_cb, f) == ZOK) {
      sent = 1;
    } else {
      f->out--;
      zkr__obj_unref_locked(&f->obj);
    }
    zkr__session_put_zh(f->obj.s);
  }
  free(full);
  return sent;
}

static void exists_cb(int rc, const struct Stat *stat, const void *data) {
  zkr__follow *f = (zkr__follow *)data;
  (void)stat;
  zkr__obj_lock(&f->obj);
  f->cur->zrc_exists = rc;
  answer_in(f);
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}

static void watch_cb(zkr_session *s, int type, const char *path, void *ctx);

/* Under mu: our one watch, of @kind. 0 if it could not be registered. */
static int set_watch(zkr__follow *f, zkr__watch_kind kind) {
  if (f->watch_id && zkr__watch_unlink(f->obj.s, f->watch_id))
    zkr__obj_unref_locked(&f->obj); /* it will never run */
  f->watch_id = 0;
  uint64_t id = 0;
  if (zkr__watch_add(f->obj.s, f->path, kind, watch_cb, f, &id) != ZKR_OK)
    return 0;
  f->watch_id = id;
  f->watch_kind = kind;
  zkr__obj_ref(&f->obj);
  return 1;
}

/* Under mu: the node is missing; a watching follower watches for its
 * creation. 1 if the exists request was sent. */
static int watch_creation(zkr__follow *f) {
  zhandle_t *zh;
  uint64_t gen;
  if ((f->what & ZKR__FOLLOW_ONCE) || !set_watch(f, ZKR__WATCH_DATA))
    return 0;
  if (zkr__session_get_zh(f->obj.s, &zh, &gen) != ZKR_OK)
    return 0;
  int sent = 0;
  zkr__obj_ref(&f->obj);
  f->out++;
  if (zoo_aexists(zh, f->path, 1, exists_cb, f) == ZOK) {
    sent = 1;
  } else {
    f->out--;
    zkr__obj_unref_locked(&f->obj);
  }
  zkr__session_put_zh(f->obj.s);
  return sent;
}

static void data_cb(int rc, const char *value, int len, const struct Stat *stat,
                    const void *data) {
  zkr__follow *f = (zkr__follow *)data;
  zkr__obj_lock(&f->obj);
  struct snap *sn = f->cur;
  sn->zrc_data = rc;
  if (rc == ZOK) {
    sn->data = copy_value(value, len, &sn->datalen);
    sn->stat = *stat;
  } else if (rc == ZNONODE && !f->obj.freed) {
    (void)watch_creation(f);
  }
  answer_in(f);
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}

static void kids_cb(int rc, const struct String_vector *names,
                    const void *data) {
  zkr__follow *f = (zkr__follow *)data;
  zkr__obj_lock(&f->obj);
  struct snap *sn = f->cur;
  sn->zrc_kids = rc;
  if (rc == ZOK && names) {
    sn->names.count = 0;
    sn->names.data =
        calloc(names->count > 0 ? (size_t)names->count : 1, sizeof(char *));
    for (int i = 0; sn->names.data && i < names->count; i++) {
      sn->names.data[i] = zkr__strdup(names->data[i]);
      if (!sn->names.data[i])
        break;
      sn->names.count++;
    }
    if (!sn->names.data || sn->names.count != names->count)
      sn->zrc_kids = ZCONNECTIONLOSS; /* (out of memory: read again) */
    else if (f->pick && !f->obj.freed) {
      int i = f->pick(&sn->names, f->ud);
      if (i >= 0 && i < sn->names.count && !read_child(f, sn->names.data[i]))
        sn->zrc_child = ZCONNECTIONLOSS;
    }
  } else if (rc == ZNONODE && !f->obj.freed && !(f->what & ZKR__FOLLOW_DATA)) {
    (void)watch_creation(f);
  }
  answer_in(f);
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}

/* Under mu: start a read (or ask for one after the read under way). */
static void follow_read(zkr__follow *f) {
  if (f->obj.freed)
    return;
  if (f->busy) {
    f->again = 1;
    return;
  }
  struct snap *sn = calloc(1, sizeof *sn);
  if (!sn) {
    f->stale = 1; /* read again once the connection comes back */
    return;
  }
  sn->zrc_exists = ZNONODE; /* (no exists request: nothing created) */
  sn->seq = ++f->reads;
  f->busy = 1;
  f->cur = sn;
  f->stale = 0;
  f->out = 1; /* ours, until every request is sent */
  int watch = !(f->what & ZKR__FOLLOW_ONCE);
  zhandle_t *zh;
  uint64_t gen;
  int rc = zkr__session_get_zh(f->obj.s, &zh, &gen);
  if (rc != ZKR_OK) {
    sn->zrc_data = rc == ZKR_ECLOSED        ? ZCLOSING
                   : rc == ZKR_ESESSIONLOST ? ZSESSIONEXPIRED
                                            : ZCONNECTIONLOSS;
    answer_in(f);
    return;
  }
  if (watch &&
      !set_watch(f, (f->what & ZKR__FOLLOW_CHILDREN) ? ZKR__WATCH_CHILD
                                                     : ZKR__WATCH_DATA))
    sn->zrc_data = ZSYSTEMERROR; /* (out of memory) */
  if (sn->zrc_data == ZOK && (f->what & ZKR__FOLLOW_DATA)) {
    zkr__obj_ref(&f->obj);
    f->out++;
    if (zoo_aget(zh, f->path, watch, data_cb, f) != ZOK) {
      f->out--;
      zkr__obj_unref_locked(&f->obj);
      sn->zrc_data = ZCONNECTIONLOSS;
    }
  }
  if (sn->zrc_data == ZOK && (f->what & ZKR__FOLLOW_CHILDREN)) {
    zkr__obj_ref(&f->obj);
    f->out++;
    if (zoo_aget_children(zh, f->path, watch, kids_cb, f) != ZOK) {
      f->out--;
      zkr__obj_unref_locked(&f->obj);
      sn->zrc_kids = ZCONNECTIONLOSS;
    }
  }
  zkr__session_put_zh(f->obj.s);
  answer_in(f);
}

static void watch_cb(zkr_session *s, int type, const char *path, void *ctx) {
  zkr__follow *f = ctx;
  (void)s;
  (void)type;
  (void)path;
  zkr__obj_lock(&f->obj);
  f->watch_id = 0;
  follow_read(f);
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}

/* A new ZooKeeper session has none of our watches: read again (and
 * watch). So after a reconnection if the last read was lost. */
static void follow_hook(zkr_session *s, zkr_session_event ev, int64_t sid,
                        void *ctx) {
  zkr__follow *f = ctx;
  (void)s;
  (void)sid;
  if (ev != ZKR_EV_CONNECTED && ev != ZKR_EV_RECONNECTED)
    return;
  zkr__obj_lock(&f->obj);
  if (ev == ZKR_EV_CONNECTED && f->watch_id &&
      zkr__watch_unlink(f->obj.s, f->watch_id)) {
    f->watch_id = 0;
    zkr__obj_unref_locked(&f->obj);
  }
  if (ev == ZKR_EV_CONNECTED || f->stale)
    follow_read(f);
  zkr__obj_unlock(&f->obj);
}

/* ---- the object ---- */

static void follow_destroy(zkr__obj *o) {
  zkr__follow *f = (zkr__follow *)o;
  free(f->path);
  free(f);
}

int zkr__follow_new(zkr__follow **out, zkr_session *s, const char *path,
                    int what, zkr__follow_pick pick, zkr__follow_fn fn,
                    void *ud) {
  zkr__follow *f = calloc(1, sizeof *f);
  if (!f || !(f->path = zkr__strdup(path))) {
    free(f);
    return ZKR_ENOMEM;
  }
  zkr__obj_init(&f->obj, s, follow_destroy);
  if (what & ZKR__FOLLOW_USER)
    zkr__obj_set_user(&f->obj);
  f->what = what;
  f->pick = pick;
  f->fn = fn;
  f->ud = ud;
  if (!(what & ZKR__FOLLOW_ONCE) &&
      zkr__session_hook_add(s, follow_hook, f, &f->hook) != ZKR_OK) {
    zkr__obj_unref(&f->obj);
    return ZKR_ENOMEM;
  }
  *out = f;
  zkr__obj_lock(&f->obj);
  follow_read(f);
  zkr__obj_unlock(&f->obj);
  return ZKR_OK;
}

uint64_t zkr__follow_refresh(zkr__follow *f) {
  zkr__obj_lock(&f->obj);
  follow_read(f);
  /* under way: the one started now, or the next (again) */
  uint64_t n = f->busy && f->again ? f->reads + 1 : f->reads;
  zkr__obj_unlock(&f->obj);
  return n;
}

void zkr__follow_free(zkr__follow *f) {
  if (!f)
    return;
  zkr__session_hook_remove(f->obj.s, f->hook); /* (not under our lock: the
                                                  hook takes it) */
  zkr__obj_lock(&f->obj);
  zkr__obj_retire_locked(&f->obj);
  if (f->watch_id) {
    if (zkr__watch_unlink(f->obj.s, f->watch_id))
      zkr__obj_unref_locked(&f->obj);
    f->watch_id = 0;
    zkr__session_unwatch(f->obj.s, f->path, f->watch_kind); /* none left */
  }
  zkr__obj_unlock(&f->obj);
  zkr__obj_unref(&f->obj);
}
