"""The simulated arm behind the driver contract (driver.py): the arm node drives it exactly as
it drives a real one."""

from __future__ import annotations

import threading
import time

import numpy as np

from .driver import Driver, DriverError
from .pybullet_arm import ArmSim


class PyBulletDriver(Driver):
    """The simulated arm behind the driver contract. Each ``read`` advances the physics by the
    wall-clock time since the last one (at most ``max_lag`` s), so the arm moves in real time at
    whatever rate the bridge reads it."""

    kind = "pybullet"

    def __init__(self, arm, gui: bool = False, time_step: float = 1.0 / 240.0,
                 initial=None, max_lag: float = 0.1):
        super().__init__(arm)
        self.gui, self.time_step, self.initial, self.max_lag = gui, time_step, initial, max_lag
        self.sim: ArmSim | None = None
        self._last = None
        # the bridge's thread steps the physics; closing from another thread must wait for it
        self._lock = threading.RLock()

    def connect(self) -> None:
        with self._lock:
            self._connect(time)

    def _connect(self, clock) -> None:
        if self.sim is None:
            self.sim = ArmSim(self.arm, gui=self.gui, time_step=self.time_step)
            if self.initial is not None and len(self.initial) == self.arm.dof:
                self.sim.set_joints(self.initial)
        self._last = clock.monotonic()

    def _live(self) -> ArmSim:
        if self.sim is None:
            raise DriverError("pybullet: not connected")
        return self.sim

    def read(self) -> np.ndarray:
        with self._lock:
            return self._read()

    def _read(self) -> np.ndarray:
        sim = self._live()
        now = time.monotonic()
        behind = now - self._last
        steps = int(min(behind, self.max_lag) / self.time_step)
        sim.step(steps)
        # a stalled caller does not make the arm race to catch up: time past max_lag is dropped
        self._last = now if behind > self.max_lag else self._last + steps * self.time_step
        return sim.get_joints()

    def velocities(self) -> np.ndarray:
        with self._lock:
            return self._live().get_velocities()

    def write(self, q) -> None:
        with self._lock:
            self._live().command(q)

    def stop(self) -> None:
        with self._lock:
            sim = self._live()
            sim.command(sim.get_joints())

    def close(self) -> None:
        with self._lock:
            if self.sim is not None:
                self.sim.close()
                self.sim = None
