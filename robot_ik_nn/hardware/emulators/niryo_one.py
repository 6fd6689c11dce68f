"""A Niryo One TCP server (port 40001 on the robot): the plain-text protocol, one client at a
time, each reply sent once the move has ended, moving a PyBullet Niryo One."""

from __future__ import annotations

from .base import TCPEmulator, noise


class NiryoOneServer(TCPEmulator):
    def _serve(self, client) -> None:
        while True:
            try:
                data = client.recv(4096)
            except OSError:
                return
            if not data:
                return
            self.requests += 1
            reply = self.answer(data.decode("ascii", "replace").strip())
            try:
                client.sendall(self._spoil(reply).encode("latin-1"))
            except OSError:
                return

    def answer(self, request: str) -> str:
        command, _, params = request.partition(":")
        if command == "GET_JOINTS":
            return "GET_JOINTS:OK," + ",".join(f"{v:.6f}" for v in self.emulated.joints())
        if command == "MOVE_JOINTS":
            try:
                q = [float(v) for v in params.split(",")]
            except ValueError:
                return 'MOVE_JOINTS:KO,"Expected the following type: float."'
            why = self.emulated.refusal(q)
            if why:
                return f'MOVE_JOINTS:KO,"{why}"'
            self.emulated.move(q)
            return "MOVE_JOINTS:OK"
        return f'{command}:KO,"Unknown command"'

    def _spoil(self, reply: str) -> str:
        fault = self.faults.next()
        if fault == "garbage":
            return noise(self.rng).decode("latin-1")
        if fault == "truncated":
            return reply[: max(1, len(reply) // 2)]
        if fault == "wrong_length":
            return reply + ",0.1,0.2"
        if fault == "nan":
            head = reply.split(",", 1)[0]
            return head + "," + ",".join(["nan"] * self.emulated.arm.dof)
        return reply
