/* SPDX-License-Identifier: MIT */
/* Stack recording, the floor of the modes: the walk (unwind.h), the names of the frames
 * (symbolize.h), the depot of stacks kept once (depot.h), and a side word for every block
 * (side.h). The modes above include this; the files here include none of the modes' headers.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_H
#define AX_STACKS_H

#include "modes/stacks/depot.h"
#include "modes/stacks/side.h"
#include "modes/stacks/symbolize.h"
#include "modes/stacks/unwind.h"

#endif
