"""A "true" arm to calibrate against in simulation: the nominal URDF with every chain joint's
origin moved, its axis turned and its zero offset, seeded and of stated sizes. What a real arm
has and its URDF does not say; the calibrated URDF says it the same way (origins and axes).

A zero offset (the encoder reads q where the joint is at q + d) is the joint's origin turned by
d about the joint's axis: origin . R(axis, d) . R(axis, q) = origin . R(axis, q + d).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from ..arm.model import ArmModel


def rotation(axis, angle: float) -> np.ndarray:
    """The rotation by ``angle`` about the unit vector ``axis``."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def rpy_of(R) -> tuple[float, float, float]:
    """URDF roll, pitch, yaw of a rotation matrix (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    pitch = -math.asin(max(-1.0, min(1.0, R[2, 0])))
    if abs(R[2, 0]) < 1 - 1e-12:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0  # gimbal lock: yaw folded into roll


def rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    return rotation([0, 0, 1], y) @ rotation([0, 1, 0], p) @ rotation([1, 0, 0], r)


def set_joint(joint, xyz, R, axis) -> None:
    """Write a joint element's origin (xyz, rotation) and axis (None: leave it)."""
    origin = joint.find("origin")
    if origin is None:
        origin = ET.SubElement(joint, "origin")
    origin.set("xyz", " ".join(f"{v:.12g}" for v in xyz))
    origin.set("rpy", " ".join(f"{v:.12g}" for v in rpy_of(R)))
    if axis is None:
        return
    element = joint.find("axis")
    if element is None:
        element = ET.SubElement(joint, "axis")
    element.set("xyz", " ".join(f"{v:.12g}" for v in axis))


def joint_frame(joint) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(origin xyz, origin rotation, unit axis) of a URDF joint element."""
    origin = joint.find("origin")
    xyz = np.array((origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split(), float)
    rpy = np.array((origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split(), float)
    element = joint.find("axis")
    axis = np.array((element.get("xyz") if element is not None else "1 0 0").split(), float)
    return xyz, rpy_matrix(rpy), axis / np.linalg.norm(axis)


def perturb(
    arm: ArmModel,
    seed: int = 0,
    origin_m: float = 0.0015,
    axis_rad: float = math.radians(0.3),
    zero_rad: float = math.radians(1.0),
) -> str:
    """The URDF text of ``arm`` with each chain joint's origin moved by ``origin_m`` (a random
    direction), its axis tilted by ``axis_rad`` (about a random perpendicular) and its zero off
    by ``zero_rad`` (a random sign; revolute joints)."""
    rng = np.random.default_rng(seed)
    root = ET.fromstring(arm.urdf_text)
    joints = {j.get("name"): j for j in root.iter("joint")}
    for name in arm.joint_names:
        joint = joints[name]
        xyz, R, axis = joint_frame(joint)
        u = rng.normal(size=3)
        xyz = xyz + origin_m * u / np.linalg.norm(u)
        v = np.cross(axis, rng.normal(size=3))
        axis = rotation(v, axis_rad) @ axis
        if joint.get("type") != "prismatic":
            R = R @ rotation(axis, zero_rad * rng.choice([-1.0, 1.0]))
        set_joint(joint, xyz, R, axis)
    return ET.tostring(root, encoding="unicode")
