"""The tracker's frame (eye-to-hand): measured poses given in a frame related to the arm's base
by an unknown rigid transform, estimated with the arm's geometry.

A measured pose is then ``F . FK(q)`` with ``F`` the tracker-from-base transform. The base frame
itself is no longer seen by any measurement: a shift or turn of the first joint's placement is
the same as one of ``F``. So with an unknown frame the base is *defined* by the nominal first
joint's placement (its origin, turn and axis are held at the URDF's values) and ``F`` takes what
they would have moved. The start is a registration (Kabsch) of the nominal arm's tool positions
onto the measured ones, trimmed of gross outliers; the fit then refines ``F`` with the rest.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from .chain import rotvec_matrices

FRAMES = ("base", "unknown")


def kabsch(a, b, weights=None) -> np.ndarray:
    """The rigid transform (4x4) taking points ``a`` (N, 3) closest to ``b`` (N, 3)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    w = np.ones(len(a)) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    ca, cb = w @ a, w @ b
    H = ((a - ca) * w[:, None]).T @ (b - cb)
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    R = Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, cb - R @ ca
    return T


def register(predicted, measured, rounds: int = 4) -> np.ndarray:
    """Kabsch of ``predicted`` tool positions onto ``measured`` ones, with the points whose
    residual is far above the median set aside each round (a mis-detected marker)."""
    keep = np.ones(len(predicted), bool)
    T = kabsch(predicted, measured)
    for _ in range(rounds):
        r = np.linalg.norm(predicted @ T[:3, :3].T + T[:3, 3] - measured, axis=1)
        limit = 3.0 * np.median(r) + 1e-6
        if np.array_equal(keep, r <= limit) or (r <= limit).sum() < 3:
            break
        keep = r <= limit
        T = kabsch(predicted[keep], measured[keep])
    return T


def moved(F0, d) -> np.ndarray:
    """``F0`` corrected by ``d`` (6: a turn as a rotation vector, then a shift, both applied
    after ``F0``'s own)."""
    T = np.eye(4)
    T[:3, :3] = rotvec_matrices(d[:3]) @ F0[:3, :3]
    T[:3, 3] = F0[:3, 3] + d[3:6]
    return T


def apply(F, p, R) -> tuple[np.ndarray, np.ndarray]:
    """Base-frame positions (N, 3) and rotations (N, 3, 3) seen in the frame ``F`` maps to."""
    return p @ F[:3, :3].T + F[:3, 3], F[:3, :3] @ R


def apply_many(F0, d, p, R) -> tuple[np.ndarray, np.ndarray]:
    """``apply`` for K corrections ``d`` (K, 6) of ``F0`` (``moved``) at once, to positions
    (K, N, 3) and rotations (K, N, 3, 3), one set per correction."""
    turn = rotvec_matrices(d[:, :3]) @ F0[:3, :3]  # (K, 3, 3)
    shift = F0[:3, 3] + d[:, 3:6]
    return p @ np.transpose(turn, (0, 2, 1)) + shift[:, None], turn[:, None] @ R


def to_base(F, position, quaternion) -> tuple[np.ndarray, np.ndarray]:
    """A pose measured in the tracker's frame (position (..., 3), quaternion x y z w) in the
    calibrated arm's base frame, for a tracker-from-base transform ``F`` (4x4)."""
    inv = np.linalg.inv(F)
    p = np.asarray(position, float) @ inv[:3, :3].T + inv[:3, 3]
    q = (Rotation.from_matrix(inv[:3, :3]) * Rotation.from_quat(quaternion)).as_quat()
    return p, q


def describe(F, sigma=None, name: str = "") -> dict:
    """The transform as calibration.json writes it; ``sigma`` (6): turn (rad), shift (m)."""
    out = {
        "tracker_frame": name or "tracker",
        "tracker_from_base": {
            "xyz_m": [float(v) for v in F[:3, 3]],
            "quaternion_xyzw": [float(v) for v in Rotation.from_matrix(F[:3, :3]).as_quat()],
            "matrix": [[float(v) for v in row] for row in F],
        },
    }
    if sigma is not None:
        out["sigma"] = {
            "turn_deg": [float(np.degrees(v)) for v in sigma[:3]],
            "shift_mm": [float(v * 1e3) for v in sigma[3:6]],
        }
    return out


def from_record(record: dict) -> np.ndarray:
    """The tracker-from-base 4x4 of a calibration.json ``frame`` record."""
    return np.array(record["tracker_from_base"]["matrix"], float)
