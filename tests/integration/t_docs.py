#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""t_docs: every shell command of README.md and of the EXAMPLES of man/axmalloc.1 and
man/axmalloc.3 runs as written and does what it says, so that the documents cannot drift
from the tree again.

What is a command (the convention; docs/testing.md, "The documents' commands"):
  README.md     every fenced block tagged ```sh or ```bash. Blocks tagged c, cmake or text,
                and untagged ones (sample output), are not run; any other tag fails, so
                that a block of commands cannot hide behind a new tag.
  man pages     every .EX/.EE block of the EXAMPLES section, as the installed package's
                commands (below); a block marked `file NAME` is the text of the file NAME
                that the blocks after it use (the man page's app.c).
Markers, on the line before a block (blank lines between are allowed):
  <!-- doc-test: skip: REASON -->       (README)   not run; the test prints REASON. For what
  .\\" doc-test: skip: REASON           (man)      cannot run in a test: apt-get, sudo, the
                                                   benchmarks, building another tree
  <!-- doc-test: installed -->                     run as if the Debian packages were
                                                   installed (below)
  <!-- doc-test: output of: COMMAND -->            a sample block (untagged): every line of
                                                   it, digits aside, must be a line of what
                                                   COMMAND prints
  .\\" doc-test: file NAME              (man)      the block is the file NAME
A skipped block is still read: `bash -n` must accept it, every `--preset NAME` must be a
preset of CMakePresets.json of that kind, every `bash FILE` must exist and every package an
`apt-get install` names must be in scripts/deps.sh.

How a block runs: in a scratch directory per document, which holds symbolic links to the
source tree's entries, `build` -> this build (`build-aarch64` -> the cross build), and small
fixtures the commands name: prog.c, prog.cc, app.c, app.cc (malloc and free; C++ new and
std::string), `prog` and `server` built from prog.c without axmalloc, script.py and big.txt.
Each command (a line, with its `\\`, `&&`, `||` and `|` continuations) runs in one bash per
block (so `export` and `cd` carry over to the next line, not to the next block), with
pipefail, no standard input and AXMALLOC_VERBOSE=1, after these rewrites:
  /opt/axmalloc...  -> <scratch>/opt/axmalloc... (installed there before: cmake --install of
                       this build, and of the cross build as /opt/axmalloc-aarch64)
  /tmp/             -> <the document's scratch>/tmp/
  <pid>             -> * (the one profile of that name in the scratch)
and, in a block marked installed and in every man page block, /usr/lib/<multiarch>/libaxmalloc
-> <scratch>/usr/lib/libaxmalloc, with this build installed into <scratch>/usr, whose bin/ and
lib/pkgconfig/ lead PATH and PKG_CONFIG_PATH (CMAKE_PREFIX_PATH
too), but for LD_LIBRARY_PATH: a directory with libaxmalloc.so.0 alone, what ld.so finds of
the packages (libaxmalloc.so, the -dev package's link for -laxmalloc, is not for preloading).

Each command must
  - exit 0;
  - print none of: ld.so's "cannot be preloaded", pkg-config's "Package axmalloc was not
    found" (a $(pkg-config ...) that fails leaves a line that still links, without axmalloc);
  - print axmalloc's banner ("axmalloc: version") when it preloads (LD_PRELOAD, the launcher)
    or asks for it (--verbose), its statistics when it asks for them (AXMALLOC_STATS=1,
    --stats);
and every file it writes is checked: a program (an ELF executable) must be linked with
libaxmalloc.so.0 or hold axmalloc (a defined ax_malloc), be of this build's architecture,
and run on axmalloc (its statistics with AXMALLOC_STATS=1; AArch64 ones under qemu, shared
ones with this build's library on LD_LIBRARY_PATH); a .svg must be non-empty XML with an
<svg> root; a .heap must be a heap profile.

Native and cross: a block that names aarch64 is run by the cross build's t_docs (mode cross,
under qemu-aarch64), every other one by the native build's. About 15 s natively, 5 s
cross. Exit 77 (skipped) when an AXMALLOC_* variable is set: scripts/test.sh's variant
passes, which would run the same commands again.

usage: t_docs.py --source DIR --mode native|cross --build DIR --cc CC [--cmake CMAKE]
                  [--emulator 'qemu-aarch64|-L|...'] [--list] [DOC...]
   --list: print each block and what would happen to it, run nothing.
   --expect-failures: every block must fail (t_docs.blind: tests/integration/t_docs_broken.md,
   commands each broken in a way t_docs must see)."""
import argparse
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

DOCS = ["README.md", "man/axmalloc.1", "man/axmalloc.3"]
RUN_TAGS = {"sh", "bash"}
QUIET_TAGS = {"", "c", "cmake", "text"}
# What a command must never print (it means the line did not do what it says).
BAD_STDERR = [
    (re.compile(r"cannot be preloaded"), "the preload failed (ld.so ignored the library)"),
    (re.compile(r"Package axmalloc was not found|No package 'axmalloc' found"),
     "pkg-config did not find axmalloc (the line built without it)"),
    (re.compile(r"command not found"), "a command is missing"),
]
LINE_TIMEOUT = 180


class Block:
    def __init__(self, doc, line, tag, text):
        self.doc, self.line, self.tag, self.text = doc, line, tag, text
        self.skip = None  # reason
        self.installed = False
        self.file = None  # man: the block is this file
        self.sample_of = None  # the command whose output this block samples

    def where(self):
        return "%s:%d" % (self.doc, self.line)

    def cross(self):
        """Names aarch64 in a command (not only in a comment)."""
        return any("aarch64" in re.sub(r"(^|\s)#.*", "", c) for c in logical_lines(self.text))


def apply_marker(block, markers, errors):
    for doc, line, m in markers:
        if m.startswith("skip:") and m[5:].strip():
            block.skip = m[5:].strip()
        elif m == "installed":
            block.installed = True
        elif m.startswith("output of:") and m[10:].strip():
            block.sample_of = m[10:].strip()
        elif m.startswith("file ") and m[5:].strip():
            block.file = m[5:].split()[0]  # (words after the name: a note)
        else:
            errors.append("%s:%d: unknown doc-test marker '%s'" % (doc, line, m))


def parse_markdown(path, name, errors):
    blocks, markers, fence = [], [], None
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines, 1):
        if fence is not None:
            if l.strip() == "```":
                fence.text = "\n".join(body)
                apply_marker(fence, markers, errors)
                markers = []
                blocks.append(fence)
                fence = None
            else:
                body.append(l)
            continue
        m = re.match(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$", l)
        if m:
            markers.append((name, i, m.group(1)))
            continue
        m = re.match(r"^\s*```\s*([A-Za-z0-9_+-]*)\s*$", l)
        if m:
            fence, body = Block(name, i + 1, m.group(1), ""), []
            continue
        if l.strip() and markers:
            errors.append("%s:%d: a doc-test marker not followed by a block" % (name, markers[0][1]))
            markers = []
    if fence is not None:
        errors.append("%s:%d: unclosed ``` block" % (name, fence.line - 1))
    return blocks


ROFF_ESCAPES = [("\\-", "-"), ("\\e", "\\"), ("\\&", ""), ("\\(aq", "'"), ("\\(dq", '"'),
                ("\\(ti", "~"), ("\\(ha", "^"), ("\\fB", ""), ("\\fI", ""), ("\\fR", ""),
                ("\\fP", ""), ("\\ ", " ")]


def unroff(text, where, errors):
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            for esc, rep in ROFF_ESCAPES:
                if text.startswith(esc, i):
                    out.append(rep)
                    i += len(esc)
                    break
            else:
                errors.append("%s: a roff escape t_docs does not know: %s" % (where, text[i:i + 4]))
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_man(path, name, errors):
    blocks, markers, section, body = [], [], None, None
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines, 1):
        if l.startswith(".SH"):
            section = l[3:].strip().strip('"')
            continue
        if section != "EXAMPLES":
            continue
        if body is not None:
            if l.startswith(".EE"):
                b = Block(name, start, "sh", unroff("\n".join(body), "%s:%d" % (name, start), errors))
                b.installed = True
                apply_marker(b, markers, errors)
                markers = []
                blocks.append(b)
                body = None
            else:
                body.append(l)
            continue
        m = re.match(r'^\.\\"\s*doc-test:\s*(.*?)\s*$', l)
        if m:
            markers.append((name, i, m.group(1)))
        elif l.startswith(".EX"):
            body, start = [], i + 1
    return blocks


def logical_lines(text):
    """The commands of a block: lines joined at a trailing \\, &&, || or |; comments and
    blank lines dropped."""
    cmds, cur = [], ""
    for l in text.split("\n"):
        if not cur and (not l.strip() or l.lstrip().startswith("#")):
            continue
        cur += l + "\n"
        s = re.sub(r"\s+#[^'\"]*$", "", l).rstrip()  # a trailing comment does not continue
        if s.endswith("\\") or s.endswith("&&") or s.endswith("||") or s.endswith("|"):
            continue
        cmds.append(cur.rstrip("\n"))
        cur = ""
    if cur:
        cmds.append(cur.rstrip("\n"))
    return cmds


def rewrite(cmd, installed):
    cmd = cmd.replace("/opt/axmalloc", "${AXDOC_ROOT}/opt/axmalloc")
    cmd = re.sub(r"(?<![\w.}/-])/tmp/", "${AXDOC_DIR}/tmp/", cmd)
    cmd = cmd.replace("<pid>", "*")
    if installed:
        cmd = re.sub(r"/usr/lib/(<multiarch>|[a-z0-9_]+-linux-gnu)/libaxmalloc",
                     "${AXDOC_ROOT}/usr/lib/libaxmalloc", cmd)
    return cmd


# ---- static checks (every shell block, run or skipped) ---------------------------------
def presets(source):
    p = json.load(open(os.path.join(source, "CMakePresets.json")))
    return {k: {x["name"] for x in p.get(k + "Presets", [])} for k in ("configure", "build", "test")}


def deps_packages(source):
    text = open(os.path.join(source, "scripts/deps.sh")).read()
    m = re.search(r"^PKGS=\((.*?)^\)", text, re.S | re.M)
    words = set()
    for l in (m.group(1) if m else "").split("\n"):
        words.update(l.split("#")[0].split())
    return words


def static_checks(b, source, known, pkgs):
    errs = []
    r = subprocess.run(["bash", "-n"], input=b.text, text=True, capture_output=True)
    if r.returncode:
        errs.append("bash -n: " + r.stderr.strip())
    for cmd in logical_lines(b.text):
        for m in re.finditer(r"\b(cmake|ctest)\s+(--build\s+)?--preset[ =]([\w-]+)", cmd):
            kind = "test" if m.group(1) == "ctest" else "build" if m.group(2) else "configure"
            if m.group(3) not in known[kind]:
                errs.append("no %s preset '%s' in CMakePresets.json" % (kind, m.group(3)))
        for m in re.finditer(r"\b(?:bash|sh)\s+([\w./-]+\.sh)\b", cmd):
            if not os.path.exists(os.path.join(source, m.group(1))):
                errs.append("%s: no such file in the tree" % m.group(1))
        m = re.search(r"apt-get\s+install\s+(.*)", cmd)
        if m:
            for w in m.group(1).split("#")[0].split():
                if not w.startswith("-") and not w.startswith("./") and w not in pkgs:
                    errs.append("apt-get install %s: not a package of scripts/deps.sh" % w)
    return errs


# ---- fixtures ----------------------------------------------------------------------------
PROG_C = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* malloc and free, enough bytes for the profiler's samples; 4 MiB kept reachable to the end
 * (in use at exit, and no leak) */
static void *keep[64];
static void *fill(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 1, n);
  return p;
}
int main(void) {
  for (int i = 0; i < 4096; i++) free(fill(1024 + (size_t)i * 64));
  for (int i = 0; i < 64; i++) keep[i] = fill(65536);
  puts("NAME: ok");
  return keep[63] ? 0 : 1;
}
"""
PROG_CC = r"""#include <iostream>
#include <memory>
#include <string>
#include <vector>
int main() {
  std::vector<std::string> v;
  for (int i = 0; i < 10000; i++) v.push_back(std::string(40 + i % 100, 'x'));
  auto p = std::make_unique<long[]>(100000);
  std::cout << "NAME: " << (v.size() == 10000 && p ? "ok" : "wrong") << "\n";
  return 0;
}
"""


def make_fixtures(d, cc):
    for name in ("prog", "app"):
        open(os.path.join(d, name + ".c"), "w").write(PROG_C.replace("NAME", name))
        open(os.path.join(d, name + ".cc"), "w").write(PROG_CC.replace("NAME", name))
    open(os.path.join(d, "script.py"), "w").write("print(sum(range(10)))\n")
    with open(os.path.join(d, "big.txt"), "w") as f:
        for i in range(20000):
            f.write("%08x line %d\n" % ((i * 2654435761) & 0xFFFFFFFF, i))
    r = subprocess.run([cc, "-O1", "-g", "-o", os.path.join(d, "prog"), os.path.join(d, "prog.c")],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("t_docs: cannot build the fixture prog: " + r.stderr)
    shutil.copy2(os.path.join(d, "prog"), os.path.join(d, "server"))
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)


# ---- checks of what a command wrote ------------------------------------------------------
def snapshot(d):
    seen = {}
    for root, dirs, files in os.walk(d):
        rel = os.path.relpath(root, d)
        if rel.split(os.sep)[0] in ("opt", "usr"):
            dirs[:] = []
            continue
        for f in files:
            p = os.path.join(root, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not os.path.islink(p):
                seen[p] = st.st_mtime_ns
    return seen


def elf_kind(path):
    """None, or (machine, type) of an ELF file."""
    try:
        with open(path, "rb") as f:
            h = f.read(20)
    except OSError:
        return None
    if len(h) < 20 or h[:4] != b"\x7fELF":
        return None
    etype = int.from_bytes(h[16:18], "little")
    machine = int.from_bytes(h[18:20], "little")
    return machine, etype


def check_program(path, ctx):
    """Errors of a program a command built."""
    r = subprocess.run(["readelf", "-hdlsW", path], capture_output=True, text=True)
    if r.returncode:
        return ["readelf: " + r.stderr.strip()]
    out = r.stdout
    errs = []
    machine = elf_kind(path)[0]
    if machine != ctx.machine:
        errs.append("built for ELF machine %d, not this build's %d" % (machine, ctx.machine))
        return errs
    shared = re.search(r"\(NEEDED\)\s+Shared library: \[libaxmalloc\.so\.0\]", out)
    static = re.search(r"^\s*\d+: [0-9a-f]+\s+\d+ FUNC\s+\w+\s+\w+\s+\d+ ax_malloc$", out, re.M)
    if not shared and not static:
        return ["holds no axmalloc: neither linked with libaxmalloc.so.0 nor defining ax_malloc"]
    env = dict(ctx.env, AXMALLOC_STATS="1")
    cmd = [path]
    if shared:
        env["LD_LIBRARY_PATH"] = ctx.libdir
    if ctx.emulator:
        cmd = ctx.emulator + (["-E", "LD_LIBRARY_PATH=" + ctx.libdir] if shared else []) + cmd
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL, cwd=os.path.dirname(path))
    except subprocess.TimeoutExpired:
        return ["ran for 120 s"]
    if p.returncode != 0:
        errs.append("exit %d when run: %s" % (p.returncode, p.stderr.strip()[-300:]))
    elif "axmalloc stats (pid" not in p.stderr:
        errs.append("runs, but not on axmalloc (no statistics with AXMALLOC_STATS=1)")
    return errs


# A command that links axmalloc into what it builds.
LINKS_AXMALLOC = re.compile(r"libaxmalloc\.(a|so)|axmalloc\.o\b|-laxmalloc|pkg-config[^|;&]*\baxmalloc")


def check_file(path, ctx, links):
    kind = elf_kind(path)
    base = os.path.basename(path)
    if kind and kind[1] in (2, 3) and not re.search(r"\.(so(\.\d+)*|o|a)$", base):
        return check_program(path, ctx) if links else []
    if base.endswith(".svg"):
        if os.path.getsize(path) == 0:
            return ["empty (google-pprof --svg needs dot: graphviz, scripts/deps.sh)"]
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            return ["not XML: %s" % e]
        if not root.tag.endswith("svg"):
            return ["XML whose root is <%s>, not <svg>" % root.tag]
    if base.endswith(".heap"):
        with open(path, errors="replace") as f:
            first = f.readline()
        if not first.startswith("heap profile:"):
            return ["not a heap profile: '%s'" % first.strip()]
    return []


# ---- running a block ---------------------------------------------------------------------
class Ctx:
    pass


def command_checks(cmd, out, err):
    """Errors of a command by what it printed (stderr; the banner and the statistics may have
    been sent to stdout by a 2>&1)."""
    errs = []
    for rx, what in BAD_STDERR:
        m = rx.search(err)
        if m:
            line = next((l for l in err.split("\n") if rx.search(l)), m.group(0))
            errs.append("%s: %s" % (what, line.strip()))
    banner = "axmalloc: version" in err + out
    preload = re.search(r"\bLD_PRELOAD=", cmd) or re.search(r"(^|[;&|(]\s*|\s)axmalloc\s+-", cmd)
    if (preload or "--verbose" in cmd or "AXMALLOC_VERBOSE=1" in cmd) and not banner:
        errs.append("no axmalloc banner on stderr (AXMALLOC_VERBOSE=1): axmalloc did not run")
    if ("AXMALLOC_STATS=1" in cmd or "--stats" in cmd) and "axmalloc stats (pid" not in err + out:
        errs.append("no axmalloc statistics on stderr")
    return errs


def run_block(b, ctx, d):
    """Runs the block's commands in one bash; returns (commands run, errors)."""
    env = dict(ctx.env, AXDOC_DIR=d)
    if b.installed:
        u = os.path.join(ctx.root, "usr")
        env.update(PATH=u + "/bin:" + env["PATH"], LD_LIBRARY_PATH=os.path.join(ctx.root, "ld.so.cache"),
                   PKG_CONFIG_PATH=u + "/lib/pkgconfig", CMAKE_PREFIX_PATH=u)
    logs = os.path.join(ctx.root, "logs")
    errf = open(os.path.join(logs, "bash.err"), "w")
    sh = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=errf, cwd=d, env=env, text=True)
    sh.stdin.write("set -o pipefail\n")
    errors, n = [], 0
    try:
        for cmd in logical_lines(b.text):
            n += 1
            run = rewrite(cmd, b.installed)
            out, err = os.path.join(logs, "out"), os.path.join(logs, "err")
            before = snapshot(d)
            sh.stdin.write("{ %s\n} >%s 2>%s </dev/null; echo \"rc=$?\"\n" %
                           (run, shlex.quote(out), shlex.quote(err)))
            sh.stdin.flush()
            ready, _, _ = select.select([sh.stdout], [], [], LINE_TIMEOUT)
            line = sh.stdout.readline() if ready else None
            text_err = open(err, errors="replace").read() if os.path.exists(err) else ""
            text_out = open(out, errors="replace").read() if os.path.exists(out) else ""
            what = "`%s`" % cmd.replace("\n", " ")
            if line is None:
                errors.append("%s: still running after %d s" % (what, LINE_TIMEOUT))
                break
            if not line.startswith("rc="):
                errf.flush()
                errors.append("%s: bash stopped: %s" % (what, open(errf.name).read().strip()))
                break
            rc = int(line[3:])
            errs = []
            if rc != 0:
                errs.append("exit %d" % rc)
            errs += command_checks(cmd, text_out, text_err)
            after = snapshot(d)
            links = bool(LINKS_AXMALLOC.search(cmd))
            for p in sorted(after):
                if before.get(p) != after[p]:
                    errs += ["%s: %s" % (os.path.relpath(p, d), e) for e in check_file(p, ctx, links)]
            m = re.search(r"\s#\s*=>\s*(.*?)\s*$", cmd)
            if m and m.group(1) not in text_out:
                errs.append("does not print '%s' (its comment says it does)" % m.group(1))
            if errs:
                errors.append("%s: %s\n       stdout: %s\n       stderr: %s" % (
                    what, "; ".join(errs), text_out.strip()[-400:], text_err.strip()[-800:]))
                break
            if ctx.verbose:
                print("       ran %s" % what)
    finally:
        try:
            sh.stdin.close()
        except BrokenPipeError:
            pass
        try:
            sh.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sh.kill()
            sh.wait()
        errf.close()
    return n, errors


def norm(line):
    """A line with its numbers (a size with its unit: the report picks B, KiB, MiB or GiB by
    the figure), and the kernel's THP mode, made wildcards."""
    line = re.sub(r"\b(always|madvise|never)\b", "W", line)
    line = re.sub(r"\d+(\.\d+)? (B|KiB|MiB|GiB)\b", "N U", line)
    return " ".join(re.sub(r"\d+", "N", line).split())


def check_sample(b, ctx, d):
    env = dict(ctx.env, AXDOC_DIR=d)
    p = subprocess.run(["bash", "-c", "set -o pipefail; " + rewrite(b.sample_of, False)], cwd=d,
                       env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=LINE_TIMEOUT)
    if p.returncode:
        return ["`%s`: exit %d: %s" % (b.sample_of, p.returncode, p.stderr.strip()[-400:])]
    real = {norm(l) for l in (p.stdout + p.stderr).split("\n")}
    lack = [l for l in b.text.split("\n") if l.strip() and l.strip() not in ("...", "…")
            and norm(l) not in real]
    if lack:
        return ["lines `%s` does not print (digits aside):\n         %s\n       it prints:\n         %s" %
                (b.sample_of, "\n         ".join(lack),
                 "\n         ".join((p.stdout + p.stderr).strip().split("\n")[:20]))]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--mode", choices=("native", "cross"), required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--emulator", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--expect-failures", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("docs", nargs="*")
    a = ap.parse_args()
    source, build = os.path.abspath(a.source), os.path.abspath(a.build)
    variant = sorted(k for k in os.environ if k.startswith("AXMALLOC_"))
    if variant and not a.list:
        # scripts/test.sh's variant passes (forced paths) set one; the documents' commands
        # run without any (every AXMALLOC_* is taken out), so they would run the same again
        print("t_docs: skipped: %s set (a variant pass: the default pass runs the documents' "
              "commands)" % " ".join(variant))
        return 77

    errors, blocks = [], []
    for doc in a.docs or DOCS:
        path = os.path.join(source, doc)
        if doc.endswith(".md"):
            blocks += parse_markdown(path, doc, errors)
        else:
            blocks += parse_man(path, doc, errors)
    for b in blocks:
        if b.doc.endswith(".md") and b.tag not in RUN_TAGS | QUIET_TAGS:
            errors.append("%s: a block tagged '%s': tag commands sh or bash (they are run), "
                          "code c or cmake, output text or nothing" % (b.where(), b.tag))
        if b.sample_of and b.tag in RUN_TAGS:
            errors.append("%s: 'output of' marks a sample block, not commands" % b.where())
    if errors:
        for e in errors:
            print("FAIL " + e)
        print("t_docs: the documents cannot be read: %d error(s)" % len(errors))
        return 1

    mine = [b for b in blocks if (b.tag in RUN_TAGS or b.sample_of or b.file)]
    if a.list:
        for b in mine:
            fate = ("skip: " + b.skip if b.skip else "file " + b.file if b.file else
                    "sample of: " + b.sample_of if b.sample_of else
                    ("cross" if b.cross() else "native") + (", installed" if b.installed else ""))
            body = b.text.split("\n") if b.file or b.sample_of else logical_lines(b.text)
            print("%-22s %s\n    %s" % (b.where(), fate, "\n    ".join(body)))
        return 0

    ctx = Ctx()
    ctx.verbose = a.verbose
    ctx.emulator = [x for x in a.emulator.split("|") if x] if a.mode == "cross" else []
    ctx.root = tempfile.mkdtemp(prefix="t_docs.", dir=os.environ.get("TMPDIR", "/tmp"))
    ctx.libdir = build
    os.makedirs(os.path.join(ctx.root, "logs"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AXMALLOC_", "PKG_CONFIG_")) and
           k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "CMAKE_PREFIX_PATH", "DESTDIR", "MAKEFLAGS")}
    env.update(LC_ALL="C", AXMALLOC_VERBOSE="1", AXDOC_ROOT=ctx.root)
    ctx.env = env
    known, pkgs = presets(source), deps_packages(source)
    fails, ran, skipped, other = 0, 0, 0, 0

    def fail(msg):
        nonlocal fails
        fails += 1
        print("FAIL " + msg)

    def verdict(b, errs, okmsg):
        """Reports a run block; with --expect-failures a block must fail instead."""
        nonlocal ran
        ran += 1
        if a.expect_failures:
            if errs:
                print("ok   %s: fails, as it must: %s" % (b.where(), errs[0].split("\n")[0]))
            else:
                fail("%s: passes, but must fail: t_docs is blind to it" % b.where())
            return
        for e in errs:
            fail("%s: %s" % (b.where(), e))
        if not errs:
            print("ok   %s: %s" % (b.where(), okmsg))

    try:
        # the prefixes the commands name, installed from the builds
        installs = ([("opt/axmalloc", build), ("usr", build)] if a.mode == "native" else
                    [("opt/axmalloc-aarch64", build)])
        for prefix, tree in installs:
            r = subprocess.run([a.cmake, "--install", tree, "--prefix", os.path.join(ctx.root, prefix)],
                               capture_output=True, text=True)
            if r.returncode:
                fail("cmake --install %s --prefix <scratch>/%s: %s" % (tree, prefix, r.stdout + r.stderr))
                return 1
        if a.mode == "native":
            # what ld.so finds with the runtime package: the soname only (libaxmalloc.so, the
            # link, is the -dev package's, for -laxmalloc: not found by a preload)
            os.makedirs(os.path.join(ctx.root, "ld.so.cache"))
            os.symlink(os.path.join(ctx.root, "usr/lib/libaxmalloc.so.0"),
                       os.path.join(ctx.root, "ld.so.cache/libaxmalloc.so.0"))
        fixture = os.path.join(ctx.root, "fixture")
        os.makedirs(fixture)
        make_fixtures(fixture, a.cc)
        ctx.machine = elf_kind(os.path.join(fixture, "prog"))[0]
        for doc in a.docs or DOCS:
            d = os.path.join(ctx.root, doc.replace("/", "_"))
            shutil.copytree(fixture, d, symlinks=True)
            for e in os.listdir(source):
                if not e.startswith((".", "build")) and not os.path.exists(os.path.join(d, e)):
                    os.symlink(os.path.join(source, e), os.path.join(d, e))
            os.symlink(build, os.path.join(d, "build" if a.mode == "native" else "build-aarch64"))
            for b in [b for b in mine if b.doc == doc]:
                if b.file is None and b.sample_of is None:
                    for e in static_checks(b, source, known, pkgs):
                        fail("%s: %s" % (b.where(), e))
                if b.skip:
                    skipped += 1
                    print("skip %s: %s" % (b.where(), b.skip))
                    continue
                if b.file:
                    open(os.path.join(d, b.file), "w").write(b.text + "\n")
                    print("ok   %s: the file %s" % (b.where(), b.file))
                    continue
                if (a.mode == "cross") != b.cross():
                    other += 1
                    continue
                if b.sample_of:
                    if a.mode != "native":
                        continue
                    verdict(b, check_sample(b, ctx, d), "a sample of `%s`" % b.sample_of)
                    continue
                n, errs = run_block(b, ctx, d)
                verdict(b, errs, "%d command(s)%s" % (n, ", installed" if b.installed else ""))
    finally:
        if fails == 0 or a.expect_failures:
            shutil.rmtree(ctx.root, ignore_errors=True)
        else:
            print("t_docs: the scratch directory is kept: %s" % ctx.root)

    print("t_docs (%s): %d block(s) run, %d skipped by their marker, %d left to the %s build's t_docs"
          % (a.mode, ran, skipped, other, "cross" if a.mode == "native" else "native"))
    if ran == 0:
        fail("no block ran: the extraction found nothing to run")
    if fails:
        print("t_docs: %d failure(s)" % fails)
        return 1
    if a.expect_failures:
        print("t_docs: every block of %s fails, as it must: OK" % ", ".join(a.docs))
        return 0
    print("t_docs: every command of %s runs as written: OK" % ", ".join(a.docs or DOCS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
