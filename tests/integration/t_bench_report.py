#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark report's logic (bench/report.py) on synthetic runs, nothing timed:
medians and ranges, a disturbed run left out and a cell with too few quiet runs marked, the
"within the noise" verdict on an overlapping pair and not on a separated one, the round-by-round
geometric mean, a failed run listed; the same for Google Benchmark output (bench/compare_micro.sh);
and bench/runlib.sh's verdict on a run's other load (the disturbed marking).

  python3 tests/integration/t_bench_report.py [REPO_ROOT]
  T_KEEP=DIR python3 tests/integration/t_bench_report.py     (keeps the inputs and outputs in DIR)

Exit status 0 when every check holds, 1 (with the failed check) otherwise.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
REPORT = os.path.join(ROOT, "bench", "report.py")
HEADER = ("round name allocator seconds rss_kib minor_faults cpu_s other_cpu_s running_before "
          "running_after disturbed status").split()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def near(a, b):
    return a is not None and abs(a - b) < 1e-9


def run(rd, name, alloc, secs, disturbed=0, status="ok", rss=1024):
    # other_cpu_s: 0.6 CPUs of other load for a disturbed run, none for a quiet one
    return [rd, name, alloc, secs, rss, 1000, secs, 0.6 * secs if disturbed else 0, 0, 0,
            disturbed, status]


rows = []
# wl_apart: axmalloc ~1 s, glibc ~2 s: separated ranges. axmalloc's round 3 was disturbed
# (5.0 s) and repeated (0.9 s): the medians must use 1.0 1.1 1.05 0.95 0.9.
ax = [1.0, 1.1, 5.0, 1.05, 0.95]
gl = [2.0, 2.2, 1.8, 2.1, 1.9]
for i in range(5):
    rows.append(run(i + 1, "wl_apart", "glibc", gl[i]))
    rows.append(run(i + 1, "wl_apart", "axmalloc", ax[i], disturbed=int(i == 2)))
    if i == 2:
        rows.append(run(3, "wl_apart", "axmalloc", 0.9))
# wl_overlap: glibc's every run disturbed (fewer than 3 quiet: all used, marked); its range
# [0.95-1.2] overlaps axmalloc's [0.9-1.1]: within the noise.
ax2 = [1.0, 0.9, 1.1, 1.0, 0.95]
gl2 = [1.05, 0.95, 1.2, 1.0, 1.1]
for i in range(5):
    rows.append(run(i + 1, "wl_overlap", "glibc", gl2[i], disturbed=1))
    rows.append(run(i + 1, "wl_overlap", "axmalloc", ax2[i], rss=2048))
# wl_few: 2 runs each, apart (1.0, 1.1 against 3.0, 3.1), but 1/C(4,2) = 1/6 > 5%: too few
# runs to tell, within the noise.
for i in range(2):
    rows.append(run(i + 1, "wl_few", "glibc", 3.0 + i / 10))
    rows.append(run(i + 1, "wl_few", "axmalloc", 1.0 + i / 10))
# wl_static: axmalloc-static and axmalloc both disturbed in round 5 (left out: 4 quiet runs)
for i in range(5):
    rows.append(run(i + 1, "wl_static", "axmalloc-static", 1.2, disturbed=int(i == 4)))
    rows.append(run(i + 1, "wl_static", "axmalloc", 1.0, disturbed=int(i == 4)))
rows.append(run(2, "wl_crash", "axmalloc", 0.5, status="exit status 1"))
rows.append(run(2, "wl_crash", "glibc", 0.5))

