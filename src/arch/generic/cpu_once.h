/* SPDX-License-Identifier: MIT */
/* ax_arch_cpu() (arch_cpu.h) of both backends: the features decoded at the first call, the
 * same struct after. pre: the first call comes before a second thread exists (process init
 * makes it).
 *
 * A template, not a header: no include guard. cpu_<arch>.c defines, then includes it:
 *   static void decode(ax_arch_cpu_t *f)   fill f from the CPU (and the kernel's hwcaps) */
static ax_arch_cpu_t cpu;
static bool decoded;

const ax_arch_cpu_t *ax_arch_cpu(void) {
  if (!decoded) {
    decode(&cpu);
    decoded = true;
  }
  return &cpu;
}
