"""A toy real arm for the tests only, added through the table of real arms alone
(robot_ik_nn/hardware/arms.py): importing this module registers it. Every process of a deploy
session sees it when ``ROBOT_IK_NN_ARMS=toy_arm`` and this folder is on ``PYTHONPATH``.

Its protocol: one line each way over TCP, ``GET`` -> ``J v1 v2 ...``, ``MOVE v1 v2 ...`` -> ``OK``
or ``ERR why``. The emulator has no physics: a goal it accepts is where the arm is, kept in the
state file (``joints``, ``goals``, ``bad_goals``) as the package's emulators keep theirs.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import numpy as np

from robot_ik_nn.hardware.arms import RealArm, register
from robot_ik_nn.hardware.driver import BadReply, Driver, DriverError, checked_joints

TOY = RealArm(
    name="toy_arm", robot="niryo_one", driver="toy_line", driver_class="toy_arm:ToyDriver",
    emulator="toy_line", emulator_class="toy_arm:ToyEmulator", link="tcp",
    description="a test-only line protocol over TCP", default_port=40101,
)
register(TOY, replace=True)


class ToyDriver(Driver):
    kind = "toy_line"

    def __init__(self, arm, host: str, port: int, timeout: float = 2.0):
        super().__init__(arm)
        self.where, self.timeout = (host, port), timeout
        self.sock = self.lines = None

    def connect(self) -> None:
        try:
            self.sock = socket.create_connection(self.where, timeout=self.timeout)
        except OSError as exc:
            raise DriverError(f"toy_line: cannot reach {self.where}: {exc}") from None
        self.lines = self.sock.makefile("rw", encoding="ascii", newline="\n")

    def _ask(self, line: str) -> str:
        if self.lines is None:
            raise DriverError("toy_line: not connected")
        try:
            self.lines.write(line + "\n")
            self.lines.flush()
            reply = self.lines.readline()
        except OSError as exc:
            raise DriverError(f"toy_line: {exc}") from None
        if not reply:
            raise DriverError("toy_line: the arm closed the link")
        return reply.strip()

    def read(self) -> np.ndarray:
        head, *values = self._ask("GET").split()
        if head != "J":
            raise BadReply(f"toy_line: GET answered {head!r}")
        return checked_joints(values, self.arm, "toy_line GET")

    def write(self, q) -> None:
        reply = self._ask("MOVE " + " ".join(f"{v:.9f}" for v in q))
        if reply != "OK":
            raise BadReply(f"toy_line: MOVE answered {reply!r}")

    def close(self) -> None:
        for thing in (self.lines, self.sock):
            if thing is not None:
                try:
                    thing.close()
                except OSError:
                    pass
        self.sock = self.lines = None


class _Arm:
    """What ``emulate``'s describe line reads (``emulated.arm.name``) and the joints."""

    def __init__(self, arm, state_file):
        self.arm, self.state_file = arm, Path(state_file) if state_file else None
        self.q, self.goals, self.bad_goals = arm.mid_range.copy(), 0, 0
        if self.state_file is not None and self.state_file.is_file():
            self.q = np.array(json.loads(self.state_file.read_text())["joints"], dtype=float)
        self.save()

    def save(self) -> None:
        if self.state_file is None:
            return
        text = json.dumps({"joints": self.q.tolist(), "goals": self.goals,
                           "bad_goals": self.bad_goals})
        part = self.state_file.with_name(self.state_file.name + ".part")
        part.write_text(text)
        os.replace(part, self.state_file)


class ToyEmulator:
    """One client at a time; ``faults`` is accepted and ignored (the toy never lies)."""

    def __init__(self, arm, host: str, port: int, faults: int = 0, state_file=None):
        self.emulated = _Arm(arm, state_file)
        self.listener = socket.create_server((host, port))
        self.address = self.listener.getsockname()[:2]
        self.lock = threading.Lock()

    def serve_forever(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                with client, client.makefile("rw", encoding="ascii", newline="\n") as lines:
                    for line in lines:
                        lines.write(self.answer(line.split()) + "\n")
                        lines.flush()
            except OSError:
                continue  # the client went: wait for the next one

    def answer(self, words: list[str]) -> str:
        arm = self.emulated
        if words == ["GET"]:
            return "J " + " ".join(f"{v:.9f}" for v in arm.q)
        if words[:1] == ["MOVE"]:
            try:
                q = np.array([float(v) for v in words[1:]])
            except ValueError:
                return "ERR not numbers"
            lo, hi = arm.arm.lower, arm.arm.upper
            arm.goals += 1
            if q.shape != arm.q.shape or not np.all(np.isfinite(q)):
                arm.bad_goals += 1
                return f"ERR expected {arm.q.size} finite values"
            arm.bad_goals += bool(np.any(q < lo - 1e-6) or np.any(q > hi + 1e-6))
            arm.q = np.clip(q, lo, hi)
            arm.save()
            return "OK"
        return "ERR unknown command"

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
