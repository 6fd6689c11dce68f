"""The IK core: settings, target validation, the compiled kernel, the network without torch, and
the solvers built on them. Nothing here imports rclpy or pybullet, and only ``batched`` (the torch
solver for GPUs and training-time evaluation) imports torch."""
