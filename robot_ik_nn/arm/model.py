"""The arm model: one serial chain read from a URDF, the single source of truth for joints.

    arm = ArmModel.load("niryo_one")                      # a built-in arm
    arm = ArmModel.load("panda.urdf", tip="panda_hand")   # any URDF, explicit tip

Fixed joints between two movable joints are folded into the next joint's origin, so the chain
is ``origin_0, joint_0, origin_1, joint_1, ..., joint_{n-1}, tip_offset``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .resources import BUILTIN_ROBOTS, NAMED_ROBOTS, PYBULLET_ROBOTS, urdf_path

MOVABLE = ("revolute", "continuous", "prismatic")
SUPPORTED = MOVABLE + ("fixed",)


class RobotModelError(ValueError):
    """A URDF or chain choice the package cannot use; the message names the problem."""


@dataclass(frozen=True)
class Joint:
    name: str
    type: str  # revolute | continuous | prismatic
    axis: np.ndarray  # unit vector in the joint's own frame
    origin: np.ndarray  # 4x4, previous movable joint's frame (or base) -> this joint's frame
    lower: float
    upper: float
    velocity: float  # rad/s or m/s; inf when the URDF gives none
    effort: float
    child: str

    @property
    def is_continuous(self) -> bool:
        return self.type == "continuous"


def _unit(v, where: str) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    if not np.isfinite(n) or n < 1e-12:
        raise RobotModelError(f"{where} has a zero or invalid axis {v.tolist()}")
    return v / n


def _decoded(data: bytes, path) -> str:
    """A URDF's text in the encoding its XML declaration names (UTF-8 without one)."""
    declared = re.match(rb"\s*<\?xml[^>]*encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']", data)
    codec = declared.group(1).decode() if declared else "utf-8"
    try:
        return data.decode("utf-8-sig" if codec.lower() in ("utf-8", "utf8") else codec)
    except (LookupError, UnicodeDecodeError) as err:
        raise RobotModelError(f"cannot read URDF {path} as {codec}: {err}") from err


def resolve_robot(robot: str | Path) -> tuple[Path, str | None]:
    """A built-in arm name or a URDF path -> (path, default tip or None)."""
    text = str(robot)
    if text in BUILTIN_ROBOTS:
        return urdf_path(text), None
    if text in PYBULLET_ROBOTS:
        from .resources import pybullet_data_path

        data = pybullet_data_path()
        if data is None:
            raise RobotModelError(f"{text} comes from pybullet_data, which is not installed")
        relative, tip = PYBULLET_ROBOTS[text]
        return data / relative, tip
    path = Path(text).expanduser()
    if not path.is_file():
        raise RobotModelError(
            f"URDF file not found: {path} (named arms: {', '.join(NAMED_ROBOTS)})"
        )
    return path, None


def _parse(text: str, source: str):
    import urchin  # heavy import, kept out of module import time

    from .vendor import VendorFileError, kinematic_only

    try:
        text = kinematic_only(text, source)
    except VendorFileError as err:
        raise RobotModelError(str(err)) from err
    _limits_named(text, source)
    buffer = io.BytesIO(text.encode())
    buffer.name = source  # urchin resolves mesh paths relative to this
    try:
        return urchin.URDF.load(buffer, lazy_load_meshes=True), text
    except Exception as err:  # lxml or urchin: both mean the file is unusable
        raise RobotModelError(f"malformed URDF {source}: {err}") from err


