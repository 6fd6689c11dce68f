"""The arm's geometry fitted to measured tool poses.

Parameters, per chain joint: its origin moved (3, metres), turned (3, radians: the turn about the
joint's own axis is its zero offset) and its axis tilted (2, radians, about two perpendiculars);
and the tool's offset after the last joint moved and turned (6), where the URDF has a fixed joint
there to carry it. Everything a URDF can say about a rigid arm, so the result is a URDF any tool
reads, and the solver serves it exactly.

The fit is robust least squares (scipy, soft-L1 loss) on position and orientation residuals, each
divided by the tracker's noise, with a weak prior towards the nominal geometry (it settles the
directions no pose set can tell apart, such as a shift along two parallel axes); then the poses
whose residuals are gross outliers are set aside and the fit is made again on the rest. Each
parameter's uncertainty is the square root of its variance from the Jacobian at the answer.
Cross-validation (k folds) measures the tool-pose error on poses each fit never saw.

Every fit is bounded: at most MAX_EVALUATIONS evaluations of the residuals per least-squares
solve (good data settles in under 20), and an optional time budget shared by all the fits of
one calibration (:class:`Budget`); either reached is a CalibrationError that says which.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from ..arm.model import ArmModel
from ..arm.rotations import quaternion_to_matrix
from . import compliance
from . import frame as frames
from .chain import (  # noqa: F401 - chain_of: part of this API
    Chain,
    _matrix,
    chain_of,
    forward_placed,
    matrix_rotvecs,
    placements,
    rotvec_matrices,
)
from .measurements import Measurements
from .urdf import _path, calibrated_urdf  # noqa: F401 - calibrated_urdf: part of this API

PRIOR = {"origin_m": 0.01, "turn_rad": 0.05, "axis_rad": 0.05}  # the prior's spread
OUTLIER = 6.0  # residual norms over this many robust sigmas are gross outliers
SAG_RAD = 0.01  # a compliance's scale (and prior spread): this sag at the joint's largest load
EPS_STEP = np.finfo(float).eps ** 0.5  # the Jacobian's relative step (scipy's two-point default)
LOADED = 1e-3  # a joint whose largest load is under this fraction of the largest: no compliance
MAX_EVALUATIONS = 100  # per least-squares solve; good measurements settle in 3-20
CHECK_DATA = (
    "check that x, y, z are metres and the joints radians, that the quaternion is x, y, z, w, "
    "and that each row's joints and pose belong together"
)


class CalibrationError(ValueError):
    """Measurements that cannot calibrate the arm, with what is missing."""


@dataclass(frozen=True)
class Budget:
    """The time all the fits of one calibration may take together (seconds, wall clock)."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        if time.monotonic() - self.started > self.seconds:
            raise CalibrationError(
                f"the fit did not finish within its time limit ({self.seconds:g} s, calibrate "
                f"--time-limit; good measurements take seconds): {CHECK_DATA}; nothing written"
            )


def _solve(residuals, x0, **kw):
    """scipy's least squares, bounded (MAX_EVALUATIONS); not settling is refused by name."""
    result = least_squares(residuals, x0, max_nfev=MAX_EVALUATIONS, **kw)
    if result.status == 0:
        raise CalibrationError(
            f"the fit did not settle within {MAX_EVALUATIONS} evaluations (good measurements "
            f"take under 20): these measurements are not of a rigid arm like this one; "
            f"{CHECK_DATA}; nothing written"
        )
    return result


def moved(chain: Chain, theta) -> Chain:
    """The chain with parameters ``theta`` applied."""
    xyz, R, axis, tip = placements(chain, theta)
    tip = None if tip is None else tip[0]
    return Chain(
        chain.pre, xyz[0], R[0], axis[0], chain.prismatic, chain.tip_before, tip, chain.tip_after
    )


def forward(chain: Chain, q) -> tuple[np.ndarray, np.ndarray]:
    """Tool positions (N, 3) and rotations (N, 3, 3) for joints ``q`` (N, n), numpy."""
    tip = None if chain.tip_joint is None else chain.tip_joint[None]
    p, R = forward_placed(
        chain, chain.xyz[None], chain.R[None], chain.axis[None], tip, np.atleast_2d(q)
    )
    return p[0], R[0]


