"""What the stream experiments (tracking_branch_room.py, tracking_niryo_jumps.py) share: their
arguments, a bench path with today's stream along it, the stream's steps, and the
summary line they end with. Imported by them (``python scripts/...`` puts scripts/ on the path).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.bench.paths import spline_path, streamed


def parser(paths: int) -> argparse.ArgumentParser:
    """The arguments every experiment takes: a model folder and how many bench paths."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--paths", type=int, default=paths)
    return ap


def stream_along(solver, seed: int):
    """Bench path ``seed`` (bench/paths.py ``spline_path``) and today's stream along it from the
    path's first joints: (the path's joints, its positions, its quaternions, the stream's
    joints)."""
    q_path, P, R = spline_path(solver.arm, solver.forward, seed)
    Q = matrix_to_quaternion(R)
    q, _ = streamed(solver, P, Q, q_path[0])
    return q_path, P, Q, q


def steps(start, q) -> np.ndarray:
    """Each target's largest joint move (rad), from ``start`` through the rows of ``q``."""
    return np.abs(np.diff(np.vstack([start, q]), axis=0)).max(axis=1)


def summary(figures: dict) -> int:
    """The experiment's last line, its figures as JSON; the exit status (0)."""
    print(json.dumps(figures))
    return 0
