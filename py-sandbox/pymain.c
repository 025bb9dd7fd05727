/*
 * pymain.c — tidepool-python: the Python zygote's own binary, with CPython
 * linked statically (non-PIC: faster, see the Makefile). The same zygote and
 * worker code as tidepool's, without the host (nothing of host/: no HTTP
 * server library, no client code is mapped in the process every Python worker
 * is forked from) and without Lua. It registers Python, the one language it
 * links (sandbox/lang.h). The host runs it from beside its own binary
 * (common/langs.c zygote_bin), and falls back to its own binary when it is not
 * there.
 */
#include <stdio.h>
#include <string.h>

#include "lang.h"
#include "pysandbox.h"
#include "zygote.h"

int main(int argc, char **argv)
{
	tp_lang_register(&tp_lang_python);
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0 && strcmp(argv[2], "python") == 0)
		return tp_zygote_main(argv[2], argc >= 4 ? argv[3] : NULL);
	fprintf(stderr, "tidepool-python: the Python zygote of tidepool; run tidepool instead\n");
	return 2;
}
