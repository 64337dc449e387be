/*
 * Session options: the checks of a zkr_session_options and its defaults
 * (the only place they are written).
 * Owns: struct zkr__sopts, the session's own copy. Must not touch: a live
 * session.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session-int.h"

static void auth_free(struct auth *a) {
  while (a) {
    struct auth *n = a->next;
    free(a->scheme);
    free(a->cred);
    free(a);
    a = n;
  }
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

/* Log why @o is refused; ZKR_EINVAL. */
static int bad(const char *what) {
  zkr__log(ZKR_LOG_ERROR, "zkr_session_new: invalid zkr_session_options: %s",
           what);
  return ZKR_EINVAL;
}

static int check(const zkr_session_options *o) {
  if (o->session_timeout_ms != 0 &&
      (o->session_timeout_ms < ZKR_SESSION_TIMEOUT_MIN ||
       o->session_timeout_ms > ZKR_SESSION_TIMEOUT_MAX))
    return bad("session_timeout_ms is not 0 (10000) nor in "
               "[ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX]");
  if (o->connect_timeout_ms < 0)
    return bad("connect_timeout_ms is negative");
  if (o->lost_fraction != 0.0 &&
      !(o->lost_fraction > 0.0 && o->lost_fraction <= 10.0))
    return bad("lost_fraction is not 0 (0.25) nor in (0, 10]");
  if (o->auth_count > 0 && !o->auth)
    return bad("auth is NULL with a non-zero auth_count");
  for (size_t i = 0; i < o->auth_count; i++)
    if (!o->auth[i].scheme || !o->auth[i].scheme[0] || !o->auth[i].cred)
      return bad("an auth entry has a NULL or empty scheme or a NULL cred");
  if (o->acl != ZKR_ACL_OPEN && o->acl != ZKR_ACL_CREATOR)
    return bad("acl is not a zkr_acl_mode");
  if (o->acl == ZKR_ACL_CREATOR && o->auth_count == 0)
    return bad("ZKR_ACL_CREATOR needs credentials (auth)");
  if (o->alert_wait_ms < 0 || o->alert_hold_ms < 0)
    return bad("an alert threshold is negative");
  if (!o->alert_fn && (o->alert_wait_ms > 0 || o->alert_hold_ms > 0))
    return bad("an alert threshold is set without alert_fn");
  return zkr__reserved_check(o->reserved_, sizeof o->reserved_,
                             "zkr_session_options");
}

int zkr__opts_from(struct zkr__sopts *dst, const zkr_session_options *o) {
  static const zkr_session_options none;
  if (!o)
    o = &none;
  int rc = check(o);
  if (rc != ZKR_OK)
    return rc;
  struct auth *head = NULL, **pp = &head;
  for (size_t i = 0; i < o->auth_count; i++) {
    if (!(*pp = auth_new(o->auth[i].scheme, o->auth[i].cred))) {
      auth_free(head);
      return ZKR_ENOMEM;
    }
    pp = &(*pp)->next;
  }
  int alerts = o->alert_wait_ms > 0 || o->alert_hold_ms > 0;
  *dst = (struct zkr__sopts){
      .session_timeout = o->session_timeout_ms ? o->session_timeout_ms : 10000,
      .connect_timeout = o->connect_timeout_ms ? o->connect_timeout_ms : 10000,
      .lost_fraction = o->lost_fraction != 0.0 ? o->lost_fraction : 0.25,
      .renew = !o->no_renew,
      .auth = head,
      .acl = o->acl,
      .lock_hook = o->lock_hook,
      .lock_hook_ud = o->lock_hook ? o->lock_hook_user_data : NULL,
      .alert_wait_ms = o->alert_wait_ms,
      .alert_hold_ms = o->alert_hold_ms,
      .alert_fn = alerts ? o->alert_fn : NULL,
      .alert_ud = alerts ? o->alert_user_data : NULL,
      .dispatch = o->dispatch != 0};
  return ZKR_OK;
}

void zkr__opts_clear(struct zkr__sopts *o) {
  auth_free(o->auth);
  o->auth = NULL;
}
