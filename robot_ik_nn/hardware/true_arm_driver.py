"""The simulated arm when it is not the model's: the driver moves a "true" arm (another URDF
than the model's, calibration/true_arm.py) while the bridge above it keeps the model's joint
names and limits, as with a real arm whose URDF is a little wrong. ``tool_pose`` is where
PyBullet puts the true tool: what a tracker sees.

With ``stiffness`` (N·m/rad; ArmSim's soft joints) the joints are soft servos, live: a joint
held at goal ``g`` settles where its spring balances gravity, ``q = g - tau(q) / K`` (tau:
PyBullet's own holding torques at ``q``), while its encoder, on the motor's side of the spring,
reads ``q + tau(q) / K``, the goal. So the joints read back are the ones commanded and the tool
sags by what the load bends: the pose-dependent error a calibration must learn. The goal given
to PyBullet's position control is that balance point (a few fixed-point rounds), so the physics
stays the stable one of a rigid arm while the arm ends where a soft one would.
"""

from __future__ import annotations

import inspect
import time

import numpy as np

from ..arm.model import ArmModel
from .driver import DriverError
from .pybullet_arm import ArmSim
from .pybullet_driver import PyBulletDriver


def sim_options_known() -> set[str]:
    """The keyword options this ArmSim takes beyond the URDF (gui, time_step, stiffness...)."""
    return set(inspect.signature(ArmSim.__init__).parameters) - {"self", "arm"}


class TrueArmDriver(PyBulletDriver):
    kind = "pybullet"

    def __init__(self, arm: ArmModel, sim_arm: ArmModel, sim_options: dict | None = None,
                 **kwargs):
        super().__init__(arm, **kwargs)
        if list(sim_arm.joint_names) != list(arm.joint_names):
            raise ValueError(
                f"sim_urdf's joints {sim_arm.joint_names} are not the model's "
                f"{arm.joint_names}: the simulated arm must be the same arm, a little off"
            )
        options = dict(sim_options or {})
        unknown = sorted(set(options) - sim_options_known())
        if unknown:
            raise ValueError(f"the PyBullet arm here takes no option(s) {', '.join(unknown)}")
        self.sim_arm, self.sim_options = sim_arm, options

    def _connect(self, clock) -> None:
        if self.sim is None:
            self.sim = ArmSim(self.sim_arm, gui=self.gui, time_step=self.time_step,
                              **self.sim_options)
            if self.initial is not None and len(self.initial) == self.arm.dof:
                self.sim.set_joints(self.initial)
        self._last = clock.monotonic()

    def tool_pose(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The true tool's position and quaternion (x y z w) in the base frame, and when
        (time.monotonic) the physics was there; None while not connected."""
        with self._lock:
            if self.sim is None:
                return None
            try:
                p, q = self.sim.end_effector_pose()
            except Exception as err:  # noqa: BLE001 - pybullet's error: the link is gone
                raise DriverError(f"pybullet: {err}") from None
            return p, q, time.monotonic()

    # -- soft joints (stiffness): a spring between the motor and the link ------------------------
    def _bend(self, q) -> np.ndarray:
        """How far the load bends each joint at link angles ``q``: tau(q) / K."""
        return self.sim.gravity_torques(q)[0] / self.sim.stiffness

    def write(self, q) -> None:
        with self._lock:
            sim = self._live()
            if getattr(sim, "stiffness", None) is None:
                return sim.command(q)
            goal = np.asarray(q, float)
            link = goal.copy()
            for _ in range(3):  # q = g - tau(q) / K, by fixed-point rounds
                link = goal - self._bend(link)
            sim.command(np.clip(link, self.arm.lower - 0.1, self.arm.upper + 0.1))

    def _read(self) -> np.ndarray:
        q = super()._read()
        sim = self._live()
        return q if getattr(sim, "stiffness", None) is None else q + self._bend(q)

    def describe(self) -> str:
        extra = "".join(f", {k} {v}" for k, v in self.sim_options.items())
        return f"pybullet (true arm {self.sim_arm.source}{extra})"
