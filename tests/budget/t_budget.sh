#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# t_budget.sh LIBAXMALLOC [BUDGET_FILE] -- instruction budgets (issue 4 item 4): counts the
# instructions of axmalloc's hot operations under callgrind (bench/callgrind/budget.sh) and
# fails when any exceeds bench/callgrind/budget.txt (or BUDGET_FILE) by more than 5%.
# Prints the table either way. After an intended change of a fast path, rewrite the budget
# with: bash bench/callgrind/budget.sh --write build
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec bash "$ROOT/bench/callgrind/budget.sh" --check "${1:?usage: t_budget.sh libaxmalloc.so [budget]}" ${2:+"$2"}
