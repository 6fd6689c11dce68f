"""Following a JointTrajectory in the simulator: linear interpolation between its points.

Pure Python on the message's fields, so it is tested without ROS.
"""

from __future__ import annotations

import numpy as np


class TrajectoryFollower:
    def __init__(self, joint_names: list[str]):
        self.joint_names = list(joint_names)
        self.clear()

    def clear(self) -> None:
        self.times = None  # seconds from start, with 0 for the start state
        self.points = None  # (n + 1, dof)
        self.start = 0.0

    def load(self, msg, current, now: float) -> bool:
        """Take a trajectory message; False (and nothing changes) if it is unusable."""
        try:
            order = [list(msg.joint_names).index(n) for n in self.joint_names]
        except ValueError:
            return False
        if not msg.points:
            return False
        times, points = [0.0], [np.asarray(current, dtype=float)]
        for pt in msg.points:
            t = pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9
            q = (
                np.asarray([pt.positions[i] for i in order], dtype=float)
                if len(pt.positions) == len(msg.joint_names)
                else None
            )
            if q is None or not np.all(np.isfinite(q)) or t < times[-1]:
                return False
            times.append(t)
            points.append(q)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.start = stamp if stamp > 0 else now
        self.times, self.points = np.array(times), np.stack(points)
        return True

    def sample(self, now: float):
        """The position to command now, or None with no trajectory loaded."""
        if self.times is None:
            return None
        t = now - self.start
        if t <= 0:
            return self.points[0]
        if t >= self.times[-1]:
            return self.points[-1]
        k = int(np.searchsorted(self.times, t, side="right"))
        t0, t1 = self.times[k - 1], self.times[k]
        w = 0.0 if t1 <= t0 else (t - t0) / (t1 - t0)
        return (1 - w) * self.points[k - 1] + w * self.points[k]
