/*
 * regex_cost.c — a POSIX ERE's compile cost, and whether it repeats what can
 * match the empty string, before it is compiled (regex_cost.h), read in one
 * pass: a stack of groups, each with the sum of its parts and whether its
 * current alternative can match empty, and the size and emptiness of its last
 * part (what a repetition that follows applies to). Every sum saturates at
 * max + 1, so no product overflows.
 */
#include "regex_cost.h"

#define DEPTH 32      /* groups nested deeper count as too costly */
#define DUP_MAX 32767 /* glibc's RE_DUP_MAX: a larger bound does not compile */

struct level {
	size_t sum;     /* the group's parts so far */
	size_t last;    /* its last part: what a repetition repeats */
	int has_last;   /* 0 at the group's start and after '|' */
	int last_empty; /* the last part can match the empty string */
	int before;     /* so can every part of this alternative before the last */
	int alt_empty;  /* so can an alternative before this one */
};

static const struct level fresh = { 0, 0, 0, 0, 1, 0 };

static size_t sat(size_t x, size_t max)
{
	return x > max ? max + 1 : x;
}

/* After '[': past the bracket expression's ']' ("[]a]", "[^]a]", "[[:alpha:]]"). */
static const char *skip_bracket(const char *p)
{
	p += *p == '^';
	p += *p == ']';
	while (*p != '\0' && *p != ']') {
		if (p[0] == '[' && (p[1] == ':' || p[1] == '=' || p[1] == '.')) {
			char end = p[1];
			for (p += 2; *p != '\0' && !(p[0] == end && p[1] == ']'); p++)
				;
			p += *p != '\0' ? 2 : 0;
		} else {
			p++;
		}
	}
	return p + (*p == ']');
}

/* A bound's number, at most DUP_MAX + 1; *p moves past its digits. */
static size_t number(const char **p)
{
	size_t n = 0;
	for (; **p >= '0' && **p <= '9'; (*p)++)
		n = n > DUP_MAX ? n : n * 10 + (size_t)(**p - '0');
	return n;
}

/* After '{': "{n}", "{n,}", "{n,m}" or "{,m}", with *p past its '}' and *min
 * its least count; returns how many copies it makes (at least 1), or 0 when
 * this is no bound (then glibc reads '{' as itself). */
static size_t bound(const char **p, size_t *min)
{
	const char *q = *p;
	if (!(*q >= '0' && *q <= '9') && *q != ',')
		return 0;
	size_t n = number(&q), m = n;
	if (*q == ',') {
		q++;
		m = *q >= '0' && *q <= '9' ? number(&q) : n + 1;
	}
	if (*q != '}')
		return 0;
	*p = q + 1;
	*min = n;
	return m > n ? m : n > 0 ? n : 1;
}

/* A part of lv's alternative: size nodes, matching empty or not. */
static void part(struct level *lv, size_t size, int empty, size_t max)
{
	if (lv->has_last)
		lv->before = lv->before && lv->last_empty;
	lv->sum = sat(lv->sum + size, max);
	lv->last = size;
	lv->has_last = 1;
	lv->last_empty = empty;
}

/* A repetition of lv's last part: copies times, min of them required. */
static void repeat(struct level *lv, size_t copies, size_t min, size_t max,
		   struct tp_regex_measure *m)
{
	size_t part_size = sat(lv->last * copies + 1, max);
	lv->sum = sat(lv->sum - lv->last + part_size, max);
	lv->last = part_size;
	m->repeats_empty |= lv->last_empty;
	lv->last_empty = lv->last_empty || min == 0;
}

/* Whether what lv holds so far can match the empty string. */
static int empty_so_far(const struct level *lv)
{
	return lv->alt_empty || !lv->has_last || (lv->before && lv->last_empty);
}

/* Anchors match the empty string: '^', '$', and GNU's \b \B \< \> \` \'. */
static int is_anchor(char ch, char next)
{
	return ch == '^' || ch == '$' ||
	       (ch == '\\' && next != '\0' &&
		(next == 'b' || next == 'B' || next == '<' || next == '>' || next == '`' ||
		 next == '\''));
}

void tp_regex_measure(const char *ere, size_t max, struct tp_regex_measure *m)
{
	struct level st[DEPTH + 1];
	int d = 0;

	*m = (struct tp_regex_measure){ .cost = max + 1, .repeats_empty = 0 };
	st[0] = fresh;
	for (const char *p = ere; *p != '\0';) {
		char ch = *p++;
		size_t copies, min = 0;
		if (ch == '(') {
			if (++d > DEPTH)
				return;
			st[d] = fresh;
		} else if (ch == ')' && d > 0) {
			d--;
			part(&st[d], sat(st[d + 1].sum + 1, max), empty_so_far(&st[d + 1]), max);
		} else if (ch == '|') {
			st[d].alt_empty = empty_so_far(&st[d]);
			st[d].sum = sat(st[d].sum + 1, max);
			st[d].has_last = 0;
			st[d].before = 1;
		} else if ((ch == '*' || ch == '?' || ch == '+') && st[d].has_last) {
			repeat(&st[d], ch == '+' ? 2 : 1, ch == '+', max, m);
		} else if (ch == '{' && st[d].has_last && (copies = bound(&p, &min)) > 0) {
			repeat(&st[d], copies, min, max, m);
		} else {
			int anchor = is_anchor(ch, *p);
			if (ch == '[')
				p = skip_bracket(p);
			else if (ch == '\\' && *p != '\0')
				p++;
			part(&st[d], 1, anchor, max);
		}
		if (st[d].sum > max)
			return;
	}
	/* Groups left open: regcomp() refuses the pattern; their parts still count. */
	for (; d > 0; d--)
		part(&st[d - 1], sat(st[d].sum + 1, max), empty_so_far(&st[d]), max);
	m->cost = st[0].sum;
}
