"""Several distinct answers for one target, none of them touching a table, a box beside the arm
or the arm itself.

    python examples/obstacles_and_answers.py
"""

import numpy as np

import robot_ik_nn

TABLE = ((0.0, 0.0, 1.0), 0.0)  # a plane (normal, offset): free where z > 0, the base stands on it
BOX = ((0.20, -0.12, 0.05), (0.04, 0.04, 0.05))  # an axis-aligned box: centre, half sizes (m)

solver = robot_ik_nn.for_arm("niryo_one").with_obstacles(planes=[TABLE], boxes=[BOX])
position = [0.20, 0.03, 0.09]
quaternion = [0.3072, 0.776, -0.3116, 0.4542]  # x y z w
current = np.zeros(6)  # the arm's joints now: the answers come nearest first

answers = solver.solve(position, quaternion, solutions=8, order="nearest", current=current)
print(f"{len(answers)} answers, nearest to the arm first")
for i, answer in enumerate(answers):
    step = np.max(np.abs(np.asarray(answer.q) - current))
    print(i, answer.status, f"largest joint move {step:.3f} rad", "|",
          *(f"{v:.6f}" for v in answer.q))
