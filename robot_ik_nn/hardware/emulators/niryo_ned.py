"""A Ned/Ned2 TCP server (port 40001 on the robot) that Niryo's own ``pyniryo`` client talks to:
each packet a 2-byte length then JSON ``{"command": NAME, "param_list": [...]}``; replies
``{"command", "status": "OK"|"KO", "message", "list_ret_param"}``, sent once the move has ended.
It answers HANDSHAKE, GET_JOINTS, MOVE (a joints position) and MOVE_JOINTS; moves a PyBullet arm.
"""

from __future__ import annotations

import json
import re
import struct

from .base import TCPEmulator, noise

SIZE = struct.Struct("<H")  # pyniryo packs the length as a native unsigned short


class NedServer(TCPEmulator):
    def _packet(self, client) -> dict | None:
        head = _exactly(client, SIZE.size)
        body = _exactly(client, SIZE.unpack(head)[0]) if head else None
        if body is None:
            return None
        try:
            request = json.loads(body)
        except ValueError:
            return {}
        return request if isinstance(request, dict) else {}

    def _serve(self, client) -> None:
        while True:
            try:
                request = self._packet(client)
            except OSError:
                return
            if request is None:
                return
            self.requests += 1
            try:
                client.sendall(self._spoil(self.answer(request)))
            except OSError:
                return

    def answer(self, request: dict) -> dict:
        command = str(request.get("command", ""))
        params = request.get("param_list", [])
        if command == "HANDSHAKE":
            return _ok(command, [{"message": "robot_ik_nn Ned emulator"}])
        if command == "GET_JOINTS":
            return _ok(command, [float(v) for v in self.emulated.joints()])
        if command in ("MOVE", "MOVE_JOINTS"):
            q = _joints(command, params)
            why = "Expected a joints position" if q is None else self.emulated.refusal(q)
            if why:
                return _ko(command, why)
            self.emulated.move(q)
            return _ok(command, [])
        return _ko(command, f"Unknown command {command}")

    def _spoil(self, reply: dict) -> bytes:
        body = json.dumps(reply).encode()
        fault = self.faults.next()
        if fault == "garbage":
            body = noise(self.rng)
        elif fault == "truncated":
            return SIZE.pack(len(body)) + body[: len(body) // 2]
        elif fault == "wrong_length":
            return SIZE.pack(len(body) + 7) + body
        elif fault == "nan":
            nan = dict(reply, list_ret_param=[float("nan")] * self.emulated.arm.dof)
            body = json.dumps(nan).encode()  # Python writes NaN, as a careless server would
        return SIZE.pack(len(body)) + body


def _ok(command: str, values) -> dict:
    return {"command": command, "status": "OK", "message": "", "list_ret_param": values}


def _ko(command: str, why: str) -> dict:
    return {"command": command, "status": "KO", "message": why, "list_ret_param": []}


def _joints(command: str, params):
    try:
        if command == "MOVE_JOINTS":
            return [float(v) for v in params]
        position = params[0]
        if position.get("obj_type") not in (None, "JOINTS"):
            return None
        keys = sorted((k for k in position if re.fullmatch(r"joint_\d+", k)),
                      key=lambda k: int(k[6:]))
        return [float(position[k]) for k in keys]
    except (TypeError, ValueError, IndexError, AttributeError):
        return None


def _exactly(client, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = client.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data
