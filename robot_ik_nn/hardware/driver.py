"""The driver contract every arm implements, simulated or real (as ros2_control's hardware
interfaces do): the bridge above it never knows which arm is behind it.

    driver = make_driver("niryo_one_tcp", arm, host="10.10.10.10")   # hardware/drivers.py
    driver.connect()                 # raises DriverError when the arm cannot be reached
    q = driver.read()                # joint positions (rad / m) in the arm model's joint order
    driver.write(q_goal)             # one joint goal; returns once the arm has taken it
    driver.stop()                    # halt where it is
    driver.close()

Every failure of the link or of a reply (lost connection, timeout, garbage, a wrong count, NaN,
a value far outside the limits) raises :class:`DriverError`: the bridge then holds, reports and
reconnects. Nothing a driver reads is trusted before :func:`checked_joints` has seen it.
"""

from __future__ import annotations

import numpy as np

# a reading this far outside a joint's limits is a broken reply, not an arm past its limit
READ_SLACK = 0.2


class DriverError(RuntimeError):
    """The link to the arm is lost (or never came up): the bridge closes it and reconnects."""


class BadReply(DriverError):
    """A reply that cannot be trusted (garbage, a wrong count, NaN) on a link that is still in
    step: the bridge holds, reports it and asks again next period."""


class Driver:
    """Base class: ``arm`` is the ArmModel whose joint order every read and write uses."""

    kind = "base"

    def __init__(self, arm):
        self.arm = arm

    def connect(self) -> None:
        raise NotImplementedError

    def read(self) -> np.ndarray:
        raise NotImplementedError

    def write(self, q) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Halt where the arm is now: by default, a goal at the joints just read."""
        self.write(self.read())

    def close(self) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        return self.kind


def checked_joints(values, arm, what: str = "reply") -> np.ndarray:
    """``values`` as joint positions of ``arm``, or DriverError naming what is wrong with them."""
    try:
        q = np.array([float(v) for v in values], dtype=float)
    except (TypeError, ValueError) as exc:
        raise BadReply(f"{what}: joint values are not numbers ({exc})") from None
    if q.shape != (arm.dof,):
        raise BadReply(f"{what}: {q.size} joint values for {arm.dof} joints")
    if not np.all(np.isfinite(q)):
        raise BadReply(f"{what}: non-finite joint values {q.tolist()}")
    outside = (q < arm.lower - READ_SLACK) | (q > arm.upper + READ_SLACK)
    if np.any(outside):
        names = [n for n, o in zip(arm.joint_names, outside) if o]
        raise BadReply(f"{what}: joints {names} far outside their limits: {q.tolist()}")
    return q


def tcp_port(text, default: int = 40001) -> int:
    """A TCP port from a parameter or an argument (empty: ``default``), or why it is none."""
    try:
        port = int(text) if str(text).strip() else default
    except ValueError:
        raise ValueError(f"port {text!r} is not a TCP port number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is not a TCP port (0 to 65535)")
    return port
