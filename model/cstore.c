/* model/cstore.c - a compact state store for spin's pan, put into the
 * pan.h and pan.c that spin writes by model/pan-hc: the part above the
 * STORE line before spin's struct H_el in pan.h (which it replaces under
 * -DCSTORE), the part below it before spin's h_store() in pan.c
 * (likewise). Each part ends in an #else that pan-hc closes after spin's
 * own definition, so without -DCSTORE pan compiles as spin wrote it.
 * Not a C file on its own. */
#ifdef CSTORE
/* model/pan-hc, -DCSTORE=MB: a state in the compact store is 20 bytes,
 * a slot of one flat table (no chain pointer, no per-state allocation):
 * the stack tag and the depth, then the 16 bytes spin's hash compaction
 * keeps (acceptance and fairness marks, the 96-bit signature). */
struct H_el {
	unsigned char tagged;	/* V_A and A_V bits only (S_A > 0) */
	unsigned char cs_pad;
	unsigned short D;	/* depth, for the cycle's start in a trail */
	unsigned int state;	/* the first of 16 bytes */
};
#else
/* STORE */
#ifdef CSTORE
/* model/pan-hc, -DCSTORE=MB: h_store over a table of MB megabytes
 * allocated at the start, open addressing with linear probing from an
 * index taken from K1, so two states are one exactly when the chained
 * store would call them one (K1 and 32 bits of K2 equal). Only the
 * configuration of the by-hand liveness searches is supported: hash
 * compaction, acceptance and fairness marks, one core. A slot is empty
 * while its first byte (the _a_t marks, never 0 once stored) is 0. The
 * table is full at 90% of its slots: the search then ends as at its
 * memory limit, with "out of memory" in its output. */
#if !defined(HC) || defined(SAFETY) || defined(NOCOMP) || defined(BITSTATE) \
 || defined(COLLAPSE) || defined(MA) || defined(REACH) || defined(BCS) \
 || NCORE>1 || defined(BFS) || defined(BFS_PAR) || defined(TRIX) \
 || defined(AUTO_RESIZE) || !defined(FULLSTACK) || !defined(NO_RESIZE)
#error "-DCSTORE: for -DHC4 -DNO_RESIZE liveness searches (pan -a) only"
#endif
#define CS_W	20
static uchar *cs_tab;
static ulong cs_slots, cs_used, cs_max;
#if defined(CANON) || defined(CANON_COUNT)
static ulong cn_canons;	/* states stored renumbered (-DCANON, below) */
#endif
#ifndef NOFAIR
/* the fairness mark of the current count: its byte in the 16 (after
 * _a_t's) and its bit, as spin's h_store computes them */
static void
cs_fair_mark(uint *ci, uint *bit)
{	uint c = now._cnt[now._a_t&1] / 8;
	uint b = now._cnt[now._a_t&1] - 8*c;
	if (now._a_t&1)
	{	c = (NFAIR - 1) - c;
		b = 7 - b;
	}
	*ci = c + 1;
	*bit = 1 << b;
}
#endif
/* The table, zeroed, counted against -DMEMLIM as pan's own memory is.
 * Every h_store looks at a random slot of it, so on a table of many
 * gigabytes in 4 KB pages nearly each look misses the TLB and walks page
 * tables that no cache holds. Where the system has transparent huge
 * pages in "madvise" mode (Debian's default), the table is aligned to
 * 2 MB and asked to be backed by them before it is first touched; the
 * kernel may refuse, and the search is then the same. Measured on a
 * virtual machine, this shortens a large table's start (its zeroing)
 * and not the search itself. */
static int cs_huge;
#if defined(__linux__)
#include <sys/mman.h>
#endif
static uchar *
cs_alloc(ulong n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	const ulong a = (ulong) 2 << 20;
	uchar *raw = (uchar *) Malloc(n + a);
	uchar *t = (uchar *) (((ulong) raw + a - 1) & ~(a - 1));
	cs_huge = (n >= a && madvise(t, (n / a) * a, MADV_HUGEPAGE) == 0);
	memset(t, 0, n);
	return t;
#else
	return (uchar *) emalloc(n);
#endif
}
#if defined(CANON) && defined(CANON_COUNT)
#error "-DCANON stores canonical forms, -DCANON_COUNT counts them beside a plain search: one"
#endif
#ifdef CANON
static void
cn_report(void)
{	printf("pan: -DCANON: %lu lookups by a renumbered form (canonical form from fault %d)\n",
		cn_canons, (int) CANON_FROM);
}
#endif
#ifdef CANON_COUNT
/* -DCANON_COUNT=MB: a plain search that also counts the canonical forms
 * of the states it stores, in a side table of MB megabytes (a check of
 * -DCANON: its search must store exactly this many states) */
