/*
 * model/queue.pml - a Promela model of zkr's queue engine (lib/queue.c,
 * lib/queue-steps.c) and of the policies built on it, checked by spin.
 * model/README.md maps every inline below to the C function it follows,
 * states the properties and the bounds, and says how to run it.
 *
 * Configurations (one file; pick one with -D at `spin -a`):
 *   (none)       the mutex policy (lib/mutex.c): every earlier node blocks
 *   -DRWLOCK     the read-write lock (lib/rwlock.c): each contender is a
 *                reader (blocked by earlier writers) or a writer (blocked
 *                by every earlier node, re-lists before holding: verify)
 *   -DSEMAPHORE  the semaphore (lib/semaphore.c): an admission mutex on
 *                locks/, then a lease node on leases/ that holds while the
 *                lease nodes number at most LIMIT (count_all, a children
 *                watch), then the admission node is released
 *   -DELECTION   the election's latch (lib/election.c): the mutex order,
 *                a watch on the leader's own node (watch_held, whose
 *                exists before leading checks the owner), a lost leadership
 *                queued again at the back (ZKR__QLOSS_REQUEUE), and a
 *                leader that may resign once (leave, join again)
 *   -DMULTILOCK  the multi-lock (lib/multilock.c): each contender takes a
 *                set of two mutexes, on paths A and B, whose two nodes one
 *                transaction makes (lost reply: found again by prefix);
 *                each is then queued by the engine from its adoption
 *                (zkr__queue_start_member); the first member to fail ends
 *                the other; a member that would be made anew (session
 *                lost while waiting, node not ours) starts the whole set
 *                over with a new transaction. A watchdog asserts at
 *                quiescence that every contender finished: no deadlock
 *   -DMUTANT_SEQ_CREATE     multi-lock: the set's two nodes made by two
 *                           creates (another contender's may come between,
 *                           as with locks taken one by one): must deadlock
 * Switches:
 *   -DLIVE                  add the liveness claim (run pan -a -f)
 *   -DMUTANT_NO_WAKE_CHECK  the watch event alone is taken as a grant (no
 *                           exists, no re-listing): must fail
 *   -DNC=n -DMAXF=n -DLIMIT=n  contenders, faults, semaphore permits
 *   -DRESIGN=n              election: how many contenders may resign (1)
 *   -DFREE_ADMISSION        semaphore, safety only: the admission mutex
 *                           left out, admission granted at any moment (a
 *                           superset of the lease side's behaviours; see
 *                           "The semaphore's admission left out" in
 *                           README.md)
 *   -DMUTANT_LEASE_COUNT    semaphore: a lease holds with LIMIT others
 *                           (one too many): must fail
 *   -DMUTANT_NO_ADM_WATCH   semaphore: a waiting lease does not watch its
 *                           admission node (zkr before 2026-11-27):
 *                           liveness must fail with a delete
 *   -DFIRST_C0 -DFIRST_WHO=k -DFIRST_CLASS=k -DSECOND_CLASS=k
 *   -DSECOND_WHO=k          split a search into parts (see the
 *                           environment below, and "Splitting a search"
 *                           in README.md)
 *   -DFIRST_MADE=m -DSECOND_MADE=m  the first (second) fault, an
 *                           expiry, ends a session in which its contender
 *                           had made m nodes (2: two or more)
 *   -DFIRST_DLO=a -DFIRST_DHI=b -DSECOND_DLO=a -DSECOND_DHI=b  the
 *                           first (second) fault, a delete, deletes a
 *                           node in slots a to b (creation order)
 *   -DFIRST_ELO=a -DFIRST_EHI=b -DSECOND_ELO=a -DSECOND_EHI=b  the
 *                           first (second) fault, an expiry, ends a
 *                           session whose last node made is in slots a
 *                           to b (with FIRST_MADE=1 or 2)
 *   -DSYM12                 every fault contender 0's: contenders 1 and
 *                           2 left to symmetry (contender 1's first node
 *                           is made before contender 2's; README.md)
 *   -DLIVE_PART=k           semaphore, election: the liveness claim's
 *                           k-th conjunct alone (1 or 2); the two parts
 *                           together check the whole claim
 *
 * The model is the engine as written, not the textbook recipe: requests go
 * to the server in order over one connection per contender, replies and
 * watch events come back in order on one channel (what libzookeeper_mt
 * guarantees), the listing is pipelined behind the create, only the last
 * listing sent counts, callbacks of an abandoned attempt are ignored.
 */

#ifndef NC
#define NC 3          /* contenders, one session each */
#endif
#ifndef MAXF
#define MAXF 2        /* faults in one run */
#endif
#ifndef LIMIT
#define LIMIT 2       /* semaphore permits */
#endif
#ifndef RESIGN
#define RESIGN 1      /* election: contenders 0..RESIGN-1 may resign once */
#endif

#if defined(FREE_ADMISSION) && (!defined(SEMAPHORE) || defined(LIVE))
#error "FREE_ADMISSION is for the semaphore's safety searches only"
#endif

#if defined(FIRST_C0) && (defined(RWLOCK) || defined(ELECTION) || defined(LIVE))
#error "FIRST_C0 needs contenders that are all alike (not the rwlock's ordered roles or the election's resign) and a safety search"
#endif
#if defined(FIRST_C0) && defined(FIRST_WHO)
#error "FIRST_C0 is FIRST_WHO=0 with the other contenders left to symmetry: use one"
#endif
#if (defined(FIRST_MADE) && (!defined(FIRST_CLASS) || FIRST_CLASS != 1)) || \
    (defined(SECOND_MADE) && (!defined(SECOND_CLASS) || SECOND_CLASS != 1))
#error "FIRST_MADE (SECOND_MADE) splits an expiry: it needs FIRST_CLASS=1 (SECOND_CLASS=1)"
#endif
#if (defined(FIRST_DLO) && (!defined(FIRST_CLASS) || FIRST_CLASS != 3 || !defined(FIRST_DHI))) || \
    (defined(SECOND_DLO) && (!defined(SECOND_CLASS) || SECOND_CLASS != 3 || !defined(SECOND_DHI))) || \
    (defined(FIRST_DHI) && !defined(FIRST_DLO)) || (defined(SECOND_DHI) && !defined(SECOND_DLO))
#error "FIRST_DLO/DHI (SECOND_DLO/DHI) split a delete: they need each other and FIRST_CLASS=3 (SECOND_CLASS=3)"
#endif
#if (defined(FIRST_ELO) && (!defined(FIRST_CLASS) || FIRST_CLASS != 1 || !defined(FIRST_EHI) || !defined(FIRST_MADE))) || \
    (defined(SECOND_ELO) && (!defined(SECOND_CLASS) || SECOND_CLASS != 1 || !defined(SECOND_EHI) || !defined(SECOND_MADE))) || \
    (defined(FIRST_EHI) && !defined(FIRST_ELO)) || (defined(SECOND_EHI) && !defined(SECOND_ELO))
#error "FIRST_ELO/EHI (SECOND_ELO/EHI) split an expiry by its last node's slot: they need each other, FIRST_CLASS=1 and FIRST_MADE=1 or 2 (SECOND_)"
#endif
#if defined(LIVE_PART) && (!defined(LIVE) || !(defined(SEMAPHORE) || defined(ELECTION)) || (LIVE_PART != 1 && LIVE_PART != 2))
#error "LIVE_PART picks one of the two conjuncts of the semaphore's or the election's liveness claim: 1 or 2, with LIVE"
#endif
#if defined(SYM12) && (defined(RWLOCK) || defined(ELECTION) || defined(FIRST_C0) || NC != 3 || \
    (MAXF > 0 && (!defined(FIRST_WHO) || FIRST_WHO != 0)) || \
    (MAXF > 1 && (!defined(SECOND_WHO) || SECOND_WHO != 0)) || MAXF > 2)
#error "SYM12 needs contenders 1 and 2 alike: 3 contenders of the mutex or the semaphore, every fault contender 0's (FIRST_WHO=0, SECOND_WHO=0)"
#endif

#ifdef SEMAPHORE
#define QPC 2         /* queue objects per contender: admission, lease */
#define NPAR 2        /* parents: locks/ (0), leases/ (1) */
#define MAXN 14
#elif defined(MULTILOCK)
#define QPC 2         /* queue objects per contender: its set's members */
#define NPAR 2        /* parents: path A (0), path B (1) */
#define MAXN 14
#elif defined(ELECTION)
#define QPC 1
#define NPAR 1
#define MAXN 12       /* a resign and every loss make a new node */
#else
#define QPC 1
#define NPAR 1
#define MAXN 9
#endif
#define NQ (NC * QPC)
/* a split part must be a part: a slot range inside 0..MAXN-1 and not
 * empty, a node count of 0, 1 or 2 (else the part has no run: a vacuous
 * "no error") */
#if (defined(FIRST_DLO) && (FIRST_DLO < 0 || FIRST_DHI < FIRST_DLO || FIRST_DHI >= MAXN)) || \
    (defined(SECOND_DLO) && (SECOND_DLO < 0 || SECOND_DHI < SECOND_DLO || SECOND_DHI >= MAXN))
#error "FIRST_DLO..FIRST_DHI (SECOND_DLO..SECOND_DHI) must be a slot range that is not empty, within 0 to MAXN-1"
#endif
#if (defined(FIRST_MADE) && (FIRST_MADE < 0 || FIRST_MADE > 2)) || \
    (defined(SECOND_MADE) && (SECOND_MADE < 0 || SECOND_MADE > 2))
#error "FIRST_MADE (SECOND_MADE) is a node count: 0, 1 or 2 (two or more)"
#endif
#if (defined(FIRST_ELO) && (FIRST_ELO < 0 || FIRST_EHI < FIRST_ELO || FIRST_EHI >= MAXN || FIRST_MADE == 0)) || \
    (defined(SECOND_ELO) && (SECOND_ELO < 0 || SECOND_EHI < SECOND_ELO || SECOND_EHI >= MAXN || SECOND_MADE == 0))
#error "FIRST_ELO..FIRST_EHI (SECOND_) must be a slot range that is not empty, within 0 to MAXN-1, of a session that made a node (MADE 1 or 2)"
#endif

/* Enumerations: a step's guard must be its first statement (a guard that
 * blocks inside an atomic would leave the process stuck half-way), so
 * nondeterministic picks are written out as if-options. */
