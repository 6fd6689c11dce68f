"""The safety gate in front of every command sent to an arm. Pure functions, no ROS.

Two halves:

- :func:`check_target` decides whether a target pose may be served at all (finite, unit
  quaternion, a known frame, neither stale nor from the future);
- :func:`gate_command` turns a solution into a command that satisfies every bound, or refuses
  (``None``): every value finite and inside the joint limits shrunk by ``margin``; the
  trajectory's duration never shorter than the velocity limits allow from the current joints;
  and, for controllers that do not interpolate, :func:`stream_step` gives setpoints that move
  each joint at most ``velocity * dt`` per step and end exactly at the goal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .ik import reasons, verdicts
from .ik.settings import IKSettings

_NOWHERE = np.zeros(3)


@dataclass(frozen=True)
class JointBounds:
    lower: np.ndarray  # -inf for a continuous joint: any angle is fine
    upper: np.ndarray  # +inf for a continuous joint
    velocity: np.ndarray  # rad/s (or m/s), finite and positive
    margin: np.ndarray | float = 0.0  # kept from each limit (0 for continuous joints)

    @classmethod
    def from_arm(
        cls, arm, margin: float = 0.0, speed_scale: float = 1.0, default_velocity: float = 1.0
    ):
        """Bounds from an arm model; joints without a velocity limit get ``default_velocity``.
        A continuous joint has no position bound: the solver answers it within pi of the arm's
        joints (never a turn away), which can lie past the model's [-pi, pi]."""
        if not 0 < speed_scale <= 1:
            raise ValueError(f"speed_scale must be in (0, 1], got {speed_scale}")
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError(f"margin must be a finite number >= 0, got {margin}")
        vel = (
            np.where(np.isfinite(arm.velocity_limits), arm.velocity_limits, default_velocity)
            * speed_scale
        )
        margins = np.where(arm.continuous, 0.0, float(margin))
        lower = np.where(arm.continuous, -np.inf, arm.lower)
        upper = np.where(arm.continuous, np.inf, arm.upper)
        bounds = cls(lower, upper, vel, margins)
        if np.any(bounds.lo > bounds.hi):
            raise ValueError(f"margin {margin} leaves no room inside the joint limits")
        return bounds

    @property
    def lo(self) -> np.ndarray:
        return self.lower + self.margin

    @property
    def hi(self) -> np.ndarray:
        return self.upper - self.margin

    def inside(self, q) -> bool:
        q = np.asarray(q, dtype=float)
        return bool(
            q.shape == self.lower.shape
            and np.all(np.isfinite(q))
            and np.all(q >= self.lo)
            and np.all(q <= self.hi)
        )


@dataclass(frozen=True)
class Command:
    positions: np.ndarray
    duration: float  # seconds: time_from_start for a trajectory to ``positions``


def check_target(
    position,
    orientation,
    frame_id: str,
    stamp: float,
    now: float,
    frames,
    stale_timeout: float = 0.2,
    future_tolerance: float = 0.05,
    quat_tolerance: float = IKSettings.quat_tolerance,
) -> str:
    """The reason a target must not be served, or "" when it may be.

    ``orientation`` is (x, y, z, w) or None for position-only targets; ``stamp`` and ``now`` are
    seconds on the same clock; ``frames`` are the frame ids the solver works in. The numbers are
    judged by verdicts.check, the verdict every solver gives (whether the arm can reach the
    position is the solver's to say).
    """
    p = np.asarray(position, dtype=float)
    q = np.zeros(4) if orientation is None else np.asarray(orientation, dtype=float)
    if p.shape != (3,):
        return f"position must have 3 numbers, got {p.tolist()}"
    if q.shape != (4,):
        return f"orientation must be a quaternion (x, y, z, w), got {q.tolist()}"
    code = verdicts.check(
        p, q, orientation is not None, _NOWHERE, math.inf, math.inf, quat_tolerance
    )
    if code != verdicts.OK:
        return reasons.reason(code, p, q, quat_tolerance=quat_tolerance)
    if not frame_id:
        return "frame_id is empty"
    if frame_id not in frames:
        return f"unknown frame_id '{frame_id}' (targets must be in {', '.join(sorted(frames))})"
    if not (math.isfinite(stamp) and math.isfinite(now)):
        return "stamp is not finite"
    if stamp == 0.0:
        return "target is not stamped (header.stamp is zero): stamp it with the time it was sent"
    age = now - stamp
    if age > stale_timeout:
        return (
            f"target is stale: stamped {age * 1000:.0f} ms ago "
            f"(stale_timeout {stale_timeout * 1000:.0f} ms)"
        )
    if -age > future_tolerance:
        return f"target is stamped {-age * 1000:.0f} ms in the future"
    return ""


