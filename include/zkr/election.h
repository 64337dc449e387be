/*
 * zkr -- ZooKeeper recipes for C.
 * election.h: leader election.
 *
 * Participants queue as EPHEMERAL|SEQUENTIAL nodes under an election
 * path; the lowest sequence number leads, and every other participant
 * watches only the one just before it, so a change of leader wakes one
 * session. Two styles share one object type:
 *
 *   the latch (zkr_election_start()): Apache Curator's LeaderLatch
 *   layout, nodes "_c_<uuid>-latch-<seq>". A participant leads until it
 *   resigns (and queues again at the back), is freed, or loses its
 *   session or its node; after a loss it queues again at the back with a
 *   new node, never on an old one.
 *
 *   the selector (zkr_election_run()): Curator's LeaderSelector layout,
 *   the mutex's nodes "_c_<uuid>-lock-<seq>". A function of the user runs
 *   on a thread of its own while the participant leads; when it returns,
 *   leadership passes on, and with requeue the participant queues again.
 *
 * Before it leads, a participant reads its own node and leads only if the
 * node's ephemeral owner is its current session (Curator before 5.7 could
 * lead on a node of its expired session: CURATOR-696). The leader watches
 * its own node: deleted by anyone, it stops leading at once. The session
 * clock tells a leader that it may have lost its session before the
 * ensemble can elect another one.
 *
 * Anyone, participant or not, can read the current leader and the
 * participants, and observe every change of leader.
 */
#ifndef ZKR_ELECTION_H
#define ZKR_ELECTION_H

#include <stddef.h>
#include <stdint.h>
#include <zkr/common.h>
#include <zkr/lock.h>
#include <zkr/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque election participant. */
typedef struct zkr_election zkr_election;
/** An observer of an election path. */
typedef struct zkr_election_observer zkr_election_observer;

/** Told, on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch()), each time the participant becomes leader
 * (@is_leader 1) or stops being leader (0). */
typedef void (*zkr_election_fn)(zkr_election *e, int is_leader,
                                void *user_data);
/** The selector's work, run on a thread of its own while leading. */
typedef void (*zkr_leader_fn)(zkr_election *e, void *user_data);
/** Told each change of leader: @leader is NULL when there is none. */
typedef void (*zkr_observe_fn)(zkr_election_observer *o,
                               const zkr_participant *leader, void *user_data);

/** What a dropped connection (the session may still be alive) does to a
 * leader. */
typedef enum zkr_election_suspend {
  /** stop leading at once, lead again if the same session comes back
   * (Curator's default) */
  ZKR_ELECTION_SUSPEND_DROP = 0,
  /** keep leading until the session clock declares the session lost */
  ZKR_ELECTION_SUSPEND_KEEP = 1
} zkr_election_suspend;

/**
 * The options of zkr_election_new(), filled in by the caller, typically in
 * one expression with designated initializers. Zero (or NULL) in any field
 * means its default, so a NULL pointer instead of the struct gives every
 * default: no identifier, no listener, ZKR_ELECTION_SUSPEND_DROP.
 * zkr_election_new() copies what it keeps (the identifier too): the struct
 * may go away as soon as the call returns.
 *
 * ABI rule: fields are only ever added, in place of the start of
 * reserved_, which must be all zero (zkr_election_new() refuses anything
 * else with ZKR_EINVAL); reserved_ shrinks by as much, so the size of the
 * struct never changes, and a later field's zero is always its old behaviour.
 */
typedef struct zkr_election_options {
  const char *id;               /**< names the participant in its node's
                                     data; NULL (default): none */
  zkr_election_fn listener;     /**< told 1 on becoming leader, 0 on
                                     stopping; NULL (default): none */
  void *listener_user_data;     /**< given to listener */
  zkr_election_suspend suspend; /**< what a dropped connection does; 0:
                                     ZKR_ELECTION_SUSPEND_DROP */
  unsigned char reserved_[64];  /**< must be zero: later fields take its
                                     place */
} zkr_election_options;

