/*
 * playground.h — the page `tidepool playground` serves beside /mcp: the files
 * of host/playground/ (index.html at /, playground.js, playground.css) and
 * examples/lessons.json, compiled in. build/gen/playground_assets.c defines the
 * table, written by host/playground/gen_assets.py at build time (Makefile).
 * http.c serves them only when cfg.playground is set (docs/playground.md).
 */
#ifndef TP_PLAYGROUND_H
#define TP_PLAYGROUND_H

#include <stddef.h>

struct tp_asset {
	const char *path; /* the URL's path: "/", "/playground.js" */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};

/* Every asset, until one whose path is NULL. */
extern const struct tp_asset tp_playground_assets[];

#endif
