"""Niryo arms: the Niryo One's TCP text server, and Ned/Ned2 through Niryo's own ``pyniryo``.

Niryo One (port 40001, one client at a time, plain text, the reply sent once the move ends):
``MOVE_JOINTS:j1,...,j6`` (radians) -> ``MOVE_JOINTS:OK``; ``GET_JOINTS`` ->
``GET_JOINTS:OK,j1,...,j6``; a refusal is ``COMMAND:KO,"reason"``.

Ned/Ned2 (port 40001, each packet a 2-byte length then JSON): spoken by ``pyniryo.NiryoRobot``,
used as it is. Its reader waits forever on a packet cut short, so every call here runs under a
deadline that closes the socket (which makes the waiting read fail) when it passes.
"""

from __future__ import annotations

import socket
import threading

import numpy as np

from .driver import BadReply, Driver, DriverError, checked_joints

REPLY_LIMIT = 4096  # a reply longer than this is not one the Niryo One sends


class NiryoOneTCP(Driver):
    kind = "niryo_one_tcp"

    def __init__(self, arm, host: str, port: int = 40001, timeout: float = 2.0):
        super().__init__(arm)
        self.host, self.port, self.timeout = host, int(port), float(timeout)
        self.sock: socket.socket | None = None

    def describe(self) -> str:
        return f"{self.kind} {self.host}:{self.port}"

    def connect(self) -> None:
        self.close()
        try:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise DriverError(
                f"cannot reach the Niryo One at {self.host}:{self.port}: {exc}"
            ) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def ask(self, command: str, values=()) -> list[str]:
        """Send one request and return the fields after ``OK``; DriverError for anything else."""
        if self.sock is None:
            raise DriverError("niryo_one_tcp: not connected")
        text = command + (":" + ",".join(f"{v:.6f}" for v in values) if len(values) else "")
        try:
            self.sock.sendall(text.encode("ascii"))
            reply = self.sock.recv(REPLY_LIMIT)
        except OSError as exc:  # timeouts included
            raise DriverError(f"{command}: connection lost ({exc or 'timed out'})") from None
        if not reply:
            raise DriverError(f"{command}: the arm closed the connection")
        try:
            head, _, rest = reply.decode("ascii").strip().partition(":")
        except UnicodeDecodeError:
            raise BadReply(f"{command}: reply is not text: {reply[:40]!r}") from None
        fields = rest.split(",") if rest else []
        if head != command or not fields or fields[0] not in ("OK", "KO"):
            raise BadReply(f"{command}: unexpected reply {reply[:80]!r}")
        if fields[0] == "KO":
            raise BadReply(f"{command}: the arm refused: {','.join(fields[1:])}")
        return fields[1:]

    def read(self) -> np.ndarray:
        return checked_joints(self.ask("GET_JOINTS"), self.arm, "GET_JOINTS")

    def write(self, q) -> None:
        self.ask("MOVE_JOINTS", np.asarray(q, dtype=float))

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None


class NiryoNed(Driver):
    kind = "niryo_ned"

    def __init__(self, arm, host: str, port: int = 40001, timeout: float = 2.0):
        super().__init__(arm)
        self.host, self.port, self.timeout = host, int(port), float(timeout)
        self.robot = None

    def describe(self) -> str:
        return f"{self.kind} {self.host}:{self.port} (pyniryo)"

    def connect(self) -> None:
        try:
            from pyniryo import NiryoRobot
        except ImportError:
            raise DriverError("niryo_ned needs pyniryo: pip install pyniryo") from None
        self.close()
        robot = NiryoRobot(verbose=False)
        robot._NiryoRobot__port = self.port  # pyniryo always uses 40001; emulators may not
        self._call(robot.connect, self.host, robot=robot)
        sock = self._socket(robot)
        if sock is not None:
            sock.settimeout(self.timeout)  # pyniryo waits without a limit once connected
        self.robot = robot

    def _socket(self, robot):
        return getattr(robot, "_NiryoRobot__client_socket", None)

    def _call(self, fn, *args, robot=None):
        """``fn(*args)`` under the deadline; every failure becomes a DriverError."""
        robot = robot or self.robot
        if robot is None:
            raise DriverError("niryo_ned: not connected")

        def expire():
            sock = self._socket(robot)
            if sock is not None:  # wake the blocked read, then make its next one fail
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            return fn(*args)
        except (ValueError, KeyError, TypeError) as exc:  # a whole packet, but not a good one
            raise BadReply(f"niryo_ned: {type(exc).__name__}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - pyniryo's own kinds: the link is gone
            raise DriverError(f"niryo_ned: {type(exc).__name__}: {exc}") from None
        finally:
            timer.cancel()

    def read(self) -> np.ndarray:
        joints = self._call(self.robot.get_joints if self.robot else None)
        return checked_joints(list(joints), self.arm, "get_joints")

    def write(self, q) -> None:
        from pyniryo import JointsPosition

        self._call(self.robot.move if self.robot else None,
                   JointsPosition(*[float(v) for v in q]))

    def close(self) -> None:
        robot, self.robot = self.robot, None
        if robot is not None:
            try:
                robot.close_connection()
            except Exception:  # noqa: BLE001 - a socket already closed by the deadline
                pass