/**
 * zkr_election_new - create an election participant
 *
 * zkr_election_new() creates a participant of the election at @path on the
 * session @s and stores it in *@out. It does not join yet: call
 * zkr_election_start() (the latch) or zkr_election_run() (the selector).
 * @path follows the rules of zkr_mutex_new(). Free it with
 * zkr_election_free().
 *
 * @opts are the options, a zkr_election_options the caller fills in; NULL,
 * or zero in any field, means the default. They are copied (the identifier
 * too), so @opts may be a compound literal:
 *
 *     zkr_election_new(&e, s, "/elections/cron",
 *                      &(zkr_election_options){.id = "scheduler-2"});
 *
 * The fields:
 *
 *   id         The identifier written, with the host name and the process id,
 *              into the participant's node ("host=H pid=P id=I"), which
 *              zkr_election_leader() shows: 1 to 256 bytes without control
 *              characters. NULL, the default: none.
 *   listener   Called with listener_user_data on the session's event thread
 *              (in dispatch mode, in zkr_session_dispatch()), with 1 each
 *              time the participant becomes leader and with 0 each time it
 *              stops being leader (resigned, suspended under
 *              ZKR_ELECTION_SUSPEND_DROP, lost), exactly once per change and
 *              in order. It must not block for long, and is not called after
 *              zkr_election_free(). NULL, the default: none.
 *   suspend    What a leader does while its connection is down and its
 *              session may still be alive. ZKR_ELECTION_SUSPEND_DROP (0, the
 *              default, Curator's): it stops leading at once (the listener is
 *              told 0) and leads again if the same session reconnects while
 *              its node is still first. ZKR_ELECTION_SUSPEND_KEEP: it keeps
 *              leading until the session clock declares the session lost,
 *              which happens before the ensemble can expire the session and
 *              elect another leader; a short network blip then costs no
 *              change of leader, at the price of a leader that cannot reach
 *              ZooKeeper for up to that fraction of the session timeout (see
 *              lost_fraction in zkr_session_new()).
 *   reserved_  Must be all zero.
 *
 * Returns:
 *   ZKR_OK        *@out holds the participant.
 *   ZKR_EINVAL    @out or @s is NULL, or @opts is invalid: an empty, too
 *                 long or control-character id, a suspend that is not a
 *                 zkr_election_suspend, or a non-zero byte in reserved_
 *                 (logged; nothing is created).
 *   ZKR_EBADPATH  @path is NULL, is not a valid path, is "/", or lies under
 *                 "/zookeeper".
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * Any thread.
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   // Run the cron tick on exactly one of the scheduler's instances.
 *   int schedule(zkr_session *s, volatile int *stop, void (*tick)(int64_t)) {
 *     zkr_election *e = NULL;
 *     int rc = zkr_election_new(&e, s, "/elections/cron", NULL);
 *     if (rc == ZKR_OK)
 *       rc = zkr_election_start(e);
 *     while (rc == ZKR_OK && !*stop) {
 *       if (zkr_election_await(e, 1000) == ZKR_OK)
 *         tick(zkr_hold_token(zkr_election_hold(e))); // the journal refuses
 *                                              // smaller tokens
 *     }
 *     zkr_election_free(e);
 *     return rc;
 *   }
 *
 * See also: zkr_election_start(), zkr_election_run(), zkr_election_free(),
 *   zkr_election_leader(), zkr_election_is_leader()
 *
 * Since: 0.1.0
 * Synopsis: zkr_election, zkr_election_options, zkr_election_fn,
 *   zkr_election_suspend
 */
ZKR_EXTERN int zkr_election_new(zkr_election **out, zkr_session *s,
                                const char *path,
                                const zkr_election_options *opts);

