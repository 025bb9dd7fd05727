/*
 * regex_cost.h — what compiling a POSIX extended regular expression may cost,
 * known before regcomp() is called. glibc compiles a repetition by copying what
 * it repeats ('a+' is two copies, 'a{1,50}' fifty, and repetitions of
 * repetitions multiply: 's++++' doubles four times), so a few hundred bytes of
 * pattern can take gigabytes; and a repetition of what can match the empty
 * string makes its epsilon closures exponential ('(()|){1,3}+{1,3}' twice, or
 * '($)*' twenty times, takes minutes). A policy's patterns are hostile input:
 * they are measured first, and refused when either is found.
 *
 * Usage: tp_regex_measure(pattern, max_cost, &m); refuse when m.cost > max_cost
 * or m.repeats_empty.
 */
#ifndef TP_REGEX_COST_H
#define TP_REGEX_COST_H

#include <stddef.h>

struct tp_regex_measure {
	/* An upper bound on the nodes of the compiled form: an atom is 1, a group
	 * the sum of its parts and 1, and a repetition multiplies what it repeats
	 * ('*' and '?' once, '+' twice, {n} n times, {n,} n+1, {n,m} m). Counting
	 * stops above max_cost (max_cost + 1), as it does for groups nested more
	 * than 32 deep. */
	size_t cost;
	/* Whether a repetition applies to something that can match the empty
	 * string: 'a**', '(a?)+', '(|a){2}', '(^)*', '(a*b*)+'. Such a pattern
	 * always means the same as one without the repetition. */
	int repeats_empty;
};

/* Measures ere in one pass. A pattern regcomp() would refuse may measure
 * anything. */
void tp_regex_measure(const char *ere, size_t max_cost, struct tp_regex_measure *m);

#endif
