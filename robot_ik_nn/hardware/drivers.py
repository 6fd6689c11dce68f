"""Picking a driver by its kind: the one place that knows every driver module.

driver.py holds the contract the drivers implement; this module sits above them, so that
neither imports the other in a circle.
"""

from __future__ import annotations

from .driver import Driver, tcp_port

DRIVERS = ("pybullet", "niryo_one_tcp", "niryo_ned", "inmoov_serial")


def make_driver(kind: str, arm, *, host: str = "", port: str = "", calibration: str = "",
                timeout: float = 2.0, **options) -> Driver:
    """The driver called ``kind`` for ``arm``; ``port`` is a TCP port or a serial device."""
    if kind == "pybullet":
        from .pybullet_driver import PyBulletDriver

        return PyBulletDriver(arm, **options)
    if kind == "niryo_one_tcp":
        from .niryo import NiryoOneTCP

        return NiryoOneTCP(arm, host or "127.0.0.1", tcp_port(port), timeout=timeout)
    if kind == "niryo_ned":
        from .niryo import NiryoNed

        return NiryoNed(arm, host or "127.0.0.1", tcp_port(port), timeout=timeout)
    if kind == "inmoov_serial":
        from .inmoov import InMoovSerial

        if not port:
            raise ValueError("inmoov_serial needs port:= the serial device (e.g. /dev/ttyACM0)")
        return InMoovSerial(arm, port, calibration or None, timeout=timeout)
    raise ValueError(f"unknown driver {kind!r}; choose one of {', '.join(DRIVERS)}")
