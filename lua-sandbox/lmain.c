/*
 * lmain.c — tidepool-lua: the Lua zygote's own binary. The same zygote and
 * worker code as tidepool's, without CPython: a process that never maps
 * libpython forks faster and leaves each worker less to copy. It registers
 * Lua, the one language it links (sandbox/lang.h). The host runs it from
 * beside its own binary (common/langs.c zygote_bin), and falls back to its own
 * binary when it is not there.
 */
#include <stdio.h>
#include <string.h>

#include "lang.h"
#include "lsandbox.h"
#include "zygote.h"

int main(int argc, char **argv)
{
	tp_lang_register(&tp_lang_lua);
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0 && strcmp(argv[2], "lua") == 0)
		return tp_zygote_main(argv[2], argc >= 4 ? argv[3] : NULL);
	fprintf(stderr, "tidepool-lua: the Lua zygote of tidepool; run tidepool instead\n");
	return 2;
}
