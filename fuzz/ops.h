/* SPDX-License-Identifier: MIT */
/* The input encoding of the allocator fuzz harness: one definition, shared by the decoder
 * (fuzz_alloc.c) and the seed-corpus writer (corpus.c).
 *
 * An input is a sequence of operations. Each starts with an opcode byte (taken modulo
 * FZ_NOPS, so every byte is some operation) followed by its arguments; an input that ends
 * in the middle of an operation reads zeroes for the rest. Arguments:
 *
 *   slot   1 byte, modulo FZ_SLOTS: which block the operation works on
 *   size   a selector byte s, then 0-3 more bytes, by category s >> 5 (weighted to small
 *          blocks, where the free lists are; every category is reachable):
 *            0 tiny      s & 31 (0..31)
 *            1 small     u16 % 1025
 *            2 class     ax_class_size(1 + u8 % 60) + class_delta[s & 7] (fuzz_alloc.c)
 *            3 small cls the same over the classes up to 8 KiB (small pages)
 *            4 medium    u24 % (128 KiB + 1)
 *            5 large     u24 % (1 MiB + 1)
 *            6 big       s & 16: huge, (1 + (s & 7)) MiB + 16 * u16 (up to 9 MiB);
 *                        else 1 MiB + (s & 8 ? (int16_t)u16 : mib_delta[s & 7]):
 *                        around the size where blocks become huge (own mapping)
 *            7 pow2      2^((s & 31) % 21) + (u8 % 5) - 2 (up to 1 MiB)
 *   align  1 byte a: a < 0xE0: 2^(a % 24) (1 B .. 8 MiB), else
 *          odd_align[a & 15]: 0, non-powers of two, sizes past PTRDIFF_MAX, ...
 *   count  1 byte c: 0xFF: SIZE_MAX / 2 + 1 (overflows), 0xFE: 0, else 1 + c % 16
 *   u8     1 byte
 *
 * Multi-byte values are little-endian.
 */
#ifndef FZ_OPS_H
#define FZ_OPS_H

#define FZ_OPS(X)                                                                                  \
  X(MALLOC, "slot size")                                                                           \
  X(CALLOC, "slot count size")                                                                     \
  X(REALLOC, "slot size: from NULL when the slot is empty, size 0 frees")                          \
  X(REALLOCARRAY, "slot count size")                                                               \
  X(FREE, "slot")                                                                                  \
  X(FREE_SIZED, "slot u8: bit 0 passes the usable size instead of the requested one")              \
  X(ALIGNED_ALLOC, "slot align size")                                                              \
  X(POSIX_MEMALIGN, "slot align size")                                                             \
  X(MEMALIGN, "slot align size")                                                                   \
  X(VALLOC, "slot u8 size: bit 0 picks pvalloc")                                                   \
  X(USABLE, "slot: malloc_usable_size, and the block is checked")                                  \
  X(HANDOFF_FREE, "slot u8: the helper thread frees 1 + u8 % 8 blocks from slot on")               \
  X(HANDOFF_REALLOC, "slot size: the helper thread reallocs the block")                            \
  X(HANDOFF_ALLOC, "slot u8 size: the helper allocates (bit 0: calloc), main owns it")             \
  X(THREAD_RESTART, "the helper thread exits (its heap is abandoned), a new one starts")           \
  X(TRIM, "malloc_trim(0), then every live block is checked")                                      \
  X(BAD, "u8 slot u16: a call that must fail (sizes past PTRDIFF_MAX, overflow)")

enum {
#define FZ_ENUM(name, args) FZ_OP_##name,
  FZ_OPS(FZ_ENUM)
#undef FZ_ENUM
      FZ_NOPS
};

/* Size selector categories (the byte's top 3 bits). */
enum {
  FZ_SZ_TINY,
  FZ_SZ_SMALL,
  FZ_SZ_CLASS,
  FZ_SZ_SMALL_CLASS,
  FZ_SZ_MEDIUM,
  FZ_SZ_LARGE,
  FZ_SZ_BIG,
  FZ_SZ_POW2
};
#define FZ_SZ_BIG_HUGE 16 /* in a FZ_SZ_BIG selector: huge, else around 1 MiB */
#define FZ_SZ_BIG_U16 8   /* in a FZ_SZ_BIG selector (not huge): an int16_t delta follows */

/* Kinds of OP_BAD (u8 % FZ_BAD_KINDS). */
enum {
  FZ_BAD_MALLOC,
  FZ_BAD_CALLOC,
  FZ_BAD_REALLOC,
  FZ_BAD_REALLOCARRAY,
  FZ_BAD_ALIGNED,
  FZ_BAD_POSIX_MEMALIGN,
  FZ_BAD_PVALLOC,
  FZ_BAD_NULL,
  FZ_BAD_KINDS
};

#endif
