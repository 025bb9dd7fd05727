/*
 * jsonreal.h — JSON reals without float noise: each printed with the fewest
 * significant digits that read back as the same double (0.1 as `0.1`, never
 * `0.10000000000000001`; 0.1 + 0.2 as `0.30000000000000004`).
 *
 * Why: jansson prints every real with "%.17g" and has no hook per value, so a
 * Lua `return 0.1` or a usage time of 20.354 ms came out as 20.353999999999999.
 * Rather than encode JSON ourselves, the text jansson wrote is passed over once
 * and each real in it is written again (tp_json_dumps does it for every text
 * tidepool writes: results, errors, notifications, MCP text, the audit log,
 * worker frames).
 *
 * Notation: jansson's, with fewer digits. Fixed for decimal exponents -4 .. 16
 * (a whole number keeps its `.0`: `3.0`, `1e16` is `10000000000000000.0`), else
 * d.ddd then `e` and the exponent without `+` or leading zeros (`1e300`,
 * `5e-324`, `1.5e-7`). So a rewritten real is never longer than jansson's text,
 * and the pass works in place.
 *
 * Usage:
 *   1. tp_json_real_format(d, buf) for one finite double.
 *   2. tp_json_tidy_reals(s, len) over a JSON text: returns its new length.
 */
#ifndef TP_JSONREAL_H
#define TP_JSONREAL_H

#include <stddef.h>

/* The longest text tp_json_real_format writes, without its NUL
 * ("-2.2250738585072014e-308", "-0.00012345678901234567"). */
#define TP_JSON_REAL_MAX 32

/* Writes the finite d into buf (TP_JSON_REAL_MAX + 1 bytes, NUL-terminated) as
 * described above; returns its length. A non-finite d writes "null"
 * (JSON has no NaN or infinity; jansson never makes such a real). */
size_t tp_json_real_format(double d, char *buf);

/* For one number token tok[0 .. n) of a JSON text: *tidy says whether
 * tp_json_tidy_reals leaves it as it is; returns 1 when its value is surely a
 * finite double (within 10^±300: strtod need not be asked), else 0. */
int tp_json_real_inspect(const char *tok, size_t n, int *tidy);

/* The same text as tp_json_real_format(d, buf) from d's shortest significant digits (nd of them,
 * '0'-'9', as a shortest dtoa gives them: d = 0.digits × 10^decpt) and its
 * sign; 0 when there are none or more than 17. */
size_t tp_json_real_from_digits(int neg, const char *digits, size_t nd, int decpt, char *buf);

/* Rewrites in place every number of the JSON text s[0 .. len) that is outside
 * strings and has a '.' or an exponent, when strtod reads the whole token as a
 * finite double and the new text is no longer. Everything else, integers and
 * strings included, is left byte for byte. Returns the new length (<= len);
 * writes a NUL there when it is below len. Any bytes are safe (no NUL needed,
 * no read or write outside s[0 .. len)). */
size_t tp_json_tidy_reals(char *s, size_t len);

#endif
