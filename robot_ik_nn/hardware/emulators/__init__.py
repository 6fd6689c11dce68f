"""Emulators that speak the real arms' protocols and move a PyBullet arm: for dry runs and tests.

    robot-ik-nn emulate niryo_one  [--port 40001]        the Niryo One TCP text server
    robot-ik-nn emulate niryo_ned  [--port 40001]        the Ned JSON server pyniryo talks to
    robot-ik-nn emulate inmoov_serial [--link /tmp/inmoov_tty] [--calibration FILE]

Each prints one JSON line (``{"emulator": ..., "port": ...}``) once it listens, then serves until
SIGINT/SIGTERM. ``--faults N`` spoils its first N replies; ``--state FILE`` keeps its joints there.

base.py         what every emulator shares: a PyBullet arm that moves, a log, faults
niryo_one.py    the Niryo One TCP text server
niryo_ned.py    the Ned/Ned2 JSON server pyniryo talks to
servo_board.py  an InMoov servo board on a pseudo-terminal
"""

from __future__ import annotations

import json
import signal
import sys
import threading

from ...arg_types import count0
from .. import arms


def emulators() -> dict[str, str]:
    """Emulator kind -> the arm it moves by default, from the table of real arms (arms.py)."""
    return {entry.emulator: entry.robot for entry in arms.arms()}


def __getattr__(name: str):
    if name == "EMULATORS":  # the old name, kept: the table as it is now
        return emulators()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make(kind: str, robot: str = "", *, host="127.0.0.1", port=40001, faults=0, link=None,
         calibration=None, state_file=None):
    """The emulator ``kind`` (not yet serving: call ``serve_forever``, or :func:`start`)."""
    from ...arm.model import ArmModel

    try:
        entry = arms.by_emulator(kind)
    except arms.UnknownArm as err:
        raise ValueError(str(err)) from None
    arm = ArmModel.load(robot or entry.robot)
    cls = arms.load_class(entry.emulator_class)
    if entry.serial:
        return cls(arm, calibration, faults, link, state_file)
    return cls(arm, host, port, faults, state_file)


def start(emulator):
    """Serve in a daemon thread (tests, dry runs inside one process); returns the emulator."""
    threading.Thread(target=emulator.serve_forever, name="emulator", daemon=True).start()
    return emulator


def describe(kind: str, emulator) -> dict:
    out = {"emulator": kind, "robot": emulator.emulated.arm.name}
    if hasattr(emulator, "address"):
        out["host"], out["port"] = emulator.address
    else:
        out["port"] = emulator.link or emulator.path
    return out


def run(args) -> int:
    emulator = make(args.kind, args.robot, host=args.host, port=args.port, faults=args.faults,
                    link=args.link, calibration=args.calibration, state_file=args.state)

    def finish(*_):
        emulator.close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    print(json.dumps(describe(args.kind, emulator)), flush=True)
    emulator.serve_forever()
    return 0


def _port(text: str) -> int:
    import argparse

    from ..driver import tcp_port

    try:
        return tcp_port(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_parser(sub) -> None:
    e = sub.add_parser("emulate", help="an emulated arm speaking a real protocol (dry runs)")
    e.add_argument("kind", choices=sorted(emulators()))
    e.add_argument("--robot", default="", help="arm to move (default: the emulator's own)")
    e.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to open it to the network")
    e.add_argument("--port", type=_port, default=40001, help="TCP port (0 = any free port)")
    e.add_argument("--link", default=None, help="serial arms: a fixed path to its terminal")
    e.add_argument("--calibration", default=None, help="serial arms: calibration YAML")
    e.add_argument("--faults", type=count0, default=0, help="spoil the first N replies")
    e.add_argument("--state", default=None, help="keep the joints in this JSON file")
    e.set_defaults(func=run)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m robot_ik_nn.hardware.emulators")
    add_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["emulate", *sys.argv[1:]])
    raise SystemExit(ns.func(ns))
