/*
 * Session options and their defaults (the only place they are written).
 * Owns: zkr_session_opts. Must not touch: a live session (a session keeps
 * its own copy, made by zkr__opts_copy()).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session-int.h"

void zkr__opts_defaults(zkr_session_opts *o) {
  memset(o, 0, sizeof *o); /* no hook, no alerts */
  o->session_timeout = 10000;
  o->connect_timeout = 10000;
  o->lost_fraction = 0.25;
  o->renew = 1;
  o->auth = NULL;
  o->acl = ZKR_ACL_OPEN;
}

int zkr_session_opts_new(zkr_session_opts **out) {
  if (!out)
    return ZKR_EINVAL;
  zkr_session_opts *o = calloc(1, sizeof *o);
  if (!o)
    return ZKR_ENOMEM;
  zkr__opts_defaults(o);
  *out = o;
  return ZKR_OK;
}

static void auth_free(struct auth *a) {
  while (a) {
    struct auth *n = a->next;
    free(a->scheme);
    free(a->cred);
    free(a);
    a = n;
  }
}

void zkr_session_opts_free(zkr_session_opts *opts) {
  if (!opts)
    return;
  auth_free(opts->auth);
  free(opts);
}

int zkr_session_opts_set_session_timeout(zkr_session_opts *opts, int ms) {
  if (!opts || ms < ZKR_SESSION_TIMEOUT_MIN || ms > ZKR_SESSION_TIMEOUT_MAX)
    return ZKR_EINVAL;
  opts->session_timeout = ms;
  return ZKR_OK;
}

int zkr_session_opts_set_connect_timeout(zkr_session_opts *opts, int ms) {
  if (!opts || ms < 1)
    return ZKR_EINVAL;
  opts->connect_timeout = ms;
  return ZKR_OK;
}

int zkr_session_opts_set_lost_fraction(zkr_session_opts *opts,
                                       double fraction) {
  if (!opts || !(fraction > 0.0 && fraction <= 10.0))
    return ZKR_EINVAL;
  opts->lost_fraction = fraction;
  return ZKR_OK;
}

int zkr_session_opts_set_renew(zkr_session_opts *opts, int renew) {
  if (!opts)
    return ZKR_EINVAL;
  opts->renew = renew != 0;
  return ZKR_OK;
}

static struct auth *auth_new(const char *scheme, const char *cred) {
  struct auth *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->scheme = zkr__strdup(scheme);
  a->cred = zkr__strdup(cred);
  if (!a->scheme || !a->cred) {
    auth_free(a);
    return NULL;
  }
  return a;
}

int zkr_session_opts_add_auth(zkr_session_opts *opts, const char *scheme,
                              const char *cred) {
  if (!opts || !scheme || !scheme[0] || !cred)
    return ZKR_EINVAL;
  struct auth *a = auth_new(scheme, cred);
  if (!a)
    return ZKR_ENOMEM;
  struct auth **pp = &opts->auth;
  while (*pp)
    pp = &(*pp)->next;
  *pp = a;
  return ZKR_OK;
}

int zkr_session_opts_set_acl(zkr_session_opts *opts, zkr_acl_mode mode) {
  if (!opts || (mode != ZKR_ACL_OPEN && mode != ZKR_ACL_CREATOR))
    return ZKR_EINVAL;
  opts->acl = mode;
  return ZKR_OK;
}

int zkr__opts_copy(zkr_session_opts *dst, const zkr_session_opts *src) {
  struct auth *head = NULL, **pp = &head;
  for (const struct auth *a = src->auth; a; a = a->next) {
    *pp = auth_new(a->scheme, a->cred);
    if (!*pp) {
      auth_free(head);
      return ZKR_ENOMEM;
    }
    pp = &(*pp)->next;
  }
  *dst = *src;
  dst->auth = head;
  return ZKR_OK;
}

void zkr__opts_clear(zkr_session_opts *o) {
  auth_free(o->auth);
  o->auth = NULL;
}
