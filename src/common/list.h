/* SPDX-License-Identifier: MIT */
/* A free block's link, encoded with its page's key; blocks in transit (list.c).
 * Layer: blocks (docs/design/03-blocks.md). */
#ifndef AX_LIST_H
#define AX_LIST_H

#include "track.h"
#include "types.h"

static inline ax_block_t *axi_decode(const ax_page_t *page, uintptr_t enc) {
  return (ax_block_t *)(enc ^ page->key);
}
/* The link of a block on a free list. Under AX_VALGRIND a free block is no-access to
 * memcheck, so the allocator's own reads and writes of its link open that word briefly
 * (track.h); otherwise these are plain loads and stores. */
static inline ax_block_t *axi_link(const ax_page_t *page, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return axi_decode(page, enc);
}
static inline uintptr_t axi_encode(const ax_page_t *page, const ax_block_t *b) {
  return (uintptr_t)b ^ page->key;
}
static inline void axi_set_link(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = axi_encode(page, next);
  AX_TRACK_NOACCESS(b, sizeof *b);
}
/* The same with a key already loaded: the owner's copy (okey), which malloc's fast path
 * loads together with page->free. */
static inline ax_block_t *axi_link_key(uintptr_t key, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return (ax_block_t *)(enc ^ key);
}
static inline void axi_set_link_own(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = (uintptr_t)next ^ page->okey;
  AX_TRACK_NOACCESS(b, sizeof *b);
}

/* A free block's link, decoded, is NULL or a block of the heap: an address below 2^48, so
 * an encoded link's top 16 bits are the key's. A page's key has bit 63 set and not all of
 * bits 48..63 (axi_page_key), so the first words a program leaves in its blocks (pointers,
 * small or negative integers, text: two bytes of a string, below 0x8000) have other top
 * bits. A block that passes may be free already, and the caller looks
 * (axi_double_free_check). The test reads bytes 6 and 7 of each word (both architectures
 * are little-endian) as 2-byte loads: a narrower store the program just made at offsets 0..5
 * (a byte at p[0]) does not overlap them, so the load need not wait for that store to reach
 * the cache, as an 8-byte load of the word must (30 M malloc(32), p[0] = i, free: 333 ms
 * with the 8-byte load, 211 with this, tcmalloc 230). */
static inline bool axi_looks_free(const ax_page_t *page, const ax_block_t *b) {
  uint16_t top, key_top; /* the key's top too as a 2-byte load: no shift */
  __builtin_memcpy(&key_top, (const char *)&page->key + 6, sizeof key_top);
  AX_TRACK_DEFINED(b, sizeof *b);
  __builtin_memcpy(&top, (const char *)b + 6, sizeof top);
  AX_TRACK_NOACCESS(b, sizeof *b);
  return top == key_top;
}
/* A page's key from a random word: bit 63 set, and not all of bits 48..63 (axi_looks_free). */
static inline uintptr_t axi_page_key(uint64_t r) {
  return (uintptr_t)((r | (uint64_t)1 << 63) & ~((uint64_t)1 << 48));
}

/* A block in transit: in a batch of remote frees (remote.c) or an inbox, which span pages. Its
 * link is encoded with its own page's key, as on a free list (axi_looks_free sees it free),
 * with bit 0 of the decoded link set (AX_TRANSIT: no block's address has it). The owner that
 * takes a block rewrites its link (page.c), so a block reached twice in an inbox, freed twice,
 * is known by that bit. */
#define AX_TRANSIT ((uintptr_t)1)
static inline void axi_set_transit(const ax_page_t *page, ax_block_t *b, uintptr_t next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = (next | AX_TRANSIT) ^ page->key;
  AX_TRACK_NOACCESS(b, sizeof *b);
}
/* The decoded link of a block in transit: the next block | AX_TRANSIT, or anything else when
 * the block is not in transit. */
static inline uintptr_t axi_transit(const ax_page_t *page, const ax_block_t *b) {
  return (uintptr_t)axi_link(page, b);
}

/* list.c: is b on list, one of page's free lists? (a link out of the page ends the walk) */
AXI_HIDDEN bool axi_list_has(const ax_page_t *page, const ax_block_t *list, const ax_block_t *b);

#endif
