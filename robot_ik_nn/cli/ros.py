"""``robot-ik-nn send | resume | stop``: talk to a running session (``robot-ik-nn launch deploy``,
``ros2 launch``) without the ``ros2`` command line, which the PyPI install does not have.

    robot-ik-nn resume                                   # the arm node takes commands again
    robot-ik-nn send --xyz 0.25 0 0.2 --quat 0 0.7071068 0 0.7071068
    robot-ik-nn stop                                     # the arm node holds and refuses commands

``send`` prints the inference node's verdict and the joints it commanded; it exits 0 when the
target was solved, 1 when the node answered otherwise (best effort, rejected: the reason is
printed), 2 when no node answered in ``--timeout`` seconds (it names which).
"""

from __future__ import annotations

import json


def _client(args):
    from ..nodes.client import SessionClient  # rclpy: only when a command talks to a session

    return SessionClient(args.arm_node, args.inference_node, args.command_topic)


def _frame(args) -> str:
    if args.frame:
        return args.frame
    from ..arm.model import ArmModel

    return ArmModel.load(args.robot).base


def cmd_send(args) -> int:
    frame = _frame(args)
    client = _client(args)
    try:
        answer = client.ask(args.xyz, args.quat, frame, timeout=args.timeout)
    finally:
        client.close()
    if args.json:
        print(json.dumps({
            "verdict": answer.verdict,
            "solved": answer.solved,
            "joint_names": answer.names,
            "joints": answer.joints,
            **answer.values,
        }))
    else:
        print(f"{args.inference_node}: {answer.verdict}")
        for key in ("pos_err_mm", "rot_err_deg", "latency_ms"):
            if key in answer.values:
                print(f"  {key}: {answer.values[key]}")
        if answer.joints is None:
            print("  nothing commanded")
        else:
            print(f"  commanded on {args.command_topic} (rad):")
            for name, value in zip(answer.names, answer.joints):
                print(f"    {name:>18} {value: .6f}")
    return 0 if answer.solved else 1


def _trigger(args, name: str) -> int:
    client = _client(args)
    try:
        ok, message = client.call_with_message(name, timeout=args.timeout)
    finally:
        client.close()
    print(f"{args.arm_node}/{name}: {message or ('done' if ok else 'refused')}")
    return 0 if ok else 1


def cmd_resume(args) -> int:
    return _trigger(args, "resume")


def cmd_stop(args) -> int:
    return _trigger(args, "stop")


def _common(p, timeout: float) -> None:
    p.add_argument("--arm-node", default="/arm_node", help="the arm node's name")
    p.add_argument("--inference-node", default="/inference_node", help="the inference node")
    p.add_argument(
        "--command-topic", default="/joint_command", help="where the joint commands go"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        metavar="S",
        help=f"seconds to wait for the node to answer (default {timeout:g})",
    )


def register(sub) -> None:
    s = sub.add_parser(
        "send",
        help="send one target pose to a running inference node; print its verdict and command",
        description=__doc__.split("\n\n")[0].replace("``", ""),
    )
    s.add_argument(
        "--xyz", type=float, nargs=3, required=True, metavar=("X", "Y", "Z"),
        help="the tool's position in the base frame (m)",
    )
    s.add_argument(
        "--quat", type=float, nargs=4, required=True, metavar=("X", "Y", "Z", "W"),
        help="the tool's orientation, a unit quaternion (a pose target: docs/arms.md says which "
        "way each arm's tool axes point)",
    )
    s.add_argument(
        "--robot", default="niryo_one",
        help="the arm (a name or a URDF), for its base frame (default niryo_one)",
    )
    s.add_argument("--frame", help="the target's frame (default: the --robot arm's base link)")
    s.add_argument("--json", action="store_true", help="one JSON object")
    _common(s, 60.0)
    s.set_defaults(func=cmd_send)
    for name, does, run in (
        ("resume", "let a running arm node take commands again", cmd_resume),
        ("stop", "make a running arm node hold and refuse commands", cmd_stop),
    ):
        t = sub.add_parser(name, help=does)
        _common(t, 10.0)
        t.set_defaults(func=run)
