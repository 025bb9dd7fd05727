#!/usr/bin/python3
"""The layering rule (docs/architecture.md): sandbox/ and common/ never reach up
into a language directory (lua-sandbox/, py-sandbox/, any <name>-sandbox/).
Fails, naming file and line, when a source there includes a language
directory's header (by its name or by a path through the directory) or
declares a language's struct tp_lang itself. Each binary's entry point
(host/main.c, lua-sandbox/lmain.c) registers its languages instead
(sandbox/lang.h). Run by `make format-check`, from the top of the tree.

usage: check_includes.py [ROOT]
"""
import pathlib
import re
import sys

LOWER = ("sandbox", "common")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# `extern const struct tp_lang tp_lang_lua;`: naming a language without its header.
LANG_DECL = re.compile(r"\bstruct\s+tp_lang\s+tp_lang_\w+")


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else ".")
    lang_dirs = sorted(d for d in root.glob("*-sandbox") if d.is_dir())
    if not lang_dirs:
        print(f"check_includes: no language directory (*-sandbox/) under {root}", file=sys.stderr)
        return 2
    headers = {}  # basename -> its language directory
    for d in lang_dirs:
        for h in d.glob("*.h"):
            headers[h.name] = d.name
    problems = []
    for low in LOWER:
        for h in sorted((root / low).rglob("*.h")):
            if h.name in headers:
                problems.append(f"{h.relative_to(root)}: has the name of {headers[h.name]}/{h.name}")
        for src in sorted(p for p in (root / low).rglob("*") if p.suffix in (".c", ".h")):
            rel = src.relative_to(root)
            for n, line in enumerate(src.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m:
                    inc = pathlib.PurePosixPath(m.group(1))
                    through = [p for p in inc.parts[:-1] if p in {d.name for d in lang_dirs}]
                    if through or inc.name in headers:
                        where = through[0] if through else headers[inc.name]
                        problems.append(f"{rel}:{n}: includes {m.group(1)} from {where}/")
                elif LANG_DECL.search(line):
                    problems.append(f"{rel}:{n}: names a language's struct tp_lang: {line.strip()}")
    for p in problems:
        print(f"check_includes: {p}", file=sys.stderr)
    if problems:
        print("check_includes: sandbox/ and common/ must not depend on a language directory; "
              "register the language in the binary's entry point (sandbox/lang.h)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