static uchar *cc_tab;
static ulong cc_slots, cc_used;
static void
cn_report(void)
{	printf("pan: -DCANON_COUNT: %lu canonical forms (from fault %d), %lu lookups by a renumbered form\n",
		cc_used, (int) CANON_FROM, cn_canons);
}
#endif
static void
cs_init(void)
{	cs_slots = (ulong) (((double) CSTORE * 1048576.) / CS_W);
	cs_max = (cs_slots / 10) * 9;
	if (cs_slots < 16 || cs_slots >= ((ulong) 1 << 40))
	{	printf("pan: -DCSTORE=%d: not a table size\n", (int) CSTORE);
		pan_exit(1);
	}
	cs_tab = cs_alloc(cs_slots * CS_W);
#if defined(CANON) || defined(CANON_COUNT)
	atexit(cn_report);
#endif
#ifdef CANON_COUNT
	cc_slots = (ulong) (((double) CANON_COUNT * 1048576.) / 16);
	cc_tab = cs_alloc(cc_slots * 16);
#endif
	printf("pan: compact store, %lu slots of %d bytes (%g MB), full at %lu%s\n",
		cs_slots, CS_W, (double) cs_slots * CS_W / 1048576., cs_max,
		cs_huge ? ", huge pages asked for" : "");
}
#if defined(CANON) || defined(CANON_COUNT)
/* model/pan-hc -DCANON (with -DCSTORE): a state is stored and looked up
 * by its canonical form, from the fault count CANON_FROM on (pan-hc sets
 * it: 0, or the last fault a slot split's switch is about, whose guard
 * reads the slots' history until that fault has come). The model keeps
 * a node's slot for good and takes slots in creation order; the engine
 * and the server compare slots only for equality and by their order, and
 * read a node that no longer exists only through a reference to it (a
 * queue's node, predecessor or watched node, a node or children mask in
 * a request or reply in flight) or a pending background delete. So a
 * state is searched the same after the slots nobody refers to any more
 * are taken out and the rest renumbered in their order: the canonical
 * form. Two states with one canonical form have the same futures, step
 * for step (the renaming is a bisimulation), and the liveness claim and
 * the asserts read slots only through existence, parent and order, so
 * searching one of them is searching both. The search itself runs on
 * the states as the model makes them; only the store sees the form.
 * The message types and NONE come from queue.pml (pan-hc passes them);
 * a value the form does not expect ends the search. */
