"""The one settings object of the IK core: every path (compiled, batched torch, the inference
node, the CLI, the benchmarks) reads its tolerances, iterations and restarts from here.

    settings = IKSettings(restarts=60, margin=0.02)
    settings.replace(iterations=0)          # the network alone, nothing more

"Solved" means position error <= ``pos_tol`` and rotation error <= ``rot_tol`` with every joint
inside its limits less ``margin``. Refinement is Levenberg-Marquardt on the pose error, the
rotation part weighed ``rot_weight`` metres per radian (the reward's weights: 1 mm costs as much
as 0.01 rad).

A tool that is symmetric about one of its own axes (a suction cup, a drill, a pen) sets
``free_axis``: only that axis is aligned with the target's, and the rotation about it is free;
the rotation error is then the angle between the two axes.

Tracking (a warm start already near the target: a stream, ``solve(current=, last=)``) spends a
redundant arm's self-motion, or a free tool axis's, on keeping away from the joint limits: each
answer moves at most ``track_limits`` rad along it, and only to another exact answer
(kernel.secondary; 0 turns it off). On a 6-joint arm it does nothing. When LM from the last
answer cannot reach the next target (a dead end: mostly a joint at a limit that the target
pushes on), seeds around the last answer are tried, within a quarter of ``track_search`` rad
first, then wider, up to all of it, before seeds anywhere: where the stream must jump, it jumps as
little as it can find (0, or ``restarts=0``: none).

On an arm with no self-motion for the target (six joints and a pose, three and a position; five
with a free tool axis), a stream that also gives the answer before the last one
(``solve(current=, last=, previous=)``) starts from the last answer moved on by its last step,
where no joint moved more than ``carry_step`` (0 turns it off): where the path crosses a singular
pose (the elbow stretched, the wrist straight) the answers go on across with it, as the arm's own
joints do, instead of turning back onto the branch they came on, which can end at a joint limit
further on (a jump). A redundant arm's steps are not carried: their self-motion would be carried
with them (docs/design_notes.md).

``collision_check`` makes an answer that puts the arm into collision with itself (or an obstacle
given to the solver) no solution: the search goes on for a free one (collision.py).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

ORDERS = ("nearest", "mid_range", "manipulability")  # how several answers can be ordered
FREE_AXES = ("", "x", "y", "z")  # a tool axis the rotation about which is left free


def _number(value) -> bool:
    """A real number (numpy's included), not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class IKSettings:
    pos_tol: float = 1e-3  # m
    rot_tol: float = 0.01  # rad
    rot_weight: float = 0.1  # m per rad in the residual and in every score
    iterations: int = 10  # LM iterations from each first seed; 0: the seed alone (no refinement)
    restarts: int = 1000  # further seeds for a target not yet solved (hard ones need hundreds)
    restart_iterations: int = 12  # LM iterations from each restart seed
    margin: float = 0.0  # rad (m): kept from every limited joint's limits
    reach_margin: float = 2.0  # targets beyond this times the reach bound are rejected
    far_restarts: int = 1000  # seeds at most for a target outside the reach (a closest pose)
    far_patience: int = 300  # ... ending after this many in a row that brought it no closer
    far_iterations: int = 100  # LM iterations from each of them (a miss converges slowly)
    far_polish: int = 1000  # LM iterations more for the closest of them
    quat_tolerance: float = 1e-3  # |norm - 1| above this: the quaternion is rejected
    warm_radius: float = 0.05  # weighted error (m) under which the warm start goes first
    stop_fraction: float = 0.01  # iterate until the error is this fraction of the tolerance
    rng_seed: int = 0  # seeds the restarts' random numbers (reproducible answers)
    solution_attempts: int = 200  # seeds tried at most when several answers are asked for
    solution_threshold: float = 0.1  # rad (m): answers differing less on every joint are one
    free_axis: str = ""  # "x", "y" or "z": rotation about this tool axis is left free
    collision_check: bool = False  # answers that collide (collision.py) are not solutions
    collision_margin: float = 0.0  # m: the least distance kept between surfaces
    collision_pairs: str = ""  # an SRDF whose disable_collisions are the pairs left out
    track_limits: float = 0.01  # rad per target at most: tracking's self-motion away from limits
    track_search: float = 0.6  # rad: how far around the last answer a stuck stream seeks first
    carry_step: float = 0.2  # rad: a stream's last step carried on where no joint moved more

    def __post_init__(self):
        for name in (
            "pos_tol",
            "rot_tol",
            "rot_weight",
            "reach_margin",
            "quat_tolerance",
            "warm_radius",
            "stop_fraction",
            "solution_threshold",
        ):
            value = getattr(self, name)
            if not (_number(value) and math.isfinite(value) and value > 0):
                raise ValueError(
                    f"IKSettings.{name} must be a positive finite number, got {value!r}"
                )
        for name in ("margin", "collision_margin", "track_limits", "track_search", "carry_step"):
            value = getattr(self, name)
            if not (_number(value) and math.isfinite(value) and value >= 0):
                raise ValueError(f"IKSettings.{name} must be a finite number >= 0, got {value!r}")
        if self.free_axis not in FREE_AXES:
            raise ValueError(
                f"IKSettings.free_axis must be one of {FREE_AXES} ('' for none), "
                f"got {self.free_axis!r}"
            )
        for name in (
            "iterations",
            "restarts",
            "restart_iterations",
            "far_restarts",
            "far_patience",
            "far_iterations",
            "far_polish",
            "solution_attempts",
        ):
            value = getattr(self, name)
            if not (_whole(value) and 0 <= value <= 100_000):
                raise ValueError(
                    f"IKSettings.{name} must be an integer in [0, 100000], got {value!r}"
                )
        if not (_whole(self.rng_seed) and 0 <= self.rng_seed < 2**63):
            raise ValueError(f"IKSettings.rng_seed must be an integer >= 0, got {self.rng_seed!r}")
        if not isinstance(self.collision_pairs, str):
            raise ValueError(
                "IKSettings.collision_pairs must be the path of an SRDF file ('' to compute "
                f"the pairs from the URDF), got {self.collision_pairs!r}"
            )
        if not isinstance(self.collision_check, (bool, np.bool_)):
            raise ValueError(
                f"IKSettings.collision_check must be True or False, got {self.collision_check!r}"
            )

    def replace(self, **changes) -> "IKSettings":
        return dataclasses.replace(self, **changes)

    @property
    def refines(self) -> bool:
        """False for ``iterations=0``: answers are the seed alone, not refined nor restarted."""
        return self.iterations > 0

    def score(self, pos_err, rot_err):
        """The one weighted error every path ranks answers by (metres): the norm of the residual
        the refinement minimises (kernel.weighted)."""
        return (pos_err**2 + (self.rot_weight * rot_err) ** 2) ** 0.5

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
