"""The real arms, in one table: for each, the built-in robot it is, its driver, its emulator and
its link. The deploy session, ``arm_node``'s driver factory, ``robot-ik-nn emulate``, ``bench
--hardware`` and their help texts all read it; adding an arm is one :func:`register` call beside
the arm's own driver and emulator (docs/real_arms.md, "Adding an arm").

A leaf module: it imports nothing heavy (no pybullet, vendor client or rclpy), so the session
arguments may import it. The classes are named by dotted path (``module:Class``) and imported
only when an arm is driven or emulated.

The link decides how the classes are built (the contract a new arm's classes follow):

    tcp      driver   Class(arm, host, port, timeout=timeout)
             emulator Class(arm, host, port, faults, state_file)
    serial   driver   Class(arm, device, calibration_or_None, timeout=timeout)
             emulator Class(arm, calibration, faults, link, state_file)

``ROBOT_IK_NN_ARMS`` (comma-separated ``module`` or ``module:attr``) names modules imported when
this module is first imported, so that every process of a session (the emulator, arm_node) sees
arms registered outside the package: ``module`` registers on import; ``module:attr`` registers
``attr``, a :class:`RealArm` or a list of them.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

LINKS = ("tcp", "serial")
ENVIRONMENT = "ROBOT_IK_NN_ARMS"


class UnknownArm(ValueError):
    """A name that is in no entry of the table; the message names the known ones."""


@dataclass(frozen=True)
class RealArm:
    name: str  # deploy's arm:=
    robot: str  # the built-in robot (URDF) it is
    driver: str  # arm_node's driver:= kind
    driver_class: str  # "package.module:Class", imported when driven
    emulator: str  # robot-ik-nn emulate KIND
    emulator_class: str  # "package.module:Class", imported when emulated
    link: str  # "tcp" (default_port) or "serial" (needs a device)
    description: str
    default_port: int | None = None  # tcp only

    def __post_init__(self):
        if self.link not in LINKS:
            raise ValueError(f"arm {self.name!r}: link must be one of {', '.join(LINKS)}, "
                             f"not {self.link!r}")
        for what in ("driver_class", "emulator_class"):
            module, sep, attr = getattr(self, what).partition(":")
            if not (module and sep and attr):
                raise ValueError(f"arm {self.name!r}: {what} must read 'package.module:Class', "
                                 f"not {getattr(self, what)!r}")
        if self.link == "tcp" and self.default_port is None:
            raise ValueError(f"arm {self.name!r}: a tcp link needs a default_port")

    @property
    def serial(self) -> bool:
        return self.link == "serial"


_TABLE: dict[str, RealArm] = {}


def register(entry: RealArm, *, replace: bool = False) -> RealArm:
    """Add ``entry`` to the table; a name, driver or emulator kind already taken is refused
    (unless ``replace``, for the same name)."""
    if not isinstance(entry, RealArm):
        raise TypeError(f"register takes a RealArm, not {type(entry).__name__}")
    old = _TABLE.get(entry.name)
    if old is not None and not replace and old != entry:
        raise ValueError(f"arm {entry.name!r} is already registered")
    for other in _TABLE.values():
        if other.name == entry.name:
            continue
        for what in ("driver", "emulator"):
            if getattr(other, what) == getattr(entry, what):
                raise ValueError(f"arm {entry.name!r}: {what} kind {getattr(entry, what)!r} "
                                 f"is already arm {other.name!r}'s")
    _TABLE[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    _TABLE.pop(name, None)


def arms() -> tuple[RealArm, ...]:
    return tuple(_TABLE.values())


def names() -> tuple[str, ...]:
    """deploy's arm:= names, in table order."""
    return tuple(_TABLE)


def _find(field: str, value: str, what: str) -> RealArm:
    for entry in _TABLE.values():
        if getattr(entry, field) == value:
            return entry
    known = ", ".join(getattr(e, field) for e in _TABLE.values())
    raise UnknownArm(f"unknown {what} {value!r}; choose one of {known}")


def by_name(name: str) -> RealArm:
    return _find("name", name, "arm")


def by_driver(kind: str) -> RealArm:
    return _find("driver", kind, "driver")


def by_emulator(kind: str) -> RealArm:
    return _find("emulator", kind, "emulator")


def load_class(path: str):
    """The class a ``package.module:Class`` path names, imported now."""
    module, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ImportError(f"cannot import {path}: {err}") from err


def _from_environment(text: str) -> None:
    for item in filter(None, (part.strip() for part in text.split(","))):
        module, _, attr = item.partition(":")
        try:
            loaded = importlib.import_module(module)
            value = getattr(loaded, attr) if attr else None
        except (ImportError, AttributeError) as err:
            raise ImportError(f"{ENVIRONMENT}: cannot load {item!r}: {err}") from err
        if attr:
            for entry in value if isinstance(value, (list, tuple)) else [value]:
                register(entry, replace=True)


for _entry in (
    RealArm("niryo_one", "niryo_one", "niryo_one_tcp", "robot_ik_nn.hardware.niryo:NiryoOneTCP",
            "niryo_one", "robot_ik_nn.hardware.emulators.niryo_one:NiryoOneServer", "tcp",
            "the Niryo One's TCP server (text MOVE_JOINTS / GET_JOINTS)", 40001),
    RealArm("niryo_ned", "niryo_ned2", "niryo_ned", "robot_ik_nn.hardware.niryo:NiryoNed",
            "niryo_ned", "robot_ik_nn.hardware.emulators.niryo_ned:NedServer", "tcp",
            "Ned/Ned2 through Niryo's own pyniryo client (2-byte length + JSON)", 40001),
    RealArm("inmoov_right_arm", "inmoov_right_arm", "inmoov_serial",
            "robot_ik_nn.hardware.inmoov:InMoovSerial", "inmoov_serial",
            "robot_ik_nn.hardware.emulators.servo_board:ServoBoard", "serial",
            "hobby servos behind a serial link (pyserial), through a calibration file"),
):
    register(_entry)

_from_environment(os.environ.get(ENVIRONMENT, ""))
