"""Experiment (issue 32, streams, a non-redundant arm): where the stream's answer is near a
singular pose (the least singular value of J below ``--sigma``), the other branch of answers is
near too; take, of the answers found within ``--near`` rad of the last one, the one with the
most room from the joint limits (the least of each joint's distance to its nearer limit, as a
fraction of its range), instead of LM's. Both branches are continuous where they meet; the
path's own joints cross to the other one about as often as they stay (tracking_niryo_jumps.py).

    PYTHONPATH=$PWD .venv/bin/python scripts/tracking_branch_room.py /tmp/models/niryo_one

Prints paths with a step over 0.2 rad, today's stream and this one's, on bench seeds
1000.. (``--paths``), every answer judged by the package's forward kinematics.
"""

from __future__ import annotations

import sys

import numpy as np
from _stream_paths import parser, steps, stream_along, summary

from robot_ik_nn.ik.solver import Solver

H = 1e-6


def jacobian(solver, q, w):
    """J (6, dof) by differences, the rotation rows weighed ``w`` m/rad as in the residual."""
    n = len(q)
    Q = np.vstack([q, q + H * np.eye(n)])
    P, R = solver.forward(Q)
    J = np.empty((6, n))
    J[:3] = ((P[1:] - P[0]) / H).T
    M = R[1:] @ R[0].T  # small rotations: their axis times angle from the skew part
    J[3] = (M[:, 2, 1] - M[:, 1, 2]) / (2 * H)
    J[4] = (M[:, 0, 2] - M[:, 2, 0]) / (2 * H)
    J[5] = (M[:, 1, 0] - M[:, 0, 1]) / (2 * H)
    J[3:] *= w
    return J


def room(arm, q):
    span = arm.upper - arm.lower
    return float(np.min(np.minimum(q - arm.lower, arm.upper - q) / span))


def stream(solver, near_solver, P, Q, start, sigma, near, probes):
    arm, w = solver.arm, solver.settings.rot_weight
    out, last, switched = np.full((len(P), arm.dof), np.nan), start, 0
    for i in range(len(P)):
        ans = solver.solve(P[i], Q[i], current=last, last=last)
        if ans.q is None:
            continue
        q = ans.q
        _, s, vt = np.linalg.svd(jacobian(solver, q, w))
        if s[-1] < sigma:
            best, best_room = q, room(arm, q)
            for t in probes:
                for sign in (1.0, -1.0):
                    seed = np.clip(q + sign * t * vt[-1], arm.lower, arm.upper)
                    other = near_solver.solve(P[i], Q[i], current=seed, last=seed)
                    if other.q is None or other.status != "solved":
                        continue
                    if np.abs(other.q - last).max() > near:
                        continue
                    r = room(arm, other.q)
                    if r > best_room + 1e-3:
                        best, best_room = other.q, r
            switched += best is not q
            q = best
        out[i] = last = q
    return out, switched


def largest(start, q):
    s = steps(start, q)
    return float(np.where(np.isnan(s), np.inf, s).max())


def main(argv=None):
    ap = parser(paths=200)
    ap.add_argument("--sigma", type=float, default=0.01)
    ap.add_argument("--near", type=float, default=0.15)
    a = ap.parse_args(argv)
    solver = Solver.load(a.model).without_network()
    near_solver = solver.with_settings(restarts=0)  # LM from the probe and seeds around it only
    today = ours = unsolved = 0
    mended, broken = [], []
    for seed in range(1000, 1000 + a.paths):
        q_path, P, Q, q0 = stream_along(solver, seed)
        start = q_path[0]
        q1, switched = stream(solver, near_solver, P, Q, start, a.sigma, a.near, (0.05, 0.1))
        p1, r1 = solver.forward(np.nan_to_num(q1))
        unsolved += int((np.linalg.norm(p1 - P, axis=1) > 1e-3).sum())
        j0, j1 = largest(start, q0) > 0.2, largest(start, q1) > 0.2
        today += j0
        ours += j1
        if j0 and not j1:
            mended.append(seed)
        if j1 and not j0:
            broken.append(seed)
    return summary(
        {
            "paths": a.paths,
            "sigma": a.sigma,
            "jumping_today": today,
            "jumping_with_most_room": ours,
            "mended": mended,
            "broken": broken,
            "unsolved_targets": unsolved,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
