"""What every emulator shares: a PyBullet arm that moves, a log of what reached it, faults.

``Faults(n)`` spoils the first ``n`` replies, in turn: garbage, truncated, wrong length, NaN
(each emulator decides what those mean in its own protocol); a test counts on this to prove that
nothing malformed upsets the bridge. ``state_file`` (JSON, replaced atomically) holds the
emulated arm's joints, so a test can check where the tool ended up without asking the bridge;
an emulator started again on the same file starts where the last one stopped, as a real arm
that was switched off and on again stays where it was.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import numpy as np

from ...model_dir import atomic_write
from ..pybullet_arm import ArmSim

KINDS = ("garbage", "truncated", "wrong_length", "nan")


class Faults:
    def __init__(self, count: int = 0):
        self.left, self.sent = int(count), 0

    def next(self) -> str | None:
        """The fault for the next reply, or None for a good one."""
        if self.left <= 0:
            return None
        self.left -= 1
        self.sent += 1
        return KINDS[(self.sent - 1) % len(KINDS)]


class EmulatedArm:
    """A PyBullet arm that moves to goals; every goal that reached it is kept in ``goals``."""

    def __init__(self, arm, state_file: str | None = None):
        self.arm = arm
        self.sim = ArmSim(arm)
        self.lock = threading.Lock()
        self.goals: list[np.ndarray] = []
        self.bad_goals = 0  # goals a real controller would have refused: must stay 0
        self.state_file = Path(state_file) if state_file else None
        if self.state_file is not None and self.state_file.is_file():
            joints = json.loads(self.state_file.read_text()).get("joints")
            if joints is not None and len(joints) == arm.dof:
                self.sim.set_joints(np.clip(joints, arm.lower, arm.upper))
        self.save()

    def joints(self) -> np.ndarray:
        with self.lock:
            return self.sim.get_joints()

    def refusal(self, q) -> str:
        """Why a real controller would refuse goal ``q`` ("" if it would not)."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.arm.dof,):
            return f"Expected {self.arm.dof} joint values, given {q.size}"
        if not np.all(np.isfinite(q)):
            return "Joint values must be finite"
        if np.any(q < self.arm.lower - 1e-6) or np.any(q > self.arm.upper + 1e-6):
            return "Goal outside the joint limits"
        return ""

    def move(self, q) -> None:
        """Move to ``q`` and return once there (simulated time runs as fast as it can)."""
        self._log(q)
        q = np.clip(np.asarray(q, dtype=float), self.arm.lower, self.arm.upper)
        with self.lock:
            self.sim.settle(q)
        self.save()

    def aim(self, q) -> None:
        """Set a goal without waiting (servos); :meth:`advance` moves toward it."""
        self._log(q)
        with self.lock:
            self.sim.command(np.clip(q, self.arm.lower, self.arm.upper))

    def _log(self, q) -> None:
        self.goals.append(np.array(q, dtype=float))
        self.bad_goals += bool(self.refusal(q))

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.sim.step(max(1, int(seconds / self.sim.time_step)))

    def save(self) -> None:
        if self.state_file is None:
            return
        state = {"joints": self.joints().tolist(), "goals": len(self.goals),
                 "bad_goals": self.bad_goals}
        atomic_write(self.state_file, json.dumps(state).encode())

    def close(self) -> None:
        self.sim.close()


def noise(rng: np.random.Generator, size: int = 24) -> bytes:
    return bytes(rng.integers(0, 256, size, dtype=np.uint8))


class TCPEmulator:
    """One client at a time, as the Niryo servers allow; ``_serve(client)`` speaks the protocol."""

    def __init__(self, arm, host: str = "127.0.0.1", port: int = 40001, faults: int = 0,
                 state_file: str | None = None):
        self.emulated = EmulatedArm(arm, state_file)
        self.faults = Faults(faults)
        self.rng = np.random.default_rng(0)
        self.listener = socket.create_server((host, port))
        self.address = self.listener.getsockname()[:2]
        self.requests = 0
        self.client = None

    def serve_forever(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            with client:
                self.client = client
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._serve(client)
                self.client = None

    def _serve(self, client) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop serving, as a robot that is switched off: the client's link breaks too."""
        for sock in (self.listener, self.client):
            if sock is None:
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.emulated.close()
