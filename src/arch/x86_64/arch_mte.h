/* SPDX-License-Identifier: MIT */
/* Memory tagging: x86-64 has none. The same interface as src/arch/aarch64/arch_mte.h, so
 * that src/common/mte.c compiles here: pointers carry no tag, and ax_arch_mte_enable says
 * no, so nothing else is ever called. */
#ifndef AX_ARCH_MTE_H
#define AX_ARCH_MTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline unsigned ax_arch_ptr_tag(const void *p) { return (void)p, 0; }
static inline void *ax_arch_untag(const void *p) { return (void *)p; }
static inline void *ax_arch_with_tag(const void *p, unsigned tag) { return (void)tag, (void *)p; }
static inline bool ax_arch_mte_enable(void) { return false; }
#define AX_ARCH_PROT_MTE 0
static inline void *ax_arch_mte_random(void *p, uint64_t exclude) { return (void)exclude, p; }
static inline unsigned ax_arch_mte_get(const void *p) { return (void)p, 0; }
static inline void ax_arch_mte_set(void *p, size_t n) { (void)p, (void)n; }

#endif