def errors(chain: Chain, m: Measurements, F=None, comp=None) -> tuple[np.ndarray, np.ndarray]:
    """Per pose: position error (m) and rotation error (rad) of ``chain`` against ``m``
    (``F``: the tracker-from-base transform the measurements are seen through; ``comp``: the
    joints' compliance, compliance.Compliance)."""
    p, R = forward(chain, m.q if comp is None else comp.effective(m.q))
    if F is not None:
        p, R = frames.apply(F, p, R)
    Rm = quaternion_to_matrix(m.quaternion)
    rot = np.linalg.norm(matrix_rotvecs(np.transpose(Rm, (0, 2, 1)) @ R), axis=1)
    return np.linalg.norm(p - m.position, axis=1), rot


def _scales(chain: Chain) -> np.ndarray:
    per_joint = [PRIOR["origin_m"]] * 3 + [PRIOR["turn_rad"]] * 3 + [PRIOR["axis_rad"]] * 2
    s = per_joint * len(chain.xyz)
    if chain.tip_joint is not None:
        s += [PRIOR["origin_m"]] * 3 + [PRIOR["turn_rad"]] * 3
    return np.array(s)


@dataclass
class Fit:
    theta: np.ndarray
    sigma: np.ndarray  # each parameter's standard deviation
    used: np.ndarray  # rows of the measurements the final fit used
    rejected: np.ndarray  # rows set aside as gross outliers
    chain: Chain
    names: list = field(default_factory=list)
    frame: np.ndarray | None = None  # the tracker-from-base transform, when it was estimated
    frame_sigma: np.ndarray | None = None  # its turn (3, rad) and shift (3, m) deviations
    fixed: np.ndarray | None = None  # (size,) bool: parameters held at nominal (the base's)
    compliance: object | None = None  # compliance.Compliance, when the pose-dependent term was fit
    compliance_sigma: np.ndarray | None = None  # (n,) rad/N·m


def fit(
    chain: Chain,
    m: Measurements,
    noise_m: float,
    noise_rad: float,
    names=(),
    frame: str = "base",
    geometry: bool = True,
    gravity=None,
    budget: Budget | None = None,
) -> Fit:
    """Robust least squares of the chain's parameters to ``m`` (module docstring).
    ``frame="unknown"``: the poses are in a tracker's frame, estimated with the rest (frame.py);
    ``geometry=False``: only that frame is fitted, the arm kept nominal; ``gravity`` (a
    compliance.Gravity): each loaded joint's compliance is fitted too (compliance.py);
    ``budget``: the time it may take (with the fits before it that share the budget)."""
    if frame not in frames.FRAMES:
        raise CalibrationError(f"frame must be one of {', '.join(frames.FRAMES)}; got {frame!r}")
    with _one_blas_thread():  # small matrices; threads that spin for the CPU slow it tenfold
        return _fit(
            chain, m, noise_m, noise_rad, names, frame == "unknown", geometry, gravity, budget
        )


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1)


