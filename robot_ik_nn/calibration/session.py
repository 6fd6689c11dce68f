"""A live calibration session, without ROS: move, settle, measure, count, and know when to fit.

The calibration node (nodes/calibration_node.py) feeds a :class:`Collector` the arm's joint
readings and the tracker's measured poses, and every tick asks it what to do:

- ``("move", command)``: send the arm to the next planned pose (the gate has passed the
  command: poses.MoveGate);
- ``("wait", "")``: nothing now;
- ``("fit", "")``: the poses are collected; ``measurements()`` has them;
- ``("fail", reason)``: the session ends, nothing is written.

A pose counts once the arm has settled there (every joint within ``near_rad`` of the goal and
still to ``still_rad`` for ``settle_s``) and the first measured pose stamped after the settle
arrived. A pose is skipped and counted, never fitted, when no measurement comes within
``measure_timeout`` (missing), when only measurements stamped before the settle come (stale),
when the measurement cannot be a pose of this arm (implausible: not finite, not a unit
quaternion, or farther than ``implausible_m`` from where the nominal arm puts its tool, seen
through the tracker frame estimated from the poses so far), when the arm does not settle in
time, or when the gate refuses the move from where the arm is. Too many skips end the session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .measurements import Measurements
from .poses import MoveGate, Pose

SKIPS = ("missing", "stale", "implausible", "not_settled", "refused")
FRAME_AFTER = 6  # poses taken before the tracker's frame is estimated for plausibility


@dataclass(frozen=True)
class CollectConfig:
    poses: int = 40
    settle_s: float = 0.3
    near_rad: float = 0.05
    still_rad: float = 2e-4
    move_slack: float = 5.0  # s past a move's duration before it counts as not settled
    measure_timeout: float = 1.0
    tracker_timeout: float = 10.0
    max_failures: int = 20
    implausible_m: float = 0.05
    frame_id: str = "tracker"
    topic: str = "measured_pose"

    def __post_init__(self):
        if not 1 <= self.poses <= 100:
            raise ValueError(f"poses must be 1 to 100, got {self.poses}")
        for name in ("settle_s", "near_rad", "still_rad", "move_slack", "measure_timeout",
                     "tracker_timeout", "implausible_m"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be above 0, got {value}")
        if self.max_failures < 0:
            raise ValueError("max_failures must be 0 or more")
        if not self.frame_id:
            raise ValueError("frame_id is empty: name the tracker's frame")


@dataclass
class Taken:
    q: list = field(default_factory=list)
    position: list = field(default_factory=list)
    quaternion: list = field(default_factory=list)
    sources: list = field(default_factory=list)


def rigid_fit(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R, t minimising |R a + t - b| over paired rows (Kabsch)."""
    ca, cb = A.mean(0), B.mean(0)
    U, _, Vt = np.linalg.svd((A - ca).T @ (B - cb))
    d = np.sign(np.linalg.det(Vt.T @ U.T))
    R = Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    return R, cb - R @ ca


