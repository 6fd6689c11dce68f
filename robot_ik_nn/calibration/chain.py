"""The arm's chain as the calibration fit moves it, read from the URDF: a module of its own so
that fit.py and compliance.py (which fit.py uses) both take it from below, not from each other."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..arm.model import ArmModel
from .true_arm import joint_frame
from .urdf import _path


@dataclass
class Chain:
    """The arm as the fit moves it: per chain joint the fixed transform before its URDF origin,
    the origin, the axis and the type; the tool offset split around the fixed joint that carries
    its correction."""

    pre: list  # 4x4 before each joint's own origin (fixed joints since the last one)
    xyz: np.ndarray  # (n, 3)
    R: np.ndarray  # (n, 3, 3)
    axis: np.ndarray  # (n, 3)
    prismatic: np.ndarray  # (n,) bool
    tip_before: np.ndarray  # 4x4: the tool offset up to the carrying fixed joint's origin
    tip_joint: np.ndarray | None  # 4x4: that joint's origin (None: no fixed joint, no tip terms)
    tip_after: np.ndarray  # 4x4: after it

    @property
    def size(self) -> int:
        return 8 * len(self.xyz) + (6 if self.tip_joint is not None else 0)

    @cached_property
    def perpendiculars(self) -> tuple[np.ndarray, np.ndarray]:
        """Per joint (n, 3) each: two unit vectors perpendicular to its axis and to each other,
        the directions its axis tilts about (fixed by the nominal axis, so computed once)."""
        a = self.axis
        e = np.eye(3)[np.argmin(np.abs(a), axis=1)]
        u = np.cross(a, e)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        return u, np.cross(a, u)


def chain_of(arm: ArmModel) -> tuple[Chain, list]:
    """The chain of ``arm`` and the URDF joint elements behind it (movable, then the tip's)."""
    path = _path(arm, ET.fromstring(arm.urdf_text))
    pre, xyz, R, axis, prismatic, elements = [], [], [], [], [], []
    pending = np.eye(4)
    movable = [j for j in path if j.get("type") != "fixed"]
    after_last = path[path.index(movable[-1]) + 1 :]
    for j in path:
        if j.get("type") == "fixed" and j not in after_last:
            pending = pending @ _matrix(*joint_frame(j)[:2])
            continue
        if j in after_last:
            continue
        p, r, a = joint_frame(j)
        pre.append(pending)
        xyz.append(p)
        R.append(r)
        axis.append(a)
        prismatic.append(j.get("type") == "prismatic")
        elements.append(j)
        pending = np.eye(4)
    tip_joint, tip_before, tip_after = None, np.eye(4), np.eye(4)
    if after_last:
        tip_joint = _matrix(*joint_frame(after_last[0])[:2])
        for j in after_last[1:]:
            tip_after = tip_after @ _matrix(*joint_frame(j)[:2])
        elements.append(after_last[0])
    chain = Chain(
        pre,
        np.array(xyz),
        np.array(R),
        np.array(axis),
        np.array(prismatic),
        tip_before,
        tip_joint,
        tip_after,
    )
    return chain, elements


def rotvec_matrices(v) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of rotation vectors ``v`` (..., 3), by Rodrigues' formula:
    I + sin(t)/t K + (1 - cos t)/t^2 K^2, K the cross-product matrix of v, t = |v|. The two
    coefficients are written with sinc, which is exact at t = 0 and loses nothing near it."""
    v = np.asarray(v, float)
    t = np.linalg.norm(v, axis=-1)[..., None, None]
    a = np.sinc(t / np.pi)  # sin(t) / t
    b = 0.5 * np.sinc(t / (2 * np.pi)) ** 2  # (1 - cos t) / t^2 = 2 sin^2(t/2) / t^2
    K = np.zeros(v.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return np.eye(3) + a * K + b * (K @ K)


def quaternion_matrices(quat) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of quaternions (..., 4: x y z w), normalised first."""
    q = np.asarray(quat, float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    out[..., 0, 1], out[..., 1, 0] = 2 * (x * y - z * w), 2 * (x * y + z * w)
    out[..., 0, 2], out[..., 2, 0] = 2 * (x * z + y * w), 2 * (x * z - y * w)
    out[..., 1, 2], out[..., 2, 1] = 2 * (y * z - x * w), 2 * (y * z + x * w)
    return out


def matrix_rotvecs(R) -> np.ndarray:
    """Rotation vectors (..., 3) of rotation matrices ``R`` (..., 3, 3), angles in [0, pi].

    Through a unit quaternion taken from whichever of w, x, y, z is largest (the other three
    from off-diagonal sums and differences divided by it), so no division is by a small number
    near a half turn; then angle = 2 atan2(|xyz|, w) with w >= 0, and the vector is xyz scaled
    by angle / |xyz|, a series in the angle where |xyz| is small."""
    R = np.asarray(R, float)
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    d = np.stack([R[..., 0, 0], R[..., 1, 1], R[..., 2, 2], tr], -1)
    pick = np.argmax(d, axis=-1)
    q = np.empty(R.shape[:-2] + (4,))
    for i in range(3):  # x, y or z the largest: 4 q_i^2 = 1 - tr + 2 R_ii, scaled by 4 q_i
        j, k = (i + 1) % 3, (i + 2) % 3
        s = pick == i
        q[s, i] = 1 - tr[s] + 2 * R[s, i, i]
        q[s, j] = R[s, j, i] + R[s, i, j]
        q[s, k] = R[s, k, i] + R[s, i, k]
        q[s, 3] = R[s, k, j] - R[s, j, k]
    s = pick == 3  # w the largest: 4 w^2 = 1 + tr, scaled by 4 w
    q[s, 0] = R[s, 2, 1] - R[s, 1, 2]
    q[s, 1] = R[s, 0, 2] - R[s, 2, 0]
    q[s, 2] = R[s, 1, 0] - R[s, 0, 1]
    q[s, 3] = 1 + tr[s]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    q *= np.where(q[..., 3:] < 0, -1.0, 1.0)
    n = np.linalg.norm(q[..., :3], axis=-1)
    angle = 2 * np.arctan2(n, q[..., 3])
    small = angle <= 1e-3
    a2 = angle * angle
    scale = np.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, angle / np.where(small, 1.0, n))
    return q[..., :3] * scale[..., None]


def _matrix(xyz, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, xyz
    return T
