/*
 * regex_cost.c — an upper bound on a POSIX ERE's compiled size (regex_cost.h),
 * read in one pass: a stack of groups, each with the sum of its parts and the
 * size of its last one (what a repetition that follows multiplies). Every sum
 * saturates at max + 1, so no product overflows.
 */
#include "regex_cost.h"

#define DEPTH 32      /* groups nested deeper are refused as too costly */
#define DUP_MAX 32767 /* glibc's RE_DUP_MAX: a larger bound does not compile */

struct level {
	size_t sum;  /* the group's parts so far */
	size_t last; /* its last part: what a repetition repeats (0 after '|') */
};

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

/* After '{': how many copies "{n}", "{n,}" or "{n,m}" makes, with *p past its
 * '}'; 0 when this is no bound (then glibc reads '{' as itself). */
static size_t bound(const char **p)
{
	const char *q = *p;
	if (*q < '0' || *q > '9')
		return 0;
	size_t n = number(&q), m = n;
	if (*q == ',') {
		q++;
		m = *q >= '0' && *q <= '9' ? number(&q) : n + 1;
	}
	if (*q != '}')
		return 0;
	*p = q + 1;
	return (m > n ? m : n) > 0 ? (m > n ? m : n) : 1;
}

/* A repetition of lv's last part, copies times. */
static void repeat(struct level *lv, size_t copies, size_t max)
{
	size_t part = sat(lv->last * copies + 1, max);
	lv->sum = sat(lv->sum - lv->last + part, max);
	lv->last = part;
}

static void part(struct level *lv, size_t size, size_t max)
{
	lv->sum = sat(lv->sum + size, max);
	lv->last = size;
}

size_t tp_regex_cost(const char *ere, size_t max)
{
	struct level st[DEPTH + 1] = { { 0, 0 } };
	int d = 0;

	for (const char *p = ere; *p != '\0';) {
		char ch = *p++;
		size_t copies;
		if (ch == '(') {
			if (++d > DEPTH)
				return max + 1;
			st[d] = (struct level){ 0, 0 };
		} else if (ch == ')' && d > 0) {
			d--;
			part(&st[d], sat(st[d + 1].sum + 1, max), max);
		} else if (ch == '|') {
			st[d].sum = sat(st[d].sum + 1, max);
			st[d].last = 0;
		} else if (ch == '*' || ch == '?' || ch == '+') {
			repeat(&st[d], ch == '+' ? 2 : 1, max);
		} else if (ch == '{' && (copies = bound(&p)) > 0) {
			repeat(&st[d], copies, max);
		} else {
			if (ch == '[')
				p = skip_bracket(p);
			else if (ch == '\\' && *p != '\0')
				p++;
			part(&st[d], 1, max);
		}
		if (st[d].sum > max)
			return max + 1;
	}
	/* Groups left open: regcomp() refuses the pattern; their parts still count. */
	for (; d > 0; d--)
		st[d - 1].sum = sat(st[d - 1].sum + st[d].sum + 1, max);
	return st[0].sum;
}
