"""The PyBullet arm: the simulator wrapper, kinematic unless asked (hardware/ is pybullet's home).

    with ArmSim("niryo_one") as sim:          # DIRECT (headless) unless gui=True
        sim.set_joints(q)                      # teleport
        pos, quat = sim.end_effector_pose()    # tip in the base frame, quat x y z w
        sim.command(q_goal); sim.step(240)     # position control: the stand-in for hardware
        sim.snapshot("arm.png")

One ``ArmSim`` owns one physics client, so several can live side by side. pybullet_driver.py
puts it behind the driver contract (driver.py), so the arm node drives the simulated arm
exactly as it drives a real one; the emulators (emulators/) move one too. Joints held by a
finite stiffness under gravity (``stiffness=``, ``forward_held``) are soft_joints.py's.
"""

from __future__ import annotations

import tempfile
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pybullet as pb

from ..arm.model import ArmModel
from ..arm.resources import find_mesh
from . import soft_joints


def _loadable_urdf(arm):
    """None when PyBullet can read ``arm.source`` as it is; otherwise a temporary URDF whose mesh
    files point into ``arm.mesh_dirs`` (a model folder carries robot.urdf but not the meshes),
    with the shapes whose mesh is found nowhere left out. Kinematics never need the shapes."""
    root = ET.fromstring(arm.urdf_text)
    meshes = [
        (el, m) for el in root.iter() if el.tag in ("visual", "collision") for m in el.iter("mesh")
    ]
    if Path(arm.source).is_file() and all(
        _as_pybullet_reads(m.get("filename", ""), arm.mesh_dirs[:1]) for _, m in meshes
    ):
        return None
    missing = set()
    for link in root.iter("link"):
        for el in [e for e in link if e.tag in ("visual", "collision")]:
            for m in el.iter("mesh"):
                found = find_mesh(m.get("filename", ""), arm.mesh_dirs)
                if found:
                    m.set("filename", str(found))
                else:
                    link.remove(el)
                    missing.add(link.get("name"))
                    break
    if missing:
        warnings.warn(
            f"{arm.name}: mesh files not found, no shapes for links {sorted(missing)}",
            stacklevel=3,
        )
    tmp = tempfile.NamedTemporaryFile("w", suffix=".urdf", prefix="robot_ik_nn_")
    tmp.write(ET.tostring(root, encoding="unicode"))
    tmp.flush()
    return tmp


def _as_pybullet_reads(filename: str, dirs) -> Path | None:
    """The file PyBullet itself finds for a mesh name (``package://`` dropped, relative to the
    URDF's folder), or None."""
    name = filename.replace("package://", "")
    if Path(name).is_absolute():
        return Path(name) if Path(name).is_file() else None
    for d in dirs:
        if (Path(d) / name).is_file():
            return (Path(d) / name).resolve()
    return None


