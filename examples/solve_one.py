"""Solve one target: the Niryo One, no trained network needed (mid-range seed, then restarts).

    python examples/solve_one.py
"""

import numpy as np

import robot_ik_nn

solver = robot_ik_nn.for_arm("niryo_one")  # or robot_ik_nn.load("models/niryo_one")
position = [0.25, 0.0, 0.20]  # metres, in the arm's base frame
quaternion = [0.0, 0.7071068, 0.0, 0.7071068]  # x y z w: the tool's x axis points down

answer = solver.solve(position, quaternion)
print("status:", answer.status)  # "solved", "best_effort" (and how far) or "rejected" (why)
print("joints (rad):", " ".join(f"{v:.6f}" for v in answer.q))
print(f"position error: {answer.pos_err * 1000:.4f} mm, rotation error: {answer.rot_err:.2e} rad")

# the solver's own forward kinematics says where those joints put the tool
p, R = solver.forward(np.asarray(answer.q)[None])
print("tool at:", np.round(p[0], 6))
