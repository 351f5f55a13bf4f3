/* SPDX-License-Identifier: MIT */
/* Where transparent huge pages are asked for (thp.c; the policy is at the top of thp.c).
 * Layer: segments (docs/design/02-segments.md). */
#ifndef AX_THP_H
#define AX_THP_H

#include "types.h"

/* thp.c: where huge pages are asked for (the policy is at the top of thp.c) */
AXI_HIDDEN void axi_thp_init(void);
AXI_HIDDEN size_t axi_thp_size(void);
AXI_HIDDEN const char *axi_thp_option_name(void);
AXI_HIDDEN const char *axi_thp_kernel_name(void);
AXI_HIDDEN const char *axi_thp_defrag_name(void);
AXI_HIDDEN void axi_thp_apply(ax_segment_t *seg, size_t size, enum ax_kind kind);
AXI_HIDDEN void axi_thp_fresh(ax_segment_t *seg, size_t size);
AXI_HIDDEN const char *axi_thp_choice(void);
AXI_HIDDEN uint64_t axi_thp_cost_huge(void);
AXI_HIDDEN uint64_t axi_thp_cost_small(void);
AXI_HIDDEN uint64_t axi_thp_probes(void);
AXI_HIDDEN void axi_thp_decline(ax_segment_t *seg, size_t size);
AXI_HIDDEN void axi_thp_resized(const ax_segment_t *seg, intptr_t delta);
AXI_HIDDEN size_t axi_thp_align(size_t need);
AXI_HIDDEN size_t axi_thp_round(size_t need);
AXI_HIDDEN bool axi_thp_purge_clip(const ax_segment_t *seg, uintptr_t *lo, uintptr_t *hi);

#endif