def _fit(chain, m, noise_m, noise_rad, names, unknown_frame, geometry, gravity, budget) -> Fit:
    scales = _scales(chain)
    size = n_geo = len(scales)
    free = np.full(size, geometry)
    F0, n = None, len(chain.xyz)
    if gravity is not None and geometry:  # then each joint's compliance, scaled by its load
        load = np.abs(compliance.torques(gravity, m.q)).max(0)
        loaded = load > LOADED * max(load.max(), 1e-12)
        scales = np.concatenate([scales, np.where(loaded, SAG_RAD / np.maximum(load, 1e-12), 1)])
        free = np.concatenate([free, loaded])
        size += n
    if unknown_frame:
        free[:8] = False  # the first joint's placement: the base frame is defined by it
        free[_along_the_first_axis(chain)] = False
        F0 = frames.register(forward(chain, m.q)[0], m.position)
        scales = np.concatenate([scales, np.full(6, PRIOR["origin_m"])])
        free = np.concatenate([free, np.ones(6, bool)])
    prior = np.zeros(len(free), bool)
    prior[:size] = free[:size]  # the frame has no prior: it may be anywhere

    def full(x):  # (K, free) -> (K, all parameters)
        x = np.atleast_2d(x)
        out = np.zeros((len(x), len(scales)))
        out[:, free] = x
        return out * scales

    Rm_T = np.transpose(quaternion_to_matrix(m.quaternion), (0, 2, 1))  # measured, once
    last = {}  # the effective joints depend on the compliance alone: kept while it holds

    def joints(theta, rows):  # the joints the arm takes: q_cmd + c tau(q), three steps suffice
        q = m.q[rows]
        if size == n_geo:
            return q
        out = np.empty((len(theta),) + q.shape)
        for k, c in enumerate(theta[:, n_geo:size]):
            key = (c.tobytes(), rows.tobytes())
            if last.get("key") != key:
                last["key"], last["q"] = key, _effective(gravity, c, q, 3)
            out[k] = last["q"]
        return out

    def many(X, rows):  # the residuals (K, 6 rows + prior) of K parameter vectors at once
        if budget is not None:
            budget.check()
        X = np.atleast_2d(X)
        theta = full(X)
        p, R = forward_placed(chain, *placements(chain, theta[:, :n_geo]), joints(theta, rows))
        if F0 is not None:
            p, R = frames.apply_many(F0, theta[:, size:], p, R)
        rot = matrix_rotvecs(Rm_T[rows] @ R)
        return np.concatenate(
            [
                ((p - m.position[rows]) / noise_m).reshape(len(X), -1),
                (rot / noise_rad).reshape(len(X), -1),
                X[:, prior[free]],
            ],
            axis=1,
        )

    def residuals(x, rows):
        return many(x, rows)[0]

    def jacobian(x, rows):  # scipy's two-point differences, every column in one pass
        h = EPS_STEP * np.where(x >= 0, 1.0, -1.0) * np.maximum(1.0, np.abs(x))
        h = (x + h) - x
        f = many(np.vstack([x, x + np.diag(h)]), rows)
        return ((f[1:] - f[0]) / h[:, None]).T

    rows = np.arange(len(m))
    first = _solve(
        residuals,
        np.zeros(int(free.sum())),
        jac=jacobian,
        args=(rows,),
        loss="soft_l1",
        f_scale=3.0,
        x_scale=1.0,
    )
    r = first.fun[: 6 * len(rows)]
    per_pose = np.sqrt(
        (r[: 3 * len(rows)].reshape(-1, 3) ** 2).sum(1)
        + (r[3 * len(rows) :].reshape(-1, 3) ** 2).sum(1)
    )
    spread = max(
        1.0, 1.4826 * np.median(np.abs(per_pose - np.median(per_pose))) + np.median(per_pose)
    )
    keep = per_pose <= OUTLIER * spread
    final = _solve(residuals, first.x, jac=jacobian, args=(rows[keep],), x_scale=1.0)
    J = final.jac
    dof_left = max(1, 6 * int(keep.sum()) - int(free.sum()))
    chi2 = float((final.fun[: 6 * int(keep.sum())] ** 2).sum()) / dof_left
    sigma = np.zeros(len(scales))
    try:
        cov = np.linalg.inv(J.T @ J) * max(chi2, 1e-12)
        sigma[free] = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        sigma[free] = np.inf
    sigma *= scales
    theta = full(final.x)[0]
    comp = None
    if size > n_geo:
        comp = compliance.Compliance(gravity, theta[n_geo:size].copy())
    return Fit(
        theta[:n_geo],
        sigma[:n_geo],
        rows[keep],
        rows[~keep],
        moved(chain, theta[:n_geo]),
        list(names),
        None if F0 is None else frames.moved(F0, theta[size:]),
        None if F0 is None else sigma[size:],
        ~free[:n_geo],
        comp,
        None if comp is None else sigma[n_geo:size],
    )


