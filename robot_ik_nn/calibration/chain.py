"""The arm's chain as the calibration fit moves it, read from the URDF: a module of its own so
that fit.py and compliance.py (which fit.py uses) both take it from below, not from each other."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..arm.model import ArmModel
from ..arm.rotations import matrix_to_quaternion
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


def placements(chain: Chain, theta) -> tuple:
    """The joints' placements under ``K`` parameter vectors ``theta`` (K, size) at once (fit.py
    names the parameters): origins (K, n, 3), turns (K, n, 3, 3), axes (K, n, 3) and the tool
    joint's origin (K, 4, 4; None where the chain has no tool terms)."""
    t = np.atleast_2d(np.asarray(theta, float))
    n = len(chain.xyz)
    d = t[:, : 8 * n].reshape(len(t), n, 8)
    u, v = chain.perpendiculars
    xyz = chain.xyz + d[..., :3]
    R = chain.R @ rotvec_matrices(d[..., 3:6])
    tilt = rotvec_matrices(d[..., 6:7] * u + d[..., 7:8] * v)
    axis = (tilt @ chain.axis[:, :, None])[..., 0]
    tip = None
    if chain.tip_joint is not None:
        e = t[:, 8 * n : 8 * n + 6]
        tip = np.repeat(chain.tip_joint[None], len(t), 0)
        tip[:, :3, 3] += e[:, :3]
        tip[:, :3, :3] = tip[:, :3, :3] @ rotvec_matrices(e[:, 3:])
    return xyz, R, axis, tip


def forward_placed(chain: Chain, xyz, R, axis, tip, q) -> tuple[np.ndarray, np.ndarray]:
    """Tool positions (K, N, 3) and rotations (K, N, 3, 3) of the chain placed as
    ``placements`` gives (K of each) at joints ``q`` (N, n; or (K, N, n), one set per
    placement): every placement and pose in one pass."""
    K, q = len(xyz), np.asarray(q, float)
    N = q.shape[-2]
    T = np.broadcast_to(np.eye(4), (K, N, 4, 4))
    M = np.broadcast_to(np.eye(4), (K, 4, 4)).copy()
    motion = np.broadcast_to(np.eye(4), (K, N, 4, 4)).copy()
    for j in range(len(chain.xyz)):
        M[:, :3, :3], M[:, :3, 3] = R[:, j], xyz[:, j]
        T = T @ (chain.pre[j] @ M)[:, None]
        turn = q[..., j, None] * axis[:, None, j]  # (K, N, 3)
        if chain.prismatic[j]:
            motion[..., :3, 3] = turn
        else:
            motion[..., :3, :3] = rotvec_matrices(turn)
        T = T @ motion
    if tip is None:
        T = T @ chain.tip_before
    else:
        T = T @ (chain.tip_before @ tip @ chain.tip_after)[:, None]
    return T[..., :3, 3], T[..., :3, :3]


def rotvec_matrices(v) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of rotation vectors ``v`` (..., 3), by Rodrigues' formula
    (the fit's own: arm/rotations.py speaks quaternions and joint angles, not rotation vectors):
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


def matrix_rotvecs(R) -> np.ndarray:
    """Rotation vectors (..., 3) of rotation matrices ``R`` (..., 3, 3), angles in [0, pi].

    Through the unit quaternion (arm/rotations.py, w >= 0, well conditioned near a half turn):
    angle = 2 atan2(|xyz|, w), and the vector is xyz scaled by angle / |xyz|, which is
    angle / sin(angle / 2), a series in the angle where |xyz| is small."""
    q = matrix_to_quaternion(R)
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
