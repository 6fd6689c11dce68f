"""The calibrated URDF: the fitted chain written back into the arm's URDF text, so that any tool
that reads a URDF gets the calibrated arm (the rigid part; compliance.py holds the rest)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
from scipy.spatial.transform import Rotation

from ..arm.model import ArmModel
from .true_arm import joint_frame, set_joint


def _matrix(xyz, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, xyz
    return T


def calibrated_urdf(arm: ArmModel, chain, elements) -> str:
    """The arm's URDF text with the fitted origins written into its joints. A tilted axis is
    written as the nominal axis in a turned origin, the turn undone in the next joint's origin
    (R(a', q) = T R(a, q) T^-1 with a' = T a): tools that take only axes along x, y or z
    (roboticstoolbox's URDF reader) read it right. Only a last joint with nothing after it
    keeps its tilted axis."""
    root = ET.fromstring(arm.urdf_text)
    fitted = {elements[k].get("name"): k for k in range(len(chain.xyz))}
    tip_name = elements[-1].get("name") if chain.tip_joint is not None else None
    carry = np.eye(4)  # the turn still to undo, in the frame after the last movable joint
    path = _path(arm, root)
    for i, joint in enumerate(path):
        name = joint.get("name")
        if name in fitted:
            k = fitted[name]
            origin = carry @ _matrix(chain.xyz[k], chain.R[k])
            nominal_axis = joint_frame(joint)[2]
            turn = _turn(nominal_axis, chain.axis[k])
            if i == len(path) - 1:  # nothing after it to take the turn back
                set_joint(joint, origin[:3, 3], origin[:3, :3], chain.axis[k])
                carry = np.eye(4)
                continue
            origin = origin @ turn
            set_joint(joint, origin[:3, 3], origin[:3, :3], nominal_axis)
            carry = turn.T
        else:
            own = chain.tip_joint if name == tip_name else _matrix(*joint_frame(joint)[:2])
            origin = carry @ own
            set_joint(joint, origin[:3, 3], origin[:3, :3], None)
            carry = np.eye(4)
    return ET.tostring(root, encoding="unicode")


def _path(arm: ArmModel, root) -> list:
    """The URDF joint elements from the base down to the tip."""
    by_child = {j.find("child").get("link"): j for j in root.iter("joint")}
    path, link = [], arm.tip
    while link != arm.base:
        path.append(by_child[link])
        link = by_child[link].find("parent").get("link")
    return path[::-1]


def _turn(a, b) -> np.ndarray:
    """The smallest rotation (4x4) taking unit vector ``a`` to ``b``."""
    axis = np.cross(a, b)
    T = np.eye(4)
    if np.linalg.norm(axis) > 1e-15:
        angle = math.atan2(np.linalg.norm(axis), float(a @ b))
        T[:3, :3] = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_matrix()
    return T