#if NC == 2
#define FOR_C(X) X(0) X(1)
#elif NC == 3
#define FOR_C(X) X(0) X(1) X(2)
#elif NC == 4
#define FOR_C(X) X(0) X(1) X(2) X(3)
#endif
#if MAXN == 9
#define FOR_N(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
#elif MAXN == 12
#define FOR_N(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#elif MAXN == 14
#define FOR_N(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#endif
/* FOR_N with one more argument, passed on (the expiry's slot split) */
#if MAXN == 9
#define FOR_N2(X, a) X(0, a) X(1, a) X(2, a) X(3, a) X(4, a) X(5, a) X(6, a) X(7, a) X(8, a)
#elif MAXN == 12
#define FOR_N2(X, a) X(0, a) X(1, a) X(2, a) X(3, a) X(4, a) X(5, a) X(6, a) X(7, a) X(8, a) X(9, a) X(10, a) X(11, a)
#elif MAXN == 14
#define FOR_N2(X, a) X(0, a) X(1, a) X(2, a) X(3, a) X(4, a) X(5, a) X(6, a) X(7, a) X(8, a) X(9, a) X(10, a) X(11, a) X(12, a) X(13, a)
#endif
#if NQ == 3
#define FOR_Q(X) X(0) X(1) X(2)
#elif NQ == 6
#define FOR_Q(X) X(0) X(1) X(2) X(3) X(4) X(5)
#elif NQ == 2
#define FOR_Q(X) X(0) X(1)
#elif NQ == 4
#define FOR_Q(X) X(0) X(1) X(2) X(3)
#endif
#define IBSEND(k) assert(nfull(ib[k])); ib[k]!
#define RQSEND(k) assert(nfull(rq[k])); rq[k]!

#define NONE 255
#define SEQ(n) (n)    /* compared only between nodes of one parent */

/* ---- the server: the nodes of the queue(s) ---- */
bit  nex[MAXN];   /* exists */
byte nown[MAXN];  /* owner contender */
byte ngen[MAXN];  /* its session (ephemeralOwner) */
byte npfx[MAXN];  /* the attempt's "_c_<uuid>-" prefix (with the owner) */
/* a node's sequence number within its parent is not stored: slots are
 * taken in creation order, so within one parent the slot order is the
 * sequence order (SEQ below) */
byte npar[MAXN];  /* parent */
bit  nwr[MAXN];   /* rwlock: a writer's node */
byte ndw[MAXN];   /* sessions with a data (exists) watch on it */
bit  nbg[MAXN];   /* a background delete of it is pending (bgdelete.c) */
byte nnodes;      /* slots used */
byte cwm[NPAR];   /* sessions with a children watch on the parent */
byte sgen[NC];    /* each contender's current ZooKeeper session */
byte faults;

/* ---- a contender's session as it sees it ---- */
bit  conn[NC];    /* connected (0 from LOST until CONNECTED) */
byte cgen[NC];    /* the session its requests go to */

/* ---- requests (client -> server, in order) and replies/events ---- */
#define RQ_CREATE 1
#define RQ_LIST   2
#define RQ_EXISTS 3   /* step_watch: exists with a watch */
#define RQ_ADOPT  4   /* step_adopt: exists without one */
#define RQ_OWNER  5   /* hold_now (watch_held): exists on our node, b=list_seq */
#define RQ_VERIFY 6   /* zkr__q_verify_held: exists on our held node */
#define RQ_MCREATE 7  /* multi-lock: the set's nodes, one transaction (a=prefix) */
#define RQ_MFIND 8    /* multi-lock: the set's nodes by prefix (a=prefix) */
#define RQ_SCREATE 9  /* MUTANT_SEQ_CREATE: one member's node alone (b=member) */
/* room for what a contender sends: its create and listing, and for each
 * expiry not yet taken in by the client another pair (an expiry drains the
 * channel, but the client restarts once per LOST it takes, in the session
 * that is current by then); asserted never full: a send that blocked would
 * split its step */
#ifdef ELECTION
#define RQLEN (2 * MAXF + 4)
#elif defined(MULTILOCK)
#define RQLEN (2 * (2 * MAXF + 3) + 2)
#else
#define RQLEN (QPC * (2 * MAXF + 3))   /* the semaphore: two queues */
#endif
chan rq[NC] = [RQLEN] of { byte, byte, byte, byte, byte, byte };
/* typ, q, att, gen, a, b */

#define M_CREATE  1   /* a=node */
#define M_LIST    2   /* a=list_seq, b=with watch, m=children */
#define M_EXISTS  3   /* a=watch id */
#define M_ADOPT   4   /* a=node */
#define M_DELETED 5   /* watch event: a=node */
#define M_CHANGED 6   /* watch event: a=node */
#define M_KIDS    7   /* watch event: a=parent */
#define M_RECONN  8   /* session events (state_hook) */
#define M_LOST    9
#define M_CONN    10
#define M_OWNER   11  /* a=node, b=gen of the request, m=list_seq */
#define M_VERIFY  12  /* a=node */
#define M_MCREATE 13  /* multi-lock: a=node on A, m=node on B, b=gen */
#define M_MFIND   14  /* multi-lock: the same, NONE for one not found */
/* room for the replies and events of each queue object and the session
 * events of each fault; asserted never full (a too small bound fails the
 * search: the first one-fault semaphore search filled 6) */
#ifdef MULTILOCK
#define IBLEN (QPC * 4 + 2 * MAXF + 4)
#else
#define IBLEN (QPC * 4 + 2 * MAXF + 2)
#endif
chan ib[NC] = [IBLEN] of { byte, byte, byte, byte, byte, byte, short };
/* typ, q, att, rc, a, b(gen of the request), m (children mask) */

#define ZOK 0
#define ZNONODE 1
#define ZCONNLOSS 2   /* retryable: the outcome is unknown */
#define ZEXPIRED 3    /* transient, not retryable */

/* ---- the engine's state, one per queue object (lib/queue-int.h) ---- */
#define Q_IDLE 0
#define Q_CREATING 1
#define Q_LISTING 2
#define Q_WATCHING 3
#define Q_HELD 4
byte ph[NQ];
byte me[NQ];      /* q->node */
byte qgen[NQ];    /* q->gen */
byte pfx[NQ];     /* q->prefix (a counter per queue) */
byte att[NQ];     /* q->attempt */
byte lseq[NQ];    /* q->list_seq */
byte np[NQ];      /* q->npreds */
byte p1[NQ];      /* q->pred1 */
byte p2[NQ];      /* q->pred2 */
byte wn[NQ];      /* registered data watch: its node (NONE: none) */
byte wid[NQ];     /* its id (0: none) */
byte cwid[NQ];    /* registered children watch: id = the list_seq (0: none) */
bit  cu[NQ];      /* create_unknown */
bit  cgv[NQ];     /* create_gen_valid */
bit  lsent[NQ];   /* list_sent */
bit  wc[NQ];      /* waiting_conn */
bit  adopting[NQ];
bit  rla[NQ];     /* relist_after */
bit  qlost[NQ];   /* lstate == LOST (reported by release) */
bit  cln[NQ];     /* a bg_cleanup by prefix is pending */
byte clp[NQ];
byte clg[NQ];
byte res[NQ];     /* a result posted to the recipe: rc+1 (0: none) */
bit  canc[NQ];    /* ghost: this acquisition was cancelled or timed out */

/* the policy of queue q */
#define CL(q) ((q) / QPC)
#define QK(q) ((q) % QPC)
#ifdef MULTILOCK
#define PAR(q) QK(q)
#define CHILDREN(q) 0
#define HOLDS(q, b) ((b) == 0)
#elif defined(SEMAPHORE)
#define PAR(q) QK(q)
#define CHILDREN(q) (QK(q) == 1)     /* the lease: ZKR__QWAIT_CHILDREN, count_all */
#ifdef MUTANT_LEASE_COUNT
#define HOLDS(q, b) (QK(q) == 1 -> ((b) <= LIMIT) : ((b) == 0))
#else
#define HOLDS(q, b) (QK(q) == 1 -> ((b) + 1 <= LIMIT) : ((b) == 0))
#endif
#else
#define PAR(q) 0
#define CHILDREN(q) 0
#define HOLDS(q, b) ((b) == 0)
#endif
#ifdef RWLOCK
bit writer[NC];   /* the role each contender drew */
#define BLOCKS(q, n) (writer[CL(q)] || nwr[n])
#define VERIFY(q) writer[CL(q)]
#else
#define BLOCKS(q, n) 1
#define VERIFY(q) 0
#endif
#ifdef ELECTION
#define HELDW(q) 1    /* watch_held */
#elif defined(SEMAPHORE)
/* watch_held on the admission queue, once its lease waiter had to wait */
#define HELDW(q) (QK(q) == 0 && aw[CL(q)])
#else
#define HELDW(q) 0
#endif

/* the user of each contender */
byte ust[NC];        /* 0 acquiring, 1 holding (election: has led), 2 done */
#ifdef ELECTION
bit  rsg[NC];        /* resigned once */
#endif
#ifdef SEMAPHORE
/* the semaphore's acquisition (lib/semaphore.c), per contender */
#define A_ADMIT 1
#define A_LEASE 2
#define A_END 3
byte sa[NC];
bit  srestart[NC];
bit  aw[NC];   /* the admission queue's watch_held (lease_waits sets it) */
bit  lwd[NC];  /* the lease queue waited in this acquisition (q->waited) */
bit  swt[NC];  /* its wait_fn, lease_waits, posted and not yet run */
bit  scancel[NC];
#endif

#ifdef MULTILOCK
/* the multi-lock's acquisition (lib/multilock.c: attempt, make_set), per
 * contender */
#define MS_MAKE 1     /* the transaction to send (once connected) */
#define MS_SENT 2     /* sent, its reply awaited */
#define MS_LOSTR 3    /* its reply lost: find the set by prefix (once
                         connected, in the same session) */
#define MS_FIND 4     /* the search sent */
#define MS_WAIT 5     /* the members queued: their results awaited */
#define MS_END 6
byte ms[NC];
byte mpfx[NC];    /* the set's prefix (a counter) */
byte matt[NC];    /* the set's attempt: replies of an older one ignored */
byte mgen[NC];    /* the session the transaction went to */
bit  mcancel[NC];
#ifdef MUTANT_SEQ_CREATE
byte mn0[NC];     /* the first node made, while the second's create runs */
#endif
#define MEMBER(q) 1
#else
#define MEMBER(q) 0
#endif

/* user-level results */
#define R_OK 1
#define R_CANCELED 2
#define R_LOCKLOST 3

/* ================================================================ */
/* the server */

/* delete node n, firing data watches on it and children watches on its
 * parent (ZooKeeper's NodeDeleted, NodeChildrenChanged) */