with tempfile.TemporaryDirectory() as tmp:
    tmp = os.environ.get("T_KEEP") or tmp
    tsv = os.path.join(tmp, "runs.tsv")
    with open(tsv, "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    out = os.path.join(tmp, "out")
    subprocess.run([sys.executable, REPORT, "workloads", tsv, out], check=True)
    data = json.load(open(os.path.join(out, "workloads.json")))
    md = open(os.path.join(out, "workloads.md")).read()

    a = data["workloads"]["wl_apart"]["axmalloc"]["time_s"]
    check(near(a["median"], 1.0) and near(a["min"], 0.9) and near(a["max"], 1.1),
          f"wl_apart axmalloc: median 1.0 [0.9-1.1] without the disturbed 5.0 s run, got {a}")
    check(a["runs"] == 6 and a["disturbed"] == 1 and not a["all_runs_used"],
          f"wl_apart axmalloc: 6 runs, 1 disturbed, left out, got {a}")
    r = data["workloads"]["wl_apart"]["glibc"]["ratio_to_axmalloc"]
    check(near(r["ratio"], 2.0) and near(r["lo"], 1.8 / 1.1) and near(r["hi"], 2.2 / 0.9)
          and not r["within_noise"], f"wl_apart glibc/axmalloc 2.0 [1.64-2.44], beyond the noise, got {r}")
    g = data["workloads"]["wl_overlap"]["glibc"]["time_s"]
    check(g["all_runs_used"] and g["disturbed"] == 5 and near(g["median"], 1.05),
          f"wl_overlap glibc: every run disturbed, all used, median 1.05, got {g}")
    r2 = data["workloads"]["wl_overlap"]["glibc"]["ratio_to_axmalloc"]
    check(r2["within_noise"] and near(r2["ratio"], 1.05),
          f"wl_overlap glibc/axmalloc 1.05 within the noise, got {r2}")
    r3 = data["workloads"]["wl_few"]["glibc"]["ratio_to_axmalloc"]
    check(r3["within_noise"] and r3["lo"] > 1 and near(r3["chance"], 1 / 6),
          f"wl_few: apart ranges of 2 runs each are within the noise (chance 1/6), got {r3}")
    check(near(r["chance"], 1 / 252), f"wl_apart: 5 runs used a side, chance 1/C(10,5), got {r}")
    rss = data["workloads"]["wl_overlap"]["axmalloc"]["peak_rss_kib"]
    check(near(rss["median"], 2048), f"wl_overlap axmalloc peak RSS 2048 KiB, got {rss}")
    # geomean round by round (round 3: axmalloc's repeated run), median [min-max] of rounds
    geo = data["geomean_ratio_to_axmalloc"]["glibc"]
    few = [3.0 / 1.0, 3.1 / 1.1, 3.05 / 1.05, 3.05 / 1.05, 3.05 / 1.05]  # rounds 3-5: medians
    per_round = sorted((gl[i] / (0.9 if i == 2 else ax[i]) * gl2[i] / ax2[i] * few[i]) ** (1 / 3)
                       for i in range(5))
    check(near(geo["ratio"], per_round[2]) and near(geo["lo"], per_round[0]) and
          near(geo["hi"], per_round[4]) and geo["rows"] == 3 and geo["rounds"] == 5,
          f"geomean: median [min-max] of the 5 rounds' geomeans over 3 rows, got {geo}")
    check(data["geomean_ratio_to_axmalloc"]["axmalloc-static"]["rounds"] == 5,
          "a round whose runs were all disturbed still counts (the medians fill it)")
    check(near(geo["of_medians"], (2.0 * 1.05 * 3.05 / 1.05) ** (1 / 3)),
          f"geomean of the medians, got {geo}")
    check(data["runs_disturbed"] == 8, f"8 disturbed runs counted, got {data['runs_disturbed']}")

    check("8 of 36 runs were disturbed" in md, "the report says 6 of 22 runs were disturbed")
    check("| wl_apart | 2.00 [1.80-2.20] | 1.00 [0.900-1.10] |" in md,
          "time table row of wl_apart: median [min-max] per allocator")
    check("1.05 [0.950-1.20] †" in md, "the busy cell is marked †")
    check("≈ 1.05 [" in md and "| 2.00 [1.64-2.44]" in md,
          "≈ on the overlapping ratio, none on the separated one")
    check("axmalloc faster beyond the noise on 1 (wl_apart)" in md
          and "within the noise on 2 (wl_overlap, wl_few)" in md, "the differences said in words")
    check("wl_crash under axmalloc (run 2): exit status 1" in md, "the failed run is listed")
    check("machine was busy" not in md, "no busy-machine warning for 8 disturbed runs of 36")
    # every run disturbed: the report warns at its top
    busy_tsv = os.path.join(tmp, "busy.tsv")
    with open(busy_tsv, "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r[:10] + [1] + r[11:]) + "\n")
    subprocess.run([sys.executable, REPORT, "workloads", busy_tsv, os.path.join(tmp, "busy")],
                   check=True)
    busy_md = open(os.path.join(tmp, "busy", "workloads.md")).read()
    check("**The machine was busy: most runs were disturbed" in busy_md and
          "36 of 36 runs were disturbed" in busy_md, "the busy-machine warning")
    # 8 allocators: the time table splits into two of 4 columns, each with the row names
    wide_tsv = os.path.join(tmp, "wide.tsv")
    with open(wide_tsv, "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for r in rows:
            if r[1] == "wl_apart":
                for name in ["glibc", "axmalloc"] + [f"p{k}" for k in range(1, 7)]:
                    if r[2] == "glibc" or name == "axmalloc" == r[2]:
                        f.write("\t".join(str(x) for x in r[:2] + [name] + r[3:]) + "\n")
    subprocess.run([sys.executable, REPORT, "workloads", wide_tsv, os.path.join(tmp, "wide")],
                   check=True)
    wide_md = open(os.path.join(tmp, "wide", "workloads.md")).read()
    check("| workload | glibc | axmalloc | p1 | p2 |\n" in wide_md and
          "| workload | p3 | p4 | p5 | p6 |\n" in wide_md, "8 allocator columns: two tables of 4")
    est = open(os.path.join(out, "estimate_workloads.tsv")).read()
    check("wl\twl_apart\taxmalloc\t1.025\n" in est, "the estimate: median seconds of a run")

    # micro: one program, two allocators, 5 rounds; glibc's round 2 disturbed (100 ns) and
    # repeated (22 ns, its JSON in <round>.2.json).
    raw = os.path.join(tmp, "raw")
    os.makedirs(raw, exist_ok=True)
    mrows = []

    def bm_json(path, ns):
        bms = [{"name": f"x/64/real_time/threads:{t}", "run_type": "iteration",
                "real_time": ns * t, "time_unit": "ns", "items_per_second": 1e9 / ns}
               for t in (1, 2)]
        json.dump({"benchmarks": bms}, open(os.path.join(raw, path), "w"))

    for rd in range(1, 6):
        for alloc, ns, dist in (("glibc", 100 if rd == 2 else 20 + rd, rd == 2),
                                ("axmalloc", 10 + rd, False)):
            mrows.append(run(rd, "bm_x", alloc, 1.0, disturbed=int(dist)))
            bm_json(f"bm_x.{alloc}.{rd}.json", ns)
            if dist:
                mrows.append(run(rd, "bm_x", alloc, 1.0))
                bm_json(f"bm_x.{alloc}.{rd}.2.json", 22)
    mtsv = os.path.join(tmp, "micro.tsv")
    with open(mtsv, "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for r in mrows:
            f.write("\t".join(str(x) for x in r) + "\n")
    subprocess.run([sys.executable, REPORT, "micro", mtsv, raw, out], check=True)
    m = json.load(open(os.path.join(out, "micro.json")))
    b = m["benchmarks"]["bm_x: x/64/real_time/threads:1"]
    check(near(b["axmalloc"]["time_ns"]["median"], 13) and near(b["glibc"]["time_ns"]["median"], 23)
          and near(b["glibc"]["time_ns"]["max"], 25),
          f"micro medians 13 ns and 23 ns (the 100 ns run left out, its repetition in), got {b}")
    check(near(b["glibc"]["ratio_to_axmalloc"]["lo"], 21 / 15) and
          not b["glibc"]["ratio_to_axmalloc"]["within_noise"], f"micro ratio range, got {b}")
    # round by round 21/11, 22/12 (the repetition), 23/13, 24/14, 25/15
    mg = m["geomean"]["bm_x"]["glibc"]
    check(mg["rounds"] == 5 and near(mg["hi"], 21 / 11) and near(mg["ratio"], 23 / 13) and
          near(mg["lo"], 25 / 15), f"micro geomean over the rounds, disturbed run left out, got {mg}")
    mmd = open(os.path.join(out, "micro.md")).read()
    check("| x/64/threads:1 | 13.0 [11.0-15.0] |" in mmd, "micro row: axmalloc ns median [min-max]")
    check("1 of 11 program runs were disturbed" in mmd, "micro: the disturbed program run counted")

# The marking itself (bench/runlib.sh): other CPU time = busy time of all CPUs - the run's own;
# disturbed above AX_BUSY (0.25) CPUs of the wall time plus 40 ms of clock granularity.
RUNLIB = os.path.join(ROOT, "bench", "runlib.sh")
for busy0, busy1, own, wall, other, disturbed in (
        (1000, 3000, "1.00", "1.000", "1.000", "1"),   # a whole other CPU busy for 1 s
        (1000, 2200, "1.00", "1.000", "0.200", "0"),   # 0.2 CPUs: under 0.25 + 40 ms
        (1000, 2300, "1.00", "1.000", "0.300", "1"),   # 0.3 CPUs
        (1000, 1040, "0.05", "0.100", "0.000", "0"),   # own time over the busy delta: 0
        (1000, 5000, "", "1.000", "", "0")):           # own time unknown: not judged
    res = subprocess.run(["bash", "-c", f'source "{RUNLIB}"; ax_other_load {busy0} {busy1} '
                          f'"{own}" {wall}; echo "$AX_OTHER_S $AX_DISTURBED"'],
                         capture_output=True, text=True, check=True).stdout.split()
    want = [other, disturbed] if other else [disturbed]
    check(res == want, f"ax_other_load {busy0} {busy1} '{own}' {wall}: want {want}, got {res}")

if failures:
    print(f"t_bench_report: {len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("t_bench_report: all checks passed")