def _effective(gravity, c, q, steps: int) -> np.ndarray:
    q_eff = q
    for _ in range(steps):
        q_eff = q + c * compliance.torques(gravity, q_eff)
    return q_eff


def _along_the_first_axis(chain: Chain) -> list[int]:
    """The second joint's parameters that a tracker frame also moves: its origin's shift along
    the first joint's axis, and its turn about that axis (both commute with the first joint's
    motion). Held at nominal where they are single parameters (the axis along x, y or z where
    the second joint's origin sees it); otherwise the prior holds them."""
    if len(chain.xyz) < 2 or chain.prismatic[0]:
        return []
    a = chain.pre[1][:3, :3].T @ chain.axis[0]  # the first axis, in the second joint's parent
    b = chain.R[1].T @ a  # and in the second joint's own origin frame (its turns are there)
    out = []
    if np.abs(a).max() > 0.999:
        out.append(8 + int(np.argmax(np.abs(a))))
    if np.abs(b).max() > 0.999:
        out.append(8 + 3 + int(np.argmax(np.abs(b))))
    return out


def parameter_names(arm: ArmModel, chain: Chain) -> list[str]:
    out = []
    for name in arm.joint_names:
        out += [f"{name}.origin.{a}" for a in "xyz"]
        out += [f"{name}.turn.{a}" for a in "xyz"]
        out += [f"{name}.axis_tilt.{a}" for a in "uv"]
    if chain.tip_joint is not None:
        out += [f"tool.origin.{a}" for a in "xyz"] + [f"tool.turn.{a}" for a in "xyz"]
    return out


def cross_validate(
    chain: Chain, m: Measurements, noise_m, noise_rad, folds: int = 5, seed: int = 0,
    frame: str = "base",
    gravity=None,
    budget: Budget | None = None,
) -> dict:
    """Tool-pose errors on poses each fit never saw (k folds), nominal and calibrated. With an
    unknown frame the nominal model is the nominal arm seen through its own best frame."""
    order = np.random.default_rng(seed).permutation(len(m))
    before_p, before_r, after_p, after_r = [], [], [], []
    for k in range(folds):
        held = order[k::folds]
        train = m.subset(np.setdiff1d(order, held))
        f = fit(chain, train, noise_m, noise_rad, frame=frame, gravity=gravity, budget=budget)
        seen_through = None
        if frame == "unknown":
            seen_through = fit(
                chain, train, noise_m, noise_rad, frame=frame, geometry=False, budget=budget
            ).frame
        test = m.subset(held)
        pe, re = errors(chain, test, seen_through)
        before_p.append(pe)
        before_r.append(re)
        pe, re = errors(f.chain, test, f.frame, f.compliance)
        after_p.append(pe)
        after_r.append(re)
    bp, br = np.concatenate(before_p), np.concatenate(before_r)
    ap, ar = np.concatenate(after_p), np.concatenate(after_r)
    # a held-out pose that is itself a gross outlier says nothing of either model
    sane = ap <= max(10 * np.median(ap), 10 * noise_m)
    return {
        "folds": folds,
        "held_out_poses": int(len(ap)),
        "held_out_outliers_left_out": int((~sane).sum()),
        "nominal_mm_median": float(np.median(bp[sane]) * 1e3),
        "nominal_mm_p95": float(np.percentile(bp[sane], 95) * 1e3),
        "nominal_deg_median": float(np.degrees(np.median(br[sane]))),
        "calibrated_mm_median": float(np.median(ap[sane]) * 1e3),
        "calibrated_mm_p95": float(np.percentile(ap[sane], 95) * 1e3),
        "calibrated_deg_median": float(np.degrees(np.median(ar[sane]))),
    }


def least_poses(chain: Chain, frame: str = "base", sag: bool = False) -> int:
    """The fewest poses worth a fit: twice the parameters' count over a pose's six numbers."""
    size = chain.size + (6 - 8 if frame == "unknown" else 0) + (len(chain.xyz) if sag else 0)
    return int(math.ceil(2 * size / 6))