inline srv_delete(n) {
  printf("MSC: server: node %d deleted\n", n);
  nex[n] = 0;
  k = 0;
  do
  :: k < NC ->
     if
     :: ndw[n] & (1 << k) -> IBSEND(k)M_DELETED,0,0,0,n,0,0
     :: else
     fi;
     if
     :: cwm[npar[n]] & (1 << k) -> IBSEND(k)M_KIDS,0,0,0,npar[n],0,0
     :: else
     fi;
     k++
  :: else -> break
  od;
  ndw[n] = 0;
  cwm[npar[n]] = 0
}

/* Replies the client would ignore whenever it took them are not sent (see
 * "Reductions" in model/README.md): those of an attempt that has ended
 * (its callbacks check q->attempt: no effect), a listing or owner check
 * that is no longer the last one sent (list_seq), an exists whose watch
 * is no longer registered (watch id). Those numbers never come back
 * while the reply could be taken (the attempt only grows; list_seq only
 * grows within an attempt; a watch id in a reply is not drawn again), so
 * it would stay ignored. A stale create that made a node is still sent:
 * create_cb deletes it. */
#define KEEP_CREATE(made) (at == att[q] || (made))
#define KEEP_LIST (at == att[q] && a == lseq[q])
#define KEEP_EXISTS (at == att[q] && b == wid[q])
#define KEEP_ADOPT (at == att[q])
#define KEEP_OWNER (at == att[q] && b == lseq[q])
#define KEEP_VERIFY (at == att[q])
#ifdef MULTILOCK
#define KEEP_MSET(made) (at == matt[c] || (made))
#else
#define KEEP_MSET(made) 0
#endif

/* make a node of contender c in parent par (session g, prefix a): n */
inline srv_make(c, par) {
  assert(nnodes < MAXN);
  n = nnodes; nnodes++;
  nex[n] = 1; nown[n] = c; ngen[n] = g; npfx[n] = a;
  printf("MSC: server: node %d created for contender %d\n", n, c);
  npar[n] = par;
  k = 0;
  do
  :: k < NC -> if
               :: cwm[npar[n]] & (1 << k) -> IBSEND(k)M_KIDS,0,0,0,npar[n],0,0
               :: else
               fi; k++
  :: else -> break
  od;
  cwm[npar[n]] = 0
}

/* apply one request of contender c (typ,q,at,g,a,b); reply unless silent */
inline srv_apply(c, silent) {
  if
  :: g != sgen[c] -> rc = ZEXPIRED     /* the old session's handle */
  :: else -> rc = ZOK
  fi;
  if
  :: typ == RQ_CREATE ->
     n = NONE;
     if
     :: rc == ZOK ->
        assert(nnodes < MAXN);
        n = nnodes; nnodes++;
        nex[n] = 1; nown[n] = c; ngen[n] = g; npfx[n] = a;
        printf("MSC: server: node %d created for contender %d\n", n, c);
        npar[n] = PAR(q);
#ifdef RWLOCK
        nwr[n] = writer[c];
#endif
        k = 0;
        do
        :: k < NC -> if
                     :: cwm[npar[n]] & (1 << k) -> IBSEND(k)M_KIDS,0,0,0,npar[n],0,0
                     :: else
                     fi; k++
        :: else -> break
        od;
        cwm[npar[n]] = 0
     :: else
     fi;
     if
     :: !silent && KEEP_CREATE(rc == ZOK) -> IBSEND(c)M_CREATE,q,at,rc,n,g,0
     :: else
     fi
  :: typ == RQ_LIST ->
     m = 0;
     if
     :: rc == ZOK ->
        k = 0;
        do
        :: k < nnodes -> if
                         :: nex[k] && npar[k] == PAR(q) -> m = m | (1 << k)
                         :: else
                         fi; k++
        :: else -> break
        od;
        if
        :: b -> cwm[PAR(q)] = cwm[PAR(q)] | (1 << c)
        :: else
        fi
     :: else
     fi;
     if
     :: !silent && KEEP_LIST -> IBSEND(c)M_LIST,q,at,rc,a,b,m
     :: else
     fi
  :: typ == RQ_EXISTS ->
     if
     :: rc == ZOK && nex[a] -> ndw[a] = ndw[a] | (1 << c)
     :: rc == ZOK && !nex[a] -> rc = ZNONODE
     :: else
     fi;
     if
     :: !silent && KEEP_EXISTS -> IBSEND(c)M_EXISTS,q,at,rc,b,g,0
     :: else
     fi
  :: typ == RQ_ADOPT ->
     if
     :: rc == ZOK && !nex[a] -> rc = ZNONODE
     :: else
     fi;
     if
     :: !silent && KEEP_ADOPT -> IBSEND(c)M_ADOPT,q,at,rc,a,g,0
     :: else
     fi
#ifdef MULTILOCK
  :: typ == RQ_MCREATE ->   /* both nodes in one transaction, or none */
     n = NONE; m = NONE;
     if
     :: rc == ZOK -> srv_make(c, 0); m = n; srv_make(c, 1); k = n; n = m; m = k
     :: else
     fi;
     if
     :: !silent && KEEP_MSET(rc == ZOK) -> IBSEND(c)M_MCREATE,q,at,rc,n,g,m
     :: else
     fi
  :: typ == RQ_SCREATE ->   /* the mutant: one member's node alone */
     n = NONE;
     if
     :: rc == ZOK -> srv_make(c, b)
     :: else
     fi;
     if
     :: !silent && KEEP_MSET(rc == ZOK) -> IBSEND(c)M_MCREATE,q,at,rc,n,g,b
     :: else
     fi
  :: typ == RQ_MFIND ->
     n = NONE; m = NONE;
     if
     :: rc == ZOK ->
        k = 0;
        do
        :: k < nnodes ->
           if
           :: nex[k] && nown[k] == c && npfx[k] == a && npar[k] == 0 -> n = k
           :: nex[k] && nown[k] == c && npfx[k] == a && npar[k] == 1 -> m = k
           :: else
           fi; k++
        :: else -> break
        od
     :: else
     fi;
     if
     :: !silent && KEEP_MSET(0) -> IBSEND(c)M_MFIND,q,at,rc,n,g,m
     :: else
     fi
#endif
  :: typ == RQ_OWNER || typ == RQ_VERIFY ->
     if
     :: rc == ZOK && !nex[a] -> rc = ZNONODE
     :: else
     fi;
     if
     :: !silent && typ == RQ_OWNER && KEEP_OWNER -> IBSEND(c)M_OWNER,q,at,rc,a,g,b
     :: !silent && typ == RQ_VERIFY && KEEP_VERIFY -> IBSEND(c)M_VERIFY,q,at,rc,a,g,0
     :: else
     fi
  fi
}

/* pick one index whose condition holds (an if as the first statement: the
 * step is enabled only if some index qualifies) */
#ifdef SYM12
/* -DSYM12 (see "Splitting a search" in README.md): contenders 1 and 2
 * left to symmetry; the server applies contender 2's requests only once
 * a node of contender 1's has been made (slots keep their owner after a
 * delete, so this stays true) */
#define OWN1(k) || nown[k] == 1
#define RQ_READY(i) (nempty(rq[i]) && ((i) != 2 || (0 FOR_N(OWN1))))
#else
#define RQ_READY(i) nempty(rq[i])
#endif
#define OPT_RQ(i) :: RQ_READY(i) -> c = i
#define OPT_BG(i) :: nbg[i] -> n = i
#define OPT_CLN(i) :: cln[i] -> q = i

active proctype server() {
  byte c, typ, q, at, g, a, b, rc, n, k;
  short m;
end:
  do
  :: atomic {   /* the server applies one contender's requests in order */
       if FOR_C(OPT_RQ) fi;
       rq[c]?typ,q,at,g,a,b; srv_apply(c, 0);
       c = 0; typ = 0; q = 0; at = 0; g = 0; a = 0; b = 0; rc = 0; n = 0; k = 0; m = 0 }
  :: atomic {   /* bgdelete.c: a node of a given session deleted until it
                 * is gone or the session is (its nodes went with it) */
       if FOR_N(OPT_BG) fi;
       nbg[n] = 0;
       if :: nex[n] -> srv_delete(n) :: else fi;
       n = 0; k = 0 }
  :: atomic {   /* bg_cleanup: the children of the parent with the prefix */
       if FOR_Q(OPT_CLN) fi;
       cln[q] = 0; n = 0;
       do
       :: n < nnodes ->
          if
          :: nex[n] && npar[n] == PAR(q) && nown[n] == CL(q) &&
             npfx[n] == clp[q] && ngen[n] == clg[q] -> srv_delete(n)
          :: else
          fi; n++
       :: else -> break
       od;
       q = 0; n = 0; k = 0 }
  od
}

/* ================================================================ */
/* the engine, one inline per function of lib/queue*.c */

/* Identifiers (see "Reductions" in model/README.md). The engine compares
 * an attempt number, a list_seq, a watch id and a prefix only for
 * equality, with the copies carried by requests and replies still in
 * flight (a prefix also with the nodes that have it), so any value none
 * of those holds behaves the same. q->attempt and the prefix are counters
 * as in the code. list_seq is compared only together with the attempt, so
 * it starts again from 0 in each attempt. A watch id takes the smallest
 * value no request, reply or registration of q holds: equal situations
 * are equal states. (Measured: the smallest free value for all four gave
 * more states than these counters, as it depends on which replies are
 * still in flight when the number is drawn.) */
inline fresh_att(q) {   /* zkr__q_next_attempt: q->attempt++, and the */
  assert(att[q] < 255); att[q]++;   /* adoption mark is cleared (the old */
  adopting[q] = 0                   /* attempt's adopt_cb is ignored) */
}
inline fresh_lseq(q) {  /* ++q->list_seq (step_list, hold_now) */
  assert(lseq[q] < 255); lseq[q]++
}
byte fv;          /* scratch, 0 outside fresh_wid */
inline fresh_wid(q) {   /* a new watch registration's id */
  fv = 1;
  do
  :: rq[CL(q)]??[RQ_EXISTS,eval(q),_,_,_,eval(fv)] ||
     ib[CL(q)]??[M_EXISTS,eval(q),_,_,eval(fv),_,_] || wid[q] == fv -> fv++
  :: else -> break
  od;
  wid[q] = fv; fv = 0
}
inline fresh_pfx(q) {   /* zkr__q_make_prefix: a new "_c_<uuid>-" */
  assert(pfx[q] < 255); pfx[q]++
}

/* The queue object goes idle (finish with a failure, release, a loss):
 * q->attempt++ (late callbacks of the attempt are ignored), and the
 * attempt's fields that nothing reads before the next start() or restart
 * writes them take one fixed value. */
inline idle_reset(q) {
  fresh_att(q);
  lseq[q] = 0; qgen[q] = 0;
  cgv[q] = 0; lsent[q] = 0; wc[q] = 0; rla[q] = 0
}

