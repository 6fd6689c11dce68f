"""Joints for a whole Cartesian path known beforehand: a straight 20 cm line, the tool pointing
down, with no joint stepping more than 0.2 rad between two targets.

    python examples/solve_path.py
"""

import numpy as np

import robot_ik_nn

solver = robot_ik_nn.for_arm("niryo_one")

n = 41  # targets 5 mm apart along y
positions = np.column_stack([np.full(n, 0.25), np.linspace(-0.10, 0.10, n), np.full(n, 0.20)])
quaternions = np.tile([0.0, 0.7071068, 0.0, 0.7071068], (n, 1))  # x y z w: tool x down
start = solver.solve(positions[0], quaternions[0]).q  # where the arm is; here: at the start

path = solver.solve_path(positions, quaternions, start=start, max_step=0.2)
print("ok:", path.ok, "| solved:", int(np.sum(path.solved)), "of", n)
print(f"largest joint step: {path.max_step:.4f} rad", "| reason:", path.reason or "-")
for i, q in enumerate(path.q):  # one line per target: its index, the target, then the joints
    print(i, *np.round(positions[i], 6), *quaternions[i], "|", *(f"{v:.6f}" for v in q))
