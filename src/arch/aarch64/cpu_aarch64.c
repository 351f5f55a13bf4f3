/* AArch64 CPU detection from the auxiliary vector (no allocation, no stdio). */
#include <stdint.h>
#include <sys/auxv.h>

#include "arch.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ATOMICS
#define HWCAP_ATOMICS (1 << 8)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif

static char features[96] = "baseline";

static void add(char **at, const char *end, const char *name) {
  if (*at != features)
    *(*at)++ = ' ';
  while (*name && *at < end - 1)
    *(*at)++ = *name++;
  **at = 0;
}

void ax_arch_cpu_detect(void) {
  unsigned long hw = getauxval(AT_HWCAP);
  char *at = features, *end = features + sizeof features;
  add(&at, end, (hw & HWCAP_ASIMD) ? "asimd" : "no-asimd");
  if (hw & HWCAP_ATOMICS)
    add(&at, end, "lse");
  if (hw & HWCAP_SVE)
    add(&at, end, "sve");
}

const char *ax_arch_cpu_features(void) { return features; }