/* zkr__q_drop_watch(q, server) */
inline drop_watch(q, srvside) {
  if
  :: wid[q] != 0 ->
     if
     :: srvside -> ndw[wn[q]] = ndw[wn[q]] & ~(1 << CL(q))
     :: else
     fi;
     wid[q] = 0; wn[q] = NONE
  :: else
  fi;
  if
  :: cwid[q] != 0 ->
     if
     :: srvside -> cwm[PAR(q)] = cwm[PAR(q)] & ~(1 << CL(q))
     :: else
     fi;
     cwid[q] = 0
  :: else
  fi
}

inline clear_preds(q) { np[q] = 0; p1[q] = NONE; p2[q] = NONE }
inline clear_node(q) { me[q] = NONE }

/* mutual exclusion, checked whenever a queue object starts holding (the
 * only step that can add a holder; nodes never come back) */
inline check_holders(q) {
  if
  :: me[q] != NONE && nex[me[q]] ->
     k = 0; j = 0;
     do
     :: k < NQ ->
        if
        :: k != q && QK(k) == QK(q) && ph[k] == Q_HELD && me[k] != NONE &&
           nex[me[k]] ->
#if defined(SEMAPHORE)
           if
           :: QK(q) == 1 -> j++
           :: else -> assert(false)   /* two admitted */
           fi
#elif defined(RWLOCK)
           assert(!writer[CL(q)] && !writer[CL(k)])
#else
           assert(false)
#endif
        :: else
        fi; k++
     :: else -> break
     od;
#ifdef SEMAPHORE
     assert(QK(q) == 0 || j + 1 <= LIMIT);
#endif
     k = 0; j = 0
  :: else
  fi
}

/* zkr__q_arm_held_watch: with watch_held, an exists watch on our held node
 * (not set while disconnected: verify_held sets it after a reconnection) */
inline arm_held_watch(q) {
  if
  :: HELDW(q) && ph[q] == Q_HELD && wid[q] == 0 && me[q] != NONE && conn[CL(q)] ->
     fresh_wid(q); wn[q] = me[q];
     RQSEND(CL(q))RQ_EXISTS,q,att[q],cgen[CL(q)],me[q],wid[q]
  :: else
  fi
}

/* zkr__q_finish(q, rc): rc is R_OK or a failure */
inline finish(q, r) {
  wc[q] = 0;
  if
  :: r == R_OK ->
     assert(!canc[q]);       /* a cancelled or timed-out waiter never holds */
     drop_watch(q, CHILDREN(q));
     clear_preds(q);
     ph[q] = Q_HELD;
     printf("MSC: queue %d holds with node %d\n", q, me[q]);
     check_holders(q);
     arm_held_watch(q)
  :: else ->
     /* abandon() */
     drop_watch(q, 1);
     if
     :: me[q] != NONE -> nbg[me[q]] = 1
     :: me[q] == NONE && cu[q] && cgv[q] ->
        assert(!cln[q]); cln[q] = 1; clp[q] = pfx[q]; clg[q] = qgen[q]
     :: else
     fi;
     clear_node(q); clear_preds(q);
     cu[q] = 0;
     ph[q] = Q_IDLE;
     idle_reset(q)               /* q->attempt++: late callbacks ignored */
  fi;
  res[q] = r
}

/* zkr__q_step_list: returns in sent whether it was sent */
inline step_list(q) {
  sent = 0;
  if
  :: !conn[CL(q)] -> wc[q] = 1          /* begin_request: paused */
  :: else ->
     fresh_lseq(q);
     if
     :: CHILDREN(q) && !cu[q] && !adopting[q] ->
        drop_watch(q, 0);
        cwid[q] = lseq[q];                /* registered with the listing */
        RQSEND(CL(q))RQ_LIST,q,att[q],cgen[CL(q)],lseq[q],1
     :: else ->
        RQSEND(CL(q))RQ_LIST,q,att[q],cgen[CL(q)],lseq[q],0
     fi;
     sent = 1
  fi
}

/* zkr__q_step_create: the create, and the listing pipelined behind it; a
 * multi-lock's member is never made alone: its set starts over */
inline step_create(q) {
  if
  :: MEMBER(q) -> clear_node(q); finish(q, R_LOCKLOST)
  :: !MEMBER(q) && !conn[CL(q)] -> wc[q] = 1
  :: !MEMBER(q) && conn[CL(q)] ->
     RQSEND(CL(q))RQ_CREATE,q,att[q],cgen[CL(q)],pfx[q],0;
     lsent[q] = 0;
     if
     :: ph[q] == Q_CREATING && !wc[q] -> step_list(q); lsent[q] = sent
     :: else
     fi
  fi
}

/* zkr__q_relist */
inline relist(q) {
  drop_watch(q, 0);
  rla[q] = 0;
  clear_preds(q);
  ph[q] = Q_LISTING;
  step_list(q)
}

/* hold_now(): no blocker is left: hold, or with watch_held first read our
 * node (the exists that sets its watch) to see that it is there and its
 * owner is our current session (owner_cb) */
inline hold_now(q) {
  if
  :: !HELDW(q) -> finish(q, R_OK)
  :: else ->
     ph[q] = Q_LISTING;                 /* resume lists and comes back */
     if
     :: !conn[CL(q)] -> wc[q] = 1
     :: else ->
        fresh_lseq(q);                  /* a listing in flight is stale */
        RQSEND(CL(q))RQ_OWNER,q,att[q],cgen[CL(q)],me[q],lseq[q]
     fi
  fi
}

/* none_left(): no blocker of the last listing is left; with q->verify (a
 * node that would block it may join below it: the policy's late), list
 * once more; else hold_now (whose exists, with watch_held, proves our
 * node is there: a watch event does not) */
inline none_left(q) {
  if
  :: VERIFY(q) -> relist(q)
  :: else -> hold_now(q)
  fi
}

/* step_watch(): exists+watch on the nearest remaining blocker */
inline step_watch(q) {
  drop_watch(q, 0);
  if
  :: p1[q] == NONE ->
     if
     :: np[q] == 0 -> none_left(q)
     :: else -> relist(q)
     fi
  :: else ->
     if
     :: !conn[CL(q)] -> wc[q] = 1
     :: else ->
        fresh_wid(q); wn[q] = p1[q];
        RQSEND(CL(q))RQ_EXISTS,q,att[q],cgen[CL(q)],p1[q],wid[q]
     fi
  fi
}

/* pred_gone(): the nearest blocker is gone */
inline pred_gone(q) {
  drop_watch(q, 0);
  if
  :: np[q] > 0 -> np[q]--
  :: else
  fi;
  p1[q] = p2[q]; p2[q] = NONE;
  if
  :: np[q] == 0 -> none_left(q)
  :: np[q] == 1 && p1[q] != NONE -> step_watch(q)
  :: else -> relist(q)
  fi
}

/* requeue(): our node is gone: a new create, same prefix */
inline requeue(q) {
  clear_node(q); clear_preds(q);
  ph[q] = Q_CREATING;
  step_create(q)
}

/* step_adopt(): read the stat of the node found by our prefix */
inline step_adopt(q) {
  if
  :: !conn[CL(q)] ->   /* paused: found again by prefix (adopt_later) */
     cu[q] = 1; clear_node(q); ph[q] = Q_CREATING;
     wc[q] = 1
  :: else ->
     adopting[q] = 1;
     RQSEND(CL(q))RQ_ADOPT,q,att[q],cgen[CL(q)],me[q],0
  fi
}

/* evaluate(): the children are listed (mask m); find our place */
inline evaluate(q) {
  if
  :: cu[q] ->
     /* find_lost_create() */
     cu[q] = 0;
     n = NONE; k = 0;
     do
     :: k < nnodes ->
        if
        :: (m & (1 << k)) && nown[k] == CL(q) && npfx[k] == pfx[q] -> n = k
        :: else
        fi; k++
     :: else -> break
     od;
     if
     :: n == NONE -> ph[q] = Q_CREATING; step_create(q)
     :: else -> me[q] = n; step_adopt(q)
     fi
  :: else ->
     clear_preds(q);
     k = 0; j = 0;   /* j: have_self */
     do
     :: k < nnodes ->
        if
        :: !(m & (1 << k)) -> skip
        :: (m & (1 << k)) && k == me[q] -> j = 1
        :: (m & (1 << k)) && k != me[q] && CHILDREN(q) -> np[q]++
        :: (m & (1 << k)) && k != me[q] && !CHILDREN(q) ->
           if
           :: SEQ(k) < SEQ(me[q]) && BLOCKS(q, k) ->
              np[q]++;
              if
              :: p1[q] == NONE || SEQ(k) > SEQ(p1[q]) -> p2[q] = p1[q]; p1[q] = k
              :: else ->
                 if
                 :: p2[q] == NONE || SEQ(k) > SEQ(p2[q]) -> p2[q] = k
                 :: else
                 fi
              fi
           :: else
           fi
        fi; k++
     :: else -> break
     od;
     if
     :: !j -> drop_watch(q, 1); requeue(q)
     :: j && HOLDS(q, np[q]) -> hold_now(q)
     :: j && !HOLDS(q, np[q]) ->
        /* waiting() */
#if defined(SEMAPHORE) && !defined(FREE_ADMISSION)
        if   /* the first wait of the lease's acquisition: the wait_fn */
        :: CHILDREN(q) && !lwd[CL(q)] -> lwd[CL(q)] = 1; swt[CL(q)] = 1
        :: else
        fi;
#endif
        ph[q] = Q_WATCHING;
        if
        :: CHILDREN(q) -> skip          /* the listing set the children watch */
        :: else -> step_watch(q)
        fi
     fi;
     j = 0
  fi;
  k = 0; n = 0
}

/* zkr__q_resume: continue a paused attempt */
inline resume(q) {
  wc[q] = 0;
  if
  :: ph[q] == Q_CREATING && cu[q] -> ph[q] = Q_LISTING; step_list(q)
  :: ph[q] == Q_CREATING && !cu[q] -> step_create(q)
  :: ph[q] == Q_LISTING -> step_list(q)
  :: ph[q] == Q_WATCHING && CHILDREN(q) -> relist(q)
  :: ph[q] == Q_WATCHING && !CHILDREN(q) -> step_watch(q)
  :: else
  fi
}

/* zkr__q_restart: start over in the next session */
inline restart(q) {
  drop_watch(q, 0);
  clear_node(q); clear_preds(q);
  cu[q] = 0; lsent[q] = 0;
  ph[q] = Q_CREATING;
  fresh_att(q); fresh_pfx(q);
  lseq[q] = 0;                    /* compared only with the attempt */
  if
  :: MEMBER(q) -> finish(q, R_LOCKLOST)   /* the set starts over */
  :: !MEMBER(q) && conn[CL(q)] -> step_create(q)
  :: !MEMBER(q) && !conn[CL(q)] -> wc[q] = 1
  fi
}

