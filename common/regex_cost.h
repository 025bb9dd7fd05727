/*
 * regex_cost.h — what compiling a POSIX extended regular expression may cost,
 * known before regcomp() is called. glibc compiles a repetition by copying what
 * it repeats: 'a+' is two copies, 'a{1,50}' fifty, and repetitions of
 * repetitions multiply ('s++++' doubles four times), so a few hundred bytes of
 * pattern can take gigabytes and minutes to compile. A policy's patterns are
 * hostile input: they are measured first, and refused above a bound.
 *
 * Usage: tp_regex_cost(pattern, max) > max means "too costly: do not compile".
 */
#ifndef TP_REGEX_COST_H
#define TP_REGEX_COST_H

#include <stddef.h>

/* An upper bound on the nodes of ere's compiled form: an atom is 1, a group the
 * sum of its parts and 1, and a repetition multiplies what it repeats ('*' and
 * '?' once, '+' twice, {n} n times, {n,} n+1, {n,m} m). Stops counting above
 * max (returns max + 1); a pattern regcomp() would refuse may count anything. */
size_t tp_regex_cost(const char *ere, size_t max);

#endif
