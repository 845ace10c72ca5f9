#!/usr/bin/env python3
"""layout.py: the floor plan of the sources, checked.

    ops/layout.py BUILD_DIR            the circles, and who calls whom
    ops/layout.py --check BUILD_DIR    exit 1 when the plan is broken

Two graphs. Calls: a file depends on the file that defines a function it
calls, read from the object files' symbols (nm), so a call made through a
header-only macro or a function pointer does not count, as it should not.
Includes: a file depends on the folder of every project header it
includes. --check fails when a circle of either graph spans two folders,
when a circle of calls inside a folder has more than three files or a file
of it does not say why at its top (the word "circle" in its opening
comment), or when a source file outside tests/ has more than 1,200 lines.
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ('producer', 'materializer', 'query', 'schemas', 'ops')
MAX_LINES = 1200
MAX_CIRCLE = 3


def sources():
    for top in FOLDERS:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            if '/compare' in d or '/examples' in d:
                continue
            for f in files:
                if f.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def objects(build):
    """{source path: object path} for the project's own sources."""
    out = {}
    for d, _, files in os.walk(build):
        if '/tests' in d or 'CompilerId' in d or 'compare' in d or 'producer_shared' in d:
            continue
        for f in files:
            if not f.endswith('.c.o'):
                continue
            o = os.path.join(d, f)
            rel = os.path.relpath(o, build)
            comp = rel.split(os.sep)[0]
            if '.dir' + os.sep not in rel:
                continue
            src = os.path.join(comp, rel.split('.dir' + os.sep, 1)[1][:-2])
            if os.path.exists(os.path.join(ROOT, src)):
                out[src] = o
    return out


def call_graph(build):
    defs, undef = {}, collections.defaultdict(set)
    for src, o in sorted(objects(build).items()):
        text = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBR':
                defs.setdefault(p[2], src)
            elif len(p) == 2 and p[0] == 'U':
                undef[src].add(p[1])
    g = collections.defaultdict(set)
    for src in undef:
        for sym in undef[src]:
            d = defs.get(sym)
            if d and d != src:
                g[src].add(d)
    return g


def include_graph(paths):
    """Folder -> folders of the project headers its files include."""
    by_name = collections.defaultdict(list)
    for p in paths:
        if p.endswith('.h'):
            by_name[os.path.basename(p)].append(p)
    g = collections.defaultdict(set)
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for p in paths:
        with open(os.path.join(ROOT, p), errors='replace') as f:
            for line in f:
                m = inc.match(line)
                if not m:
                    continue
                name = os.path.basename(m.group(1))
                hs = by_name.get(name, [])
                # the header next to the file wins, as the compiler's "" does
                h = next((x for x in hs if os.path.dirname(x) == os.path.dirname(p)),
                         hs[0] if len(hs) == 1 else None)
                if h and os.path.dirname(h) != os.path.dirname(p):
                    g[os.path.dirname(p)].add(os.path.dirname(h))
    return g


def circles(g):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
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

    sys.setrecursionlimit(10000)
    nodes = set(g) | {w for ws in g.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def folders_of(g):
    fg = collections.defaultdict(set)
    for a, bs in g.items():
        for b in bs:
            if os.path.dirname(a) != os.path.dirname(b):
                fg[os.path.dirname(a)].add(os.path.dirname(b))
    return fg


def says_why(path):
    """The word "circle" in the file's opening comment."""
    head = []
    with open(os.path.join(ROOT, path), errors='replace') as f:
        for line in f:
            if not line.lstrip().startswith(('/*', '*')):
                break
            head.append(line)
    return 'circle' in ''.join(head)


def main(argv):
    check = '--check' in argv
    args = [a for a in argv if not a.startswith('-')]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = args[0]
    if not os.path.isdir(build):
        print(f'layout: {build}: no such build directory', file=sys.stderr)
        return 2
    paths = sorted(sources())
    calls = call_graph(build)
    if not calls:
        print(f'layout: {build}: no object files of the project (build it first)',
              file=sys.stderr)
        return 2
    problems = []
    for c in circles(calls):
        folders = {os.path.dirname(x) for x in c}
        if len(folders) > 1:
            problems.append('calls: a circle spans folders: ' + ' '.join(c))
        elif len(c) > MAX_CIRCLE:
            problems.append(f'calls: a circle of {len(c)} files: ' + ' '.join(c))
        else:
            quiet = [x for x in c if not says_why(x)]
            line = f'calls: a circle of {len(c)} files in {folders.pop()}: ' + ' '.join(c)
            print(line)
            if quiet:
                problems.append(line + ' (no reason at the top of ' + ', '.join(quiet) + ')')
    for c in circles(folders_of(calls)):
        problems.append('calls: folders call each other: ' + ' '.join(c))
    for c in circles(include_graph(paths)):
        problems.append('includes: folders include each other: ' + ' '.join(c))
    for p in paths:
        if p.endswith('.c'):
            with open(os.path.join(ROOT, p), errors='replace') as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                problems.append(f'size: {p} has {n} lines (at most {MAX_LINES})')
    if '-v' in argv:
        for a, bs in sorted(folders_of(calls).items()):
            print(f'{a} -> {" ".join(sorted(bs))}')
    for p in problems:
        print(p)
    print(f'layout: {len(paths)} files, {len(calls)} that call others, '
          f'{len(problems)} problems')
    return 1 if check and problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