/**
 * zkr_election_start - join the election as a latch
 *
 * zkr_election_start() joins the election with a node
 * _c_@uuid-latch-@seq (Curator's LeaderLatch layout) and returns at once.
 * The participant leads when its node is first; the listener says when,
 * and zkr_election_await() waits for it. After a loss of its session or
 * its node it joins again at the back with a new node, by itself, until
 * zkr_election_free().
 *
 * Returns:
 *   ZKR_OK            Joining.
 *   ZKR_EINVAL        @e is NULL.
 *   ZKR_EBUSY         Already started (or running a selector).
 *   ZKR_ECLOSED       The session is closed.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed.
 *   ZKR_ENOMEM        Out of memory.
 *
 * Thread safety:
 * Any thread, also a zkr callback.
 *
 * See also: zkr_election_await(), zkr_election_resign(), zkr_election_run()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_start(zkr_election *e);

/**
 * zkr_election_run - join the election as a selector
 *
 * zkr_election_run() joins the election with a node _c_@uuid-lock-@seq
 * (Curator's LeaderSelector layout: a mutex) and returns at once. Each
 * time the participant leads, @fn runs on a thread of the participant's
 * own with @user_data; when it returns, the node is deleted and
 * leadership passes on. With @requeue the participant then queues again,
 * and @fn runs again the next time it leads; without, it is done. If
 * leadership is lost while @fn runs, zkr_election_is_leader() returns 0
 * from then on and the listener is told 0: @fn must poll it (or act on the
 * listener) and return. zkr_election_free() waits for @fn to return.
 *
 * Returns:
 *   ZKR_OK      Running.
 *   ZKR_EINVAL  @e or @fn is NULL.
 *   ZKR_EBUSY   Already started (or running).
 *   ZKR_ECLOSED The session is closed.
 *   ZKR_ESYS    The thread could not be started.
 *   ZKR_ENOMEM  Out of memory.
 *
 * Thread safety:
 * Any thread, also a zkr callback.
 *
 * See also: zkr_election_start(), zkr_election_is_leader()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_run(zkr_election *e, zkr_leader_fn fn,
                                void *user_data, int requeue);

/**
 * zkr_election_await - wait until the participant leads
 *
 * zkr_election_await() waits until the participant leads, or until
 * @timeout_ms passes (0: do not wait; negative: no deadline).
 *
 * Returns:
 *   ZKR_OK          The participant leads.
 *   ZKR_ETIMEDOUT   It did not lead before the deadline.
 *   ZKR_ENOTHELD    It has not joined (or its selector is done).
 *   ZKR_ECLOSED     The session was closed.
 *   ZKR_EINVAL      @e is NULL.
 *   ZKR_EDEADLK     Called from a zkr callback with a non-zero timeout.
 *
 * Thread safety:
 * Any thread.
 *
 * See also: zkr_election_is_leader()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_await(zkr_election *e, int64_t timeout_ms);

/**
 * zkr_election_await_change - wait until the participant's leadership
 * changes
 *
 * zkr_election_await_change() waits until the participant starts or stops
 * leading (any change the listener would be told of, and a loss that the
 * session clock finds first), or until @timeout_ms passes (0: do not wait;
 * negative: no deadline). A scheduler that must stop at once when it stops
 * leading runs its work on one thread and waits here on another, with no
 * lock or condition variable of its own; then zkr_election_is_leader() says
 * which way it changed.
 *
 * Returns:
 *   ZKR_OK          The leadership changed.
 *   ZKR_ETIMEDOUT   It did not change before the deadline.
 *   ZKR_ECLOSED     The session is closed and the participant does not lead:
 *                   no change can come.
 *   ZKR_EINVAL      @e is NULL.
 *   ZKR_EDEADLK     Called from a zkr callback with a non-zero timeout.
 *
 * Thread safety:
 * Any thread but a zkr callback's (with a non-zero timeout).
 *
 * Example:
 *   #include <zkr/zkr.h>
 *
 *   // Wait for the end of this term (or of the time given).
 *   int until_not_leading(zkr_election *e, int64_t ms) {
 *     int rc = ZKR_OK;
 *     while (zkr_election_is_leader(e) && rc == ZKR_OK)
 *       rc = zkr_election_await_change(e, ms);
 *     return rc;
 *   }
 *
 * See also: zkr_election_await(), zkr_election_is_leader(),
 *   zkr_election_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_await_change(zkr_election *e, int64_t timeout_ms);

/**
 * zkr_election_hold - the hold of the current term
 *
 * zkr_election_hold() returns the hold of the participant's current term of
 * leadership while it leads: the fencing token of its node, the node, the
 * state and the guarded writes, through the zkr_hold_* functions
 * (zkr_hold_token(), zkr_hold_node(), zkr_hold_state(),
 * zkr_hold_guarded_multi(), zkr_hold_guarded_set()), as for a mutex's
 * (zkr_mutex_hold()) or a lease's (zkr_lease_hold()).
 *
 * Each term has its own hold. A term's hold stays valid after the term ends,
 * until zkr_election_free(), and reports ZKR_LOCK_LOST (token 0, guarded
 * writes refused with ZKR_ELOCKLOST) from then on, also once the participant
 * leads again: a late write of an old term can never pass for the new
 * term's. Do not free it.
 *
 * Returns:
 * The current term's hold, or NULL when the participant does not lead (or
 * @e is NULL, or memory ran out).
 *
 * Thread safety:
 * Any thread, also a zkr callback; it does not block.
 *
 * See also: zkr_hold_token(), zkr_election_is_leader(), zkr_mutex_hold()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN zkr_hold *zkr_election_hold(zkr_election *e);

/**
 * zkr_election_is_leader - does the participant lead now?
 *
 * zkr_election_is_leader() tells whether the participant leads now: its
 * node is first and held, and (under ZKR_ELECTION_SUSPEND_DROP) its
 * connection is up. It reads local state only, after applying the session
 * clock (see zkr_session_options.lost_fraction): a leader resumed from a
 * pause longer than its session allows does not lead from the first call on,
 * even before the loss is noticed otherwise; the listener is told 0 once, and
 * a latch participant queues again at the back.
 *
 * Returns:
 * 1 if it leads, 0 otherwise or if @e is NULL.
 *
 * Thread safety:
 * Any thread.
 *
 * See also: zkr_election_await(), zkr_election_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_is_leader(const zkr_election *e);

/**
 * zkr_election_resign - leave the leadership and queue again at the back
 *
 * zkr_election_resign() deletes the latch participant's node (the next
 * participant leads) and joins again at the back with a new node. The
 * listener is told 0 if the participant was leading. Resigning a
 * participant that waits moves it to the back as well. A participant whose
 * leadership was lost (the session clock is applied first, see
 * zkr_session_options.lost_fraction) is queued again too, and the call
 * returns ZKR_OK.
 *
 * Returns:
 *   ZKR_OK            Resigned and queued again.
 *   ZKR_ENOTHELD      The participant has not joined as a latch.
 *   ZKR_ECLOSED       The session is closed: the participant's node is
 *                     gone and it is not queued again.
 *   ZKR_ESESSIONLOST  The session is lost and will not be renewed: as for
 *                     ZKR_ECLOSED.
 *   ZKR_EBUSY         The participant's queue kept changing under the call
 *                     (granted leadership, or queued again after a loss,
 *                     at that moment) through 100 tries: in practice never.
 *                     zkr_election_is_leader() tells where it is; call it
 *                     again to resign.
 *   ZKR_EINVAL        @e is NULL.
 *
 * Thread safety:
 * Any thread, also a zkr callback.
 *
 * See also: zkr_election_start(), zkr_election_free()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_resign(zkr_election *e);

/**
 * zkr_election_free - leave the election and free the participant
 *
 * zkr_election_free() leaves the election: its node is deleted (in the
 * background if the connection is down, and also when the node's create
 * is still under way: nothing is left), a selector's function is told
 * (zkr_election_is_leader() returns 0) and waited for, and @e is freed.
 * The listener is not called from then on. NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * Not concurrently with another call on @e, and not from the selector's
 * own function.
 *
 * See also: zkr_election_new()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_election_free(zkr_election *e);

struct zoo_op;
struct zoo_op_result;

/**
 * zkr_election_participants - list an election's participants in order
 *
 * zkr_election_participants() reads the election at @path through @s and
 * stores its participants in *@out, *@count entries in queue order, the
 * first (@is_holder 1) leading. Latch and selector nodes are listed alike.
 * Free the array with zkr_participants_free().
 *
 * Returns:
 *   ZKR_OK        Filled (empty if @path does not exist).
 *   ZKR_EINVAL    @s, @out or @count is NULL.
 *   ZKR_EBADPATH  @path is not a valid znode path.
 *   ZKR_ETIMEDOUT @timeout_ms passed first.
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_EDEADLK   Called from a zkr callback.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * Any thread except a zkr callback.
 *
 * See also: zkr_election_leader(), zkr_participants_free()
 *
 * Since: 0.1.0
 * Synopsis: zkr_participant
 */
