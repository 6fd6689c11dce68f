"""Picking a driver by its kind: the simulated one, or a real arm's from the table of real arms
(arms.py), whose driver modules are imported only when asked for.

driver.py holds the contract the drivers implement; this module sits above them, so that
neither imports the other in a circle.
"""

from __future__ import annotations

from . import arms
from .driver import Driver, tcp_port


def driver_kinds() -> tuple[str, ...]:
    """Every driver kind: the simulated arm's, then each real arm's (the table as it is now)."""
    return ("pybullet", *(entry.driver for entry in arms.arms()))


def __getattr__(name: str):
    if name == "DRIVERS":  # the old name, kept: the kinds as the table has them now
        return driver_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_driver(kind: str, arm, *, host: str = "", port: str = "", calibration: str = "",
                timeout: float = 2.0, **options) -> Driver:
    """The driver called ``kind`` for ``arm``; ``port`` is a TCP port or a serial device."""
    if kind == "pybullet":
        from .pybullet_driver import PyBulletDriver

        return PyBulletDriver(arm, **options)
    try:
        entry = arms.by_driver(kind)
    except arms.UnknownArm:
        raise ValueError(
            f"unknown driver {kind!r}; choose one of {', '.join(driver_kinds())}"
        ) from None
    cls = arms.load_class(entry.driver_class)
    if entry.serial:
        if not port:
            raise ValueError(f"{kind} needs port:= the serial device (e.g. /dev/ttyACM0)")
        return cls(arm, port, calibration or None, timeout=timeout)
    return cls(arm, host or "127.0.0.1", tcp_port(port, entry.default_port), timeout=timeout)
