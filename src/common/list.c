/* SPDX-License-Identifier: MIT */
/* Block lists: a page's free lists read as lists, for the checks of the slow paths. Every
 * link is encoded with its page's key (the inline helpers in list.h); a link out of the
 * page is never followed. */
#include "list.h"

/* Is b on list, one of page's free lists? Stops at a link out of the page: a list another
 * thread may take meanwhile (thread_free) is read safely, if not exactly. */
bool axi_list_has(const ax_page_t *page, const ax_block_t *list, const ax_block_t *b) {
  for (uint32_t n = 0; list && n <= page->reserved; n++) {
    if (list == b)
      return true;
    if ((uintptr_t)list - page->area >= axi_page_carved(page))
      return false; /* corrupted: not ours to follow */
    list = axi_link(page, list);
  }
  return false;
}