#define CN_MAXN ((int) sizeof(now.nex))
#define CN_NQ ((int) sizeof(now.me))
#define CN_NC ((int) sizeof(now.rq))
#define CN_QPC (CN_NQ / CN_NC)	/* queues per contender, q = c * CN_QPC + parent */
#define CN_QMAX 32	/* room for the messages of one channel */
static State cn_s;
static void
cn_bad(const char *what, int v)
{	printf("pan: -DCANON: %s %d is not what the canonical form expects (model/cstore.c)\n", what, v);
	pan_exit(1);
}
static uchar *
cn_chan(int qv)
{	if (qv < 1 || qv > now._nr_qs)
		cn_bad("channel", qv);
	return (uchar *) &cn_s + q_offset[qv - 1];
}
static void
cn_ref(uchar *keep, int n, int v)
{	if (v == CN_NONE)
		return;
	if (v >= n)
		cn_bad("slot", v);
	keep[v] = 1;
}
static short
cn_mask(uchar *map, int n, short m)
{	int k;
	short r = 0;
	for (k = 0; k < n; k++)
		if (m & (1 << k))
			r |= (short) (1 << map[k]);
	return r;
}
/* the message field holding a slot (4, "a"), or -1 */
static int
cn_rq_slot(int typ)
{	return (typ == CN_RQ_EXISTS || typ == CN_RQ_ADOPT || typ == CN_RQ_OWNER
	     || typ == CN_RQ_VERIFY) ? 4 : -1;
}
static int
cn_ib_slot(int typ)
{	return (typ == CN_M_CREATE || typ == CN_M_ADOPT || typ == CN_M_DELETED
	     || typ == CN_M_CHANGED || typ == CN_M_OWNER || typ == CN_M_VERIFY) ? 4 : -1;
}
#define CN_RQ_W 6	/* a request: six bytes */
#define CN_IB_W 8	/* a reply or event: six bytes and a short (the mask) */
/* the slots: those nobody refers to taken out, the rest renumbered */
static int
cn_slots(void)
{	uchar keep[CN_MAXN], map[CN_MAXN];
	uchar *ref[4 * CN_NQ + 2 * CN_NC * CN_QMAX];	/* every field naming a slot */
	uchar *msk[CN_NC * CN_QMAX];			/* every children mask */
	uchar *z, *e;
	int n, k, j, q, c, i, f, nr = 0, nm = 0;
	short m;
	n = cn_s.nnodes;
	if (n == 0)
		return 0;	/* (no node yet: before init has set the queues) */
	if (n > CN_MAXN)
		cn_bad("nnodes", n);
	for (q = 0; q < CN_NQ; q++)
	{	ref[nr++] = &cn_s.me[q];
		ref[nr++] = &cn_s.p1[q];
		ref[nr++] = &cn_s.p2[q];
		ref[nr++] = &cn_s.wn[q];
	}
	for (c = 0; c < CN_NC; c++)
	{	z = cn_chan(cn_s.rq[c]);
		if (q_flds[z[1]] != 6)
			cn_bad("request fields", q_flds[z[1]]);
		if (z[0] > CN_QMAX)
			cn_bad("request channel length", z[0]);
		for (i = 0; i < z[0]; i++)
		{	e = z + 2 + CN_RQ_W * i;
			if ((f = cn_rq_slot(e[0])) >= 0)
				ref[nr++] = &e[f];
		}
		z = cn_chan(cn_s.ib[c]);
		if (q_flds[z[1]] != 7)
			cn_bad("reply fields", q_flds[z[1]]);
		if (z[0] > CN_QMAX)
			cn_bad("reply channel length", z[0]);
		for (i = 0; i < z[0]; i++)
		{	e = z + 2 + CN_IB_W * i;
			if ((f = cn_ib_slot(e[0])) >= 0)
				ref[nr++] = &e[f];
			else if (e[0] == CN_M_LIST)
				msk[nm++] = e + 6;
	}	}
	for (k = 0; k < n; k++)
		keep[k] = cn_s.nex[k] || cn_s.nbg[k] || cn_s.ndw[k];
	for (i = 0; i < nr; i++)
		cn_ref(keep, n, *ref[i]);
	for (i = 0; i < nm; i++)
	{	memcpy(&m, msk[i], sizeof m);
		if (m < 0 || (m >> n) != 0)
			cn_bad("children mask", m);
		for (k = 0; k < n; k++)
			if (m & (1 << k))
				keep[k] = 1;
	}
	for (k = 0, j = 0; k < n; k++)
		map[k] = keep[k] ? (uchar) j++ : (uchar) CN_NONE;
	if (j == n)
		return 0;	/* nothing to take out */
	for (k = 0; k < n; k++)
	{	if (!keep[k])
			continue;
#define CN_MOVE(a)	cn_s.a[map[k]] = cn_s.a[k]
		CN_MOVE(nex); CN_MOVE(nbg); CN_MOVE(nown); CN_MOVE(ngen);
		CN_MOVE(npfx); CN_MOVE(npar); CN_MOVE(ndw);
#ifdef CN_NWR
		CN_MOVE(nwr);
#endif
	}
	for (k = j; k < n; k++)
	{	cn_s.nex[k] = 0; cn_s.nbg[k] = 0; cn_s.nown[k] = 0; cn_s.ngen[k] = 0;
		cn_s.npfx[k] = 0; cn_s.npar[k] = 0; cn_s.ndw[k] = 0;
#ifdef CN_NWR
		cn_s.nwr[k] = 0;
#endif
	}
	cn_s.nnodes = (uchar) j;
	for (i = 0; i < nr; i++)
		if (*ref[i] != CN_NONE)
			*ref[i] = map[*ref[i]];
	for (i = 0; i < nm; i++)
	{	memcpy(&m, msk[i], sizeof m);
		m = cn_mask(map, n, m);
		memcpy(msk[i], &m, sizeof m);
	}
	return 1;
}
/* an order-keeping renumbering of the values v[0..n-1] onto 0, 1, ...
 * in place; 1 when a value changed */
