/* SPDX-License-Identifier: MIT */
/* Test stop points (hooks.h): the dispatcher every AX_HOOK calls, in the base layer so that any
 * layer may name a point. Compiled into axmalloc_hooks only (AX_TEST_HOOKS=1); the tests' own
 * views of the allocator are in validate.c. */
#include "hooks.h"

#include "atomic.h"

#if AX_TEST_HOOKS
static ax_hook_fn hook;

void ax_test_set_hook(ax_hook_fn fn) { ax_poke_release(&hook, fn); }

void axi_hook(enum ax_hook_point at, const void *arg) {
  ax_hook_fn fn = ax_peek_acquire(&hook);
  if (fn)
    fn(at, arg);
}
#endif