/* zkr__q_lose: a held node is lost; with ZKR__QLOSS_REQUEUE (the
 * election's latch) queued again at the back, in a new attempt */
inline lose(q) {
  drop_watch(q, 0);
  clear_node(q);
  ph[q] = Q_IDLE;
  idle_reset(q);
  qlost[q] = 1;
  printf("MSC: queue %d lost its node\n", q);
#ifdef ELECTION
  qlost[q] = 0;
  restart(q)
#endif
}

#define ACQUIRING(q) (ph[q] == Q_CREATING || ph[q] == Q_LISTING || ph[q] == Q_WATCHING)

/* ---- the completions (one message from ib[c]) ---- */

inline on_create(q) {
  if
  :: at != att[q] || ph[q] != Q_CREATING ->
     /* an abandoned attempt: remove what it made */
     if
     :: rc == ZOK -> nbg[a] = 1
     :: else
     fi
  :: else ->
     if
     :: rc == ZOK ->
        me[q] = a; qgen[q] = b; cu[q] = 0;
        ph[q] = Q_LISTING;
        if
        :: !lsent[q] -> step_list(q)
        :: else
        fi
     :: rc == ZCONNLOSS ->
        if :: lsent[q] -> drop_watch(q, 0) :: else fi;
        cu[q] = 1; cgv[q] = 1; qgen[q] = b;
        wc[q] = 1
     :: rc == ZEXPIRED ->
        if :: lsent[q] -> drop_watch(q, 0) :: else fi;
        cu[q] = 0;
        wc[q] = 1
     fi;
     lsent[q] = 0
  fi
}

inline on_list(q) {
  if
  :: at == att[q] && ph[q] == Q_LISTING && a == lseq[q] &&
     ((b -> a : 0) == cwid[q] || rla[q]) ->
     if
     :: rc == ZOK && rla[q] -> relist(q)
     :: rc == ZOK && !rla[q] -> evaluate(q)
     :: rc != ZOK -> drop_watch(q, 0); wc[q] = 1
     fi
  :: else
  fi
}

inline on_exists(q) {
  if
  :: at == att[q] && ph[q] == Q_WATCHING && a == wid[q] && wid[q] != 0 ->
     /* pred_read_cb: the blocker is read with getData, which sets no
      * watch on a missing node (nothing to remove on the server) */
     if
     :: rc == ZOK -> skip
     :: rc == ZNONODE -> drop_watch(q, 0); pred_gone(q)
     :: else -> wc[q] = 1
     fi
  :: at == att[q] && ph[q] == Q_HELD && a == wid[q] && wid[q] != 0 ->
     /* held_exists_cb (watch_held) */
     if
     :: rc == ZOK -> skip
     :: rc == ZNONODE -> drop_watch(q, 1); lose(q)
     :: else -> drop_watch(q, 0)    /* set again after the reconnection */
     fi
  :: else
  fi
}

/* owner_cb (watch_held): hold only on a node of our current session */
inline on_owner(q) {
  if
  :: at == att[q] && ph[q] == Q_LISTING && m == lseq[q] ->
     if
     :: rc == ZOK && ngen[a] == cgen[CL(q)] && b == qgen[q] -> finish(q, R_OK)
     :: rc == ZOK && !(ngen[a] == cgen[CL(q)] && b == qgen[q]) ->
        printf("MSC: queue %d: node %d is not its session's, queued again\n", q, a);
        nbg[a] = 1; requeue(q)
     :: rc == ZNONODE -> requeue(q)
     :: else -> wc[q] = 1           /* pause; resume lists, checks again */
     fi
  :: else
  fi
}

/* verify_cb: reconnected while holding, our node is looked at again */
inline on_verify(q) {
  if
  :: at == att[q] && ph[q] == Q_HELD ->
     if
     :: rc == ZOK -> arm_held_watch(q)
     :: rc == ZNONODE -> lose(q)
     :: else
     fi
  :: else
  fi
}

inline on_adopt(q) {
  if
  :: at == att[q] && ph[q] == Q_LISTING && adopting[q] ->
     adopting[q] = 0;
     if
     :: rc == ZOK && ngen[a] == cgen[CL(q)] && b == qgen[q] -> step_list(q)
     :: (rc == ZOK && !(ngen[a] == cgen[CL(q)] && b == qgen[q])) || rc == ZNONODE ->
        requeue(q)
     :: else ->
        cu[q] = 1; clear_node(q); ph[q] = Q_CREATING;   /* adopt_later */
        wc[q] = 1
     fi
  :: else
  fi
}

/* a data watch event on node a: the registry hands it to the queue object
 * registered on that node (watch.c), which consumes the registration */
inline on_data_event(c, deleted) {
  q = c * QPC;
  do
  :: q < c * QPC + QPC - 1 && wn[q] != a -> q++
  :: else -> break
  od;
  if
  :: wn[q] == a && wid[q] != 0 && ph[q] == Q_HELD ->
     /* held_watch_cb (watch_held): deleted by another client */
     assert(HELDW(q));
     wid[q] = 0; wn[q] = NONE;
     printf("MSC: queue %d: watch event on its held node %d\n", q, a);
     if
     :: deleted -> lose(q)
     :: else -> arm_held_watch(q)     /* changed: watch again */
     fi
  :: wn[q] == a && wid[q] != 0 && ph[q] != Q_HELD ->
     assert(ph[q] == Q_WATCHING);
     wid[q] = 0; wn[q] = NONE;        /* zkr__q_watch_consumed */
     printf("MSC: queue %d: watch event on node %d\n", q, a);
#ifdef MUTANT_NO_WAKE_CHECK
     finish(q, R_OK)                  /* the event taken as the grant */
#else
     if
     :: deleted -> pred_gone(q)
     :: else -> step_watch(q)         /* changed: look again */
     fi
#endif
  :: else                             /* nobody registered: dropped */
  fi
}

/* children_watch_cb */
inline on_kids(c) {
  q = c * QPC;
  do
  :: q < c * QPC + QPC - 1 && !(cwid[q] != 0 && PAR(q) == a) -> q++
  :: else -> break
  od;
  if
  :: cwid[q] != 0 && PAR(q) == a ->
     if
     :: ph[q] == Q_WATCHING || ph[q] == Q_LISTING ->
        cwid[q] = 0;
        if
        :: ph[q] == Q_WATCHING -> relist(q)
        :: else -> rla[q] = 1
        fi
     :: else
     fi
  :: else
  fi
}

/* state_hook */
inline on_session(c, ev) {
  if
  :: ev == M_LOST -> conn[c] = 0
  :: ev == M_CONN -> conn[c] = 1; cgen[c] = sgen[c]
  :: else
  fi;
#ifdef FREE_ADMISSION
  /* the admission, held all through A_LEASE, is lost with the session
   * (lose() on the admission queue, the first of c's two) */
  if
  :: ev == M_LOST && sa[c] == A_LEASE -> qlost[2 * c] = 1
  :: else
  fi;
#endif
  q = c * QPC;
  do
  :: q < c * QPC + QPC ->
     if
     :: ev == M_RECONN && ACQUIRING(q) && wc[q] -> resume(q)
     :: ev == M_RECONN && ph[q] == Q_HELD && HELDW(q) ->
        /* zkr__q_verify_held (SUSPECT after the SUSPENDED this implies) */
        RQSEND(c)RQ_VERIFY,q,att[q],cgen[c],me[q],0
     :: ev == M_LOST && ph[q] == Q_HELD -> lose(q)
     :: ev == M_LOST && ACQUIRING(q) -> restart(q)
     :: ev == M_CONN && ACQUIRING(q) && wc[q] ->
        cu[q] = 0; ph[q] = Q_CREATING; resume(q)
     :: else
     fi;
     q++
  :: else -> break
  od
}

/* ---- the API (lib/queue.c) ---- */

/* start() */
inline q_start(q) {
  fresh_att(q);
#ifdef SEMAPHORE
  if :: QK(q) == 1 -> lwd[CL(q)] = 0 :: else fi;
#endif
  ph[q] = Q_CREATING;
  cu[q] = 0; cgv[q] = 0; wc[q] = 0; rla[q] = 0; qlost[q] = 0;
  canc[q] = 0;
  fresh_pfx(q);                   /* zkr__q_make_prefix */
  step_create(q)
}

/* zkr__queue_cancel (and the deadline: the same finish) */
inline q_cancel(q) {
  if
  :: ACQUIRING(q) -> canc[q] = 1;
     printf("MSC: queue %d cancelled\n", q);
     finish(q, R_CANCELED)
  :: else
  fi
}

/* zkr__queue_release */
inline q_release(q) {
  if
  :: ph[q] == Q_HELD ->
     drop_watch(q, 0);
     if
     :: !qlost[q] -> nbg[me[q]] = 1
     :: else
     fi;
     clear_node(q);
     ph[q] = Q_IDLE;
     idle_reset(q)
  :: else
  fi;
  qlost[q] = 0
}

/* zkr__guarded_multi: a check op on the holder's node, then the write, as
 * one multi; the server commits both or neither */
inline guarded_write(q) {
  if
  :: me[q] != NONE && nex[me[q]] ->
     /* committed: the node checked is the writer's, of a live session,
      * and by the policy no node the server holds blocks it */
     assert(nown[me[q]] == CL(q) && ngen[me[q]] == sgen[CL(q)]);
     k = 0; j = 0;
     do
     :: k < nnodes ->
        if
        :: nex[k] && k != me[q] && npar[k] == npar[me[q]] ->
#ifdef SEMAPHORE
           j++
#else
           assert(!(SEQ(k) < SEQ(me[q]) && BLOCKS(q, k)))
#endif
        :: else
        fi; k++
     :: else -> break
     od;
     k = 0; j = 0;
     printf("MSC: queue %d: guarded write committed\n", q)
  :: else      /* the check op fails: ZKR_ELOCKLOST, nothing written */
  fi
}

#ifdef SEMAPHORE
/* job_cancel: the acquisition is cancelled, and so is the queue it is in */
inline user_cancel(c) {
  scancel[c] = 1;
  if
  :: sa[c] == A_ADMIT -> q = 2 * c; q_cancel(q)
  :: sa[c] == A_LEASE -> q = 2 * c + 1; q_cancel(q)
  fi
}
#elif defined(MULTILOCK)
/* zkr_multilock_cancel: the members acquiring are cancelled; a set not
 * made yet is not started (attempt(): ml->cancel) */
