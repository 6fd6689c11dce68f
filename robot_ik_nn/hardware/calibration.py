"""InMoov servo calibration: one entry per URDF joint, in a YAML file the user edits per build.

servo angle = ``offset + gain * degrees(joint)``, with ``gain`` +1 or -1; the servo never goes
outside ``min_deg``..``max_deg``; pulse width (µs) = ``min_us + deg * (max_us - min_us) /
range_deg``. ``robot-ik-nn calibrate inmoov`` writes a commented starting file (:func:`template`);
:func:`load_calibration` refuses a file with a missing joint or a value that makes no sense,
naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Servo:
    joint: str
    servo: str
    pin: int
    gain: int
    offset: float
    min_deg: float
    max_deg: float
    rest_deg: float
    min_us: float = 544.0
    max_us: float = 2400.0
    range_deg: float = 180.0

    def degrees(self, q: float) -> float:
        return self.offset + self.gain * math.degrees(q)

    def joint_angle(self, deg: float) -> float:
        return math.radians((deg - self.offset) * self.gain)

    def pulse(self, deg: float) -> float:
        return self.min_us + deg * (self.max_us - self.min_us) / self.range_deg

    def angle_of_pulse(self, us: float) -> float:
        return (us - self.min_us) * self.range_deg / (self.max_us - self.min_us)

    def joint_range(self) -> tuple[float, float]:
        a, b = self.joint_angle(self.min_deg), self.joint_angle(self.max_deg)
        return min(a, b), max(a, b)


# MyRobotLab's right-arm servo ranges and rests, and the gains/offsets that map them onto
# urdf/inmoov_right_arm.urdf's joint limits; a starting point, to be checked on each build.
DEFAULTS = {
    "r_shoulder_out": ("omoplate", 2, -1, 10.0, 10.0, 80.0, 10.0),
    "r_shoulder_lift": ("shoulder", 3, -1, 0.0, 0.0, 180.0, 30.0),
    "r_upper_arm_roll": ("rotate", 4, 1, 90.0, 40.0, 180.0, 90.0),
    "r_elbow_flex": ("bicep", 5, -1, 0.0, 0.0, 90.0, 0.0),
    "r_wrist_roll": ("wrist", 7, -1, 0.0, 0.0, 180.0, 0.0),
}
FIELDS = ("servo", "pin", "gain", "offset", "min_deg", "max_deg", "rest_deg")
OPTIONAL = ("min_us", "max_us", "range_deg")  # with defaults: 544 us, 2400 us over 180 deg


def template(arm) -> str:
    """A commented calibration file for ``arm``: MyRobotLab's defaults where the joint is known."""
    lines = [
        "# InMoov servo calibration for robot_ik_nn (one entry per URDF joint).",
        "# servo angle (deg) = offset + gain * joint angle (deg); gain is +1 or -1.",
        "# min_deg/max_deg: the servo's safe range on THIS build (the bridge never leaves it).",
        "# rest_deg: where the servo sits at power-up. Pulse (us) = min_us + deg * (max_us -",
        "# min_us) / range_deg. Check every value against your arm before the first move.",
        f"arm: {arm.name}",
        "joints:",
    ]
    for k, name in enumerate(arm.joint_names):
        servo, pin, gain, offset, lo, hi, rest = DEFAULTS.get(
            name, (name, 2 + k, 1, 90.0, 0.0, 180.0, 90.0)
        )
        lines += [
            f"  {name}:",
            f"    servo: {servo}",
            f"    pin: {pin}            # Arduino pin (or servo id on the bus)",
            f"    gain: {gain}",
            f"    offset: {offset}",
            f"    min_deg: {lo}",
            f"    max_deg: {hi}",
            f"    rest_deg: {rest}",
            "    min_us: 544.0       # pulse at 0 deg",
            "    max_us: 2400.0      # pulse at range_deg",
            "    range_deg: 180.0",
        ]
    return "\n".join(lines) + "\n"


def load_calibration(source, arm) -> list[Servo]:
    """The servos of ``arm`` from a calibration file (a path or YAML text); None -> defaults.
    A missing joint, an unknown field value or an inconsistent range is a ValueError naming it."""
    if source is None:
        text, where = template(arm), "the built-in defaults"
    elif isinstance(source, Path) or "\n" not in str(source):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"calibration file {path} does not exist")
        text, where = path.read_text(), str(path)
    else:
        text, where = str(source), "the calibration text"
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{where} is not valid YAML: {exc}") from None
    joints = data.get("joints") if isinstance(data, dict) else None
    if not isinstance(joints, dict):
        raise ValueError(f"{where}: expected a 'joints:' mapping")
    servos, pins = [], set()
    for name in arm.joint_names:
        entry = joints.get(name)
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: no calibration for joint {name!r}")
        missing = [f for f in FIELDS if f not in entry]
        if missing:
            raise ValueError(f"{where}: joint {name!r} lacks {missing}")
        unknown = sorted(set(entry) - set(FIELDS) - set(OPTIONAL))
        if unknown:
            raise ValueError(
                f"{where}: joint {name!r}: unknown field(s) {unknown} "
                f"(fields: {', '.join((*FIELDS, *OPTIONAL))})"
            )
        try:
            servo = Servo(
                name, str(entry["servo"]), _whole(entry["pin"], "pin"),
                _whole(entry["gain"], "gain"),
                *(float(entry[f]) for f in ("offset", "min_deg", "max_deg", "rest_deg")),
                *(float(entry.get(f, d)) for f, d in zip(OPTIONAL, (544.0, 2400.0, 180.0))),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: joint {name!r}: {exc}") from None
        problem = _problem(servo, pins)
        if problem:
            raise ValueError(f"{where}: joint {name!r}: {problem}")
        pins.add(servo.pin)
        servos.append(servo)
    return servos


def _whole(value, field: str) -> int:
    """A whole number as written (2, not 2.7 nor true), or a ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{field} must be a whole number, got {value!r}")
    return int(value)


def _problem(s: Servo, pins: set) -> str:
    numbers = (s.offset, s.min_deg, s.max_deg, s.rest_deg, s.min_us, s.max_us, s.range_deg)
    if not all(math.isfinite(v) for v in numbers):
        return "every value must be a finite number"
    if s.gain not in (1, -1):
        return f"gain must be 1 or -1, got {s.gain}"
    if not 0 <= s.pin <= 255 or s.pin in pins:
        return f"pin {s.pin} must be 0..255 and not shared with another joint"
    if not (0 <= s.min_deg < s.max_deg <= s.range_deg):
        return f"need 0 <= min_deg < max_deg <= range_deg, got {s.min_deg}..{s.max_deg}"
    if not s.min_deg <= s.rest_deg <= s.max_deg:
        return f"rest_deg {s.rest_deg} lies outside {s.min_deg}..{s.max_deg}"
    if not (0 < s.min_us < s.max_us < 6500 and s.range_deg > 0):
        return f"pulse mapping {s.min_us}..{s.max_us} us over {s.range_deg} deg is not valid"
    return ""
