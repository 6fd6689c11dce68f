"""What every command shares: the CPU threads numba (and torch) may use, and the line said
before a first call compiles."""

from __future__ import annotations

import os
import sys


def use_threads(value: int | None, torch: bool = False) -> None:
    """CPU threads for the compiled core's batches (and torch's, for the commands that use it)."""
    count = value or min(os.cpu_count() or 1, 16)
    if value:
        import numba

        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    if torch:
        import torch as torch_

        torch_.set_num_threads(count)


def say_if_compiling(*names: str) -> None:
    """One line before a first call compiles (ik/numba_cache.py): the compiled entries
    ``names`` (default every one a path may call) that numba's cache does not hold yet."""
    from ..ik import numba_cache

    wanted = [d for d in numba_cache.entries() if not names or d.__name__ in names]
    if numba_cache.uncached(wanted):
        print(numba_cache.warm_up_line(wanted), file=sys.stderr, flush=True)