inline user_cancel(c) {
  mcancel[c] = 1;
  q = 2 * c; q_cancel(q);
  q = 2 * c + 1; q_cancel(q)
}
#else
inline user_cancel(c) { q = c; q_cancel(q) }
#endif

/* ================================================================ */
/* the environment: faults, at most MAXF in a run; with LIVE it may stop at
 * any time (so weak fairness never forces a fault); a safety search needs
 * no stop (a stopped env is one that takes no more faults) */

/* the replies of what was in flight are lost: the client library
 * completes each request with a connection loss, in order (those the
 * client would ignore are not sent, as in srv_apply) */
#define LOSE_REPLIES(c) \
  if \
  :: typ == RQ_CREATE && KEEP_CREATE(0) -> IBSEND(c)M_CREATE,q,at,ZCONNLOSS,NONE,g,0 \
  :: typ == RQ_LIST && KEEP_LIST -> IBSEND(c)M_LIST,q,at,ZCONNLOSS,a,b,0 \
  :: typ == RQ_EXISTS && KEEP_EXISTS -> IBSEND(c)M_EXISTS,q,at,ZCONNLOSS,b,g,0 \
  :: typ == RQ_ADOPT && KEEP_ADOPT -> IBSEND(c)M_ADOPT,q,at,ZCONNLOSS,a,g,0 \
  :: typ == RQ_OWNER && KEEP_OWNER -> IBSEND(c)M_OWNER,q,at,ZCONNLOSS,a,g,b \
  :: typ == RQ_VERIFY && KEEP_VERIFY -> IBSEND(c)M_VERIFY,q,at,ZCONNLOSS,a,g,0 \
  :: (typ == RQ_MCREATE || typ == RQ_SCREATE) && KEEP_MSET(0) -> IBSEND(c)M_MCREATE,q,at,ZCONNLOSS,NONE,g,b \
  :: typ == RQ_MFIND && KEEP_MSET(0) -> IBSEND(c)M_MFIND,q,at,ZCONNLOSS,NONE,g,NONE \
  :: else \
  fi

/* Splitting a search that does not fit in one run (model/README.md,
 * "Splitting a search"): -DFIRST_C0, the first fault is of contender 0
 * (its session, its connection, its node, its user), the others left to
 * symmetry; -DFIRST_WHO=k, the first fault is contender k's; -DFIRST_CLASS=k,
 * the first fault is of class k (1 expiry, 2 connection loss, 3 delete,
 * 4 setData, 5 cancel); -DSECOND_CLASS=k, the second fault is;
 * -DSECOND_WHO=k, the second fault is contender k's */
#if defined(FIRST_C0)
#define F_WHO1(i) (faults > 0 || (i) == 0)
#elif defined(FIRST_WHO)
#define F_WHO1(i) (faults > 0 || (i) == FIRST_WHO)
#else
#define F_WHO1(i) 1
#endif
#ifdef SECOND_WHO
#define F_WHO2(i) (faults != 1 || (i) == SECOND_WHO)
#else
#define F_WHO2(i) 1
#endif
#define F_WHO(i) (F_WHO1(i) && F_WHO2(i))
#ifdef FIRST_CLASS
#define F_CLASS1(k) (faults != 0 || FIRST_CLASS == (k))
#else
#define F_CLASS1(k) 1
#endif
#ifdef SECOND_CLASS
#define F_CLASS2(k) (faults != 1 || SECOND_CLASS == (k))
#else
#define F_CLASS2(k) 1
#endif
#define F_CLASS(k) (F_CLASS1(k) && F_CLASS2(k))
/* -DFIRST_MADE=m, -DSECOND_MADE=m: the first (second) fault is an expiry
 * of a session in which its contender had made m nodes (2: two or more;
 * slots keep owner and session, so the state records it) */
#define SESS_NODE(k, i) ((k) < nnodes && nown[k] == (i) && ngen[k] == sgen[i])
#define MADE_K(k, i) + SESS_NODE(k, i)
#define MADE(i) (0 FOR_N2(MADE_K, i))
#define MADE_OF(i, m) (((m) >= 2 && MADE(i) >= 2) || ((m) < 2 && MADE(i) == (m)))
#ifdef FIRST_MADE
#define F_MADE1(i) (faults != 0 || MADE_OF(i, FIRST_MADE))
#else
#define F_MADE1(i) 1
#endif
#ifdef SECOND_MADE
#define F_MADE2(i) (faults != 1 || MADE_OF(i, SECOND_MADE))
#else
#define F_MADE2(i) 1
#endif
/* -DFIRST_ELO=a -DFIRST_EHI=b (and SECOND_): the first (second) fault is
 * an expiry of a session whose last node made is in slots a to b (none
 * of its nodes above b, one at a or above; the state keeps each slot's
 * owner and session, so it records the part) */
#ifdef FIRST_ELO
#define ABOVE_E1(k, i) + ((k) > FIRST_EHI && SESS_NODE(k, i))
#define FROM_E1(k, i) + ((k) >= FIRST_ELO && SESS_NODE(k, i))
#define F_ES1(i) (faults != 0 || ((0 FOR_N2(ABOVE_E1, i)) == 0 && (0 FOR_N2(FROM_E1, i)) > 0))
#else
#define F_ES1(i) 1
#endif
#ifdef SECOND_ELO
#define ABOVE_E2(k, i) + ((k) > SECOND_EHI && SESS_NODE(k, i))
#define FROM_E2(k, i) + ((k) >= SECOND_ELO && SESS_NODE(k, i))
#define F_ES2(i) (faults != 1 || ((0 FOR_N2(ABOVE_E2, i)) == 0 && (0 FOR_N2(FROM_E2, i)) > 0))
#else
#define F_ES2(i) 1
#endif
#if defined(FIRST_ELO) || defined(SECOND_ELO)
#define G_C(i) (F_CLASS(1) && F_WHO(i) && F_MADE1(i) && F_MADE2(i) && F_ES1(i) && F_ES2(i))
#elif defined(FIRST_MADE) || defined(SECOND_MADE)
#define G_C(i) (F_CLASS(1) && F_WHO(i) && F_MADE1(i) && F_MADE2(i))
#else
#define G_C(i) (F_CLASS(1) && F_WHO(i))
#endif
#define G_CL(i) (F_CLASS(2) && F_WHO(i) && nempty(rq[i]))
/* -DFIRST_DLO=a -DFIRST_DHI=b (and SECOND_): the first (second) fault is
 * a delete of a node in slots a to b (slots follow creation order, and
 * the state keeps which node is gone) */
#ifdef FIRST_DLO
#define F_DS1(i) (faults != 0 || ((i) >= FIRST_DLO && (i) <= FIRST_DHI))
#else
#define F_DS1(i) 1
#endif
#ifdef SECOND_DLO
#define F_DS2(i) (faults != 1 || ((i) >= SECOND_DLO && (i) <= SECOND_DHI))
#else
#define F_DS2(i) 1
#endif
#if defined(FIRST_DLO) || defined(SECOND_DLO)
#define G_DEL(i) (F_CLASS(3) && F_WHO(nown[i]) && nex[i] && F_DS1(i) && F_DS2(i))
#else
#define G_DEL(i) (F_CLASS(3) && F_WHO(nown[i]) && nex[i])
#endif
#define G_SET(i) (F_CLASS(4) && F_WHO(nown[i]) && nex[i] && ndw[i] != 0)
#define OPT_C(i) :: G_C(i) -> c = i
#define OPT_CL(i) :: G_CL(i) -> c = i
#define OPT_DEL(i) :: G_DEL(i) -> n = i
#define OPT_SET(i) :: G_SET(i) -> n = i
#if defined(MULTILOCK)
/* zkr_multilock_cancel: only while acquiring */
#define G_CANC(i) (F_CLASS(5) && F_WHO(i) && ms[i] != 0 && ms[i] != MS_END && !mcancel[i])
#elif defined(FREE_ADMISSION)
/* job_cancel while leasing (a cancel while admitting ends the acquisition
 * with no lease node: the same, for the lease side, as a contender that
 * is never admitted, which needs no fault here) */
#define G_CANC(i) (F_CLASS(5) && F_WHO(i) && sa[i] == A_LEASE)
#elif defined(SEMAPHORE)
/* job_cancel: only an acquisition that has started and not ended */
#define G_CANC(i) (F_CLASS(5) && F_WHO(i) && (sa[i] == A_ADMIT || sa[i] == A_LEASE))
#else
/* zkr__queue_cancel has an effect only while acquiring (else EINVAL) */
#define G_CANC(i) (F_CLASS(5) && F_WHO(i) && ust[i] == 0 && ACQUIRING(i))
#endif
#define OPT_CANC(i) :: G_CANC(i) -> c = i
#ifdef FREE_ADMISSION
/* a third party deletes the admission node of a contender that is
 * leasing: the full model's lease_waits watch (or a verify after a
 * reconnection) may make it LOST at any later moment, and acq_restart
 * runs; here the loss is marked at once, and the restart is the client's
 * step as ever (any moment after: a superset) */
#define G_ADEL(i) (F_CLASS(3) && F_WHO(i) && sa[i] == A_LEASE && !qlost[2 * (i)])
#define OPT_ADEL(i) :: G_ADEL(i) -> c = i
#endif
/* a split search: the env takes a fault only when one is allowed (it
 * must not stop inside the choice, which is not an end state) */
#if defined(FIRST_C0) || defined(FIRST_WHO) || defined(FIRST_CLASS) || defined(SECOND_CLASS) || defined(SECOND_WHO)
#define E_C(i) || G_C(i)
#define E_CL(i) || G_CL(i)
#define E_DEL(i) || G_DEL(i)
#define E_SET(i) || G_SET(i)
#define E_CANC(i) || G_CANC(i)
#ifdef FREE_ADMISSION
#define E_ADEL(i) || G_ADEL(i)
#define FAULT_OK (0 FOR_C(E_C) FOR_C(E_CL) FOR_N(E_DEL) FOR_N(E_SET) FOR_C(E_CANC) FOR_C(E_ADEL))
#else
#define FAULT_OK (0 FOR_C(E_C) FOR_C(E_CL) FOR_N(E_DEL) FOR_N(E_SET) FOR_C(E_CANC))
#endif
#define F_BEGIN atomic {   /* the check and the choice in one step */
#define F_END }
#else
#define FAULT_OK 1
#define F_BEGIN
#define F_END
#endif

