#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark report: medians with their spread, which differences are within the noise,
which runs the machine's other load disturbed, and the plots.

  report.py workloads RUNS_TSV OUT_DIR          (bench/compare_workloads.sh writes RUNS_TSV)
  report.py micro RUNS_TSV RAW_DIR OUT_DIR      (bench/compare_micro.sh writes both)

RUNS_TSV has a header line and one line per run, tab-separated:
  round name allocator seconds rss_kib minor_faults cpu_s other_cpu_s running_before
  running_after disturbed status
name is the workload (or the benchmark binary), status "ok" or why the run failed. For
micro, RAW_DIR/<binary>.<allocator>.<round>.json is Google Benchmark's output of that run
(<round>.2.json of the round's second run of it, a disturbed run's repetition).
Empty fields are unknown. Writes OUT_DIR/{workloads,micro}.{md,json}, estimate_*.tsv (the
median seconds of each run: scripts/bench.sh's time estimate) and, with gnuplot, the plots.

Statistics (one rule everywhere, so a reader can redo it by hand):
- A cell is the median of its runs with their range [min-max]. Runs the machine's other load
  disturbed are left out while at least MIN_QUIET of the cell's runs were quiet; otherwise
  the cell uses all its runs and is marked "†".
- A peer against axmalloc is "within the noise" (marked "≈") when the two cells' ranges
  overlap, i.e. when the ratio's range [peer min / axmalloc max, peer max / axmalloc min]
  contains 1, or when there are too few runs for apart ranges to mean anything: apart
  ranges count when they would arise by chance (both sets drawn from one distribution) with
  probability at most 5%, 1 / C(na+nb, na) for the order seen (3 runs each: 1/20; 5: 1/252).
- A geometric mean over rows is taken round by round (runs are interleaved, so a round's
  allocators ran side by side under the same drift; a round a cell has no quiet run in counts
  the cell's median), then given as the median [min-max] of the rounds' geometric means.
"""
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

REF = "axmalloc"
MIN_QUIET = 3  # quiet runs a cell needs to leave its disturbed runs out (of 5 by default)
FIELDS = ["round", "name", "allocator", "seconds", "rss_kib", "minor_faults", "cpu_s",
          "other_cpu_s", "running_before", "running_after", "disturbed", "status"]


# ---- runs and cells ------------------------------------------------------------------------
def num(s):
    try:
        return float(s) if s not in ("", None) else None
    except ValueError:
        return None


def read_runs(path):
    """The runs of a RUNS_TSV as dicts (numbers converted, disturbed a bool)."""
    runs = []
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if not line.strip():
                continue
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            for k in ("seconds", "rss_kib", "minor_faults", "cpu_s", "other_cpu_s",
                      "running_before", "running_after"):
                r[k] = num(r.get(k))
            r["round"] = int(r["round"])
            r["disturbed"] = r.get("disturbed") == "1"
            r["ok"] = r.get("status", "ok") == "ok"
            runs.append(r)
    return runs


class Cell:
    """The runs of one (row, allocator): which are used, their median and range."""

    def __init__(self, values, disturbed, rounds):
        # values, disturbed, rounds: parallel lists over the successful runs
        self.n_runs = len(values)
        self.n_disturbed = sum(disturbed)
        quiet = [v for v, d in zip(values, disturbed) if not d]
        self.busy = len(quiet) < min(MIN_QUIET, self.n_runs)  # too few quiet runs: all used
        self.used = sorted(values if self.busy else quiet)
        self.n_used = len(self.used)
        self.median = statistics.median(self.used) if self.used else None
        self.min = self.used[0] if self.used else None
        self.max = self.used[-1] if self.used else None
        # one value per round among the runs used (a repeated run has its round's number)
        self.by_round, self.rounds = {}, set(rounds)
        for v, d, r in zip(values, disturbed, rounds):
            if self.busy or not d:
                self.by_round[r] = (v, d)

    def json(self):
        return {"median": self.median, "min": self.min, "max": self.max,
                "runs": self.n_runs, "disturbed": self.n_disturbed, "all_runs_used": self.busy}


def ratio(peer, ref):
    """peer/ref medians and the range [peer.min/ref.max, peer.max/ref.min]; None if missing."""
    if not peer or not ref or peer.median is None or ref.median is None or ref.median <= 0 \
            or ref.min <= 0:
        return None
    return {"ratio": peer.median / ref.median, "lo": peer.min / ref.max,
            "hi": peer.max / ref.min, "chance": 1 / math.comb(peer.n_used + ref.n_used, ref.n_used)}


# A difference is beyond the noise when the ranges are apart and that arrangement would come
# by chance with probability at most 5%: every run of one side below every run of the other
# is 1 of C(na+nb, na) equally likely orders when both come from one distribution (3 runs a
# side: 1/20; 5: 1/252); for a geometric mean, all its rounds on one side of 1 (5: 1/32).
MAX_CHANCE = 0.05


def within_noise(r):
    return r["lo"] <= 1.0 <= r["hi"] or r["chance"] > MAX_CHANCE


def geomean_rounds(cells, peer):
    """Geometric mean of peer/REF over the rows, round by round: median [min-max] of rounds."""
    logs, per_round, rows = [], {}, []
    for row in cells.values():
        p, a = row.get(peer), row.get(REF)
        r = ratio(p, a)
        if r is None:
            continue
        logs.append(math.log(r["ratio"]))
        rows.append((p, a))
    if not logs:
        return None
    # a round a cell has no (quiet) run in counts that cell's median
    for rd in sorted({rd for p, a in rows for rd in p.rounds | a.rounds}):
        per_round[rd] = [math.log(p.by_round.get(rd, (p.median,))[0] /
                                  a.by_round.get(rd, (a.median,))[0]) for p, a in rows]
    n = len(logs)
    rounds = [math.exp(sum(v) / n) for v in per_round.values()]
    return {"ratio": statistics.median(rounds), "lo": min(rounds), "hi": max(rounds),
            "of_medians": math.exp(sum(logs) / n), "rows": n, "rounds": len(rounds),
            "chance": 0.5 ** len(rounds)}


# ---- formatting ----------------------------------------------------------------------------
def fnum(x):
    """3 significant digits, no exponent: 0.0123, 1.23, 12.3, 1234."""
    if x is None:
        return "-"
    x = float(f"{x:.3g}")  # 9.999 -> 10.0, not 10.00
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a >= 0.1:
        return f"{x:.3f}"
    return f"{x:.3g}"


def fcell(c, scale=1.0):
    if c is None or c.median is None:
        return "-"
    s = f"{fnum(c.median * scale)} [{fnum(c.min * scale)}-{fnum(c.max * scale)}]"
    return s + " †" if c.busy else s


def fratio(r):
    if r is None:
        return "-"
    s = f"{fnum(r['ratio'])} [{fnum(r['lo'])}-{fnum(r['hi'])}]"
    return "≈ " + s if within_noise(r) else s


MAX_COLS = 6  # value columns per table: 6 cells of "0.536 [0.517-0.555]" fit 150 characters


def md_table(header, rows, keep=1):
    """A markdown table; past MAX_COLS value columns, several tables, each repeating the
    first `keep` columns (the row name, and axmalloc's own column in the micro tables)."""
    out, n = [], len(header) - keep
    per = math.ceil(n / math.ceil(n / MAX_COLS)) if n > 0 else 1  # 7 columns: 4 and 3
    for k in range(keep, max(len(header), keep + 1), per):
        cols = list(range(keep)) + list(range(k, min(k + per, len(header))))
        out += ["" if out else None,
                "| " + " | ".join(header[c] for c in cols) + " |",
                "|---|" + "---:|" * (len(cols) - 1)]
        out += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    return "\n".join(x for x in out if x is not None)


def words(cells, peers, what, show=lambda name: name):
    """Per peer, in words: where axmalloc is faster, slower, or within the noise."""
    out = []
    for p in peers:
        faster, slower, noise = [], [], []
        for name, row in cells.items():
            r = ratio(row.get(p), row.get(REF))
            if r is None:
                continue
            (noise if within_noise(r) else faster if r["ratio"] > 1 else slower).append(show(name))
        if not (faster or slower or noise):
            continue
        parts = []
        if faster:
            parts.append(f"axmalloc faster beyond the noise on {len(faster)} ({', '.join(faster)})")
        if slower:
            parts.append(f"{p} faster beyond the noise on {len(slower)} ({', '.join(slower)})")
        if noise:
            parts.append(f"within the noise on {len(noise)} ({', '.join(noise)})")
        out.append(f"- **{p}** against axmalloc, {what}: " + "; ".join(parts) + ".")
    return "\n".join(out)


def disturbed_words(runs, threshold_note):
    n = len(runs)
    d = [r for r in runs if r["disturbed"]]
    known = [r for r in runs if r["other_cpu_s"] is not None and r["seconds"]]
    load = ""
    if known:
        # the mean over all the run time; the busiest run among those of 0.2 s or more (a
        # shorter one's ratio is mostly the 10 ms clocks' granularity)
        mean = sum(r["other_cpu_s"] for r in known) / sum(r["seconds"] for r in known)
        peak = max([r["other_cpu_s"] / r["seconds"] for r in known if r["seconds"] >= 0.2],
                   default=0)
        load = f" Other load during the runs: {mean:.2f} CPUs on average, {peak:.2f} in the " \
               f"busiest run."
    warn = ""
    if n and len(d) > n / 2:
        warn = "**The machine was busy: most runs were disturbed, the numbers below say more " \
               "about the other load than about the allocators.** "
    return warn + (f"{len(d)} of {n} runs were disturbed ({threshold_note}) and left out of the "
            f"medians where a cell had {MIN_QUIET} quiet runs; cells marked † had fewer and "
            f"use all their runs.{load}")


THRESHOLD_NOTE = os.environ.get(
    "AX_BUSY_NOTE", "other processes used more than a quarter of a CPU on average during the run")


# ---- gnuplot -------------------------------------------------------------------------------
def gnuplot(script):
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not found (apt-get install gnuplot-nox): no plots",
              file=sys.stderr)
        return False
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    return True


PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def dot_plot(path, title, xlabel, rows, peers, cells, label_of, dat):
    """One row per workload, one point per peer at its ratio to axmalloc on a log2 axis,
    bars from the ratio's min to its max, an open point within the noise; the legend right
    of the plot, outside the data."""
    rows = [w for w in rows if any(ratio(cells[w].get(p), cells[w].get(REF)) for p in peers)]
    if not rows:
        return
    vals = []
    with open(dat, "w") as f:
        for i, p in enumerate(peers):
            f.write(f"# {p}\n")
            for j, w in enumerate(rows):
                r = ratio(cells[w].get(p), cells[w].get(REF))
                if r is None:
                    continue
                # row j from the top; peers spread within the row's band of height 0.8
                y = len(rows) - 1 - j + 0.35 - 0.7 * i / max(1, len(peers) - 1)
                # filled circle beyond the noise, open circle within it
                f.write(f"{r['ratio']:.5g} {y:.4f} {r['lo']:.5g} {r['hi']:.5g} "
                        f"{6 if within_noise(r) else 7}\n")
                vals += [r["lo"], r["hi"]]
            f.write("\n\n")
    lo = 2 ** math.floor(math.log2(min(vals) * 0.9))
    hi = 2 ** math.ceil(math.log2(max(vals) * 1.1))
    lo, hi = min(lo, 0.5), max(hi, 2)
    xt = ", ".join(f'"{(f"1/{int(1 / 2 ** e)}" if e < 0 else str(int(2 ** e)))}" {2 ** e:g}'
                   for e in range(int(math.log2(lo)), int(math.log2(hi)) + 1))
    yt = ", ".join(f'"{label_of(w)}" {len(rows) - 1 - j}' for j, w in enumerate(rows))
    width = max(len(line) for w in rows for line in label_of(w).split("\\n"))
    height = 150 + max(46, 16 * len(peers)) * len(rows)
    plots = ", ".join(
        f"'{dat}' index {i} using 1:2:3:4 with xerrorbars pt -1 lw 2 lc rgb '{c}' title '{p}', "
        f"'{dat}' index {i} using 1:2:5 with points pt variable ps 1.3 lw 1.5 lc rgb '{c}' "
        f"notitle" for i, p in enumerate(peers) for c in [PALETTE[i % len(PALETTE)]])
    plots += ", NaN with points pt 7 lc rgb 'black' title 'beyond the noise', " \
             "NaN with points pt 6 lc rgb 'black' title 'within the noise'"
    gnuplot(f"""
set terminal pngcairo noenhanced size {1000 + 8 * width},{height} font "DejaVu Sans,11"
set output '{path}'
set title "{title}"
set xlabel "{xlabel}"
set logscale x 2
set xrange [{lo:g}:{hi:g}]
set xtics ({xt})
set ytics ({yt}) nomirror
set yrange [-0.6:{len(rows) - 0.4}]
set grid xtics lc rgb '#cccccc'
set key outside right top vertical box
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb 'black'
set lmargin {width + 2}
{"".join(f"set object rect from graph 0, first {k - 0.5} to graph 1, first {k + 0.5} behind fc rgb '#f4f4f4' fs solid noborder{chr(10)}" for k in range(0, len(rows), 2))}
plot {plots}
""")


# ---- workloads -----------------------------------------------------------------------------
def build_cells(runs, value):
    """{name: {allocator: Cell}} over the successful runs with a value, in first-seen order."""
    acc = {}
    for r in runs:
        if not r["ok"] or value(r) is None:
            continue
        acc.setdefault(r["name"], {}).setdefault(r["allocator"], ([], [], []))
        v, d, rd = acc[r["name"]][r["allocator"]]
        v.append(value(r))
        d.append(r["disturbed"])
        rd.append(r["round"])
    return {n: {a: Cell(*t) for a, t in row.items()} for n, row in acc.items()}


def order(runs, key):
    seen = []
    for r in runs:
        if r[key] not in seen:
            seen.append(r[key])
    return seen


def estimates(runs, path, kind):
    """Median seconds of one run per (name, allocator): scripts/bench.sh's time estimate."""
    acc = {}
    for r in runs:
        if r["seconds"] is not None:
            acc.setdefault((r["name"], r["allocator"]), []).append(r["seconds"])
    with open(path, "w") as f:
        for (n, a), v in acc.items():
            f.write(f"{kind}\t{n}\t{a}\t{statistics.median(v):.3f}\n")


def workloads(runs_tsv, out):
    runs = read_runs(runs_tsv)
    os.makedirs(out, exist_ok=True)
    names, allocs = order(runs, "name"), order(runs, "allocator")
    peers = [a for a in allocs if a != REF]
    t = build_cells(runs, lambda r: r["seconds"])
    rss = build_cells(runs, lambda r: r["rss_kib"])
    flt = build_cells(runs, lambda r: r["minor_faults"])
    nrounds = max(r["round"] for r in runs)
    ok_runs = [r for r in runs if r["ok"]]

    md = [f"{len(names)} workloads x {len(allocs)} allocators x {nrounds} interleaved runs "
          f"(for each run: every workload, every allocator in turn).",
          "", disturbed_words(ok_runs, THRESHOLD_NOTE), "",
          "### Wall time, seconds: median [min-max]", "",
          md_table(["workload"] + allocs,
                   [[w] + [fcell(t[w].get(a)) for a in allocs] for w in names if w in t]),
          "", "### Time relative to axmalloc: peer median / axmalloc median [range]", "",
          "Above 1: axmalloc is faster. The range is [peer min / axmalloc max, peer max / "
          "axmalloc min]; ≈ marks a difference within the noise: the two allocators' "
          "min-max ranges overlap (the range contains 1), or there are too few runs to tell "
          "(apart ranges count when chance makes them with at most 5% probability: 3 runs "
          "a side or more).", ""]
    geo = {p: geomean_rounds(t, p) for p in peers}
    rows = [[w] + [fratio(ratio(t[w].get(p), t[w].get(REF))) for p in peers]
            for w in names if w in t]
    rows.append(["**geomean**"] + [fratio(geo[p]) if geo[p] else "-" for p in peers])
    md += [md_table(["workload"] + peers, rows), "",
           "geomean: each round's geometric mean over the workloads of peer/axmalloc, "
           "median [min-max] over the rounds; ≈ when that range contains 1 or there are "
           "fewer than 5 rounds (all of 5 on one side by chance: 1/32).", "", "In words:", "",
           words(t, peers, "time"), "",
           "### Peak RSS, MiB: median [min-max]", "",
           md_table(["workload"] + allocs,
                    [[w] + [fcell(rss[w].get(a), 1 / 1024) for a in allocs]
                     for w in names if w in rss]), "",
           "### Minor page faults, thousands: median [min-max]", "",
           md_table(["workload"] + allocs,
                    [[w] + [fcell(flt[w].get(a), 1e-3) for a in allocs]
                     for w in names if w in flt])]
    failed = [r for r in runs if not r["ok"]]
    if failed:
        md += ["", f"**FAILURES ({len(failed)}):**", ""]
        md += [f"- {r['name']} under {r['allocator']} (run {r['round']}): {r['status']}"
               for r in failed]
    with open(os.path.join(out, "workloads.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    data = {"rounds": nrounds, "reference": REF, "allocators": allocs,
            "runs_disturbed": sum(r["disturbed"] for r in ok_runs), "runs": len(ok_runs),
            "notes": "seconds (wall clock); rss in KiB; ratio_to_axmalloc = median/median "
                     "with [lo, hi] = [min/max, max/min]; within_noise when lo <= 1 <= hi",
            "workloads": {}, "geomean_ratio_to_axmalloc": geo}
    for w in names:
        d = data["workloads"][w] = {}
        for a in allocs:
            c = t.get(w, {}).get(a)
            e = {"time_s": c.json() if c else None,
                 "peak_rss_kib": rss[w][a].json() if a in rss.get(w, {}) else None,
                 "minor_faults": flt[w][a].json() if a in flt.get(w, {}) else None,
                 "runs": [{k: r[k] for k in FIELDS if k in r} for r in runs
                          if r["name"] == w and r["allocator"] == a]}
            r = ratio(c, t.get(w, {}).get(REF)) if a != REF else None
            if r:
                e["ratio_to_axmalloc"] = dict(r, within_noise=within_noise(r))
            d[a] = e
    with open(os.path.join(out, "workloads.json"), "w") as f:
        json.dump(data, f, indent=1)
    estimates(runs, os.path.join(out, "estimate_workloads.tsv"), "wl")

    if REF in allocs and peers:
        def lab(unit, cells, scale, fmt):
            def f(w):
                c = cells[w].get(REF)
                return f"{w}\\n(axmalloc {fmt(c.median * scale)} {unit})" if c else w
            return f
        dot_plot(os.path.join(out, "time.png"),
                 f"Wall time relative to axmalloc (median of {nrounds} runs; bars: min-max range)",
                 "peer time / axmalloc time (log2 scale; right of 1: axmalloc is faster)",
                 names, peers, t, lab("s", t, 1, fnum), os.path.join(out, "time.dat"))
        dot_plot(os.path.join(out, "rss.png"),
                 f"Peak RSS relative to axmalloc (median of {nrounds} runs; bars: min-max range)",
                 "peer peak RSS / axmalloc peak RSS (log2 scale; right of 1: axmalloc uses less)",
                 names, peers, rss, lab("MiB", rss, 1 / 1024, fnum), os.path.join(out, "rss.dat"))


# ---- micro-benchmarks ----------------------------------------------------------------------
def short(name):
    """A benchmark's row name: without its program and Google Benchmark's /real_time."""
    return name.split(": ", 1)[-1].replace("/real_time", "")


def micro(runs_tsv, raw, out):
    runs = read_runs(runs_tsv)
    os.makedirs(out, exist_ok=True)
    allocs = order(runs, "allocator")
    binaries = order(runs, "name")
    # one pseudo-run per (benchmark, allocator, round), disturbed as its binary's run was
    bench_runs, items, attempt = [], {}, {}
    for r in runs:
        k = (r["name"], r["allocator"], r["round"])
        attempt[k] = attempt.get(k, 0) + 1  # a repeated run's JSON: <round>.2.json
        if not r["ok"]:
            continue
        path = os.path.join(raw, f"{r['name']}.{r['allocator']}.{r['round']}"
                                 f"{'.%d' % attempt[k] if attempt[k] > 1 else ''}.json")
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if not text.strip():
            continue  # the filter matched nothing in that binary
        for b in json.loads(text).get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            name = f"{r['name']}: {b['name']}"
            bench_runs.append(dict(r, name=name, seconds=b["real_time"] * scale * 1e-9))
            if "items_per_second" in b:
                items.setdefault(name, {}).setdefault(r["allocator"], []).append(
                    (b["items_per_second"], r["disturbed"], r["round"]))
    t = build_cells(bench_runs, lambda r: r["seconds"])
    names = order(bench_runs, "name")
    nrounds = max(r["round"] for r in runs)
    md = [f"{len(binaries)} Google Benchmark programs x {len(allocs)} allocators x "
          f"{nrounds} interleaved runs (for each run: every program, every allocator in turn).",
          "", disturbed_words([r for r in runs if r["ok"]], THRESHOLD_NOTE)
          .replace("runs were", "program runs were"), "",
          "axmalloc's column is its time per iteration in ns, median [min-max]; the others are "
          "the peer's time / axmalloc's, median [range] as in the workloads (above 1: axmalloc "
          "is faster; ≈: within the noise)."]
    geo_all = {}
    for b in binaries:
        rows_b = [n for n in names if n.startswith(b + ": ")]
        if not rows_b:
            continue
        cols = [a for a in allocs if a != REF and any(a in t[n] for n in rows_b)]
        sub = {n: t[n] for n in rows_b}
        geo = {p: geomean_rounds(sub, p) for p in cols}
        geo_all[b] = geo
        rows = [[short(n)] + [fcell(t[n].get(REF), 1e9)] +
                [fratio(ratio(t[n].get(p), t[n].get(REF))) for p in cols] for n in rows_b]
        rows.append(["**geomean**", ""] + [fratio(geo[p]) if geo[p] else "-" for p in cols])
        md += ["", f"### {b}", "", md_table(["benchmark", "axmalloc ns"] + cols, rows, keep=2), "",
               words(sub, cols, b, short)]
    with open(os.path.join(out, "micro.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    data = {"rounds": nrounds, "allocators": allocs, "benchmarks": {}, "geomean": geo_all}
    for n in names:
        data["benchmarks"][n] = {}
        for a, c in t[n].items():
            e = {"time_ns": {k: (v * 1e9 if isinstance(v, float) else v)
                             for k, v in c.json().items()}}
            r = ratio(c, t[n].get(REF)) if a != REF else None
            if r:
                e["ratio_to_axmalloc"] = dict(r, within_noise=within_noise(r))
            data["benchmarks"][n][a] = e
    with open(os.path.join(out, "micro.json"), "w") as f:
        json.dump(data, f, indent=1)
    estimates(runs, os.path.join(out, "estimate_micro.tsv"), "bm")
    threads_plot(items, allocs, nrounds, out)


def threads_plot(items, allocs, nrounds, out):
    """Throughput against threads for one /threads:N family: the first of pairs/random/64,
    pairs/lifo/64, else the family with the most thread counts."""
    fam = {}
    for n, per in items.items():
        m = re.match(r"(.*)/threads:(\d+)$", n)
        if m:
            fam.setdefault(m.group(1).replace("/real_time", ""), {})[int(m.group(2))] = per
    if not fam:
        return
    pick = next((f for f in ("bm_pairs: pairs/random/64", "bm_pairs: pairs/lifo/64") if f in fam),
                max(fam, key=lambda f: len(fam[f])))
    threads = sorted(fam[pick])
    dat = os.path.join(out, "micro_threads.dat")
    shown = []
    with open(dat, "w") as f:
        for a in allocs:
            pts = []
            for th in threads:
                v = fam[pick][th].get(a)
                if v:
                    c = Cell([x[0] for x in v], [x[1] for x in v], [x[2] for x in v])
                    pts.append(f"{th} {c.median / 1e6:.4g} {c.min / 1e6:.4g} {c.max / 1e6:.4g}")
            if pts:
                shown.append(a)
                f.write(f"# {a}\n" + "\n".join(pts) + "\n\n\n")
    plots = ", ".join(
        f"'{dat}' index {i} using ($1*{1 + 0.03 * (i - len(shown) / 2):.3f}):2:3:4 "
        f"with yerrorlines pt 7 lw 2 lc rgb '{PALETTE[i % len(PALETTE)]}' title '{a}'"
        for i, a in enumerate(shown))
    gnuplot(f"""
set terminal pngcairo noenhanced size 1000,600 font "DejaVu Sans,11"
set output '{os.path.join(out, "micro_threads.png")}'
set title "{pick}: throughput against threads (median of {nrounds} runs; bars: min-max)"
set xlabel "threads"
set ylabel "million malloc+free pairs per second (log2 scale; higher is faster)"
set logscale xy 2
set xrange [{threads[0] / 1.3:g}:{threads[-1] * 1.3:g}]
set xtics ({", ".join(str(x) for x in threads)})
set grid
set key outside right top box
plot {plots}
""")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "workloads":
        workloads(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "micro":
        micro(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
