"""An InMoov servo board on a pseudo-terminal: it parses the frames of hardware/inmoov.py,
moves a PyBullet InMoov arm in real time as hobby servos would, and answers READ with the
servos' pulse widths. ``path`` is the terminal the driver opens (``link`` adds a fixed name)."""

from __future__ import annotations

import os
import select
import threading
import time
import tty

import numpy as np

from ..calibration import load_calibration
from ..inmoov import (
    ACK,
    READ,
    STATE,
    WRITE,
    FrameReader,
    frame,
    parse_pulses,
    pulses_payload,
)
from .base import EmulatedArm, Faults, noise


class ServoBoard:
    def __init__(self, arm, calibration=None, faults: int = 0, link: str | None = None,
                 state_file: str | None = None, tick: float = 1.0 / 240.0):
        self.emulated = EmulatedArm(arm, state_file)
        self.servos = load_calibration(calibration, arm)
        self.by_pin = {s.pin: s for s in self.servos}
        self.faults = Faults(faults)
        self.rng = np.random.default_rng(0)
        self.master, slave = os.openpty()
        tty.setraw(self.master)
        self.path = os.ttyname(slave)
        self._slave = slave  # kept open so the terminal lives while no driver holds it
        self.link = link
        if link:
            tmp = f"{link}.tmp"
            if os.path.lexists(tmp):
                os.remove(tmp)
            os.symlink(self.path, tmp)
            os.replace(tmp, link)
        self.tick = tick
        self.reader = FrameReader()
        self.frames = 0
        self.running = True
        self.idle = threading.Event()
        self.idle.set()

    def serve_forever(self) -> None:
        self.idle.clear()
        try:
            self._loop()
        finally:
            self.idle.set()

    def _loop(self) -> None:
        last = time.monotonic()
        saved = last
        while self.running:
            ready, _, _ = select.select([self.master], [], [], self.tick)
            if ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                for method, payload in self.reader.feed(data):
                    self._handle(method, payload)
            now = time.monotonic()
            if now - last >= self.tick:
                self.emulated.advance(now - last)
                last = now
            if now - saved >= 0.1:
                self.emulated.save()
                saved = now

    def _handle(self, method: int, payload: bytes) -> None:
        self.frames += 1
        if method == READ and not payload:
            reply = frame(STATE, pulses_payload(self._pulses()))
        elif method == WRITE:
            goal = self._goal(parse_pulses(payload))
            if goal is None:
                return  # a frame that does not make sense moves nothing and gets no answer
            self.emulated.aim(goal)
            reply = frame(ACK, bytes([len(self.servos)]))
        else:
            return
        os.write(self.master, self._spoil(reply))

    def _pulses(self):
        q = self.emulated.joints()
        return [(s.pin, s.pulse(min(max(s.degrees(v), 0.0), s.range_deg)))
                for s, v in zip(self.servos, q)]

    def _goal(self, pulses):
        if pulses is None or sorted(p for p, _ in pulses) != sorted(self.by_pin):
            return None
        goal = {}
        for pin, us in pulses:
            s = self.by_pin[pin]
            deg = s.angle_of_pulse(us)
            if not s.min_deg - 0.05 <= deg <= s.max_deg + 0.05:
                return None  # a real board would strain the servo: refuse
            goal[s.joint] = s.joint_angle(deg)
        return np.array([goal[n] for n in self.emulated.arm.joint_names])

    def _spoil(self, reply: bytes) -> bytes:
        fault = self.faults.next()
        if fault == "garbage":
            return noise(self.rng)
        if fault == "truncated":
            return reply[: len(reply) // 2]
        if fault == "wrong_length":
            return reply[:1] + bytes([(reply[1] + 3) & 0xFF]) + reply[2:]
        if fault == "nan":  # binary has no NaN: a pulse no servo can have, checksum intact
            body = bytearray(reply[2:-1])
            if body[0] == STATE:
                body[3:5] = b"\xff\xff"
            else:
                body[1] = 0xFF  # an ACK for servos that do not exist
            return frame(body[0], bytes(body[1:]))
        return reply

    def close(self) -> None:
        self.running = False
        self.idle.wait(2.0)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.link and os.path.islink(self.link) and os.readlink(self.link) == self.path:
            os.remove(self.link)
        self.emulated.close()
