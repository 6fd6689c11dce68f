"""The established solvers, driven the same way as ours: one target at a time, one thread, restarts
inside the same time budget per target. Each answer is judged later by the package's own
forward kinematics (bench.judge), never by the peer's own success flag.

- TRAC-IK (``pytracik``): its limits are set again from the URDF after construction (it reads
  them as float32, and as zeros beside ``<safety_controller>``); the timeout is the budget.
- roboticstoolbox-python's ``ik_LM`` (C++): ``tol`` bounds 1/2 |e|^2, so the default 1e-6 lets
  answers 1.4 mm off count as success; here 5e-11 (|e| < 1e-5). It has no timeout: searches of
  ``ilimit`` iterations run from the mid-range joints, then from random joints, until one
  succeeds or the budget is spent.
- PyBullet's ``calculateInverseKinematics``: called again from its last answer until the pose is
  within tolerance or the budget is spent.

Peers are optional (``pip install .[peers]``): a missing one is skipped with a note.
"""

from __future__ import annotations

import io
import time
import xml.etree.ElementTree as ET

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from ..ik.settings import IKSettings
from ..ik.verdicts import reached_all

PEERS = ("trac_ik", "rtb_ik_lm", "pybullet_ik")


def _without_shapes(urdf_text: str) -> str:
    """The URDF without visual and collision shapes (mesh paths that a peer cannot resolve) and
    without inertials (kinematics needs none; KDL warns about a root link that has one)."""
    root = ET.fromstring(urdf_text)
    for link in root.iter("link"):
        for tag in ("visual", "collision", "inertial"):
            for el in link.findall(tag):
                link.remove(el)
    return ET.tostring(root, encoding="unicode")


class TracIK:
    name = "TRAC-IK (pytracik)"

    def __init__(self, arm, budget_s: float, eps: float = 1e-5):
        import pytracik

        self._ik = pytracik.ik
        self.solver = pytracik.TRAC_IK(
            arm.base,
            arm.tip,
            _without_shapes(arm.urdf_text),
            float(budget_s),
            float(eps),
            pytracik.SolveType.Speed,
        )
        if pytracik.get_num_joints(self.solver) != arm.dof:
            raise RuntimeError(
                f"TRAC-IK sees {pytracik.get_num_joints(self.solver)} joints, not {arm.dof}"
            )
        pytracik.set_joint_limits(self.solver, arm.lower.tolist(), arm.upper.tolist())
        self.seed = arm.mid_range.tolist()

    def solve(self, pos, quat, R):
        x, y, z = pos.tolist()
        qx, qy, qz, qw = quat.tolist()
        out = self._ik(self.solver, self.seed, x, y, z, qx, qy, qz, qw)
        return np.asarray(out[1:], dtype=float) if out[0] >= 0 else None


class RtbLM:
    name = "roboticstoolbox ik_LM (C++)"

    def __init__(
        self, arm, budget_s: float, tol: float = 5e-11, ilimit: int = 30, rng_seed: int = 0
    ):
        import roboticstoolbox as rtb
        from roboticstoolbox.models.URDF.URDFRobot import URDF_file

        links, name, _ = URDF_file(io.StringIO(_without_shapes(arm.urdf_text)))
        self.ets = rtb.Robot(links, name=name).ets(start=arm.base, end=arm.tip)
        if self.ets.n != arm.dof:
            raise RuntimeError(f"roboticstoolbox sees {self.ets.n} joints, not {arm.dof}")
        self.budget, self.tol, self.ilimit = budget_s, tol, ilimit
        self.lower, self.upper, self.mid = arm.lower, arm.upper, arm.mid_range
        self.rng = np.random.default_rng(rng_seed)
        self.T = np.eye(4)

    def solve(self, pos, quat, R):
        self.T[:3, :3], self.T[:3, 3] = R, pos
        started, q0 = time.perf_counter(), self.mid
        while True:
            sol = self.ets.ik_LM(
                self.T, q0=q0, ilimit=self.ilimit, slimit=1, tol=self.tol, joint_limits=True
            )
            if sol.success:
                return np.asarray(sol.q, dtype=float)
            if time.perf_counter() - started >= self.budget:
                return None
            q0 = self.lower + self.rng.random(len(self.lower)) * (self.upper - self.lower)


class PyBulletIK:
    name = "PyBullet calculateInverseKinematics"

    def __init__(
        self,
        arm,
        budget_s: float,
        pos_tol: float = IKSettings.pos_tol,
        rot_tol: float = IKSettings.rot_tol,
    ):
        import pybullet as pb

        from ..hardware.pybullet_arm import ArmSim

        self.pb, self.arm, self.budget = pb, arm, budget_s
        self.sim = ArmSim(arm)
        self.client, self.body, self.tip = self.sim.client, self.sim.body, self.sim.tip_index
        movable = [
            i
            for i in range(pb.getNumJoints(self.body, physicsClientId=self.client))
            if pb.getJointInfo(self.body, i, physicsClientId=self.client)[2] != pb.JOINT_FIXED
        ]
        self.movable = movable
        self.column = [movable.index(i) for i in self.sim.joint_indices]
        self.pos_tol, self.rot_tol = pos_tol, rot_tol

    def solve(self, pos, quat, R):
        pb = self.pb
        self.sim.set_joints(self.arm.mid_range)
        started = time.perf_counter()
        while True:
            out = pb.calculateInverseKinematics(
                self.body,
                self.tip,
                pos.tolist(),
                quat.tolist(),
                maxNumIterations=100,
                residualThreshold=1e-6,
                physicsClientId=self.client,
            )
            q = np.asarray(out, dtype=float)[self.column]
            if time.perf_counter() - started >= self.budget:
                return q
            for i, v in zip(self.movable, out):
                pb.resetJointState(self.body, i, v, physicsClientId=self.client)
            state = pb.getLinkState(
                self.body, self.tip, computeForwardKinematics=True, physicsClientId=self.client
            )
            reached = np.asarray(state[4])
            turn = matrix_to_quaternion(R) @ np.asarray(state[5])
            pe, re = np.linalg.norm(reached - pos), 2 * np.arccos(min(1.0, abs(turn)))
            if reached_all(pe, re, self.pos_tol, self.rot_tol):
                return q

    def close(self):
        self.sim.close()


def make(name: str, arm, budget_s: float):
    """A peer by name, or a note on why it cannot run here."""
    kinds = {
        "trac_ik": (TracIK, "pytracik"),
        "rtb_ik_lm": (RtbLM, "roboticstoolbox-python"),
        "pybullet_ik": (PyBulletIK, "pybullet"),
    }
    cls, package = kinds[name]
    try:
        return cls(arm, budget_s), ""
    except ImportError as err:
        return None, f"skipped: {package} is not installed ({err}); pip install .[peers]"
    except Exception as err:  # noqa: BLE001 - a peer that cannot take this arm is a finding, not a crash
        return None, f"skipped: {cls.name} cannot load {arm.name}: {err}"
