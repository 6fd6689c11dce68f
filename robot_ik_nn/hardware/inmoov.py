"""The InMoov arm: hobby servos behind a serial link, a calibration file per build, the frames.

Calibration (YAML, one entry per URDF joint; ``robot-ik-nn calibrate inmoov`` writes a
commented starting file): servo angle = ``offset + gain * degrees(joint)``, with ``gain`` +1 or
-1; the servo never goes outside ``min_deg``..``max_deg``; pulse width (µs) =
``min_us + deg * (max_us - min_us) / range_deg``.

Frames (MRLComm-shaped: magic byte, size, method, payload), then one checksum byte::

    0xAA  size  method  payload...  checksum      size = 1 + len(payload)
                                                  checksum = (method + sum(payload)) & 0xFF
    WRITE  0x01  n, then n x (pin, pulse_hi, pulse_lo)   -> ACK  0x81  n
    READ   0x02  (nothing)                               -> STATE 0x82  n, then n x (pin, hi, lo)

Pulse widths travel in tenths of a microsecond (uint16). A frame that fails any check (magic,
size, checksum, method, count, a pin not in the calibration, a pulse outside its servo's range)
is dropped whole, by the board and by the driver alike.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from .driver import BadReply, Driver, DriverError, checked_joints

MAGIC, WRITE, READ, ACK, STATE = 0xAA, 0x01, 0x02, 0x81, 0x82
MAX_SIZE = 1 + 1 + 3 * 16  # method, count, 16 servos at most


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
        try:
            servo = Servo(
                name, str(entry["servo"]), int(entry["pin"]), int(entry["gain"]),
                *(float(entry[f]) for f in ("offset", "min_deg", "max_deg", "rest_deg")),
                *(float(entry.get(f, d)) for f, d in
                  (("min_us", 544.0), ("max_us", 2400.0), ("range_deg", 180.0))),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: joint {name!r}: {exc}") from None
        problem = _problem(servo, pins)
        if problem:
            raise ValueError(f"{where}: joint {name!r}: {problem}")
        pins.add(servo.pin)
        servos.append(servo)
    return servos


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


# -- frames -------------------------------------------------------------------------------------
def frame(method: int, payload: bytes = b"") -> bytes:
    body = bytes([method]) + bytes(payload)
    return bytes([MAGIC, len(body)]) + body + bytes([sum(body) & 0xFF])


def pulses_payload(pins_and_us) -> bytes:
    out = bytearray([len(pins_and_us)])
    for pin, us in pins_and_us:
        tenths = int(round(us * 10))
        out += bytes([pin, tenths >> 8, tenths & 0xFF])
    return bytes(out)


def parse_pulses(payload: bytes) -> list[tuple[int, float]] | None:
    if not payload or len(payload) != 1 + 3 * payload[0]:
        return None
    return [
        (payload[1 + 3 * i], ((payload[2 + 3 * i] << 8) | payload[3 + 3 * i]) / 10.0)
        for i in range(payload[0])
    ]


class FrameReader:
    """Bytes in, whole frames out as (method, payload); anything else is skipped and counted."""

    def __init__(self):
        self.buffer = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buffer += data
        frames = []
        while self.buffer:
            if self.buffer[0] != MAGIC:
                start = self.buffer.find(bytes([MAGIC]))
                self.dropped += 1
                del self.buffer[: start if start > 0 else len(self.buffer)]
                continue
            if len(self.buffer) < 2:
                break
            size = self.buffer[1]
            if not 1 <= size <= MAX_SIZE:
                self.dropped += 1
                del self.buffer[0]
                continue
            if len(self.buffer) < size + 3:
                break
            body = bytes(self.buffer[2 : 2 + size])
            if self.buffer[2 + size] != sum(body) & 0xFF:
                self.dropped += 1
                del self.buffer[0]
                continue
            del self.buffer[: size + 3]
            frames.append((body[0], body[1:]))
        return frames


class InMoovSerial(Driver):
    kind = "inmoov_serial"

    def __init__(self, arm, port: str, calibration=None, timeout: float = 0.3,
                 baudrate: int = 115200):
        super().__init__(arm)
        self.port, self.timeout, self.baudrate = port, float(timeout), baudrate
        self.servos = load_calibration(calibration, arm)
        self.by_pin = {s.pin: s for s in self.servos}
        self.link = None
        self.reader = FrameReader()

    def describe(self) -> str:
        return f"{self.kind} {self.port}"

    def joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """The joint range each servo's min_deg..max_deg allows (radians)."""
        lo, hi = zip(*(s.joint_range() for s in self.servos))
        return np.array(lo), np.array(hi)

    def connect(self) -> None:
        import serial

        self.close()
        try:
            self.link = serial.Serial(self.port, self.baudrate, timeout=0.02,
                                      write_timeout=self.timeout)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DriverError(f"cannot open {self.port}: {exc}") from None
        self.reader = FrameReader()

    def _exchange(self, request: bytes, want: int) -> bytes:
        import serial

        if self.link is None:
            raise DriverError("inmoov_serial: not connected")
        try:
            self.link.reset_input_buffer()  # a late reply to an earlier request is not this one
            self.reader = FrameReader()
            self.link.write(request)
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                data = self.link.read(max(1, self.link.in_waiting))
                for method, payload in self.reader.feed(data):
                    if method == want:
                        return payload
        except (serial.SerialException, OSError) as exc:
            raise DriverError(f"{self.port}: link lost ({exc})") from None
        raise BadReply(f"{self.port}: no valid reply within {self.timeout:g} s "
                          f"({self.reader.dropped} malformed bytes or frames dropped)")

    def read(self) -> np.ndarray:
        pulses = parse_pulses(self._exchange(frame(READ), STATE))
        if pulses is None or sorted(p for p, _ in pulses) != sorted(self.by_pin):
            raise BadReply(f"{self.port}: a state frame without every calibrated servo")
        angles = {}
        for pin, us in pulses:
            servo = self.by_pin[pin]
            deg = servo.angle_of_pulse(us)
            if not servo.min_deg - 1.0 <= deg <= servo.max_deg + 1.0:
                raise BadReply(f"{self.port}: servo {servo.servo} reports {deg:.1f} deg, "
                                  f"outside {servo.min_deg:g}..{servo.max_deg:g}")
            angles[servo.joint] = servo.joint_angle(deg)
        return checked_joints([angles[n] for n in self.arm.joint_names], self.arm, "state frame")

    def write(self, q) -> None:
        pairs = []
        for servo, value in zip(self.servos, np.asarray(q, dtype=float)):
            deg = servo.degrees(value)
            if not servo.min_deg - 1e-6 <= deg <= servo.max_deg + 1e-6:
                raise ValueError(f"{servo.joint}: {deg:.2f} deg is outside servo "
                                 f"{servo.servo}'s range {servo.min_deg:g}..{servo.max_deg:g}")
            pairs.append((servo.pin, servo.pulse(min(max(deg, servo.min_deg), servo.max_deg))))
        ack = self._exchange(frame(WRITE, pulses_payload(pairs)), ACK)
        if ack != bytes([len(pairs)]):
            raise BadReply(f"{self.port}: the board acknowledged {ack!r}, not {len(pairs)}")

    def close(self) -> None:
        link, self.link = self.link, None
        if link is not None:
            try:
                link.close()
            except Exception:  # noqa: BLE001 - a device already gone
                pass
