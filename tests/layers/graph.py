#!/usr/bin/python3
"""The layering rule as a graph (docs/architecture.md): the files of the
directories named on the command line form no cycle of calls or includes, and
nothing in sandbox/ or common/ (when named) calls into or includes a language
directory (any <name>-sandbox/) or host/.

A node is a source file: dir/x.c together with its header dir/x.h (a header
with no .c of the same name in the same directory is a node of its own). Its
edges:
  calls     its object's undefined symbols (nm OBJ/dir/x.o), each to the file
            that defines it; an object whose .c is gone (a stale one) is skipped
  includes  its `#include "y.h"` lines (and those of its header), resolved as
            the compiler does (the file's directory, then -iquote of each
            source directory), each to y.h's node

Each cycle (a strongly connected component of more than one file) is printed
with one concrete chain of edges, naming the functions called or the header
included at each step. A cycle all of whose files lie outside the directories
named is printed as known (being removed) and does not fail. Exit 1 on any
problem, 2 on a usage error. Run by `make layer-check`, from the top of the
tree, after the objects are built.

usage: graph.py [--root ROOT] [--obj OBJDIR] [-v] DIR...
  -v  lists every edge inside each cycle (to see where to cut one)
"""
import argparse
import collections
import pathlib
import re
import subprocess
import sys

LOWER = ("sandbox", "common")
FIXED = ("common", "host", "sandbox")  # the -iquote order of the Makefile's SRC_DIRS
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DEFINED = set("TDBRCGSVW")


def source_dirs(root):
    langs = sorted(d.name for d in root.glob("*-sandbox") if d.is_dir())
    return [d for d in FIXED if (root / d).is_dir()] + langs


def node_of(path, root):
    """dir/x.h belongs to dir/x.c when that exists; every other file is its own node."""
    rel = path.relative_to(root).as_posix()
    if path.suffix == ".h" and path.with_suffix(".c").exists():
        return rel[:-2] + ".c"
    return rel


def resolve(inc, src, root, dirs):
    for base in [src.parent] + [root / d for d in dirs]:
        p = base / inc
        if p.is_file():
            p = p.resolve()
            try:
                p.relative_to(root)
            except ValueError:
                return None
            return p
    return None


class Graph:
    def __init__(self, root, objdir, dirs):
        self.root, self.dirs = root, dirs
        self.nodes = set()
        # edges[a][b] = {"calls": set of names, "includes": [(file:line, header)]}
        self.edges = collections.defaultdict(
            lambda: collections.defaultdict(lambda: {"calls": set(), "includes": []}))
        self.warnings = []
        files = []
        for d in dirs:
            files += sorted((root / d).glob("*.c")) + sorted((root / d).glob("*.h"))
        for f in files:
            self.nodes.add(node_of(f, root))
        self._includes(files)
        self._calls(objdir)

    def _includes(self, files):
        for f in files:
            a = node_of(f, self.root)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                top = self.root.resolve()
                p = resolve(m.group(1), f, top, self.dirs)
                if p is None or p.parent.relative_to(top).as_posix() not in self.dirs:
                    continue  # a system or library header, or outside the layers
                b = node_of(p, top)
                if b != a and b in self.nodes:
                    rel = f.relative_to(self.root).as_posix()
                    self.edges[a][b]["includes"].append((f"{rel}:{n}", m.group(1)))

    def _calls(self, objdir):
        defs = collections.defaultdict(set)
        undefs = {}
        for d in self.dirs:
            for c in sorted((self.root / d).glob("*.c")):
                node = c.relative_to(self.root).as_posix()
                o = objdir / d / (c.stem + ".o")
                if not o.exists():
                    self.warnings.append(f"no object {o} for {node}: its calls are not seen")
                    continue
                out = subprocess.run(["nm", str(o)], capture_output=True, text=True, check=True).stdout
                undefs[node] = set()
                for line in out.splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[1] in DEFINED:
                        defs[parts[2]].add(node)
                    elif len(parts) == 2 and parts[0] == "U":
                        undefs[node].add(parts[1])
        for a, names in undefs.items():
            for name in names:
                targets = defs.get(name, set())
                same = {t for t in targets if t.split("/")[0] == a.split("/")[0]}
                for b in same or targets:  # `main` is defined once per binary
                    if b != a:
                        self.edges[a][b]["calls"].add(name)

    def why(self, a, b):
        e = self.edges[a][b]
        parts = []
        if e["calls"]:
            parts.append("calls " + ", ".join(sorted(e["calls"])))
        for where, h in e["includes"]:
            parts.append(f"includes {h} ({where})")
        return "; ".join(parts)

    def sccs(self):
        index, low, stack, on, out = {}, {}, [], set(), []
        for root in sorted(self.nodes):  # iterative Tarjan
            if root in index:
                continue
            work = [(root, iter(sorted(self.edges[root])))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on.add(root)
            while work:
                v, it = work[-1]
                w = next(it, None)
                if w is not None:
                    if w not in index:
                        index[w] = low[w] = len(index)
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(sorted(self.edges[w]))))
                    elif w in on:
                        low[v] = min(low[v], index[w])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
        return sorted(out)

    def chain(self, comp):
        """The shortest cycle through the component's first file."""
        inside, start = set(comp), comp[0]
        prev, queue = {}, collections.deque([start])
        while queue:
            v = queue.popleft()
            for w in sorted(self.edges[v]):
                if w not in inside:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    path.reverse()
                    return list(zip(path, path[1:] + [start]))
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        raise AssertionError(f"no cycle in the component {comp}")


