"""The simulated arm when it is not the model's: the driver moves a "true" arm (another URDF
than the model's, calibration/true_arm.py; with physics options when ArmSim takes them) while
the bridge above it keeps the model's joint names and limits, as with a real arm whose URDF is
a little wrong. ``tool_pose`` is where PyBullet puts the true tool: what a tracker sees."""

from __future__ import annotations

import inspect
import time

import numpy as np

from ..arm.model import ArmModel
from .driver import DriverError
from .pybullet_arm import ArmSim, PyBulletDriver


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

    def describe(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.sim_options.items())
        return f"pybullet (true arm {self.sim_arm.source}{extra})"