static int
cn_rank(uchar **v, int n)
{	uchar d[64];
	int i, j, nd = 0, changed = 0;
	if (n > 64)
		cn_bad("values to renumber", n);
	for (i = 0; i < n; i++)
	{	for (j = 0; j < nd && d[j] != *v[i]; j++)
			;
		if (j == nd)
			d[nd++] = *v[i];
	}
	for (i = 1; i < nd; i++)	/* insertion sort, a few values */
	{	uchar x = d[i];
		for (j = i; j > 0 && d[j - 1] > x; j--)
			d[j] = d[j - 1];
		d[j] = x;
	}
	for (i = 0; i < n; i++)
	{	for (j = 0; d[j] != *v[i]; j++)
			;
		if (*v[i] != j)
		{	*v[i] = (uchar) j;
			changed = 1;
	}	}
	return changed;
}
/* the counters: a queue's attempt number (q->attempt) and its prefix are
 * compared only for equality, with their copies (the attempt's in the
 * queue's requests and replies in flight, the prefix's in a create in
 * flight, in the queue's nodes and in a pending bg_cleanup), and each
 * grows only (the queue's own value is the largest of them, and the next
 * one is new): renumbered in their order, the values behave the same */
static int
cn_counters(void)
{	uchar *v[64];
	uchar *z, *e;
	int q, c, i, k, n, changed = 0;
	for (q = 0; q < CN_NQ; q++)
	{	c = q / CN_QPC;
		n = 0;
		v[n++] = &cn_s.att[q];
		z = cn_chan(cn_s.rq[c]);
		for (i = 0; i < z[0]; i++)
		{	e = z + 2 + CN_RQ_W * i;
			if (e[1] == q && e[0] >= CN_RQ_CREATE && e[0] <= CN_RQ_VERIFY)
				v[n++] = &e[2];
		}
		z = cn_chan(cn_s.ib[c]);
		for (i = 0; i < z[0]; i++)
		{	e = z + 2 + CN_IB_W * i;
			if (e[1] == q && (e[0] == CN_M_CREATE || e[0] == CN_M_LIST
			 || e[0] == CN_M_EXISTS || e[0] == CN_M_ADOPT
			 || e[0] == CN_M_OWNER || e[0] == CN_M_VERIFY))
				v[n++] = &e[2];
		}
		changed |= cn_rank(v, n);
		n = 0;
		v[n++] = &cn_s.pfx[q];
		if (cn_s.cln[q])
			v[n++] = &cn_s.clp[q];
		for (k = 0; k < cn_s.nnodes; k++)
			if (cn_s.nown[k] == c && cn_s.npar[k] == q % CN_QPC)
				v[n++] = &cn_s.npfx[k];
		z = cn_chan(cn_s.rq[c]);
		for (i = 0; i < z[0]; i++)
		{	e = z + 2 + CN_RQ_W * i;
			if (e[1] == q && e[0] == CN_RQ_CREATE)
				v[n++] = &e[4];
		}
		changed |= cn_rank(v, n);
	}
	return changed;
}
/* the canonical form of the state vin (a copy), or vin itself */
static char *
cn_canon(char *vin, int nin)
{	int changed = 0, q;
	memcpy((char *) &cn_s, vin, nin);
	for (q = 0; q < CN_NQ; q++)	/* a bg_cleanup's prefix and session */
		if (!cn_s.cln[q] && (cn_s.clp[q] || cn_s.clg[q]))
		{	cn_s.clp[q] = 0;	/* are read only while it is pending */
			cn_s.clg[q] = 0;
			changed = 1;
		}
	if (cn_s.faults >= CANON_FROM)
		changed |= cn_slots();
	changed |= cn_counters();
	if (!changed)
		return vin;
	cn_canons++;
	return (char *) &cn_s;
}
#ifdef CANON_COUNT
static void
cn_count(char *vin, int nin)
{	ulong i;
	uchar *e;
	uint k2;
	(void) compress(cn_canon(vin, nin), nin);	/* sets K1 and K2 */
	k2 = (uint) K2;
	i = (ulong) (((unsigned __int128) K1 * cc_slots) >> 64);
	for (;;)
	{	e = cc_tab + i * 16;
		if (e[12] == 0)
			break;
		if (memcmp(e, &K1, 8) == 0 && memcmp(e + 8, &k2, 4) == 0)
			return;
		if (++i == cc_slots)
			i = 0;
	}
	if (++cc_used >= (cc_slots / 10) * 9)
	{	printf("pan: -DCANON_COUNT: the side table is full\n");
		pan_exit(1);
	}
	memcpy(e, &K1, 8);
	memcpy(e + 8, &k2, 4);
	e[12] = 1;
}
#endif
#endif
int
h_store(char *vin, int nin)
{	H_el *tmp;
	char *v = (char *) &comp_now;
	char *st;
	int n, m;
	uchar rem_a;
	ulong i;
	if (!cs_tab)
		cs_init();
	rem_a = now._a_t;
	now._a_t = 0;
#ifdef CANON
	n = compress(cn_canon(vin, nin), nin);	/* sets K1 and K2 */
#else
#ifdef CANON_COUNT
	cn_count(vin, nin);
#endif
	n = compress(vin, nin);	/* sets K1 and K2 */
#endif
	now._a_t = rem_a;
	if (!S_A || n != 16)
	{	printf("pan: -DCSTORE: a state of %d bytes with %d of marks; 16 and marks expected (pan -a, -DHC4)\n", n, (int) S_A);
		pan_exit(1);
	}
	v[0] = 0;	/* _a_t */
#ifndef NOFAIR
	if (S_A > NFAIR)
	for (m = 0; m < NFAIR; m++)
		v[m+1] = 0;	/* _cnt[] */
#endif
	i = (ulong) (((unsigned __int128) K1 * cs_slots) >> 64);
	for (;;)
	{	tmp = (H_el *) (cs_tab + i * CS_W);
		st = (char *) &(tmp->state);
		if (st[0] == 0)
			break;	/* empty: a new state */
		if (memcmp(st + S_A, v + S_A, n - S_A) == 0)
		{	int wasnew = 0;
			if ((st[0] & V_A) != V_A)
			{	wasnew = 1; nShadow++;
				st[0] |= V_A;
			}
#ifndef NOFAIR
			if (S_A > NFAIR)
			{	uint ci, bp;
				cs_fair_mark(&ci, &bp);
				if ((st[ci] & bp) == 0)
				{	if (!wasnew)
					{	wasnew = 1;
						nShadow++;
					}
					st[ci] |= bp;
				}
			}
#endif
			if (wasnew)
			{	Lstate = tmp;
				tmp->tagged |= V_A;
				if ((now._a_t&1)
				&& (tmp->tagged&A_V)
				&& depth > A_depth)
					return 3;
				return 0;
			}
			if (tmp->tagged&V_A)
			{	Lstate = tmp;
				if ((now._a_t&1)
				&& (tmp->tagged&A_V)
				&& depth > A_depth
#ifndef NOFAIR
				&& (!fairness || now._cnt[1] <= 1)
#endif
				)
					return 3;
				return 2; /* match on stack */
			}
			return 1; /* match outside stack */
		}
		if (++i == cs_slots)
			i = 0;
	}
	if (cs_used >= cs_max)
	{	printf("pan: out of memory (compact store full: %lu states in %lu slots)\n",
			cs_used, cs_slots);
		wrapup();
	}
	cs_used++;
	tmp->D = (depth > 65535) ? 65535 : (unsigned short) depth;
	v[0] = V_A;
#ifndef NOFAIR
	if (S_A > NFAIR)
	{	uint ci, bp;
		cs_fair_mark(&ci, &bp);
		v[ci] = bp;
	}
#endif
	memcpy(st, v, n);
	tmp->tagged = V_A;
	Lstate = tmp;
	return 0;
}
#else
