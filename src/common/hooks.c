/* SPDX-License-Identifier: MIT */
/* Test stop points (hooks.h): compiled into axmalloc_hooks only (AX_TEST_HOOKS=1). */
#include "internal.h"

#if AX_TEST_HOOKS
static ax_hook_fn hook;

void ax_test_set_hook(ax_hook_fn fn) { ax_poke_release(&hook, fn); }

void axi_hook(enum ax_hook_point at, const void *arg) {
  ax_hook_fn fn = ax_peek_acquire(&hook);
  if (fn)
    fn(at, arg);
}

int ax_test_segmap_has(const void *seg) { return axi_segmap_has((uintptr_t)seg); }

int ax_test_checked(void) { return axi_checked; }
#endif
