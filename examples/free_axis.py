"""A suction cup: only the direction the tool points matters, not its turn about that direction.

On the Niryo One the tool's approach axis is its x axis (the wrist's last joint turns about it),
so the rotation left free is "x". The target asks for the tool's x axis pointing straight down.

    python examples/free_axis.py
"""

import numpy as np

import robot_ik_nn

solver = robot_ik_nn.for_arm("niryo_one")
position = [0.20, 0.10, 0.15]
quaternion = [0.0, 0.7071068, 0.0, 0.7071068]  # x y z w: turns the tool's x axis onto -z

answer = solver.solve(position, quaternion, free_axis="x")
print("status:", answer.status)
print("joints (rad):", " ".join(f"{v:.6f}" for v in answer.q))

_, R = solver.forward(np.asarray(answer.q)[None])
approach = R[0][:, 0]  # the tool's x axis in the base frame
angle = np.degrees(np.arccos(np.clip(-approach[2], -1.0, 1.0)))
print(f"tool x axis from straight down: {angle:.4f} deg")
