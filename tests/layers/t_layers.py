#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The core's layers, checked on the built objects and on the sources.

    t_layers.py [-v] [--src DIR] <object files...>   the check (tests/layers/layers.cmake)
    t_layers.py --table                              the layer table and the exceptions, in
                                                     markdown (docs/design/README.md has them)
    t_layers.py --doc FILE                           fails unless FILE holds that table, as
                                                     printed, between the marker lines

Objects (nm -P: each object's undefined symbols against every other object's definitions): no
object may use a symbol that an object of a higher layer defines, but for the exceptions
named below; the call circles (strongly connected components of the object graph) are
printed, and one of more than MAX_CIRCLE files fails.

Sources (--src, the tree's src/): every #include "..." of src/common and src/arch names a file
of the same layer or a lower one; the rooms (a .c with the header of the same name beside it)
form no circle through their includes; and a header that has a .c beside it declares only
names that .c defines. Together with -Werror=implicit-function-declaration (a file sees only
what it includes) an upward call does not compile, inline code in headers included.

With AX_LAYERS_INVERT=1 the layers are taken top to bottom, so that every call is an upward
one: t_layers.inverted expects it to fail (the check is not blind)."""
import collections
import os
import re
import subprocess
import sys

# The layers, bottom to top: (name, what it owns, files). A header with a .c of the same name
# beside it is that file's; a header alone is listed. Files of one layer may use each other.
LAYERS = [
    ("arch", "CPU features, atomics, the bulk kernels (`src/arch/<arch>/`)",
     ["src/arch/*", "cpu_*", "bulk_*"]),  # (objects: cpu_<arch>.c, bulk_<kernel>.c)
    ("base", "settings and flags, the modes' seams (`state.h`), options, messages, system "
     "calls, locks, bulk zero/copy, the test stop points' dispatcher",
     ["types.h", "linkage.h", "track.h", "atomic.c", "state.c", "os.c", "print.c", "lock.c",
      "options.c", "bulk.c", "hooks.c", "sample.c"]),
    ("maps", "pointer -> page descriptor", ["pagemap.c"]),
    ("segments", "huge-page advice; mapping, header and cookie, the segment map, "
     "abandon/adopt, purge, the segment cache", ["thp.c", "segment.c"]),
    ("blocks", "free-list encoding and the looks-free filter; huge blocks; malloc(0)'s "
     "addresses", ["list.c", "huge.c", "zero.c"]),
    ("heap pool", "heap structures, the registry of heaps, a thread's heap", ["pool.c"]),
    ("remote frees", "batches per owner, inboxes, steals of idle threads' batches, the "
     "double-free seek", ["remote.c"]),
    ("pages", "queues, the direct table, full pages, slow paths, heap-wide walks", ["page.c"]),
    ("cache", "mid-size blocks freed by their owner", ["cache.c"]),
    ("heaps", "trim, refused mappings and retry, purge ticks", ["heap.c"]),
    ("stacks", "stack recording for the modes: the walk, names, the depot of stacks, a side word "
     "per block (`modes/stacks/`)", ["stacks.h", "unwind.c", "symbolize.c", "side.c", "depot.c"]),
    ("modes", "checked mode, tagging, the heap profiler, the leak checker, guarded sampling (`modes/`)",
     ["mte.c", "check.c", "prof_grant.c", "prof.c", "prof_dump.c", "leak_gate.c", "leak_scan.c",
      "leak.c", "guard_report.c", "guard_fault.c", "guard.c"]),
    ("lifecycle", "process init, thread start and exit, fork's handlers", ["lifecycle.c"]),
    ("entry", "the API: the malloc family, free, the extras, statistics, `ax_ctl`, C++",
     ["ptr.c", "alloc.c", "free.c", "override.c", "stats.c", "ctl.c", "cxx_ops.h",
      "new_delete.cc", "cxx_replaced.c"]),
    ("test-only", "the tests' views of the allocator (the hooks build: tests/concurrency/concurrency.cmake)",
     ["validate.c"]),
]

# (user, symbol): why a lower layer may use it (objects only: in the sources none is a name).
ALLOWED = {
    ("*", "axi_link_alloc_o"): "link marker",
    ("*", "axi_link_free_o"): "link marker",
    ("*", "axi_link_stats_o"): "link marker",
}
EXCEPTIONS = [
    "three link markers (`axi_link_alloc_o`, `axi_link_free_o`, `axi_link_stats_o`, "
    "`linkage.h`): every object refers to `alloc.o`, `free.o` and `stats.o`, so that a static "
    "link takes all of axmalloc or none of it (`t_linkorder`) and the exit report with it. "
    "Assembler references that pull objects in, not names the C code uses, not calls.",
    "the C++ pair (the one circle of objects): `new_delete.cc` defines the operators and "
    "`cxx_replaced.c` probes whether a program replaced them; each names the other.",
]
SEAMS = [
    "`axi_seams.carve`: checked mode fills fresh blocks with its free pattern as the pages layer "
    "carves them (`page.c`); set by checked mode's init (`axi_check_init`).",
    "`axi_seams.unmap_hold`, `axi_seams.unmap_release`: in leak mode an unmap, resize or move of "
    "a mapping (`os.c`) waits while the scan at exit reads memory; set by the leak checker's init.",
    "`axi_seams.current_leave`, `axi_seams.current_enter`: the heap profiler's grant of a direct "
    "class ends and starts as the pages layer changes the class's current page (`page.c`).",
    "`axi_seams.walk_begin`, `axi_seams.walk_end`: the heap profiler settles its grants before "
    "trim's and a refused mapping's heap-wide walks and grants again after (`heap.c`).",
    "`axi_seams.uncache`: the cache gives a block back to its page, which the heap profiler had "
    "counted as an allocation (`cache.c`); the profiler's seams are set by `axi_prof_grant_init`.",
    "`axi_seams.guard_take`: guarded sampling takes its block where a class's countdown runs out, "
    "in the pages layer's slow paths (`page.c`); set by `axi_guard_init`.",
]
MAX_CIRCLE = 2  # new_delete.cc and cxx_replaced.c


def layer_of(name):
    """name: a path under src/ (or a bare file name)."""
    if name.startswith("arch/") or name.startswith("src/arch/"):
        return 0
    base = os.path.basename(name)
    stem, ext = os.path.splitext(base)
    for rank, (_, _, files) in enumerate(LAYERS):
        for f in files:
            if f == base or (ext == ".h" and f in (stem + ".c", stem + ".cc")):
                return rank
            if f.endswith("*") and base.startswith(f[:-1]):
                return rank
    return None


def circles(names, edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
    return [c for c in comps if len(c) > 1]


# ---- objects -------------------------------------------------------------------------------

def file_of(obj):
    base = os.path.basename(obj)
    for ext in (".c.o", ".cc.o", ".o"):
        if base.endswith(ext):
            return base[: -len(ext)] + (".cc" if ext == ".cc.o" else ".c")
    return base


def check_objects(objs, verbose, errors):
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        name = file_of(o)
        out = subprocess.run([os.environ.get("NM") or "nm", "-P", o], capture_output=True,
                             text=True, check=True).stdout
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
    for n in names:
        if layer_of(n) is None:
            errors.append(f"{n}: in no layer (add it to LAYERS in tests/layers/t_layers.py)")
    edges = collections.defaultdict(dict)
    for a in names:
        for s in sorted(uses[a]):
            b = defs.get(s)
            if not b or b == a or ("*", s) in ALLOWED or (a, s) in ALLOWED:
                continue
            edges[a].setdefault(b, []).append(s)
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                errors.append(f"{a} ({LAYERS[la][0]}) uses {s} of {b} ({LAYERS[lb][0]}): "
                              "a call into a higher layer")
    if verbose:
        for a in names:
            for b, syms in sorted(edges[a].items()):
                print(f"{a} -> {b}: {' '.join(syms)}")
    found = circles(names, edges)
    for c in found:
        print(f"circle of {len(c)} objects: {' '.join(c)}")
        if len(c) > MAX_CIRCLE:
            errors.append(f"a circle of {len(c)} files (at most {MAX_CIRCLE}): {' '.join(c)}")
    print(f"{len(names)} objects, {sum(len(e) for e in edges.values())} file-to-file uses, "
          f"largest circle {max((len(c) for c in found), default=1)}")
    return defs


# ---- sources -------------------------------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DECL = re.compile(r"^AXI_HIDDEN\b([^;{]*)", re.M)


def declared(text):
    """The names a header declares with AXI_HIDDEN (functions and variables)."""
    out = set()
    for m in DECL.finditer(COMMENT.sub(" ", text)):
        d = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", m.group(1))
        f = re.search(r"(\w+)\s*\(", d)
        if f:
            out.add(f.group(1))
            continue
        for v in re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:,|$)", d.strip()):
            out.add(v)
    return out


def check_sources(src, defs, verbose, errors):
    files = []
    for top in ("common", "arch"):
        for d, _, fs in os.walk(os.path.join(src, top)):
            files += [os.path.relpath(os.path.join(d, f), src) for f in fs
                      if f.endswith((".c", ".cc", ".h"))]
    files.sort()
    arch_dirs = [os.path.join("arch", a) for a in sorted(os.listdir(os.path.join(src, "arch")))]

    def resolve(inc, frm):
        for d in [os.path.dirname(frm), "common"] + arch_dirs:
            p = os.path.normpath(os.path.join(d, inc))
            if p in fileset:
                return p
        return None  # include/axmalloc.h, a system or generated header

    def room(p):
        return os.path.splitext(p)[0]

    fileset = set(files)
    edges = collections.defaultdict(set)
    for f in files:
        lf = layer_of(f)
        if lf is None:
            errors.append(f"src/{f}: in no layer (add it to LAYERS in tests/layers/t_layers.py)")
            continue
        text = open(os.path.join(src, f), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            h = resolve(inc, f)
            if not h:
                continue
            lh = layer_of(h)
            if lh is not None and lh > lf:
                errors.append(f"src/{f} ({LAYERS[lf][0]}) includes {inc} ({LAYERS[lh][0]}): "
                              "an include from a higher layer")
            if room(h) != room(f):
                edges[room(f)].add(room(h))
            if verbose:
                print(f"src/{f} includes src/{h}")
        # a header beside its .c declares that file's names only
        if f.endswith(".h") and defs:
            own = [room(f) + e for e in (".c", ".cc") if room(f) + e in fileset]
            if own:
                mine = os.path.basename(own[0])
                for name in sorted(declared(text)):
                    by = defs.get(name)
                    if by and by != mine:
                        errors.append(f"src/{f} declares {name}, which {by} defines: a header "
                                      f"declares its own file's names ({mine})")
    # every seam of state.h is listed in SEAMS (the table the docs print)
    state = open(os.path.join(src, "common", "state.h"), encoding="utf-8").read()
    m = re.search(r"typedef struct axi_seams \{(.*?)\} axi_seams_t;", state, re.S)
    for name in re.findall(r"\(\*(\w+)\)", m.group(1) if m else ""):
        if not any(f"`axi_seams.{name}`" in s for s in SEAMS):
            errors.append(f"axi_seams.{name} (src/common/state.h) is not listed in SEAMS")
    rooms = sorted({room(f) for f in files})
    found = circles(rooms, edges)
    for c in found:
        errors.append(f"a circle of includes: {' '.join(c)}")
    print(f"{len(files)} source files in {len(rooms)} rooms, "
          f"{sum(len(e) for e in edges.values())} includes between rooms, "
          f"largest circle {max((len(c) for c in found), default=1)} room(s)")


# ---- the table -----------------------------------------------------------------------------

BEGIN = "<!-- t_layers.py --table: begin (generated: edit tests/layers/t_layers.py) -->"
END = "<!-- t_layers.py --table: end -->"


def table():
    out = [BEGIN, "", "Bottom to top:", "", "| layer | files (each with its header) | owns |",
           "|---|---|---|"]
    for name, owns, files in LAYERS:
        shown = ", ".join("`src/arch/<arch>/*`" if f == "src/arch/*" else f"`{f}`"
                          for f in files if f not in ("cpu_*", "bulk_*"))
        out.append(f"| {name} | {shown} | {owns} |")
    out += ["", "Named exceptions (objects):", ""] + [f"- {e}" for e in EXCEPTIONS]
    out += ["", "Seams (`axi_seams`, `state.h`: a lower layer hands work to a mode through a "
            "pointer the mode's init fills; NULL while the mode is off):",
            ""] + [f"- {s}" for s in SEAMS]
    out += ["", END]
    return "\n".join(out) + "\n"


def main(argv):
    if argv[:1] == ["--table"]:
        sys.stdout.write(table())
        return 0
    if argv[:1] == ["--doc"]:
        text = open(argv[1], encoding="utf-8").read()
        if table() not in text:
            print(f"t_layers: {argv[1]} does not hold the table that `tests/layers/t_layers.py --table` "
                  "prints: paste it between the markers", file=sys.stderr)
            return 1
        print(f"{argv[1]}: the layer table matches tests/layers/t_layers.py")
        return 0
    verbose = "-v" in argv
    src = None
    if "--src" in argv:
        i = argv.index("--src")
        src = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    # (ctest passes the objects as one ;-separated list)
    objs = [o for a in argv if a != "-v" for o in a.split(";") if o]
    if os.environ.get("AX_LAYERS_INVERT"):  # t_layers.inverted: the check must see the calls
        LAYERS.reverse()
    errors = []
    defs = check_objects(objs, verbose, errors) if objs else {}
    if src:
        check_sources(src, defs, verbose, errors)
    for e in errors:
        print("t_layers: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
