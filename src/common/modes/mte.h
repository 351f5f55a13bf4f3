/* SPDX-License-Identifier: MIT */
/* Memory tagging (mte.c).
 * Layer: modes (docs/design/09-modes.md). */
#ifndef AX_MTE_H
#define AX_MTE_H

#include "types.h"

AXI_HIDDEN void axi_mte_init(bool want);
AXI_HIDDEN void *axi_mte_tag(void *b);
AXI_HIDDEN void *axi_mte_release(const char *fn, void *p, bool keep);

#endif
