"""The solver's variants: the same arm and network with some settings, the joints' ranges,
obstacles or the search time changed, and copies with buffers of their own (one per thread).

A part of :class:`~robot_ik_nn.ik.solver.Solver` (its base class), kept here so that solver.py
holds the solving itself. Each variant is a copy of the solver whose kernel buffers are built
again (``Solver._build``); a calibrated arm's solver (calibration/served.py) stays one.
"""

from __future__ import annotations

import time
import warnings
from typing import TypeVar

import numpy as np

from ..arm.rotations import matrix_to_quaternion

S = TypeVar("S", bound="Variants")  # the solver's own class (a CompliantSolver stays one)


class Variants:
    """The ``with_*`` methods and ``copy`` of :class:`~robot_ik_nn.ik.solver.Solver`."""

    def with_settings(self: S, **changes) -> S:
        """The same arm and network with some settings changed."""
        return self._rebuilt(settings=self.settings.replace(**changes))

    def copy(self: S) -> S:
        """Another solver with the same arm, network and settings, and buffers of its own: one
        for each thread that solves (a solver is not to be called from two threads at once)."""
        other = self._rebuilt()
        if getattr(other, "collisions", None) is not None:
            other.collisions = other.collisions.copy()
        return other

    def _rebuilt(self: S, **attrs) -> S:
        """A copy of this solver with ``attrs`` replaced and its kernel buffers built again."""
        other = object.__new__(type(self))  # a calibrated arm's CompliantSolver stays one
        other.__dict__.update(self.__dict__)
        other.__dict__.update(attrs)
        other._build()
        other._variants = {}
        return other

    def _variant(self: S, free_axis: str) -> S:
        """This solver with another free axis, built once and kept."""
        if free_axis not in self._variants:
            self._variants[free_axis] = self.with_settings(free_axis=free_axis)
        return self._variants[free_axis]

    def with_obstacles(self: S, planes=(), boxes=()) -> S:
        """This solver with collision checking on and obstacles added: planes (normal, offset:
        free where normal . x > offset) and axis-aligned boxes (centre, half sizes), in the
        base frame. A table under the arm: ``planes=[((0, 0, 1), 0.0)]``."""
        other = self.with_settings(collision_check=True)
        other.collisions = other.collisions.with_obstacles(planes, boxes)
        other._build()
        return other

    def with_limits(self: S, lower, upper) -> S:
        """The same network, settings and obstacles with the joints kept inside ``lower`` ..
        ``upper`` as well as the URDF's limits (a servo's range, narrower than the URDF's):
        refinement never leaves them, so an answer is one the arm can take."""
        lo = np.maximum(np.asarray(lower, float), self.arm.lower)
        hi = np.minimum(np.asarray(upper, float), self.arm.upper)
        if lo.shape != self.arm.lower.shape or np.any(lo > hi):
            raise ValueError(
                f"joint ranges {np.asarray(lower).tolist()}..{np.asarray(upper).tolist()} do "
                f"not overlap {self.arm.name}'s limits"
            )
        return self._rebuilt(arm=self.arm.with_limits(lo, hi))  # the network keeps the URDF's

    def within(self: S, lower, upper) -> S:
        """Deprecated: :meth:`with_limits` (the same, named beside ``with_settings``)."""
        warnings.warn(
            "Solver.within() is deprecated; use Solver.with_limits()", DeprecationWarning, 2
        )
        return self.with_limits(lower, upper)

    def with_search_time(self: S, seconds: float, probe_restarts: int = 200) -> S:
        """This solver with its restarts cut so that a target inside the reach whose answers all
        collide (or that has none) is refused after about ``seconds``: the cost of a restart is
        measured here, on this machine, on a target whose every pose collides."""
        if not seconds > 0:
            raise ValueError(f"a search time must be above 0 s; got {seconds!r}")
        probe = self.with_obstacles(planes=[((0.0, 0.0, 1.0), 1e3)]).with_settings(
            restarts=probe_restarts
        )
        p, R = self.forward(self.arm.mid_range)
        quat = matrix_to_quaternion(R[0]) if self.mode == "pose" else None
        probe.solve(p[0], quat)  # compiled before it is timed
        started = time.perf_counter()
        for _ in range(3):
            probe.solve(p[0], quat)
        per_restart = (time.perf_counter() - started) / (3 * probe_restarts)
        restarts = int(min(self.settings.restarts, max(1, seconds / per_restart)))
        return self.with_settings(restarts=restarts)
