/*
 * failalloc.h — allocation-failure injection for the host process (test builds).
 *
 * Usage:
 *   1. Build with `make FAILALLOC=1` (into build-failalloc/): every malloc,
 *      calloc and realloc reference in our objects and in the static jansson is
 *      routed through a counter with -Wl,--wrap. Other builds compile a no-op.
 *   2. main() calls tp_failalloc_arm() first thing, and never in `--zygote` mode:
 *      only the host reads TIDEPOOL_FAILALLOC. Its value is "N" (the Nth
 *      allocation fails), "N+" (the Nth and every later one fail) or "0" (count
 *      only).
 *   3. At exit the host prints "tidepool: failalloc: <count> allocations" on
 *      stderr, so a test learns how many allocations a session makes.
 */
#ifndef TP_FAILALLOC_H
#define TP_FAILALLOC_H

/* Reads TIDEPOOL_FAILALLOC; a no-op unless built with TP_FAILALLOC. */
void tp_failalloc_arm(void);

#endif
