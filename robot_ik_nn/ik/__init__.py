"""The IK core: target verdicts, the compiled kernel, the network without torch, and the solvers
built on them. Nothing here imports rclpy or pybullet; only ``torch_solver`` (and the ``torch``
backend of ``network_backends``) imports torch.

settings.py          IKSettings: the one settings object of every path
verdicts.py          what a target may be: the one compiled check, the verdict codes; when an
                     answer is within tolerance: the one acceptance rule (reached)
reasons.py           the words for a verdict or an answer (worded when read)
results.py           Answer, BatchResult and the three statuses
inputs.py            callers' arrays checked before they reach the kernel
solver.py            Solver: the one people use (solve, solve_batch, with_settings, with_limits)
variants.py          the solver's variants: other settings, limits, obstacles, copies
compiled_batch.py    a batch in one compiled call over all cores
several_answers.py   several distinct answers for one target, and their orders
path.py              joints for a whole Cartesian path
path_planners.py     where tracking a path jumps: planned over the self-motion or the branches
layers.py            layers of answers along a path, and the cheapest way through them
walk.py              a planner's samples walked along a path, a planned way polished (compiled)
selfmotion.py        the self-motion of one target swept (compiled)
policy.py            the one solving policy, compiled (which seeds, in which order, until when)
kernel.py            the compiled Levenberg-Marquardt step and its residual
forward.py           forward kinematics inside the kernel (the tip, every frame)
layout.py            the arm, settings and network as flat arrays the kernel reads
candidates.py        the network's candidates inside the kernel, and their order
network_forward.py   the network's forward pass without torch (compiled, numpy)
network_backends.py  the numpy, onnx and torch backends, run ahead of the kernel
onnx_layers.py       the network's layers written to and run from ONNX
collision.py         self-collision and obstacle checks for the kernel (CollisionModel)
collision_pairs.py   which link pairs are checked: sampled as MoveIt does, or an SRDF
shapes.py            a URDF's collision geometry as convex shapes
convex.py            distances between convex shapes (GJK), compiled
torch_solver.py      TorchSolver: the same policy in torch, for GPUs and evaluation
numba_cache.py       numba's on-disk cache kept in step with these sources
"""

from .numba_cache import keep_in_step

keep_in_step()  # before any compiled function loads numba's cache: see numba_cache.py
