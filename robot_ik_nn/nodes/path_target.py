"""The inference node's ``~/target_path``: a whole Cartesian path (geometry_msgs/PoseArray, one
header for every pose) answered as one JointTrajectory through every pose, or refused with the
reason on ``~/status``. Planned by ``Solver.solve_path`` (ik/path.py): no joint steps more than
the ``path_max_step`` parameter between two poses where the arm has such a way; every point
passes the safety gate, timed by the joints' velocity limits."""

from __future__ import annotations

import time

import numpy as np
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..ik.results import REJECTED, SOLVED
from ..safety import check_target, gate_path
from .common import duration_msg, now_seconds, stamp_seconds


def serve_path(node, msg) -> None:
    """Answer ``msg`` (a PoseArray) for ``node`` (the InferenceNode)."""
    started = time.perf_counter()
    stamp, now = stamp_seconds(msg.header.stamp), now_seconds(node)
    P = np.array([[p.position.x, p.position.y, p.position.z] for p in msg.poses]).reshape(-1, 3)
    Q = np.array([[p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w]
                  for p in msg.poses]).reshape(-1, 4)  # fmt: skip
    reason = "" if len(P) else "the path holds no poses"
    for i in range(len(P)):
        why = check_target(
            P[i],
            Q[i],
            msg.header.frame_id,
            stamp,
            now,
            node.frames,
            node.stale_timeout,
            node.future_tolerance,
            node.solver.settings.quat_tolerance,
        )
        if why:
            reason = f"pose {i} of {len(P)}: {why}"
            break
    current, why = node._current_joints() if not reason else (None, "")
    reason = reason or why
    if reason:
        return node.report(REJECTED, reason, started)
    path = node.solver.solve_path(P, Q, start=current, max_step=node.path_max_step)
    if not path.ok:
        missed = np.flatnonzero(~path.solved)
        said = path.reason
        if len(missed):
            said = f"{len(missed)} of {len(P)} poses not solved (the first: pose {missed[0]})"
        return node.report(REJECTED, f"path not commanded: {said}", started)
    commands = gate_path(path.q, current, node.bounds, node.min_duration)
    if commands is None:
        return node.report(
            REJECTED, "the safety gate refused the path (a point outside the limits)", started
        )
    traj = JointTrajectory(joint_names=node.names)
    traj.points = [
        JointTrajectoryPoint(
            positions=c.positions.tolist(), time_from_start=duration_msg(c.duration)
        )
        for c in commands
    ]
    node.trajectory_pub.publish(traj)  # header.stamp zero: start now
    node.previous_solution, node.last_stamp = None, None  # a stream starts afresh from here
    node.last_solution = commands[-1].positions
    words = f"path of {len(P)} poses, largest joint step {path.max_step:.3f} rad" + (
        ", planned where tracking would jump" if path.planned else ""
    )
    node.report(SOLVED, words, started, duration=commands[-1].duration)
