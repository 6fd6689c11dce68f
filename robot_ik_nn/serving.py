"""One target at a time, fast: the solver behind the inference node.

A batched torch solver spends most of a single target's time in per-operation overhead. Here
the network gives its seed (one small torch call), and the refinement runs in numpy: the same
kinematics as kinematics.py (cross-checked in tests) and the same Levenberg-Marquardt with
joint limits, on one configuration. A target near where the arm is (or near the last answer)
is refined from there first, as a tracking target at 200 Hz is; otherwise, or when that does
not solve it, the network's seed goes first, then the warm starts, then a few restarts
(alternately random, and the best answer so far with its stuck joints and a random half of the
rest redrawn); a target still unsolved goes to the batched solver, whose many restart seeds run
side by side.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .solver import BEST_EFFORT, REJECTED, SOLVED


def _skew(k):
    return np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]], dtype=float)


class NumpyChain:
    """Forward kinematics and geometric Jacobian of one configuration, numpy float64."""

    def __init__(self, arm):
        self.dof = arm.dof
        self.A = [j.origin[:3, :3] for j in arm.joints]
        self.B = [j.origin[:3, :3] @ _skew(j.axis) for j in arm.joints]
        self.C = [j.origin[:3, :3] @ _skew(j.axis) @ _skew(j.axis) for j in arm.joints]
        self.P = [j.origin[:3, 3] for j in arm.joints]
        self.axes = [j.axis for j in arm.joints]
        self.A_axis = [a @ k for a, k in zip(self.A, self.axes)]
        self.prismatic = np.array([j.type == "prismatic" for j in arm.joints])
        self.tip_R, self.tip_p = arm.tip_offset[:3, :3], arm.tip_offset[:3, 3]
        self.lower, self.upper, self.continuous = arm.lower, arm.upper, arm.continuous

    def forward(self, q, jacobian: bool = False):
        R, p = np.eye(3), np.zeros(3)
        origins, axes = [], []
        s, c1 = np.sin(q), 1.0 - np.cos(q)
        for i in range(self.dof):
            p = p + R @ self.P[i]
            if jacobian:
                origins.append(p)
                axes.append(R @ self.A_axis[i])
            if self.prismatic[i]:
                R = R @ self.A[i]
                p = p + (R @ self.axes[i]) * q[i]
            else:
                R = R @ (self.A[i] + s[i] * self.B[i] + c1[i] * self.C[i])
        p_tip, R_tip = p + R @ self.tip_p, R @ self.tip_R
        if not jacobian:
            return p_tip, R_tip, None
        z, r = np.array(axes), p_tip - np.array(origins)  # (dof, 3) each
        linear = np.stack([z[:, 1] * r[:, 2] - z[:, 2] * r[:, 1], z[:, 2] * r[:, 0] - z[:, 0] * r[:, 2],
                           z[:, 0] * r[:, 1] - z[:, 1] * r[:, 0]])  # z x r, (3, dof)
        J = np.vstack([np.where(self.prismatic, z.T, linear), np.where(self.prismatic, 0.0, z.T)])
        return p_tip, R_tip, J

    def clamp(self, q, lower, upper):
        wrapped = np.remainder(q + math.pi, 2 * math.pi) - math.pi
        return np.where(self.continuous, wrapped, np.clip(q, lower, upper))


def rotation_error(R, R_target) -> np.ndarray:
    """Axis * angle that turns R onto R_target (base frame)."""
    E = R_target @ R.T
    v = np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])
    sin2 = np.linalg.norm(v)
    angle = math.atan2(sin2 / 2, (np.trace(E) - 1) / 2)
    if sin2 > 1e-9 and angle < 3.0:
        return v * (angle / sin2)
    if angle < 3.0:
        return v / 2
    S = (E + E.T) / 2 - math.cos(angle) * np.eye(3)  # near pi: axis from the symmetric part
    axis = S[:, int(np.argmax(np.diag(S)))]
    axis = axis / max(np.linalg.norm(axis), 1e-12)
    return axis * angle * (1.0 if axis @ v >= 0 else -1.0)


def quat_to_matrix(q) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@dataclass
class Answer:
    q: np.ndarray | None
    status: str
    pos_err: float
    rot_err: float
    reason: str = ""


class ServingSolver:
    def __init__(self, arm, net=None, *, pos_tol=1e-3, rot_tol=0.01, iterations=30, restarts=4,
                 rot_weight=0.1, margin=0.0, seed=0, warm_radius=0.02, fallback=True):
        self.arm, self.net = arm, net
        self.chain = NumpyChain(arm)
        margins = np.where(arm.continuous, 0.0, margin)
        self.lower, self.upper = arm.lower + margins, arm.upper - margins
        self.pos_tol, self.rot_tol, self.rot_weight = pos_tol, rot_tol, rot_weight
        self.iterations, self.restarts = iterations, restarts
        self.rng = np.random.default_rng(seed)
        self.origin = arm.joints[0].origin[:3, 3]
        self.max_reach = 1.1 * arm.reach + 0.01
        self.warm_radius = warm_radius  # weighted pose error (m) under which a warm start goes first
        self.fallback = None
        if fallback:
            from .solver import Solver

            self.fallback = Solver(arm, net, pos_tol=pos_tol, rot_tol=rot_tol, rot_weight=rot_weight,
                                   margin=margin, generator_seed=seed)

    def _residual(self, q, p, R, jacobian=False):
        pq, Rq, J = self.chain.forward(q, jacobian)
        e = p - pq
        if R is not None:
            e = np.concatenate([e, self.rot_weight * rotation_error(Rq, R)])
            if J is not None:
                J = np.vstack([J[:3], self.rot_weight * J[3:]])
        elif J is not None:
            J = J[:3]
        return e, J

    def refine(self, q, p, R, iterations=None):
        q = self.chain.clamp(np.asarray(q, dtype=float), self.lower, self.upper)
        e, J = self._residual(q, p, R, jacobian=True)
        cost, lam, eye = e @ e, 1e-3, np.eye(self.chain.dof)
        stop = (0.01 * self.pos_tol) ** 2
        for _ in range(self.iterations if iterations is None else iterations):
            if cost <= stop or lam >= 1e3:  # done, or stuck (no step helps any more)
                break
            step = np.linalg.solve(J.T @ J + lam * eye, J.T @ e)
            q_new = self.chain.clamp(q + step, self.lower, self.upper)
            e_new, J_new = self._residual(q_new, p, R, jacobian=True)
            c_new = e_new @ e_new
            if c_new < cost:
                q, e, J, cost, lam = q_new, e_new, J_new, c_new, max(lam / 3, 1e-9)
            else:
                lam = min(lam * 4, 1e4)
        return q, e

    def _errors_from_residual(self, e, R):
        """Position (m) and rotation (rad) error from a residual (the rotation part is scaled)."""
        rot = 0.0 if R is None else float(np.linalg.norm(e[3:])) / self.rot_weight
        return float(np.linalg.norm(e[:3])), rot

    def errors(self, q, p, R):
        pq, Rq, _ = self.chain.forward(q)
        rot = 0.0 if R is None else float(np.linalg.norm(rotation_error(Rq, R)))
        return float(np.linalg.norm(pq - p)), rot

    def network_seed(self, p, quat, current):
        if self.net is None:
            return None
        import torch

        with torch.no_grad():
            pos = torch.tensor(p, dtype=torch.float32)[None]
            rot = None
            if self.net.config.mode == "pose":
                from .quaternions import quaternion_to_matrix
                rot = quaternion_to_matrix(torch.tensor(quat, dtype=torch.float32))[None]
            cur = None
            if self.net.config.tracking:
                cur = torch.tensor(current if current is not None else (self.lower + self.upper) / 2,
                                   dtype=torch.float32)[None]
            return self.net(pos, rot, cur)[0].double().numpy()

    def solve(self, position, quaternion=None, current=None, last=None) -> Answer:
        p = np.asarray(position, dtype=float)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            return Answer(None, REJECTED, math.nan, math.nan, f"position is not finite: {p.tolist()}")
        dist = float(np.linalg.norm(p - self.origin))
        if dist > self.max_reach:
            return Answer(None, REJECTED, math.nan, math.nan,
                          f"position is {dist:.3f} m from the arm's first joint; "
                          f"{self.arm.name} reaches at most {self.arm.reach:.3f} m")
        if quaternion is None and self.net is not None and self.net.config.mode == "pose":
            return Answer(None, REJECTED, math.nan, math.nan, "this model was trained on full poses: give an orientation")
        R = None if quaternion is None else quat_to_matrix(quaternion)
        # the last answer first (the freshest), then the joints the arm reports
        warm = [self.chain.clamp(np.asarray(c, dtype=float), self.lower, self.upper)
                for c in (last, current) if c is not None]
        best, best_score, best_err = None, math.inf, (math.nan, math.nan)
        tried = 0

        def attempt(start, iterations=None):
            nonlocal best, best_score, best_err, tried
            tried += 1
            q, e = self.refine(start, p, R, iterations)
            pe, re = self._errors_from_residual(e, R)
            if self._score(pe, re) < best_score:
                best, best_score, best_err = q, self._score(pe, re), (pe, re)
            return pe <= self.pos_tol and re <= self.rot_tol

        # a target close to where the arm is (or was last sent) is solved from there: tracking
        if warm and self._score(*self.errors(warm[0], p, R)) < self.warm_radius and attempt(warm[0]):
            return Answer(best, SOLVED, *best_err)
        seed = self.network_seed(p, quaternion, current)
        starts = ([self.chain.clamp(seed, self.lower, self.upper)] if seed is not None else []) + warm[tried:]
        if not starts:
            starts = [(self.lower + self.upper) / 2]
        for start in starts:
            if attempt(start):
                return Answer(best, SOLVED, *best_err)
        for k in range(self.restarts):
            if attempt(self._restart_seed(best, partial=k % 2 == 0), iterations=15):
                return Answer(best, SOLVED, *best_err)
        if self.fallback is not None:  # a hard one: many seeds side by side in the batched solver
            result = self.fallback.solve(p[None], None if quaternion is None else np.asarray(quaternion)[None])
            q = result.q[0].numpy()
            if np.all(np.isfinite(q)):
                pe, re = self.errors(q, p, R)
                if self._score(pe, re) < best_score:
                    best, best_err = q, (pe, re)
                if result.status[0] == SOLVED:
                    return Answer(best, SOLVED, *best_err)
        pe, re = best_err
        return Answer(best, BEST_EFFORT, pe, re, f"closest reached: {pe * 1000:.2f} mm, {math.degrees(re):.2f} deg")

    def _restart_seed(self, q, partial: bool):
        """A random seed, or (partial) the best answer so far with the joints stuck at a limit and
        a random half of the others drawn anew: the arm kept, another wrist branch tried."""
        fresh = self.lower + self.rng.random(self.chain.dof) * (self.upper - self.lower)
        if not partial or q is None:
            return fresh
        redraw = (np.abs(q - self.lower) < 1e-9) | (np.abs(q - self.upper) < 1e-9)
        redraw |= self.rng.random(self.chain.dof) < 0.5
        return np.where(redraw, fresh, q)

    def _score(self, pe, re):
        return pe + self.rot_weight * re
