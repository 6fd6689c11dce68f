"""Solve a batch of targets in one call, over every core.

    python examples/solve_batch.py
"""

import numpy as np

import robot_ik_nn
from robot_ik_nn.arm.rotations import matrix_to_quaternion

solver = robot_ik_nn.for_arm("niryo_one")

# reachable targets: poses the arm itself takes at random joints inside its limits
rng = np.random.default_rng(7)
joints = rng.uniform(solver.arm.lower, solver.arm.upper, size=(20, len(solver.arm.lower)))
positions, rotations = solver.forward(joints)  # (B, 3) metres and (B, 3, 3) matrices
quaternions = matrix_to_quaternion(rotations)  # (B, 4), x y z w

batch = solver.solve_batch(positions, quaternions)
print(batch.summary())
print(f"solved {int(batch.solved.sum())} of {len(batch.q)}")
for i in range(len(batch.q)):  # one line per target: its index, the target, then the joints
    print(i, *np.round(positions[i], 6), *np.round(quaternions[i], 7), "|",
          *(f"{v:.6f}" for v in batch.q[i]))