active proctype env() {
  byte c, typ, q, at, g, a, b, rc, n, k, i, j;
  short m;
end:
  do
  :: F_BEGIN faults < MAXF && FAULT_OK ->
     if
     :: atomic {   /* session expiry: the server deletes the session's
                    * ephemeral nodes at once; the client learns it (LOST)
                    * after the failures of what it had in flight, and a
                    * new session follows (CONNECTED) */
          if FOR_C(OPT_C) fi;
          faults++; n = 0;
          printf("MSC: fault: session of contender %d expires\n", c);
          do
          :: n < nnodes ->
             if
             :: nex[n] && nown[n] == c && ngen[n] == sgen[c] -> srv_delete(n)
             :: else
             fi;
             ndw[n] = ndw[n] & ~(1 << c); n++
          :: else -> break
          od;
          k = 0;
          do :: k < NPAR -> cwm[k] = cwm[k] & ~(1 << c); k++ :: else -> break od;
          do
          :: rq[c]?typ,q,at,g,a,b -> LOSE_REPLIES(c)
          :: empty(rq[c]) -> break
          od;
          IBSEND(c)M_LOST,0,0,0,0,0,0;
          sgen[c]++;
          IBSEND(c)M_CONN,0,0,0,0,0,0;
          c = 0; typ = 0; q = 0; at = 0; g = 0; a = 0; b = 0; n = 0; k = 0 }
     :: atomic {   /* connection loss, same session: of what was in flight
                    * a prefix may have been applied; every reply of it is
                    * lost; then RECONNECTED */
          if FOR_C(OPT_CL) fi;
          faults++; i = 1;
          printf("MSC: fault: contender %d loses its connection\n", c);
          do
          :: rq[c]?typ,q,at,g,a,b ->
             if
             :: i -> srv_apply(c, 1)
             :: i = 0
             fi;
             LOSE_REPLIES(c)
          :: empty(rq[c]) -> break
          od;
          IBSEND(c)M_RECONN,0,0,0,0,0,0;
          c = 0; typ = 0; q = 0; at = 0; g = 0; a = 0; b = 0; rc = 0; n = 0; k = 0; m = 0; i = 0 }
     :: atomic {   /* a third party deletes any node */
          if FOR_N(OPT_DEL) fi;
          faults++;
          printf("MSC: fault: a third party deletes node %d\n", n);
          srv_delete(n); n = 0; k = 0 }
#ifdef FREE_ADMISSION
     :: atomic {   /* a third party deletes a leasing contender's admission
                    * node (there are no admission nodes here) */
          if FOR_C(OPT_ADEL) fi;
          faults++;
          printf("MSC: fault: a third party deletes contender %d's admission node\n", c);
          qlost[2 * c] = 1; c = 0 }
#endif
     :: atomic {   /* a third party sets data on any node (Curator's
                    * revocation does); on a node nobody watches that
                    * changes nothing the model has, so only those */
          if FOR_N(OPT_SET) fi;
          faults++; k = 0;
          printf("MSC: fault: a third party sets data on node %d\n", n);
          do
          :: k < NC -> if
                       :: ndw[n] & (1 << k) -> IBSEND(k)M_CHANGED,0,0,0,n,0,0
                       :: else
                       fi; k++
          :: else -> break
          od;
          ndw[n] = 0; n = 0; k = 0 }
     :: atomic {   /* the user cancels a waiting contender, or its deadline
                    * passes: done here, in the fault's step (the user's
                    * call and deadline_fired take the queue's lock, so
                    * they are one step between two callbacks) */
          if FOR_C(OPT_CANC) fi;
          faults++;
          printf("MSC: fault: contender %d's user cancels (or its deadline passes)\n", c);
          user_cancel(c);
          c = 0; q = 0; k = 0; j = 0 }
     fi F_END
#ifdef LIVE
  :: break      /* stop: weak fairness never forces a fault */
#endif
  od
}

/* ================================================================ */
/* a contender: the ZooKeeper completion thread (one message at a time,
 * in order) and its user (cancel, guarded write, release) */

inline dispatch(c) {
  if
  :: typ == M_CREATE -> on_create(q)
  :: typ == M_LIST -> on_list(q)
  :: typ == M_EXISTS -> on_exists(q)
  :: typ == M_ADOPT -> on_adopt(q)
  :: typ == M_DELETED -> on_data_event(c, 1)
  :: typ == M_CHANGED -> on_data_event(c, 0)
  :: typ == M_KIDS -> on_kids(c)
  :: typ == M_OWNER -> on_owner(q)
  :: typ == M_VERIFY -> on_verify(q)
  :: typ >= M_RECONN && typ <= M_CONN -> on_session(c, typ)
#ifdef MULTILOCK
  :: typ == M_MCREATE -> on_mset(c, 0)
  :: typ == M_MFIND -> on_mset(c, 1)
#endif
  fi
}

#define RESET_LOCALS typ = 0; q = 0; at = 0; rc = 0; a = 0; b = 0; n = 0; k = 0; j = 0; sent = 0; m = 0

#ifdef MULTILOCK
/* make_set: the set's transaction, once connected (a new prefix, a new
 * set attempt); with MUTANT_SEQ_CREATE the first member's create alone */
inline ml_send(c) {
  if
  :: conn[c] ->
     assert(matt[c] < 255); matt[c]++;
     assert(mpfx[c] < 255); mpfx[c]++;
     mgen[c] = cgen[c];
#ifdef MUTANT_SEQ_CREATE
     RQSEND(c)RQ_SCREATE,2 * c,matt[c],cgen[c],mpfx[c],0;
#else
     RQSEND(c)RQ_MCREATE,2 * c,matt[c],cgen[c],mpfx[c],0;
#endif
     ms[c] = MS_SENT
  :: else -> ms[c] = MS_MAKE
  fi
}

/* attempt(): the set made, its members queued (zkr__queue_start_member:
 * a new attempt, the node adopted: its owner read, then listed) */
inline ml_start(c, n0, n1, gn) {
  if
  :: mcancel[c] ->   /* cancelled meanwhile: not started, nodes deleted */
     nbg[n0] = 1; nbg[n1] = 1;
     ms[c] = MS_END; ust[c] = 2
  :: else ->
     q = 2 * c;
     do
     :: q < 2 * c + 2 ->
        fresh_att(q);
        ph[q] = Q_LISTING; canc[q] = 0; qlost[q] = 0;
        cu[q] = 0; cgv[q] = 0; wc[q] = 0; rla[q] = 0; lseq[q] = 0;
        qgen[q] = gn; cgv[q] = 1; pfx[q] = mpfx[c];   /* zkr__q_uuid_of */
        if :: q == 2 * c -> me[q] = n0 :: else -> me[q] = n1 fi;
        step_adopt(q); q++
     :: else -> break
     od;
     ms[c] = MS_WAIT
  fi
}

/* the reply of the set's transaction (find = 0) or of the search by
 * prefix after its lost reply (find = 1): a, m the nodes on A and B */
inline on_mset(c, find) {
  if
  :: at != matt[c] || ms[c] != (find -> MS_FIND : MS_SENT) ->
     /* an abandoned attempt: remove what it made */
     if
     :: !find && rc == ZOK -> nbg[a] = 1;
#ifndef MUTANT_SEQ_CREATE
        nbg[m] = 1
#else
        skip
#endif
     :: else
     fi
  :: else ->
     if
     :: rc == ZOK && !find ->
#ifdef MUTANT_SEQ_CREATE
        if
        :: m == 0 ->   /* the first member's node: now the second's */
           mn0[c] = a;
           RQSEND(c)RQ_SCREATE,2 * c,matt[c],cgen[c],mpfx[c],1
        :: else -> ml_start(c, mn0[c], a, b)
        fi
#else
        ml_start(c, a, m, b)
#endif
     :: rc == ZOK && find && a != NONE && m != NONE -> ml_start(c, a, m, b)
     :: rc == ZOK && find && (a == NONE || m == NONE) ->
        /* not made (or a node deleted since: the one found deleted) */
        if :: a != NONE -> nbg[a] = 1 :: else fi;
        if :: m != NONE -> nbg[m] = 1 :: else fi;
        ml_send(c)
     :: rc == ZCONNLOSS -> ms[c] = MS_LOSTR
     :: rc == ZEXPIRED -> ms[c] = MS_MAKE
     fi
  fi
}

/* the multi-lock: each contender acquires one set of two mutexes (paths
 * A and B), makes one guarded write on each while holding, and releases */
proctype client(byte c) {
  byte typ, q, at, rc, a, b, n, k, j, sent, r;
  short m;
end:
  do
  :: atomic { nempty(ib[c]) -> ib[c]?typ,q,at,rc,a,b,m; dispatch(c); RESET_LOCALS }
  :: atomic { ms[c] == MS_MAKE && (conn[c] || mcancel[c]) ->
       if
       :: mcancel[c] -> ms[c] = MS_END; ust[c] = 2
       :: else -> ml_send(c)
       fi; RESET_LOCALS }
  :: atomic { ms[c] == MS_LOSTR && conn[c] ->
       /* make_set after a lost reply: a new session made it go with the
        * old one; else look for it by prefix */
       if
       :: cgen[c] != mgen[c] -> ml_send(c)
       :: else ->
          RQSEND(c)RQ_MFIND,2 * c,matt[c],cgen[c],mpfx[c],0;
          ms[c] = MS_FIND
       fi; RESET_LOCALS }
  :: atomic { ms[c] == MS_WAIT &&
              ((res[2 * c] != 0 && res[2 * c + 1] != 0) ||
               (res[2 * c] != 0 && res[2 * c] != R_OK) ||
               (res[2 * c + 1] != 0 && res[2 * c + 1] != R_OK)) ->
       /* the members' results: the first failure ends the other */
       r = R_OK;
       if
       :: res[2 * c] != 0 && res[2 * c] != R_OK -> r = res[2 * c]
       :: else ->
          if
          :: res[2 * c + 1] != 0 && res[2 * c + 1] != R_OK -> r = res[2 * c + 1]
          :: else
          fi
       fi;
       if
       :: r != R_OK ->
          q = 2 * c; q_cancel(q);
          q = 2 * c + 1; q_cancel(q)
       :: else
       fi;
       if
       :: res[2 * c] != 0 && res[2 * c + 1] != 0 ->
          if
          :: r == R_OK && mcancel[c] -> r = R_CANCELED   /* attempt(): ml->cancel */
          :: else
          fi;
          if
          :: r == R_OK ->   /* the set holds: a guarded write on each */
             ust[c] = 1;
             q = 2 * c; if :: ph[q] == Q_HELD -> guarded_write(q) :: else fi;
             q = 2 * c + 1; if :: ph[q] == Q_HELD -> guarded_write(q) :: else fi;
             ms[c] = MS_END
          :: else ->
             q = 2 * c; if :: res[q] == R_OK -> q_release(q) :: else fi;
             q = 2 * c + 1; if :: res[q] == R_OK -> q_release(q) :: else fi;
             if
             :: r == R_LOCKLOST && !mcancel[c] -> ms[c] = MS_MAKE   /* again */
             :: else -> ms[c] = MS_END; ust[c] = 2
             fi
          fi;
          res[2 * c] = 0; res[2 * c + 1] = 0
       :: else   /* (a failure cancelled the other: both are done) */
          assert(false)
       fi;
       r = 0; RESET_LOCALS }
  :: atomic { ust[c] == 1 ->
       q = 2 * c; q_release(q); q = 2 * c + 1; q_release(q);
       ust[c] = 2; RESET_LOCALS }
  od
}