class ArmSim:
    def __init__(
        self,
        arm: ArmModel | str | Path,
        *,
        gui: bool = False,
        time_step: float = 1.0 / 240.0,
        gravity: float = -9.81,
        base: str | None = None,
        tip: str | None = None,
        stiffness=None,
    ):
        """``stiffness`` (N·m/rad, or N/m for a prismatic joint; one value or one per joint,
        ``inf`` for a rigid joint): the soft-joint physics of :meth:`forward_held`, where each
        joint is held by a finite-stiffness PD torque loop under gravity, so a loaded joint sags
        by its load over its stiffness, as a soft servo does. None: rigid joints only."""
        self.arm = arm if isinstance(arm, ArmModel) else ArmModel.load(arm, base=base, tip=tip)
        self.stiffness = None
        if stiffness is not None:
            k = np.broadcast_to(np.asarray(stiffness, float), (self.arm.dof,)).copy()
            if np.any(np.isnan(k)) or np.any(k <= 0):
                raise ValueError(f"stiffness must be above 0 (inf: rigid); got {k.tolist()}")
            self.stiffness = k
        self.time_step = float(time_step)
        self.client = pb.connect(pb.GUI if gui else pb.DIRECT)
        if self.client < 0:
            raise RuntimeError("PyBullet could not connect (GUI needs a display; use gui=False)")
        self._pb_kwargs = {"physicsClientId": self.client}
        pb.setTimeStep(self.time_step, **self._pb_kwargs)
        pb.setGravity(0, 0, gravity, **self._pb_kwargs)
        self._tmp = _loadable_urdf(self.arm)
        self.body = pb.loadURDF(
            self._tmp.name if self._tmp else self.arm.source,
            useFixedBase=True,
            flags=pb.URDF_USE_INERTIA_FROM_FILE,
            **self._pb_kwargs,
        )
        link_index = {pb.getBodyInfo(self.body, **self._pb_kwargs)[0].decode(): -1}
        joint_index = {}
        for i in range(pb.getNumJoints(self.body, **self._pb_kwargs)):
            info = pb.getJointInfo(self.body, i, **self._pb_kwargs)
            joint_index[info[1].decode()] = i
            link_index[info[12].decode()] = i
        self.joint_indices = [joint_index[name] for name in self.arm.joint_names]
        self.tip_index = link_index[self.arm.tip]
        self.base_index = link_index[self.arm.base]
        self._effort = [j.effort if np.isfinite(j.effort) else 100.0 for j in self.arm.joints]
        self._velocity = [j.velocity if np.isfinite(j.velocity) else 10.0 for j in self.arm.joints]
        self._adjacent = self._adjacent_pairs()
        self.set_joints(np.zeros(self.arm.dof))

    # -- state ---------------------------------------------------------------------------------
    @property
    def joint_names(self) -> list[str]:
        return self.arm.joint_names

    def set_joints(self, q) -> None:
        """Teleport the joints to ``q`` (radians / metres) and hold them there."""
        q = self._check(q)
        for index, value in zip(self.joint_indices, q):
            pb.resetJointState(self.body, index, float(value), 0.0, **self._pb_kwargs)
        self.command(q)

    def get_joints(self) -> np.ndarray:
        states = pb.getJointStates(self.body, self.joint_indices, **self._pb_kwargs)
        return np.array([s[0] for s in states])

    def get_velocities(self) -> np.ndarray:
        states = pb.getJointStates(self.body, self.joint_indices, **self._pb_kwargs)
        return np.array([s[1] for s in states])

    def _link_pose(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if index == -1:
            pos, quat = pb.getBasePositionAndOrientation(self.body, **self._pb_kwargs)
        else:
            state = pb.getLinkState(
                self.body, index, computeForwardKinematics=True, **self._pb_kwargs
            )
            pos, quat = state[4], state[5]  # the link frame itself, not its centre of mass
        return np.array(pos), np.array(quat)

    def end_effector_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Tip position (m) and quaternion (x y z w) in the arm's base frame."""
        pos, quat = self._link_pose(self.tip_index)
        if self.base_index == -1:
            return pos, quat
        base_pos, base_quat = self._link_pose(self.base_index)
        inv_pos, inv_quat = pb.invertTransform(base_pos.tolist(), base_quat.tolist())
        rel_pos, rel_quat = pb.multiplyTransforms(inv_pos, inv_quat, pos.tolist(), quat.tolist())
        return np.array(rel_pos), np.array(rel_quat)

    def forward(self, q) -> tuple[np.ndarray, np.ndarray]:
        """Black-box forward kinematics: teleport to each row of ``q`` (..., dof), read the tip.

        Returns positions (..., 3) and quaternions (..., 4); the arm is left at the last row.
        """
        q = np.asarray(q, dtype=float)
        flat = q.reshape(-1, self.arm.dof)
        pos, quat = np.empty((len(flat), 3)), np.empty((len(flat), 4))
        for k, row in enumerate(flat):
            for index, value in zip(self.joint_indices, row):
                pb.resetJointState(self.body, index, float(value), **self._pb_kwargs)
            pos[k], quat[k] = self.end_effector_pose()
        return pos.reshape(*q.shape[:-1], 3), quat.reshape(*q.shape[:-1], 4)

    # -- soft joints under gravity (opt in: ArmSim(arm, stiffness=...)): soft_joints.py ------
    def gravity_torques(self, q) -> np.ndarray:
        """PyBullet's own holding torques (inverse dynamics at rest) at joints ``q`` (N, dof)."""
        return soft_joints.gravity_torques(self, q)

    def forward_held(
        self, q, seconds: float = 5.0, from_statics: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where the tool settles when each row of ``q`` is commanded and the joints are held
        by their stiffness under gravity: positions, quaternions and the joints the arm took
        (soft_joints.forward_held)."""
        return soft_joints.forward_held(self, q, seconds, from_statics)

    # -- collisions ----------------------------------------------------------------------------
    def _adjacent_pairs(self) -> set[tuple[int, int]]:
        pairs = set()
        for i in range(pb.getNumJoints(self.body, **self._pb_kwargs)):
            parent = pb.getJointInfo(self.body, i, **self._pb_kwargs)[16]
            pairs.add((min(parent, i), max(parent, i)))
        return pairs

    def self_collisions(self, margin: float = 0.0) -> list[tuple[str, str]]:
        """Pairs of non-adjacent links whose collision shapes are closer than ``margin`` (m)."""
        pb.performCollisionDetection(**self._pb_kwargs)
        names = {-1: pb.getBodyInfo(self.body, **self._pb_kwargs)[0].decode()}
        for i in range(pb.getNumJoints(self.body, **self._pb_kwargs)):
            names[i] = pb.getJointInfo(self.body, i, **self._pb_kwargs)[12].decode()
        hits = []
        links = sorted(names)
        for a_pos, a in enumerate(links):
            for b in links[a_pos + 1 :]:
                if (a, b) in self._adjacent:
                    continue
                if pb.getClosestPoints(self.body, self.body, margin, a, b, **self._pb_kwargs):
                    hits.append((names[a], names[b]))
        return hits

    def in_self_collision(self, margin: float = 0.0) -> bool:
        return bool(self.self_collisions(margin))

    # -- position control (the stand-in for real hardware) ---------------------------------------
    def command(self, q) -> None:
        """Set position-control goals; joints move there at most at their velocity limits."""
        q = self._check(q)
        for k, (index, value) in enumerate(zip(self.joint_indices, q)):
            pb.setJointMotorControl2(
                self.body,
                index,
                pb.POSITION_CONTROL,
                targetPosition=float(value),
                force=self._effort[k],
                maxVelocity=self._velocity[k],
                **self._pb_kwargs,
            )

    def step(self, n: int = 1) -> None:
        for _ in range(int(n)):
            pb.stepSimulation(**self._pb_kwargs)

    def settle(self, q, tol: float = 1e-4, seconds: float = 10.0) -> bool:
        """Command ``q`` and step (simulated time, as fast as the CPU goes) until every joint is
        within ``tol`` of it, or ``seconds`` of simulated time pass; whether it got there."""
        q = self._check(q)
        self.command(q)
        for _ in range(int(seconds / self.time_step)):
            self.step()
            if np.max(np.abs(self.get_joints() - q)) <= tol:
                return True
        return False

    # -- pictures ------------------------------------------------------------------------------
    def snapshot(
        self,
        path: str | Path,
        width: int = 640,
        height: int = 480,
        distance: float | None = None,
        yaw: float = 50.0,
        pitch: float = -25.0,
        target=None,
    ) -> Path:
        """Render the arm with the CPU renderer (no display needed) and write a PNG."""
        import matplotlib.image

        reach = self.arm.reach
        target = list(target) if target is not None else [0.0, 0.0, 0.4 * reach]
        view = pb.computeViewMatrixFromYawPitchRoll(
            target, distance or 2.2 * reach, yaw, pitch, 0, 2, **self._pb_kwargs
        )
        proj = pb.computeProjectionMatrixFOV(
            50, width / height, 0.01, 10 * reach, **self._pb_kwargs
        )
        _, _, rgba, _, _ = pb.getCameraImage(
            width, height, view, proj, renderer=pb.ER_TINY_RENDERER, **self._pb_kwargs
        )
        image = np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        matplotlib.image.imsave(path, image)
        return path

    # -- lifetime ------------------------------------------------------------------------------
    def _check(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.shape != (self.arm.dof,):
            raise ValueError(f"{self.arm.name} has {self.arm.dof} joints, got {q.size} values")
        if not np.all(np.isfinite(q)):
            raise ValueError(f"joint values must be finite, got {q.tolist()}")
        return q

    def close(self) -> None:
        if getattr(self, "_tmp", None) is not None:
            self._tmp.close()
            self._tmp = None
        if self.client is not None and self.client >= 0:
            try:
                pb.disconnect(**self._pb_kwargs)
            except pb.error:
                pass
            self.client = None

    def __enter__(self) -> "ArmSim":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
