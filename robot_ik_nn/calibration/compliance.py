"""Joint compliance: what a URDF cannot say about a soft-servo arm, its joints sagging under load.

A joint held by a finite stiffness ``k`` (N·m/rad) settles where its servo's pull balances the
load: ``k (q_cmd - q) + tau(q) = 0``, ``tau`` the gravity torque about the joint at the pose the
arm takes. So with ``c = 1/k`` (rad/N·m, fitted per joint with the geometry):

    effective joints   q = q_cmd + c * tau(q)       (a fixed point, found in a few steps: c dtau/dq
                                                     is of the order of the sag, 1e-2 or less)
    joints to command  q_cmd = q - c * tau(q)       (explicit: the solver answers the effective
                                                     joints on the rigid calibrated arm, then this)

``tau`` comes from the URDF's inertials (each moving link's mass and centre of mass, those fixed
to it merged in) over the nominal chain, plus an optional payload at the tool: the gravity model,
written whole into the calibrated folder (compliance.json) so the served arm is the fitted one,
number for number. numpy and numba; no torch, no rclpy, no pybullet.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from .true_arm import joint_frame

FILE = "compliance.json"
GRAVITY = 9.81


@dataclass
class Gravity:
    """Where the chain's masses are: per movable joint its fixed transform (4x4, the origin and
    any fixed joints before it), axis, type, and the mass (kg) and centre of mass (in the frame
    after the joint's motion) of everything that moves with it and not with the next joint."""

    origins: np.ndarray  # (n, 4, 4)
    axes: np.ndarray  # (n, 3)
    prismatic: np.ndarray  # (n,) float 0/1
    mass: np.ndarray  # (n,)
    com: np.ndarray  # (n, 3)
    g: np.ndarray  # (3,) gravity in the base frame (m/s^2)

    def to_dict(self) -> dict:
        return {k: np.asarray(v).tolist() for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Gravity":
        return cls(**{k: np.asarray(d[k], float) for k in cls.__dataclass_fields__})


def gravity_model(arm, payload_kg: float = 0.0, payload_xyz=(0.0, 0.0, 0.0)) -> Gravity:
    """The gravity model of ``arm`` (an ArmModel) from its URDF; ``payload_kg`` at
    ``payload_xyz`` in the tool frame (a gripper, a held part)."""
    from .chain import chain_of

    with np.errstate(invalid="ignore"):  # a fixed joint's axis may be 0 0 0
        chain, _ = chain_of(arm)
    root = ET.fromstring(arm.urdf_text)
    joints = list(root.iter("joint"))
    by_child = {j.find("child").get("link"): j for j in joints}
    children: dict = {}
    for j in joints:
        children.setdefault(j.find("parent").get("link"), []).append(j)
    inertial = {link.get("name"): _inertial(link) for link in root.iter("link")}
    names = arm.joint_names
    by_name = {j.get("name"): j for j in joints}
    n = len(names)
    mass, com = np.zeros(n), np.zeros((n, 3))
    for k, name in enumerate(names):
        stack = [(by_name[name].find("child").get("link"), np.eye(4))]
        while stack:  # everything rigidly (or off the chain, at zero) after joint k
            link, T = stack.pop()
            m, c = inertial.get(link, (0.0, np.zeros(3)))
            if m > 0:
                com[k] = (mass[k] * com[k] + m * (T[:3, :3] @ c + T[:3, 3])) / (mass[k] + m)
                mass[k] += m
            for j in children.get(link, []):
                if j.get("name") in names:
                    continue
                with np.errstate(invalid="ignore"):  # a fixed joint's axis may be 0 0 0
                    xyz, R, _ = joint_frame(j)
                M = np.eye(4)
                M[:3, :3], M[:3, 3] = R, xyz
                stack.append((j.find("child").get("link"), T @ M))
    if payload_kg > 0:
        tip = chain.tip_before
        if chain.tip_joint is not None:
            tip = tip @ chain.tip_joint @ chain.tip_after
        p = tip[:3, :3] @ np.asarray(payload_xyz, float) + tip[:3, 3]
        com[-1] = (mass[-1] * com[-1] + payload_kg * p) / (mass[-1] + payload_kg)
        mass[-1] += payload_kg
    origins = np.array(
        [chain.pre[k] @ _matrix(chain.xyz[k], chain.R[k]) for k in range(n)]
    )
    up = np.eye(3)  # the base frame as the URDF's root sees it (gravity is along the root's -z)
    link = arm.base
    while link in by_child:
        with np.errstate(invalid="ignore"):
            up = joint_frame(by_child[link])[1] @ up
        link = by_child[link].find("parent").get("link")
    g = up.T @ np.array([0.0, 0.0, -GRAVITY])
    return Gravity(origins, chain.axis.copy(), chain.prismatic.astype(float), mass, com, g)


def _inertial(link) -> tuple[float, np.ndarray]:
    el = link.find("inertial")
    if el is None or el.find("mass") is None:
        return 0.0, np.zeros(3)
    origin = el.find("origin")
    xyz = np.array((origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split(), float)
    return float(el.find("mass").get("value")), xyz


def _matrix(xyz, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, xyz
    return T


@njit(cache=True)
def _torques(origins, axes, prismatic, mass, com, g, q, out):
    """Gravity's torque (force, for a prismatic joint) about each joint, per row of ``q``:
    scalar loops, nothing allocated per row."""
    n = q.shape[1]
    z = np.empty((n, 3))
    o = np.empty((n, 3))
    c = np.empty((n, 3))
    T = np.empty((4, 4))
    A = np.empty((4, 4))
    M = np.empty((3, 3))
    for b in range(q.shape[0]):
        for r in range(4):
            for s in range(4):
                T[r, s] = 1.0 if r == s else 0.0
        for k in range(n):
            for r in range(4):  # T = T @ origins[k]
                for s in range(4):
                    A[r, s] = (
                        T[r, 0] * origins[k, 0, s]
                        + T[r, 1] * origins[k, 1, s]
                        + T[r, 2] * origins[k, 2, s]
                        + T[r, 3] * origins[k, 3, s]
                    )
            T[:, :] = A
            for r in range(3):
                z[k, r] = T[r, 0] * axes[k, 0] + T[r, 1] * axes[k, 1] + T[r, 2] * axes[k, 2]
                o[k, r] = T[r, 3]
            x, y, w = axes[k, 0], axes[k, 1], axes[k, 2]
            if prismatic[k] > 0.5:
                for r in range(3):
                    T[r, 3] += q[b, k] * z[k, r]
            else:  # Rodrigues about the local axis, then T[:3, :3] = T[:3, :3] @ M
                sn, v = np.sin(q[b, k]), 1.0 - np.cos(q[b, k])
                M[0, 0] = 1.0 - v * (y * y + w * w)
                M[0, 1] = -sn * w + v * x * y
                M[0, 2] = sn * y + v * x * w
                M[1, 0] = sn * w + v * x * y
                M[1, 1] = 1.0 - v * (x * x + w * w)
                M[1, 2] = -sn * x + v * y * w
                M[2, 0] = -sn * y + v * x * w
                M[2, 1] = sn * x + v * y * w
                M[2, 2] = 1.0 - v * (x * x + y * y)
                for r in range(3):
                    a0, a1, a2 = T[r, 0], T[r, 1], T[r, 2]
                    for s in range(3):
                        T[r, s] = a0 * M[0, s] + a1 * M[1, s] + a2 * M[2, s]
            for r in range(3):
                c[k, r] = T[r, 0] * com[k, 0] + T[r, 1] * com[k, 1] + T[r, 2] * com[k, 2] + T[r, 3]
        for k in range(n):
            total = 0.0
            for i in range(k, n):
                f0, f1, f2 = mass[i] * g[0], mass[i] * g[1], mass[i] * g[2]
                if prismatic[k] > 0.5:
                    total += z[k, 0] * f0 + z[k, 1] * f1 + z[k, 2] * f2
                else:
                    r0, r1, r2 = c[i, 0] - o[k, 0], c[i, 1] - o[k, 1], c[i, 2] - o[k, 2]
                    t0, t1, t2 = r1 * f2 - r2 * f1, r2 * f0 - r0 * f2, r0 * f1 - r1 * f0
                    total += z[k, 0] * t0 + z[k, 1] * t1 + z[k, 2] * t2
            out[b, k] = total


def torques(model: Gravity, q) -> np.ndarray:
    """Gravity's torque about each joint (N·m; N for a prismatic one) at joints ``q`` (N, n)."""
    q = np.ascontiguousarray(np.atleast_2d(np.asarray(q, float)))
    out = np.empty_like(q)
    _torques(
        model.origins, model.axes, model.prismatic, model.mass, model.com, model.g, q, out
    )
    return out


@dataclass
class Compliance:
    """Per joint compliance ``c`` (rad/N·m) over a gravity model: the map between the joints
    commanded and the joints the arm takes."""

    gravity: Gravity
    c: np.ndarray  # (n,)

    def effective(self, q_cmd, tol: float = 1e-13, steps: int = 30) -> np.ndarray:
        """The joints the arm settles at when commanded ``q_cmd`` (..., n)."""
        q_cmd = np.asarray(q_cmd, float)
        flat = q_cmd.reshape(-1, len(self.c))
        q = flat.copy()
        for _ in range(steps):
            new = flat + self.c * torques(self.gravity, q)
            done = np.nanmax(np.abs(new - q), initial=0.0) <= tol
            q = new
            if done:
                break
        return q.reshape(q_cmd.shape)

    def command(self, q_eff) -> np.ndarray:
        """The joints to command for the arm to take ``q_eff`` (..., n)."""
        q_eff = np.asarray(q_eff, float)
        flat = np.ascontiguousarray(q_eff.reshape(-1, len(self.c)))
        tau = np.empty_like(flat)
        g = self.gravity
        _torques(g.origins, g.axes, g.prismatic, g.mass, g.com, g.g, flat, tau)
        return (flat - self.c * tau).reshape(q_eff.shape)

    def to_dict(self, names=(), sigma=None) -> dict:
        out = {"c_rad_per_Nm": self.c.tolist(), "gravity_model": self.gravity.to_dict()}
        if names:
            out["joints"] = list(names)
        if sigma is not None:
            out["sigma_rad_per_Nm"] = np.asarray(sigma, float).tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Compliance":
        return cls(Gravity.from_dict(d["gravity_model"]), np.asarray(d["c_rad_per_Nm"], float))


def read(folder) -> Compliance | None:
    """The compliance a calibrated model folder serves, or None (a rigid arm)."""
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    return Compliance.from_dict(json.loads(path.read_text()))


__all__ = ["Compliance", "Gravity", "gravity_model", "torques", "read"]
