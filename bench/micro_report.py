#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Merge Google Benchmark JSON runs (RAW/<binary>.<allocator>.<rep>.json) into a markdown
table of medians with axmalloc's ratio to each peer, a JSON file, and a gnuplot plot of
throughput against thread count (benchmarks named .../threads:N).

usage: micro_report.py RAW_DIR OUT_DIR allocator...
"""
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys

raw, out, allocs = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = {}  # (binary, benchmark) -> allocator -> [ns per iteration]
items = {}  # same -> allocator -> [items per second]
for path in sorted(glob.glob(os.path.join(raw, "*.json"))):
    binary, alloc, _rep, _ = os.path.basename(path).rsplit(".", 3)
    with open(path) as f:
        text = f.read()
    if not text.strip():
        continue  # the filter matched nothing in that binary
    data = json.loads(text)
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        key = (binary, b["name"])
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        runs.setdefault(key, {}).setdefault(alloc, []).append(b["real_time"] * scale)
        if "items_per_second" in b:
            items.setdefault(key, {}).setdefault(alloc, []).append(b["items_per_second"])

peers = [a for a in allocs if a != "axmalloc"]
rows, table = [], {}
for key in sorted(runs):
    med = {a: statistics.median(v) for a, v in runs[key].items()}
    table["/".join(key)] = {
        a: {"median_ns": med[a], "runs_ns": runs[key][a],
            "items_per_second": statistics.median(items[key][a]) if key in items and a in items[key] else None}
        for a in med}
    ratios = {p: med[p] / med["axmalloc"] for p in peers if p in med and "axmalloc" in med}
    rows.append((key, med, ratios))

os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "micro.json"), "w") as f:
    json.dump({"allocators": allocs, "benchmarks": table}, f, indent=1)

lines = ["| benchmark | " + " | ".join(f"{a} ns" for a in allocs) + " | " +
         " | ".join(f"{p}/axmalloc" for p in peers) + " |",
         "|---|" + "---:|" * (len(allocs) + len(peers))]
logs = {p: [] for p in peers}
for key, med, ratios in rows:
    cells = [f"{med[a]:.1f}" if a in med else "-" for a in allocs]
    rcells = []
    for p in peers:
        if p in ratios:
            logs[p].append(math.log(ratios[p]))
            rcells.append(f"{ratios[p]:.2f}")
        else:
            rcells.append("-")
    lines.append(f"| {key[0]}: {key[1]} | " + " | ".join(cells) + " | " + " | ".join(rcells) + " |")
lines.append("| **geomean** | " + " | ".join("" for _ in allocs) + " | " +
             " | ".join(f"**{math.exp(sum(v) / len(v)):.2f}**" if v else "-" for v in logs.values()) + " |")
md = "\n".join(lines) + "\n\nRatios are peer time / axmalloc time: above 1, axmalloc is faster.\n"
with open(os.path.join(out, "micro.md"), "w") as f:
    f.write(md)
print(md)

# throughput against threads: every benchmark family with a /threads:N suffix
fam = {}
for key in runs:
    m = re.match(r"(.*)/threads:(\d+)$", key[1])
    if m and key in items:
        for a, v in items[key].items():
            fam.setdefault((key[0], m.group(1)), {}).setdefault(a, {})[int(m.group(2))] = statistics.median(v)
if fam:
    # one panel: the family with the most thread counts (the malloc+free pairs), per allocator
    (binary, name), per = max(fam.items(), key=lambda kv: max(len(d) for d in kv[1].values()))
    allocs = [a for a in allocs if a in per]  # e.g. axmalloc-forcemt only ran bm_st
    dat = os.path.join(out, "micro_threads.dat")
    threads = sorted({t for d in per.values() for t in d})
    with open(dat, "w") as f:
        f.write("threads " + " ".join(allocs) + "\n")
        for t in threads:
            f.write(f"{t} " + " ".join(f"{per[a][t] / 1e6:.3f}" if a in per and t in per[a] else "?" for a in allocs) + "\n")
    plot = "\n".join([
        "set terminal pngcairo size 900,540" if subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True).returncode == 0 else "set terminal png size 900,540",
        f"set output '{os.path.join(out, 'micro_threads.png')}'",
        f"set title '{binary}: {name} - throughput against threads (median)' noenhanced",
        "set xlabel 'threads'", "set ylabel 'million items per second'", "set key left top",
        "set grid", f"set xtics ({', '.join(str(t) for t in threads)})", "set datafile missing '?'",
        "plot " + ", ".join(f"'{dat}' using 1:{i + 2} with linespoints lw 2 title '{a}'" for i, a in enumerate(allocs)),
    ])
    subprocess.run(["gnuplot"], input=plot.encode(), check=True)