/* at quiescence (nothing else can move: every fault taken, every reply
 * delivered) every contender has finished: no set waits for ever */
active proctype watchdog() {
  byte i;
  timeout ->
  do
  :: i < NC -> assert(ust[i] == 2); i++
  :: else -> break
  od
}
#elif !defined(SEMAPHORE)
/* mutex, rwlock: one queue object; the user acquires (blocking: started
 * in init), makes one guarded write while holding, and releases */
proctype client(byte c) {
  byte typ, q, at, rc, a, b, n, k, j, sent;
  short m;
end:
  do
  :: atomic { nempty(ib[c]) -> ib[c]?typ,q,at,rc,a,b,m; dispatch(c); RESET_LOCALS }
  :: atomic { ust[c] == 0 && res[c] != 0 ->
       /* the user gets the result; holding, it makes one guarded write
        * (at any later time: this step waits as long as any other) */
       if
       :: res[c] == R_OK -> ust[c] = 1; q = c;
          if
          :: ph[q] == Q_HELD -> guarded_write(q)
          :: else
          fi
       :: else -> ust[c] = 2
       fi;
       res[c] = 0; RESET_LOCALS }
#ifndef ELECTION
  :: atomic { ust[c] == 1 -> q = c; q_release(q); ust[c] = 2; RESET_LOCALS }
#else
  /* the election: a leader stays (a later term, after a loss queued again
   * by the engine, makes its guarded write too: the result step above
   * takes each new grant), or resigns once: leaves the leadership and
   * joins again at the back (zkr_election_resign: release, then start) */
  :: atomic { c < RESIGN && ust[c] == 1 && res[c] == 0 && ph[c] == Q_HELD && !rsg[c] ->
       rsg[c] = 1; q = c;
       printf("MSC: queue %d resigns\n", q);
       q_release(q); q_start(q); RESET_LOCALS }
  :: atomic { ust[c] == 1 && res[c] != 0 ->    /* a later term */
       q = c;
       if
       :: res[c] == R_OK && ph[q] == Q_HELD -> guarded_write(q)
       :: else
       fi;
       res[c] = 0; RESET_LOCALS }
#endif
  od
}
#else
/* the semaphore (lib/semaphore.c): one acquisition of one lease: the
 * admission queue (q = 2c, the mutex policy on locks/), then the lease
 * queue (q = 2c+1, count_all on leases/ with a children watch), then the
 * admission node is released and the lease handed out */

/* acq_finish */
inline acq_finish(c, r) {
  if
  :: sa[c] == A_LEASE -> q = 2 * c; q_release(q)
  :: else
  fi;
  if
  :: r != R_OK -> q = 2 * c + 1; q_release(q); ust[c] = 2
  :: else -> assert(!scancel[c]); ust[c] = 1;
     q = 2 * c + 1;
     if
     :: ph[q] == Q_HELD -> guarded_write(q)   /* one guarded write */
     :: else
     fi
  fi;
  sa[c] = A_END
}

/* acq_kick */
inline acq_kick(c) {
  if
  :: scancel[c] -> acq_finish(c, R_CANCELED)
#ifdef FREE_ADMISSION
  :: else -> sa[c] = A_ADMIT          /* admitted at some later step */
#else
  :: else -> sa[c] = A_ADMIT; aw[c] = 0; q = 2 * c; q_start(q)
#endif
  fi
}

proctype client(byte c) {
  byte typ, q, at, rc, a, b, n, k, j, sent, r;
  short m;
end:
  do
  :: atomic { nempty(ib[c]) -> ib[c]?typ,q,at,rc,a,b,m; dispatch(c); RESET_LOCALS }
#ifdef FREE_ADMISSION
  /* adm_done without the admission queue: admitted at any moment,
   * whoever else is (the mutex's guarantee is dropped, not assumed) */
  :: atomic { sa[c] == A_ADMIT ->
       assert(!scancel[c] && !qlost[2 * c]);
       sa[c] = A_LEASE; q = 2 * c + 1; q_start(q); RESET_LOCALS }
#else
  :: atomic { sa[c] == A_ADMIT && res[2 * c] != 0 ->   /* adm_done */
       r = res[2 * c]; res[2 * c] = 0;
       if
       :: r != R_OK -> acq_finish(c, r)
       :: r == R_OK && scancel[c] -> sa[c] = A_LEASE; acq_finish(c, R_CANCELED)
       :: r == R_OK && !scancel[c] && qlost[2 * c] ->
          q = 2 * c; q_release(q); acq_kick(c)
       :: r == R_OK && !scancel[c] && !qlost[2 * c] ->
          sa[c] = A_LEASE; q = 2 * c + 1; q_start(q)
       fi;
       r = 0; RESET_LOCALS }
#endif
  :: atomic { sa[c] == A_LEASE && res[2 * c + 1] != 0 ->   /* lease_done */
       r = res[2 * c + 1]; res[2 * c + 1] = 0;
       if
       :: srestart[c] && !scancel[c] ->
          srestart[c] = 0;
          q = 2 * c + 1; q_release(q);
          q = 2 * c; q_release(q);
          acq_kick(c)
       :: else ->
          if
          :: r == R_OK && scancel[c] -> acq_finish(c, R_CANCELED)   /* next_lease */
          :: else -> acq_finish(c, r)
          fi
       fi;
       r = 0; RESET_LOCALS }
  :: atomic { swt[c] ->   /* lease_waits: watch the admission node */
       swt[c] = 0;
       if
       :: sa[c] == A_LEASE && !srestart[c] ->
#ifndef MUTANT_NO_ADM_WATCH
          aw[c] = 1; q = 2 * c; arm_held_watch(q)
#else
          skip
#endif
       :: else
       fi;
       RESET_LOCALS }
  :: atomic { sa[c] == A_LEASE && !srestart[c] &&
              (qlost[2 * c] || qlost[2 * c + 1]) ->
       /* adm_state / lease_state: a node got so far is LOST: acq_restart */
       srestart[c] = 1;
       q = 2 * c + 1; q_cancel(q);
       RESET_LOCALS }
  :: atomic { ust[c] == 1 -> q = 2 * c + 1; q_release(q); ust[c] = 2; RESET_LOCALS }
  od
}
#endif

init {
  byte i0, k, j, sent;
  atomic {
#ifdef RWLOCK
    /* each contender draws its role: reader or writer. The contenders
     * are symmetric (same code, same faults, nothing depends on the
     * index), so the roles are drawn up to a renaming of the contenders:
     * readers first (writer[] non-decreasing), NC + 1 draws instead of
     * 2^NC. The liveness claim is about contender 0, so there its role is
     * drawn freely and only the others' are ordered. */
#ifdef LIVE
    if :: writer[0] = 1 :: writer[0] = 0 fi;
    i0 = 1;
#else
    i0 = 0;
#endif
    j = i0;   /* the first of those drawn in order */
    do
    :: i0 < NC ->
       if
       :: writer[i0] = 1
       :: i0 == j || writer[i0 - 1] == 0 -> writer[i0] = 0
       fi; i0++
    :: else -> break
    od;
    i0 = 0; j = 0;
#endif
    do
    :: i0 < NQ -> me[i0] = NONE; p1[i0] = NONE; p2[i0] = NONE; wn[i0] = NONE; i0++
    :: else -> break
    od;
    i0 = 0;
    do
    :: i0 < NC -> conn[i0] = 1; i0++
    :: else -> break
    od;
    /* every contender starts at once (the user's zkr__queue_start); when
     * each create reaches the server is still free: the server takes the
     * connections' requests in any order */
    i0 = 0;
    do
    :: i0 < NC ->
#ifdef SEMAPHORE
       sa[i0] = A_ADMIT;
#endif
#ifdef MULTILOCK
       ml_send(i0);
#elif !defined(FREE_ADMISSION)
       q_start(i0 * QPC);
#endif
       i0++
    :: else -> break
    od;
    i0 = 0;
    do
    :: i0 < NC -> run client(i0); i0++
    :: else -> break
    od;
    i0 = 0; k = 0; j = 0; sent = 0
  }
}

/* ================================================================ */
/* liveness: a waiter none of whose blockers is left (by its policy, on
 * the server) eventually stops waiting: it holds, or its attempt ended.
 * Checked for contender 0; the contenders are symmetric (same code, same
 * faults, roles drawn by each), so it stands for each of them. */
#ifdef LIVE
#define WAITING(q) (ph[q] == Q_LISTING || ph[q] == Q_WATCHING)
#define MINE(q) (me[q] != NONE && nex[me[q]])
#define NOBLK_A(k) && !(nex[k] && npar[k] == npar[me[0]] && k != me[0] && SEQ(k) < SEQ(me[0]) && BLOCKS(0, k))
#define FREE_A (WAITING(0) && MINE(0) FOR_N(NOBLK_A))
#define LIVE_A (FREE_A -> <> !WAITING(0))
#ifdef SEMAPHORE
#define OTHER_L(k) + (nex[k] && npar[k] == 1 && k != me[1])
#define FREE_L (WAITING(1) && MINE(1) && (0 FOR_N(OTHER_L)) + 1 <= LIMIT)
#define LIVE_B (FREE_L -> <> !WAITING(1))
#elif defined(ELECTION)
/* and a leader whose node is gone (deleted by anyone, or its session's)
 * eventually stops leading: watch_held, verify_held, LOST */
#define DEPOSED (ph[0] == Q_HELD && me[0] != NONE && !nex[me[0]])
#define LIVE_B (DEPOSED -> <> !DEPOSED)
#endif
/* -DLIVE_PART=k (semaphore, election): the claim's k-th conjunct alone.
 * A run fails the claim when it fails one conjunct, so the two parts
 * together check it; each stores the states paired with the claim's
 * initial state and those of its own accepting branch only. */
#if !defined(LIVE_B) || (defined(LIVE_PART) && LIVE_PART == 1)
ltl live { [] LIVE_A }
#elif defined(LIVE_PART)
ltl live { [] LIVE_B }
#else
ltl live { [] (LIVE_A && LIVE_B) }
#endif
#endif
