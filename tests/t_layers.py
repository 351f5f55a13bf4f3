#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The core's layers, checked on the built objects: no object of src/common may use a symbol
defined in an object of a higher layer (nm -P: its undefined symbols against every other
object's definitions), but for the exceptions named below. Also prints the call circles (the
strongly connected components of the object graph) and fails when one is larger than
MAX_CIRCLE files.

    t_layers.py [-v] <object files...>     (tests/layers.cmake passes the library's objects)

With AX_LAYERS_INVERT=1 the layers are taken top to bottom, so that every call is an upward
one: t_layers.inverted expects it to fail (the check is not blind).

The layers, bottom to top (src/common/internal.h says what each holds; docs/design.md why).
Files of one layer may call each other."""
import collections
import os
import subprocess
import sys

LAYERS = [
    ("arch", ["cpu_*", "bulk_*"]),  # src/arch/<arch>: CPU features and the bulk kernels
    ("base", ["atomic.c", "state.c", "options.c", "print.c", "os.c", "lock.c", "bulk.c", "hooks.c"]),
    ("maps", ["pagemap.c"]),
    ("segments", ["thp.c", "segment.c"]),
    ("blocks", ["list.c", "huge.c", "zero.c"]),
    ("heap pool", ["pool.c"]),
    ("remote frees", ["remote.c"]),
    ("pages", ["page.c"]),
    ("cache", ["cache.c"]),
    ("heaps", ["heap.c"]),
    ("stacks", ["unwind.c", "symbolize.c", "side.c", "depot.c"]),  # src/common/modes/stacks
    ("modes", ["mte.c", "check.c", "prof.c", "prof_dump.c", "leak_gate.c", "leak_scan.c",
               "leak.c"]),
    ("lifecycle", ["lifecycle.c"]),
    ("entry", ["ptr.c", "alloc.c", "free.c", "override.c", "stats.c", "ctl.c", "new_delete.cc",
               "cxx_replaced.c"]),
    ("test-only", ["validate.c"]),  # the hooks build's (tests/race.cmake)
]

# (user, symbol): why a lower layer may use it.
ALLOWED = {
    # linkage.h: every object refers to alloc.o, free.o and stats.o, so that a static link
    # takes all of axmalloc or none of it (t_linkorder) and the report at exit; markers, not
    # calls
    ("*", "axi_link_alloc_o"): "link marker",
    ("*", "axi_link_free_o"): "link marker",
    ("*", "axi_link_stats_o"): "link marker",
}
MAX_CIRCLE = 2  # new_delete.cc and cxx_replaced.c: the C++ operators and their replacement probe


def file_of(obj):
    base = os.path.basename(obj)
    for ext in (".c.o", ".cc.o", ".o"):
        if base.endswith(ext):
            return base[: -len(ext)] + (".cc" if ext == ".cc.o" else ".c")
    return base


def layer_of(name):
    for rank, (_, files) in enumerate(LAYERS):
        for f in files:
            if f == name or (f.endswith("*") and name.startswith(f[:-1])):
                return rank
    return None


def main(argv):
    verbose = "-v" in argv
    # (ctest passes the objects as one ;-separated list)
    objs = [o for a in argv if a != "-v" for o in a.split(";") if o]
    if os.environ.get("AX_LAYERS_INVERT"):  # t_layers.inverted: the check must see the calls
        LAYERS.reverse()
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        name = file_of(o)
        out = subprocess.run([os.environ.get("NM") or "nm", "-P", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            sym, kind = f[0], f[1]
            if kind == "U":
                uses[name].add(sym)
            elif kind in "TDBRVWGS":
                defs.setdefault(sym, name)
    names = sorted({file_of(o) for o in objs})
    errors = []
    unknown = [n for n in names if layer_of(n) is None]
    for n in unknown:
        errors.append(f"{n}: in no layer (add it to LAYERS in tests/t_layers.py)")
    edges = collections.defaultdict(dict)
    for a in names:
        for s in sorted(uses[a]):
            b = defs.get(s)
            if not b or b == a:
                continue
            if ("*", s) in ALLOWED or (a, s) in ALLOWED:
                continue
            edges[a].setdefault(b, []).append(s)
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                errors.append(f"{a} ({LAYERS[la][0]}) uses {s} of {b} ({LAYERS[lb][0]}): "
                              "a call into a higher layer")
    for a in names:
        for b, syms in sorted(edges[a].items()):
            if verbose:
                print(f"{a} -> {b}: {' '.join(syms)}")
    # circles: Tarjan's strongly connected components
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
            comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in names:
        if v not in index:
            visit(v)
    circles = [c for c in comps if len(c) > 1]
    for c in circles:
        print(f"circle of {len(c)}: {' '.join(c)}")
        if len(c) > MAX_CIRCLE:
            errors.append(f"a circle of {len(c)} files (at most {MAX_CIRCLE}): {' '.join(c)}")
    print(f"{len(names)} objects, {sum(len(e) for e in edges.values())} file-to-file uses, "
          f"largest circle {max((len(c) for c in circles), default=1)}")
    for e in errors:
        print("t_layers: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
