"""The one settings object of the IK core: every path (compiled, batched torch, the inference
node, the CLI, the benchmarks) reads its tolerances, iterations and restarts from here.

    settings = IKSettings(restarts=60, margin=0.02)
    settings.replace(iterations=0)          # the network alone, nothing more

"Solved" means position error <= ``pos_tol`` and rotation error <= ``rot_tol`` with every joint
inside its limits less ``margin``. Refinement is Levenberg-Marquardt on the pose error, the
rotation part weighed ``rot_weight`` metres per radian (the reward's weights: 1 mm costs as much
as 0.01 rad).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

ORDERS = ("nearest", "mid_range", "manipulability")  # how several answers can be ordered


@dataclass(frozen=True)
class IKSettings:
    pos_tol: float = 1e-3  # m
    rot_tol: float = 0.01  # rad
    rot_weight: float = 0.1  # m per rad in the residual and in every score
    iterations: int = 10  # LM iterations from each first seed; 0: the seed alone (no refinement)
    restarts: int = 1000  # further seeds for a target not yet solved (hard ones need hundreds)
    restart_iterations: int = 20  # LM iterations from each restart seed
    margin: float = 0.0  # rad (m): kept from every limited joint's limits
    reach_margin: float = 1.1  # targets beyond this times the arm's reach bound are rejected
    quat_tolerance: float = 1e-3  # |norm - 1| above this: the quaternion is rejected
    warm_radius: float = 0.02  # weighted error (m) under which the warm start goes first
    stop_fraction: float = 0.01  # iterate until the error is this fraction of the tolerance
    rng_seed: int = 0  # seeds the restarts' random numbers (reproducible answers)
    solution_attempts: int = 200  # seeds tried at most when several answers are asked for
    solution_threshold: float = 0.1  # rad (m): answers differing less on every joint are one

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
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(
                    f"IKSettings.{name} must be a positive finite number, got {value!r}"
                )
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(
                f"IKSettings.margin must be a finite number >= 0, got {self.margin!r}"
            )
        for name in ("iterations", "restarts", "restart_iterations", "solution_attempts"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and 0 <= value <= 100_000):
                raise ValueError(
                    f"IKSettings.{name} must be an integer in [0, 100000], got {value!r}"
                )

    def replace(self, **changes) -> "IKSettings":
        return dataclasses.replace(self, **changes)

    @property
    def refines(self) -> bool:
        """False for ``iterations=0``: answers are the seed alone, not refined nor restarted."""
        return self.iterations > 0

    def score(self, pos_err, rot_err):
        """The one weighted error every path ranks answers by (metres)."""
        return pos_err + self.rot_weight * rot_err

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
