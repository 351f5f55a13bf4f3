/* SPDX-License-Identifier: MIT */
/* Stop points for tests: the interleavings a race needs, made to happen every time.
 *
 * In a build with AX_TEST_HOOKS=1 (the library axmalloc_hooks, built for the tests only;
 * never the released libraries) the allocator calls the function a test registered at each
 * named point of its concurrent code, in the thread that reached it. The test can then stop
 * that thread there while another one runs, so that a window of a few instructions (between
 * a remote free's CAS and its next load, between an unmap and a map update) is as wide as the
 * test wants. Elsewhere every AX_HOOK compiles to nothing.
 *
 * pre (for the test's function): it may block, and it may allocate unless the point says
 * a lock is held; it must not free into the page or segment named by the point.
 */
#ifndef AX_HOOKS_H
#define AX_HOOKS_H

#include <stdint.h>

enum ax_hook_point {
  /* A remote free's publishing CAS succeeded. arg: the block. From here the owner may
   * collect the block, empty the page and unmap its segment. */
  AX_HOOK_REMOTE_FREE_PUBLISHED,
  /* realloc moved a huge block: the old range has been given back to the OS. arg: the old
   * segment address. Another thread may map that range from here on. */
  AX_HOOK_HUGE_MOVED,
  /* A global spin lock was just taken (segment cache, huge cache, heap pool, abandoned
   * pop). arg: the lock. The allocator must not be re-entered by this thread. */
  AX_HOOK_LOCKED,
  /* The fork prepare handler has run (the locks it could take are held). arg: NULL. */
  AX_HOOK_FORK_PREPARED,
  /* The fork parent or child handler is about to release those locks. arg: NULL. */
  AX_HOOK_FORK_RELEASING,
  /* The points below are where a thread may be when another one forks: the fork child model
   * (docs/design/10-lifecycle.md) says what the child makes of a thread that stopped there.
   * malloc's slow path is about to refill the current page of the size's class (page.c).
   * arg: the heap. The function must not allocate. */
  AX_HOOK_REFILL,
  /* A chain of remote frees is about to be published (remote.c): still open. arg: its first
   * block. The function must not allocate. */
  AX_HOOK_CHAIN_PUBLISH,
  /* The profiler took a slot segment's last free slot and has not yet taken the segment off
   * its list (prof.c); the profile's lock is held. arg: the segment. */
  AX_HOOK_SLOT_TAKE,
  /* A segment whose pages are all free leaves its heap for the segment cache (segment.c).
   * arg: the segment. The function must not allocate. */
  AX_HOOK_SEGMENT_RELEASE,
  /* malloc_trim, after the thread's chains were published and before anything is reclaimed
   * (heap.c). arg: the heap. */
  AX_HOOK_TRIM,
  /* A heap profile is being written, its file open; the profile's lock is held
   * (prof_dump.c). arg: NULL. */
  AX_HOOK_DUMP,
  /* The double-free seek (remote.c) found the page of a block in transit in the page map and
   * is about to read its link; every unmap waits meanwhile (axi_segments_hold). arg: the
   * block. The function must not allocate or free. */
  AX_HOOK_SEEK_STEP,
  /* The leak checker's scan at exit has read the roots and what they reach once, its gate
   * closed (leak_scan.c); dl_iterate_phdr's lock is held. arg: NULL. The function may have
   * other threads allocate, not free (frees wait until the scan ends). */
  AX_HOOK_LEAK_SCAN,
  /* A thread is about to wait at the leak scan's closed gate (leak_gate.c): a free of it, held
   * until the scan ends; its stack is a root of the scan from here. arg: NULL. */
  AX_HOOK_LEAK_WAIT,
  AX_HOOK_POINTS
};

typedef void (*ax_hook_fn)(enum ax_hook_point at, const void *arg);

#if AX_TEST_HOOKS
/* Register fn (NULL: none). Exported from axmalloc_hooks only. */
__attribute__((visibility("default"))) void ax_test_set_hook(ax_hook_fn fn);
/* Whether the segment map holds a segment at seg (what free() consults first). */
__attribute__((visibility("default"))) int ax_test_segmap_has(const void *seg);
/* Whether checked mode is on (check.c): some points are on the default mode's paths only. */
__attribute__((visibility("default"))) int ax_test_checked(void);
/* Every structure of the allocator walked and cross-checked (validate.c). pre: no other thread
 * is inside the allocator. post: the number of problems found, each printed to stderr. */
__attribute__((visibility("default"))) unsigned ax_test_validate(void);
/* Option i of options.c's table read from the text s as process init reads it (NULL or "":
 * not given; a value refused says so on stderr), the option itself left as it was. post: -1
 * past the last option; else 1 if s was taken, 0 if not, and *env the option's variable,
 * *num and *str what its owner would read (axi_option_num, axi_option_str). pre: one thread. */
__attribute__((visibility("default"))) int
ax_test_option(unsigned i, const char *s, const char **env, uint64_t *num, const char **str);
__attribute__((visibility("hidden"))) void axi_hook(enum ax_hook_point at, const void *arg);
#define AX_HOOK(at, arg) axi_hook(at, arg)
#else
#define AX_HOOK(at, arg) ((void)0)
#endif

#endif
