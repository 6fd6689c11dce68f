"""Experiment (issue 32, streams): why does a non-redundant arm's stream jump? For the first
``--paths`` bench paths (seeds 1000..) whose stream steps over 0.2 rad, where did the stream
leave the path's own joints (the branch the path is on), and what was there: a wrist near
straight (|joint_5| small: the Niryo One's wrist singular pose), a joint at a limit, or neither;
whether the path's own joints crossed a singular pose there (the sign of det J changes) while
the stream's did not (it stayed on the branch of its current joints); and whether LM from the
path's own joints at that target stays on the path's branch.

    PYTHONPATH=$PWD .venv/bin/python scripts/tracking_niryo_jumps.py /tmp/models/niryo_one
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _stream_paths import parser, steps, stream_along, summary
from scipy.spatial.transform import Rotation

from robot_ik_nn.ik.solver import Solver

OFF = 0.1  # rad: the stream is off the path's branch when a joint differs by more


def det_sign(solver, q) -> float:
    """The sign of det J (position and rotation rows, by differences): it changes where the
    joints pass a singular pose, from one branch of answers to another."""
    h, (p0, R0) = 1e-6, solver.forward(q)
    J = np.zeros((6, len(q)))
    for j in range(len(q)):
        d = q.copy()
        d[j] += h
        p, R = solver.forward(d)
        J[:3, j] = (p[0] - p0[0]) / h
        J[3:, j] = Rotation.from_matrix(R[0] @ R0[0].T).as_rotvec() / h
    return float(np.sign(np.linalg.det(J)))


def main(argv=None):
    ap = parser(paths=10)
    ap.add_argument("--wrist", type=int, default=4, help="index of the wrist-bend joint")
    a = ap.parse_args(argv)
    solver = Solver.load(a.model).without_network()
    arm = solver.arm
    found, seed = [], 1000
    while len(found) < a.paths and seed < 1500:
        q_path, P, Q, q = stream_along(solver, seed)
        step = steps(q_path[0], q)
        jumps = np.flatnonzero(step > 0.2)
        if not len(jumps):
            seed += 1
            continue
        i = int(jumps[0])
        off = np.abs(q - q_path).max(axis=1) > OFF
        left = int(np.argmax(off)) if off.any() else -1
        k = k_left = left if 0 <= left <= i else i
        room = np.minimum(q_path - arm.lower, arm.upper - q_path)  # the path's joints' room
        window = slice(max(0, k - 3), k + 1)
        row = {
            "seed": seed,
            "first_jump": i,
            "step": float(step[i]),
            "left_path_branch_at": left,
            "wrist_at_leaving": float(q_path[k, a.wrist]),
            "least_wrist_near": float(np.abs(q_path[max(0, k - 10) : k + 1, a.wrist]).min()),
            "path_joint_at_limit_near": [
                int(j) for j in np.flatnonzero(room[window].min(axis=0) < 1e-3)
            ],
            "stream_joint_at_limit_before_jump": [
                int(j)
                for j in np.flatnonzero(
                    np.minimum(q[i - 1] - arm.lower, arm.upper - q[i - 1]) < 1e-3
                )
            ]
            if i > 0
            else [],
            "stream_minus_path_at_leaving": np.round(q[k] - q_path[k], 2).tolist(),
        }
        # would LM from the path's joints at the step before stay on the path's branch?
        ans = solver.solve(P[k], Q[k], current=q_path[k - 1], last=q_path[k - 1]) if k else None
        row["from_path_joints_stays"] = (
            bool(np.abs(ans.q - q_path[k]).max() < OFF) if ans is not None else None
        )
        path_sign = [det_sign(solver, qp) for qp in q_path[: i + 1]]
        stream_sign = [det_sign(solver, qs) for qs in q[:i]]
        crossed = [k for k in range(1, i + 1) if path_sign[k] != path_sign[k - 1]]
        row["path_crosses_singular_at"] = crossed
        row["stream_crosses_singular_at"] = [
            k for k in range(1, i) if stream_sign[k] != stream_sign[k - 1]
        ]
        # a crossing of the path's within the 30 targets before the stream left it that the
        # stream did not make (none of its own within 3 targets): it kept to its branch
        row["stream_kept_its_branch_where_the_path_crossed"] = any(
            k_left - 30 <= k <= k_left + 2
            and not any(abs(k - c) <= 3 for c in row["stream_crosses_singular_at"])
            for k in crossed
        )
        found.append(row)
        print(json.dumps(row), flush=True)
        seed += 1
    stayed = sum(r["stream_kept_its_branch_where_the_path_crossed"] for r in found)
    limit = sum(bool(r["stream_joint_at_limit_before_jump"]) for r in found)
    wrist = sum(r["least_wrist_near"] < 0.1 for r in found)
    return summary(
        {
            "jumping_paths": len(found),
            "seeds_scanned": seed - 1000,
            "stream_kept_its_branch_where_the_path_crossed": stayed,
            "a_stream_joint_at_a_limit_before_the_jump": limit,
            "wrist_near_straight_where_it_left": wrist,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
