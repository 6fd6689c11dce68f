"""What every command shares: the CPU threads numba (and torch) may use."""

from __future__ import annotations

import os


def use_threads(value: int | None, torch: bool = False) -> None:
    """CPU threads for the compiled core's batches (and torch's, for the commands that use it)."""
    count = value or min(os.cpu_count() or 1, 16)
    if value:
        import numba

        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    if torch:
        import torch as torch_

        torch_.set_num_threads(count)
