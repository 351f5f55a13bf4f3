#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_c.py: write a large C file for t_progs.sh to compile with gcc -O2.

usage: gen_c.py FUNCS > big.c

FUNCS functions of a few shapes (loops over arrays, switches, struct copies, string
tables, recursion, calls to earlier functions so the inliner has work), plus main(). The
text comes from a fixed linear congruential generator, so it is the same on every run.
"""
import sys

funcs = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
state = 99991


def rnd(n):
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (state >> 33) % n


w = sys.stdout.write
w("#include <stddef.h>\n#include <string.h>\n\n")
w("struct rec { int a, b; long c; double d; char name[16]; };\n")
w("static volatile int sink;\n\n")


def f_loop(i):
    k1, k2, k3 = rnd(97) + 1, rnd(13) + 1, rnd(7) + 1
    w(f"long f{i}(const int *v, size_t n) {{\n"
      f"  long s = {rnd(1000)};\n"
      f"  for (size_t j = 0; j < n; j++) {{\n"
      f"    int x = v[j] * {k1} + (int)j;\n"
      f"    if (x % {k2} == 0) s += x / {k3}; else s ^= (long)x << (j & {rnd(8) + 1});\n"
      f"  }}\n")
    if i > 4:
        w(f"  s += f{rnd(i) & ~3}(v, n / 2);\n")
    w("  return s;\n}\n\n")


def f_switch(i):
    w(f"int f{i}(int x) {{\n  switch (x & 31) {{\n")
    for c in range(0, 32, 1 + rnd(3)):
        w(f"  case {c}: return x * {rnd(50) + 1} + {rnd(1000)};\n")
    w(f"  default: return x ^ {rnd(65536)};\n  }}\n}}\n\n")


def f_struct(i):
    w(f"double f{i}(struct rec *r, int n) {{\n"
      f"  struct rec t = r[0];\n  double acc = {rnd(100)}.5;\n"
      f"  for (int j = 1; j < n; j++) {{\n"
      f"    if (r[j].a > t.a) t = r[j];\n"
      f"    acc += r[j].d * {rnd(9) + 1} - r[j].b;\n"
      f"    r[j].c += t.c + {rnd(77)};\n  }}\n"
      f"  memcpy(r[0].name, t.name, sizeof t.name);\n"
      f"  return acc + t.d;\n}}\n\n")


def f_strings(i):
    n = 4 + rnd(12)
    strs = ", ".join('"%s"' % ("".join(chr(97 + rnd(26)) for _ in range(3 + rnd(12))))
                     for _ in range(n))
    w(f"size_t f{i}(const char *key) {{\n"
      f"  static const char *const tab[] = {{{strs}}};\n"
      f"  size_t best = 0;\n"
      f"  for (size_t j = 0; j < sizeof tab / sizeof tab[0]; j++)\n"
      f"    if (strcmp(tab[j], key) < 0) best += strlen(tab[j]) * {rnd(5) + 1};\n"
      f"  return best;\n}}\n\n")


SHAPES = [f_loop, f_switch, f_struct, f_strings]
for i in range(funcs):
    SHAPES[i % 4](i)

w("int main(void) {\n  int v[64];\n  struct rec r[8];\n"
  "  memset(r, 0, sizeof r);\n  for (int j = 0; j < 64; j++) v[j] = j * 7;\n  long s = 0;\n")
for i in range(0, funcs, 4):
    w(f"  s += f{i}(v, 64) + f{i + 1}((int)s) + (long)f{i + 2}(r, 8)"
      f" + (long)f{i + 3}(\"m\");\n" if i + 3 < funcs else "")
w("  sink = (int)s;\n  return 0;\n}\n")
