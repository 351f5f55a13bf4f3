# SPDX-License-Identifier: MIT
"""regrtest.py: run a slice of CPython's own regression suite for t_progs.sh.

usage: python3 regrtest.py TEST...   (the arguments of `python3 -m test`)

Runs `python3 -m test -v TEST...` in this process after removing AXMALLOC_STATS from the
environment: axmalloc has read it already, so this process still prints its statistics at
exit, but the Python subprocesses that some tests start do not, since many of those tests
require an empty stderr from their child.
"""
import os
import sys

os.environ.pop("AXMALLOC_STATS", None)
sys.argv = ["regrtest", "-v"] + sys.argv[1:]
from test.libregrtest import main  # noqa: E402

main()