def _limits_named(text: str, source: str) -> None:
    """A revolute or prismatic joint without ``<limit>``, named (urchin's own words do not)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return  # malformed XML: urchin's message says where
    for joint in root.iter("joint"):
        kind = joint.get("type")
        if kind in ("revolute", "prismatic") and joint.find("limit") is None:
            raise RobotModelError(
                f"{source}: joint '{joint.get('name')}' is {kind} but has no <limit> "
                "(lower, upper, effort, velocity); a continuous joint needs none"
            )


class ArmModel:
    """Joint names, axes, limits and the geometry of the chain from ``base`` to ``tip``."""

    def __init__(
        self,
        urdf_text: str,
        *,
        source: str = "<string>",
        base: str | None = None,
        tip: str | None = None,
        name: str | None = None,
    ):
        robot, urdf_text = _parse(urdf_text, source)
        self.urdf_text = urdf_text  # what the chain needs of the file (arm/vendor.py)
        self.source = source
        # where mesh files named relative to the URDF are looked for (a model folder adds the
        # folder of the URDF it was trained from)
        self.mesh_dirs = [str(Path(source).resolve().parent)] if Path(source).is_file() else []
        self.name = name or robot.name
        links = {link.name for link in robot.links}
        by_child = {j.child: j for j in robot.joints}
        children: dict[str, list] = {}
        for j in robot.joints:
            children.setdefault(j.parent, []).append(j)

        root = robot.base_link.name
        self.base = base or root
        for role, link in (("base", self.base), ("tip", tip)):
            if link is not None and link not in links:
                raise RobotModelError(
                    f"unknown {role} link '{link}' in {self.name}; links are: "
                    f"{', '.join(sorted(links))}"
                )
        self.tip = tip or self._unique_leaf(self.base, children)

        path = []  # joints from base down to tip
        link = self.tip
        while link != self.base:
            if link not in by_child:
                raise RobotModelError(
                    f"tip link '{self.tip}' is not below base link '{self.base}' in {self.name}"
                )
            path.append(by_child[link])
            link = by_child[link].parent
        path.reverse()

        joints, pending = [], np.eye(4)
        for j in path:
            if j.joint_type not in SUPPORTED:
                raise RobotModelError(
                    f"joint '{j.name}' is of type '{j.joint_type}'; supported types are "
                    f"{', '.join(SUPPORTED)}"
                )
            if j.mimic is not None and j.joint_type != "fixed":
                raise RobotModelError(
                    f"joint '{j.name}' mimics another joint; mimic joints are not supported"
                )
            pending = pending @ np.asarray(j.origin, dtype=float)
            if j.joint_type == "fixed":
                continue
            joints.append(self._joint(j, pending))
            pending = np.eye(4)
        if not joints:
            raise RobotModelError(f"the chain {self.base} -> {self.tip} has no movable joint")
        self.joints: tuple[Joint, ...] = tuple(joints)
        self.tip_offset = pending

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def load(
        cls, robot: str | Path, *, base: str | None = None, tip: str | None = None
    ) -> "ArmModel":
        path, default_tip = resolve_robot(robot)
        try:
            text = _decoded(Path(path).read_bytes(), path)
        except OSError as err:
            raise RobotModelError(f"cannot read URDF {path}: {err}") from err
        name = str(robot) if str(robot) in NAMED_ROBOTS else None
        return cls(text, source=str(path), base=base, tip=tip or default_tip, name=name)

    def _unique_leaf(self, base: str, children: dict) -> str:
        link = base
        while children.get(link):
            kids = children[link]
            if len(kids) > 1:
                leaves = sorted(self._leaves(link, children))
                raise RobotModelError(
                    f"the tree of {self.name} branches at '{link}' into leaves "
                    f"{', '.join(leaves)}; "
                    f"choose one with tip=... (--tip)"
                )
            link = kids[0].child
        return link

    def _leaves(self, link: str, children: dict) -> list[str]:
        if not children.get(link):
            return [link]
        return [leaf for j in children[link] for leaf in self._leaves(j.child, children)]

    @staticmethod
    def _joint(j, origin: np.ndarray) -> Joint:
        axis = _unit(j.axis if j.axis is not None else (1, 0, 0), f"joint '{j.name}'")
        if j.joint_type == "continuous":
            lower, upper = -math.pi, math.pi
        elif j.limit is None or j.limit.lower is None or j.limit.upper is None:
            raise RobotModelError(f"joint '{j.name}' ({j.joint_type}) has no <limit lower upper>")
        else:
            lower, upper = float(j.limit.lower), float(j.limit.upper)
        if not lower < upper:
            raise RobotModelError(
                f"joint '{j.name}' has an empty range: lower {lower} >= upper {upper}"
            )
        velocity = (
            float(j.limit.velocity) if j.limit is not None and j.limit.velocity else math.inf
        )
        effort = float(j.limit.effort) if j.limit is not None and j.limit.effort else math.inf
        return Joint(
            j.name, j.joint_type, axis, origin.copy(), lower, upper, velocity, effort, j.child
        )

    # -- what everything else asks -----------------------------------------------------------
    @cached_property
    def dof(self) -> int:
        return len(self.joints)

    @cached_property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @cached_property
    def lower(self) -> np.ndarray:
        return np.array([j.lower for j in self.joints])

    @cached_property
    def upper(self) -> np.ndarray:
        return np.array([j.upper for j in self.joints])

    @cached_property
    def velocity_limits(self) -> np.ndarray:
        return np.array([j.velocity for j in self.joints])

    @cached_property
    def axes(self) -> np.ndarray:
        return np.stack([j.axis for j in self.joints])

    @cached_property
    def continuous(self) -> np.ndarray:
        return np.array([j.is_continuous for j in self.joints])

    @cached_property
    def mid_range(self) -> np.ndarray:
        """The middle of every joint's range (0 for continuous joints): the neutral pose."""
        return np.where(self.continuous, 0.0, (self.lower + self.upper) / 2)

    @cached_property
    def reach(self) -> float:
        """An upper bound on the tip's distance from the first joint's origin (metres)."""
        total = sum(float(np.linalg.norm(j.origin[:3, 3])) for j in self.joints[1:])
        total += float(np.linalg.norm(self.tip_offset[:3, 3]))
        total += sum(max(abs(j.lower), abs(j.upper)) for j in self.joints if j.type == "prismatic")
        return total

    def within_limits(self, q: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Boolean per row of ``q`` (..., dof): every joint inside its limits (continuous: any)."""
        q = np.asarray(q, dtype=float)
        ok = (q >= self.lower - tol) & (q <= self.upper + tol) | self.continuous
        return np.all(ok & np.isfinite(q), axis=-1)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over base, tip, the ordered joints (names, types, axes, limits, velocity
        limits, origins) and the tip offset. Two arms with the same fingerprint have the same
        kinematics; a network trained on one is valid on the other."""
        return self._digest(limits=True)

    @cached_property
    def geometry_fingerprint(self) -> str:
        """The fingerprint without the limits: the same chain, whatever range its joints are
        allowed (networks of one arm in different environments share it; merge.py)."""
        return self._digest(limits=False)

    def _digest(self, limits: bool) -> str:
        def r(x):
            return [float(f"{v:.9g}") for v in np.asarray(x, dtype=float).ravel()]

        def joint(j):
            row = [j.name, j.type, r(j.axis), r(j.origin)]
            if limits:
                row += [
                    r([j.lower, j.upper]),
                    r([j.velocity]) if math.isfinite(j.velocity) else "inf",
                ]
            return row

        blob = {
            "base": self.base,
            "tip": self.tip,
            "joints": [joint(j) for j in self.joints],
            "tip_offset": r(self.tip_offset),
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()

    def with_limits(self, lower, upper) -> "ArmModel":
        """This arm with other joint ranges (continuous joints stay continuous): its URDF is
        rewritten, so a model folder saved from it carries the new limits."""
        import xml.etree.ElementTree as ET

        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        if lower.shape != (self.dof,) or upper.shape != (self.dof,):
            raise RobotModelError(f"with_limits needs {self.dof} lower and upper values")
        root = ET.fromstring(self.urdf_text)
        by_name = {j.get("name"): j for j in root.iter("joint")}
        for j, lo, hi in zip(self.joints, lower, upper):
            if j.is_continuous:
                continue
            if not lo < hi:
                raise RobotModelError(f"joint '{j.name}' would get an empty range [{lo}, {hi}]")
            limit = by_name[j.name].find("limit")
            limit.set("lower", repr(float(lo)))
            limit.set("upper", repr(float(hi)))
        arm = ArmModel(
            ET.tostring(root, encoding="unicode"),
            source=self.source,
            base=self.base,
            tip=self.tip,
            name=self.name,
        )
        arm.mesh_dirs = list(self.mesh_dirs)
        return arm

    def describe(self) -> dict:
        """What a model folder records about the arm it was trained on."""
        return {
            "robot": self.name,
            "base": self.base,
            "tip": self.tip,
            "fingerprint": self.fingerprint,
            "geometry_fingerprint": self.geometry_fingerprint,
            "joint_names": self.joint_names,
            "joint_types": [j.type for j in self.joints],
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "velocity_limits": [
                v if math.isfinite(v) else None for v in self.velocity_limits.tolist()
            ],
            "urdf_source": str(Path(self.source).resolve())
            if Path(self.source).is_file()
            else self.source,
        }

    def __repr__(self) -> str:
        return f"ArmModel({self.name!r}, {self.base} -> {self.tip}, {self.dof} joints)"