def not_commanded(answer, accept_best_effort: bool) -> str:
    """Why an answer (ik.results.Answer) is not to be commanded, or "" when it may be: a solved
    answer may; a best effort only with ``accept_best_effort``, and never one whose joints
    collide; a rejected target never."""
    if answer.solved:
        return ""
    if answer.q is None or not accept_best_effort:
        return answer.reason
    if answer.collides:
        return f"{answer.reason}; a pose that collides is never commanded"
    return ""


def gate_command(
    solution, current, bounds: JointBounds, min_duration: float = 0.0
) -> Command | None:
    """A command to ``solution`` that respects every bound, or None.

    ``current`` is the arm's joint state; the duration is long enough for every joint to get
    from ``current`` to ``solution`` within its velocity limit, and at least ``min_duration``.
    """
    q = np.asarray(solution, dtype=float)
    c = np.asarray(current, dtype=float)
    if not bounds.inside(q) or c.shape != q.shape or not np.all(np.isfinite(c)):
        return None
    if not (math.isfinite(min_duration) and min_duration >= 0):
        return None
    if not np.all(np.isfinite(bounds.velocity)) or np.any(bounds.velocity <= 0):
        return None
    with np.errstate(over="ignore"):
        needed = np.abs(q - c) / bounds.velocity
    # rounding (down to zero for the tiniest moves) must never make the time too short
    duration = float(np.max(needed * (1 + 1e-12) + np.nextafter(0.0, 1.0), initial=0.0))
    if not math.isfinite(duration):
        return None
    return Command(q.copy(), max(duration, float(min_duration)))


MIN_SEGMENT = 1e-3  # s between two points of a path: controllers refuse times that do not grow


def gate_path(path, current, bounds: JointBounds, min_duration: float = 0.0) -> list | None:
    """Commands through every row of ``path`` (a planned path's joints), or None when any row
    is unsafe: each inside the bounds, its ``duration`` the time from start, the previous one's
    plus what the slowest joint needs at its velocity limit from there (the first from
    ``current``), and at least ``MIN_SEGMENT``; all stretched evenly when the whole would take
    less than ``min_duration``."""
    commands, elapsed, previous = [], 0.0, current
    for q in np.asarray(path, dtype=float).reshape(-1, len(bounds.lower)):
        step = gate_command(q, previous, bounds)
        if step is None:
            return None
        elapsed += max(step.duration, MIN_SEGMENT)
        commands.append(Command(step.positions, elapsed))
        previous = q
    if not commands or not (math.isfinite(min_duration) and min_duration >= 0):
        return None
    if elapsed < min_duration:
        scale = min_duration / elapsed if elapsed > 0 else math.inf
        if not math.isfinite(scale):  # no motion at all: one point at min_duration
            return [Command(commands[-1].positions, float(min_duration))]
        commands = [Command(c.positions, c.duration * scale) for c in commands]
    return commands


READING_NOISE = 1e-3  # rad (m): how far past a limit a joint reading may lie and still count


def start_of_stream(current, bounds: JointBounds) -> np.ndarray:
    """The first setpoint of a stream: the joints read, put back on a limit they lie a reading's
    noise past (a servo at its end stop reads a hair beyond it); farther out, left as read, so
    that :func:`stream_step` refuses to move from there."""
    c = np.asarray(current, dtype=float)
    inside = np.clip(c, bounds.lower, bounds.upper)
    return inside if np.all(np.abs(inside - c) <= READING_NOISE) else c


def stream_step(setpoint, goal, bounds: JointBounds, dt: float) -> np.ndarray | None:
    """The next setpoint from ``setpoint`` toward ``goal``: each joint moves at most
    ``velocity * dt``, and the goal itself is returned once it is within reach.

    None when the goal is unsafe, ``dt`` is not a positive finite time, or the setpoint lies
    outside the joint limits (no step from there could respect both the limits and the speeds).
    """
    s = np.asarray(setpoint, dtype=float)
    g = np.asarray(goal, dtype=float)
    if not (math.isfinite(dt) and dt > 0) or s.shape != g.shape:
        return None
    if not bounds.inside(g) or not np.all(np.isfinite(s)):
        return None
    if np.any(s < bounds.lower) or np.any(s > bounds.upper):
        return None
    reach = bounds.velocity * dt
    if not np.all(np.isfinite(reach)) or np.any(reach <= 0):
        return None
    delta = g - s
    if np.all(np.abs(delta) <= reach * (1 + 1e-9)):  # rounding must not cost an extra step
        return g.copy()
    return s + np.clip(delta, -reach, reach)  # between two points inside the limits: inside too
