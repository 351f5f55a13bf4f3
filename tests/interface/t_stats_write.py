#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ax_stats_write's JSON ("J"): `t_stats_write json` prints it after 5,000 live blocks of
1000 bytes; it must pass `python3 -m json.tool` and hold the figures it claims.

    t_stats_write.py <program> [<emulator args joined with |>]

ctest runs it with AXMALLOC_PURGE_DELAY_MS=25, AXMALLOC_THP=never and a profile prefix holding
a quote, a backslash and a control character, which the JSON must escape."""
import json
import os
import subprocess
import sys

prog = sys.argv[1]
emu = [a for a in sys.argv[2].split("|") if a] if len(sys.argv) > 2 else []
run = subprocess.run(emu + [prog, "json"], capture_output=True, check=True)
out = run.stdout.decode()
tool = subprocess.run([sys.executable, "-m", "json.tool"], input=run.stdout,
                      capture_output=True)
if tool.returncode != 0:
    sys.exit(f"json.tool refuses the report: {tool.stderr.decode()}\n{out}")
doc = json.loads(out)
failed = []


def check(cond, what):
    if not cond:
        failed.append(what)


a = doc["axmalloc"]
check(set(doc) == {"axmalloc"}, f"top-level keys {set(doc)}")
check(isinstance(a["version"], str) and a["version"].count(".") == 1, f"version {a['version']}")
check(isinstance(a["pid"], int) and a["pid"] > 0, f"pid {a['pid']}")
s = a["stats"]
check(s["allocated"] >= 5000 * 1000, f"allocated {s['allocated']}")
check(s["active"] >= s["allocated"], f"active {s['active']} < allocated {s['allocated']}")
check(s["resident"] <= s["mapped"], "resident > mapped")
check(s["retained"] == s["mapped"] - s["resident"], "retained != mapped - resident")
check(s["active_peak"] >= s["active"], "active_peak < active")
check(s["syscalls"]["mmap"] > 0, "no mmap")
check(s["thp"]["option"] == "never", f"thp {s['thp']}")
check(s["segments"]["live"] > 0, "no live segment")
classes = a["classes"]
check(len(classes) == 60, f"{len(classes)} classes")
check([c["class"] for c in classes] == list(range(1, 61)), "classes out of order")
check(all(x["size"] < y["size"] for x, y in zip(classes, classes[1:])), "sizes not increasing")
c1000 = next(c for c in classes if c["size"] >= 1000)
check(c1000["live_thread"] == 5000, f"class of 1000 B: live {c1000}")
check(c1000["mallocs"] >= 5000, f"class of 1000 B: mallocs {c1000}")
check(s["mallocs"] >= sum(c["mallocs"] for c in classes), "mallocs < the classes' sum")
check(a["thread"]["allocated"] >= 5000 * c1000["size"], f"thread {a['thread']}")
o = a["options"]
check(o["purge_delay_ms"] == 25, f"purge_delay_ms {o['purge_delay_ms']}")
check(o["thp"] == "never" and o["stats"] is False and o["prof_sample"] == 512 * 1024,
      f"options {o}")
check(o["prof_file"] == os.environ.get("AXMALLOC_PROF_FILE"),
      f"prof_file {o['prof_file']!r}, environment {os.environ.get('AXMALLOC_PROF_FILE')!r}")
if failed:
    sys.exit("t_stats_write.py: " + "; ".join(failed))
print(f"t_stats_write.py: OK ({len(out)} bytes of JSON, {len(classes)} classes, "
      f"{len(o)} options)")
