"""A tracker that plays the camera, live: the simulated true tool pose, seen from where the
tracker is mounted, as a motion-capture system or a marker detector reports it.

The tracker node (nodes/tracker_node.py) feeds it the tool pose the simulation reports (the
true arm's, sag included) with the time it held, and asks for a frame ``rate`` times a second.
Each frame is the latest pose, moved into the tracker's frame, with Gaussian noise (``noise_mm``
per axis, ``noise_deg`` about a random axis); a share ``drop`` of the frames never comes, a share
``outliers`` is centimetres off (a mis-detected marker, ``outlier_m``); every frame keeps the
stamp of the moment it shows and is handed out ``latency`` seconds after it was taken. Pure
numpy and scipy: the node only moves messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class TrackerConfig:
    mount: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # the tracker in the base frame: x y z r p y
    noise_mm: float = 0.2
    noise_deg: float = 0.1
    rate: float = 30.0  # frames per second
    latency: float = 0.05  # s from taking a frame to handing it out
    drop: float = 0.02  # share of frames lost
    outliers: float = 0.01  # share of frames centimetres off
    outlier_m: tuple = (0.02, 0.10)  # how far off an outlier is (m)
    seed: int = 0

    def __post_init__(self):
        problems = []
        if len(self.mount) != 6 or not all(math.isfinite(v) for v in self.mount):
            problems.append(f"mount must be 6 finite numbers (x y z roll pitch yaw), got "
                            f"{list(self.mount)}")
        for name in ("noise_mm", "noise_deg", "latency"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                problems.append(f"{name} must be a finite number >= 0")
        if not (math.isfinite(self.rate) and self.rate > 0):
            problems.append("rate must be above 0")
        for name in ("drop", "outliers"):
            if not 0 <= getattr(self, name) < 1:
                problems.append(f"{name} is a share of the frames, from 0 up to (not) 1")
        lo, hi = (tuple(self.outlier_m) + (None, None))[:2]
        if lo is None or hi is None or not 0 < lo <= hi:
            problems.append(f"outlier_m must be (least, most) metres, 0 < least <= most, got "
                            f"{list(self.outlier_m)}")
        if problems:
            raise ValueError("tracker: " + "; ".join(problems))


@dataclass(frozen=True)
class Frame:
    stamp: float  # when the pose shown was true (s)
    due: float  # when it is handed out (s)
    position: np.ndarray  # (3,) in the tracker's frame
    quaternion: np.ndarray  # (4,) x y z w, in the tracker's frame
    outlier: bool


def mount_matrix(mount) -> np.ndarray:
    """The 4x4 pose of the tracker in the base frame from x y z roll pitch yaw (URDF's order:
    R = Rz(yaw) Ry(pitch) Rx(roll))."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("ZYX", list(mount[3:6])[::-1]).as_matrix()
    T[:3, 3] = mount[:3]
    return T


class TrackerStream:
    def __init__(self, config: TrackerConfig):
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.inverse = np.linalg.inv(mount_matrix(config.mount))  # base frame -> tracker frame
        self.truth = None  # (stamp, position, quaternion) in the base frame
        self.queue: list[Frame] = []
        self.counts = {"taken": 0, "dropped": 0, "outliers": 0, "handed_out": 0}

    def observe(self, stamp: float, position, quaternion) -> None:
        """The true tool pose in the arm's base frame at time ``stamp``."""
        p, q = np.asarray(position, float), np.asarray(quaternion, float)
        if p.shape == (3,) and q.shape == (4,) and np.all(np.isfinite(p)) and np.all(
            np.isfinite(q)
        ) and abs(np.linalg.norm(q) - 1) < 1e-3:
            self.truth = (float(stamp), p, q / np.linalg.norm(q))

    def take(self, now: float) -> Frame | None:
        """Take a frame of the latest true pose (None: none seen yet, or this frame lost)."""
        if self.truth is None:
            return None
        c = self.config
        stamp, p, q = self.truth
        if self.rng.random() < c.drop:
            self.counts["dropped"] += 1
            return None
        R = self.inverse[:3, :3] @ Rotation.from_quat(q).as_matrix()
        p = self.inverse[:3, :3] @ p + self.inverse[:3, 3]
        p = p + self.rng.normal(0.0, c.noise_mm / 1000.0, 3)
        turn = Rotation.from_rotvec(self.rng.normal(0.0, math.radians(c.noise_deg), 3))
        quat = (turn * Rotation.from_matrix(R)).as_quat()
        outlier = bool(self.rng.random() < c.outliers)
        if outlier:
            u = self.rng.normal(size=3)
            p = p + u / np.linalg.norm(u) * self.rng.uniform(*c.outlier_m)
            self.counts["outliers"] += 1
        frame = Frame(stamp, now + c.latency, p, quat, outlier)
        self.counts["taken"] += 1
        self.queue.append(frame)
        return frame

    def due(self, now: float) -> list[Frame]:
        """The frames whose latency has passed, oldest first; they leave the queue."""
        ready = [f for f in self.queue if f.due <= now]
        self.queue = [f for f in self.queue if f.due > now]
        self.counts["handed_out"] += len(ready)
        return ready