def describe(g, comp, every):
    lines = [f"cycle of {len(comp)} files: {' '.join(comp)}"]
    for a, b in g.chain(comp):
        lines.append(f"  {a} -> {b}: {g.why(a, b)}")
    if every:
        lines.append("  every edge inside it:")
        for a in comp:
            for b in sorted(set(g.edges[a]) & set(comp)):
                lines.append(f"    {a} -> {b}: {g.why(a, b)}")
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="the top of the tree (default .)")
    ap.add_argument("--obj", help="the objects' directory (default ROOT/build/obj)")
    ap.add_argument("-v", "--every-edge", action="store_true",
                    help="list every edge inside each cycle, not one chain")
    ap.add_argument("enforce", nargs="+", metavar="DIR", help="the directories enforced")
    args = ap.parse_args(argv[1:])
    root = pathlib.Path(args.root)
    objdir = pathlib.Path(args.obj) if args.obj else root / "build" / "obj"
    dirs = source_dirs(root)
    unknown = [d for d in args.enforce if d not in dirs]
    if unknown:
        print(f"graph: no source directory {' '.join(unknown)} under {root} (have: {' '.join(dirs)})",
              file=sys.stderr)
        return 2
    g = Graph(root, objdir, dirs)
    for w in g.warnings:
        print(f"graph: warning: {w}", file=sys.stderr)
    enforced = set(args.enforce)
    problems = []
    for comp in g.sccs():
        lines = describe(g, comp, args.every_edge)
        if any(n.split("/")[0] in enforced for n in comp):
            problems += lines
        else:
            not_on = sorted({n.split("/")[0] + "/" for n in comp})
            print(f"graph: known, being removed ({' '.join(not_on)} not enforced yet): {lines[0]}")
            print("\n".join(lines[1:]))
    upper = {d for d in dirs if d == "host" or d.endswith("-sandbox")}
    for a in sorted(g.nodes):
        if a.split("/")[0] not in LOWER or a.split("/")[0] not in enforced:
            continue
        for b in sorted(g.edges[a]):
            if b.split("/")[0] in upper:
                problems.append(f"{a} reaches up into {b}: {g.why(a, b)}")
    for p in problems:
        print(f"graph: {p}" if not p.startswith("  ") else p, file=sys.stderr)
    if problems:
        print("graph: the layers (docs/architecture.md): a lower file never calls or includes an upper "
              "one; move the shared code down, or have the upper layer register a function with the "
              "lower one at init", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