class Collector:
    def __init__(self, config: CollectConfig, gate: MoveGate, poses: list[Pose], now: float):
        self.config, self.gate = config, gate
        self.queue = list(poses)
        self.started = now
        self.state, self.goal, self.pose = "idle", None, None
        self.sent_at = self.duration = self.settled_at = 0.0
        self.readings: list[tuple[float, np.ndarray]] = []
        self.settled_q = None
        self.heard = 0  # measurements heard, any frame
        self.matched = 0  # in the expected frame
        self.frames: set[str] = set()
        self.before_settle = 0  # measurements in this pose's wait stamped before the settle
        self.skipped = dict.fromkeys(SKIPS, 0)
        self.last_skip = ""
        self.taken = Taken()
        self.paused = False

    # -- inputs ---------------------------------------------------------------------------------
    @property
    def current(self):
        return self.readings[-1][1] if self.readings else None

    def joints(self, t: float, q) -> None:
        self.readings.append((float(t), np.asarray(q, float)))
        keep = t - 2.0 * self.config.settle_s - 1.0
        while self.readings and self.readings[0][0] < keep:
            self.readings.pop(0)

    def measurement(self, frame: str, stamp: float, position, quaternion) -> None:
        self.heard += 1
        self.frames.add(frame)
        if frame != self.config.frame_id:
            return
        self.matched += 1
        if self.state != "measuring":
            return
        if stamp <= self.settled_at:
            self.before_settle += 1
            return
        p, quat = np.asarray(position, float), np.asarray(quaternion, float)
        why = self._implausible(p, quat)
        if why:
            return self._skip("implausible", why)
        t = self.taken
        t.q.append(self.settled_q)
        t.position.append(p)
        t.quaternion.append(quat / np.linalg.norm(quat))
        t.sources.append(self.pose.source)
        self.state = "idle"

    def _implausible(self, p, quat) -> str:
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(quat))):
            return "a measured pose that is not finite"
        if abs(np.linalg.norm(quat) - 1.0) > 1e-3:
            return f"a quaternion of norm {np.linalg.norm(quat):.4f}, not 1"
        if len(self.taken.q) < FRAME_AFTER:
            return ""
        nominal, _ = self.gate.forward(np.array(self.taken.q + [self.settled_q]))
        measured = np.array(self.taken.position)
        R, t = rigid_fit(nominal[:-1], measured)
        off = float(np.linalg.norm(R @ nominal[-1] + t - p))
        if off > self.config.implausible_m:
            return (f"measured {off * 1000:.0f} mm from where the nominal arm puts the tool "
                    f"(implausible_m {self.config.implausible_m * 1000:.0f} mm)")
        return ""

    def pause(self) -> None:
        if self.state in ("moving", "measuring") and self.pose is not None:
            self.queue.insert(0, self.pose)  # visited again after ~/resume
        self.paused, self.state = True, "idle"

    def resume(self) -> None:
        self.paused = False

    # -- the loop --------------------------------------------------------------------------------
    def step(self, now: float):
        c = self.config
        if self.state in ("done", "failed"):
            return ("wait", "")
        quiet = now - self.started > c.tracker_timeout
        if quiet and self.heard == 0:
            return self._fail(f"the tracker never published on {c.topic} in "
                              f"{c.tracker_timeout:g} s")
        if quiet and self.matched == 0:
            return self._fail(f"no measured pose matched the frame {c.frame_id} (heard "
                              f"{', '.join(sorted(self.frames))} on {c.topic})")
        if sum(self.skipped.values()) > c.max_failures:
            return self._fail(f"too many failures: {self.failures()} (max_failures "
                              f"{c.max_failures}; the last: {self.last_skip})")
        if len(self.taken.q) >= c.poses:
            self.state = "done"
            return ("fit", "")
        if self.paused:
            return ("wait", "")
        if self.state == "moving":
            return self._moving(now)
        if self.state == "measuring":
            if now > self.settled_at + c.measure_timeout:
                kind = "stale" if self.before_settle else "missing"
                self._skip(kind, f"no measured pose stamped after the arm settled within "
                           f"{c.measure_timeout:g} s ({self.before_settle} stamped before)")
            return ("wait", "")
        return self._next(now)

    def _next(self, now: float):
        current = self.current
        if current is None:
            return ("wait", "")
        while self.queue:
            pose = self.queue.pop(0)
            command, why = self.gate.move(current, pose.q)
            if command is None:
                self.pose = pose
                self._skip("refused", f"the gate refused the move: {why}")
                if sum(self.skipped.values()) > self.config.max_failures:
                    return ("wait", "")
                continue
            self.pose, self.goal = pose, command.positions
            self.sent_at, self.duration, self.state = now, command.duration, "moving"
            return ("move", command)
        return self._fail(f"the planned poses ran out: {len(self.taken.q)} of "
                          f"{self.config.poses} taken; {self.failures()}")

    def _moving(self, now: float):
        c = self.config
        recent = [(t, q) for t, q in self.readings if t > self.sent_at]
        if recent and recent[-1][0] - recent[0][0] >= c.settle_s:
            last_t = recent[-1][0]
            tail = np.array([q for t, q in recent if t >= last_t - c.settle_s])
            near = np.max(np.abs(tail - self.goal)) <= c.near_rad
            still = np.max(np.ptp(tail, axis=0)) <= c.still_rad
            if near and still:
                self.settled_at, self.settled_q = last_t, tail.mean(0)
                self.before_settle, self.state = 0, "measuring"
                return ("wait", "")
        if now > self.sent_at + self.duration + c.move_slack:
            self._skip("not_settled", f"the arm did not settle at its goal within "
                       f"{self.duration + c.move_slack:.1f} s")
        return ("wait", "")

    def _skip(self, kind: str, why: str) -> None:
        self.skipped[kind] += 1
        self.last_skip = f"{kind}: {why}"
        self.state = "idle"

    def _fail(self, reason: str):
        self.state, self.reason = "failed", reason
        return ("fail", reason)

    # -- results ---------------------------------------------------------------------------------
    def failures(self) -> str:
        said = [f"{v} {k.replace('_', ' ')}" for k, v in self.skipped.items() if v]
        return ", ".join(said) if said else "none skipped"

    def progress(self) -> dict:
        t = self.taken
        return {
            "state": "paused" if self.paused else self.state,
            "taken": len(t.q),
            "of": self.config.poses,
            "network_poses": t.sources.count("network"),
            **{f"skipped_{k}": v for k, v in self.skipped.items()},
            "measurements_heard": self.heard,
            "last_skip": self.last_skip,
        }

    def measurements(self) -> Measurements:
        t = self.taken
        return Measurements(np.array(t.q), np.array(t.position), np.array(t.quaternion),
                            np.zeros(len(t.q), int), self.config.frame_id)


def progress_bar(progress: dict, width: int = 30) -> str:
    """One terminal line: a bar of the poses taken and what was skipped."""
    done = int(width * progress["taken"] / max(1, progress["of"]))
    skipped = sum(v for k, v in progress.items() if k.startswith("skipped_"))
    return (f"[{'#' * done}{'.' * (width - done)}] {progress['taken']}/{progress['of']} poses"
            f" ({progress['network_poses']} from the network), {skipped} skipped")
