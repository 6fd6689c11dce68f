"""The InMoov arm: hobby servos behind a serial link, driven through the build's calibration
(calibration.py), in frames both this driver and the emulated board (emulators/) speak.

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

import time

import numpy as np

from .calibration import load_calibration
from .driver import BadReply, Driver, DriverError, checked_joints

MAGIC, WRITE, READ, ACK, STATE = 0xAA, 0x01, 0x02, 0x81, 0x82
MAX_SIZE = 1 + 1 + 3 * 16  # method, count, 16 servos at most


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
