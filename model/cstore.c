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
 * and not the search itself (model/README.md, "Huge pages"). */
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
static void
cs_init(void)
{	cs_slots = (ulong) (((double) CSTORE * 1048576.) / CS_W);
	cs_max = (cs_slots / 10) * 9;
	if (cs_slots < 16 || cs_slots >= ((ulong) 1 << 40))
	{	printf("pan: -DCSTORE=%d: not a table size\n", (int) CSTORE);
		pan_exit(1);
	}
	cs_tab = cs_alloc(cs_slots * CS_W);
	printf("pan: compact store, %lu slots of %d bytes (%g MB), full at %lu%s\n",
		cs_slots, CS_W, (double) cs_slots * CS_W / 1048576., cs_max,
		cs_huge ? ", huge pages asked for" : "");
}
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
	n = compress(vin, nin);	/* sets K1 and K2 */
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
