"""The arm's chain as the calibration fit moves it, read from the URDF: a module of its own so
that fit.py and compliance.py (which fit.py uses) both take it from below, not from each other."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

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


def _matrix(xyz, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, xyz
    return T