ZKR_EXTERN int zkr_election_participants(zkr_session *s, const char *path,
                                         int64_t timeout_ms,
                                         zkr_participant **out, size_t *count);

/**
 * zkr_election_leader - the current leader of an election
 *
 * zkr_election_leader() reads the election at @path through @s and stores
 * its leader in *@out: node, session, token (czxid), data (host, pid and
 * id for zkr participants) and @ctime_ms, when it joined (ZooKeeper does
 * not record when it started leading). Free @out->node and @out->data
 * with free() afterwards.
 *
 * Returns:
 *   ZKR_OK        *@out holds the leader.
 *   ZKR_ENONODE   Nobody leads (no participant).
 *   ZKR_EINVAL    @s or @out is NULL.
 *   ZKR_EBADPATH  @path is not a valid znode path.
 *   ZKR_ETIMEDOUT @timeout_ms passed first.
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_EDEADLK   Called from a zkr callback.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * Any thread except a zkr callback.
 *
 * See also: zkr_election_participants(), zkr_election_observe()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_leader(zkr_session *s, const char *path,
                                   int64_t timeout_ms, zkr_participant *out);

/**
 * zkr_election_observe - be told every change of leader, without joining
 *
 * zkr_election_observe() watches the election at @path through @s and
 * calls @fn on the session's event thread (in dispatch mode, in
 * zkr_session_dispatch()) with the current leader (NULL
 * when there is none) first, and then once per change of leader (a
 * different node first in the queue), in order, until
 * zkr_election_observer_free(). The leader passed is valid during the
 * call only. An observer does not join: it creates nothing, and it is
 * woken by every change of the path's children (observers are few).
 *
 * Returns:
 *   ZKR_OK        *@out holds the observer.
 *   ZKR_EINVAL    @s, @fn or @out is NULL.
 *   ZKR_EBADPATH  @path is not a valid znode path.
 *   ZKR_ECLOSED   The session is closed.
 *   ZKR_ENOMEM    Out of memory.
 *
 * Thread safety:
 * Any thread.
 *
 * See also: zkr_election_observer_free(), zkr_election_leader()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN int zkr_election_observe(zkr_session *s, const char *path,
                                    zkr_observe_fn fn, void *user_data,
                                    zkr_election_observer **out);

/**
 * zkr_election_observer_free - stop observing
 *
 * zkr_election_observer_free() stops @o and frees it; its function is not
 * called from then on (a call running on another thread is waited for).
 * NULL is a no-op.
 *
 * Returns:
 * None.
 *
 * Thread safety:
 * Any thread, not concurrently with another call on @o.
 *
 * See also: zkr_election_observe()
 *
 * Since: 0.1.0
 */
ZKR_EXTERN void zkr_election_observer_free(zkr_election_observer *o);

#ifdef __cplusplus
}
#endif
#endif /* ZKR_ELECTION_H */
