"""The IK core: settings, target validation, the compiled kernel, the network without torch, and
the solvers built on them. Nothing here imports rclpy or pybullet, and only ``batched`` (the torch
solver for GPUs and training-time evaluation) imports torch."""

from .numba_cache import keep_in_step

keep_in_step()  # before any compiled function loads numba's cache: see numba_cache.py
