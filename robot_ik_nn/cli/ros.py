"""``robot-ik-nn send | resume | stop``: talk to a running session (``robot-ik-nn launch deploy``,
``ros2 launch``) without the ``ros2`` command line, which the PyPI install does not have.

    robot-ik-nn resume                                   # the arm node takes commands again
    robot-ik-nn send --xyz 0.25 0 0.2 --quat 0 0.7071068 0 0.7071068
    robot-ik-nn stop                                     # the arm node holds and refuses commands

``send`` prints the inference node's verdict, the answer's joints, the setpoint it commanded
(the answer itself, or with ``stream`` the first rate-limited step toward it) and the arm node's
state after it: held (stopped, not resumed) when it does not move. The arm node is found by its
services (``~/stop``, ``~/resume``: ``/arm_node`` under ``launch deploy``, ``/sim_node`` under
``launch inference``) unless ``--arm-node`` names it. Exit codes: the table in ``robot-ik-nn
--help`` (0 solved and commanded, 3 best effort, 4 rejected, 5 held, 6 no answer: no session
running, said within seconds, or no verdict within ``--timeout``).
"""

from __future__ import annotations

import argparse
import json
import sys

from .exit_codes import BEST_EFFORT, HELD, NO_ANSWER, REJECTED, SOLVED, USAGE, exit_codes_text


def _client(args):
    from ..nodes.client import SessionClient  # rclpy: only when a command talks to a session

    return SessionClient(args.arm_node, args.inference_node, args.command_topic)


def _frame(args) -> str:
    if args.frame:
        return args.frame
    from ..arm.model import ArmModel

    return ArmModel.load(args.robot).base


def _failed(args, error) -> int:
    """No session, no such node or nothing answered in time: NO_ANSWER; several arm nodes to
    choose from: USAGE (name one)."""
    from ..nodes.client import SeveralArmNodes

    print(f"robot-ik-nn {args.command}: error: {error}", file=sys.stderr)
    return USAGE if isinstance(error, SeveralArmNodes) else NO_ANSWER


def cmd_send(args) -> int:
    from ..nodes.client import NoSession, SeveralArmNodes

    frame = _frame(args)
    client = _client(args)
    try:
        client.wait_for_inference(args.timeout)
        arm_note = "" if client.arm_node else client.look_for_arm_node()
        answer = client.ask(args.xyz, args.quat, frame, timeout=args.timeout)
    except (NoSession, SeveralArmNodes, TimeoutError) as error:
        return _failed(args, error)
    finally:
        client.close()
    if args.json:
        print(json.dumps({
            "verdict": answer.verdict,
            "solved": answer.solved,
            "joint_names": answer.names,
            "joints": answer.joints,  # the answer
            "setpoint": answer.setpoint,  # what was commanded first (a stream's first step)
            "arm_node": client.arm_node,
            "arm": answer.arm or arm_note,
            "held": answer.held,
            **answer.values,
        }))
    else:
        _print_answer(args, answer, client.arm_node, arm_note)
    if answer.level >= 2 or answer.joints is None:
        return REJECTED
    if answer.setpoint is not None and answer.held:  # commanded, but the arm does not move
        return HELD
    return SOLVED if answer.solved else BEST_EFFORT


def _print_answer(args, answer, arm_node, arm_note: str) -> None:
    print(f"{args.inference_node}: {answer.verdict}")
    for key in ("pos_err_mm", "rot_err_deg", "latency_ms"):
        if key in answer.values:
            print(f"  {key}: {answer.values[key]}")
    if answer.joints is not None:
        print("  the answer's joints (rad):")
        for name, value in zip(answer.names, answer.joints):
            print(f"    {name:>18} {value: .6f}")
    if answer.setpoint is None:
        print(f"  nothing commanded on {args.command_topic}")
    elif answer.joints is not None and answer.setpoint == answer.joints:
        print(f"  commanded on {args.command_topic}: the answer itself")
    else:
        print(
            f"  setpoint commanded on {args.command_topic} (rad): the first step of the node's "
            "rate-limited stream toward the answer (stream:=true), not the answer"
        )
        for name, value in zip(answer.names, answer.setpoint):
            print(f"    {name:>18} {value: .6f}")
    if answer.held:
        print(f"{arm_node}: HELD, nothing moved: {answer.arm} (robot-ik-nn resume lets it move)")
    elif answer.arm:
        print(f"{arm_node}: {answer.arm}")
    elif arm_note and answer.setpoint is not None:
        print(f"  whether the arm moved is not known: {arm_note}")


def _trigger(args, name: str) -> int:
    from ..nodes.client import NoSession, SeveralArmNodes

    client = _client(args)
    try:
        ok, message = client.call_with_message(name, timeout=args.timeout)
    except (NoSession, SeveralArmNodes, TimeoutError) as error:
        return _failed(args, error)
    finally:
        client.close()
    print(f"{client.arm_node}/{name}: {message or ('done' if ok else 'refused')}")
    return SOLVED if ok else REJECTED


def cmd_resume(args) -> int:
    return _trigger(args, "resume")


def cmd_stop(args) -> int:
    return _trigger(args, "stop")


def _common(p, timeout: float) -> None:
    p.add_argument(
        "--arm-node",
        help="the arm node's name (default: the one node offering ~/stop and ~/resume, "
        "std_srvs/srv/Trigger: /arm_node under launch deploy, /sim_node under launch inference)",
    )
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
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=exit_codes_text(),
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
        t = sub.add_parser(
            name, help=does, formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=exit_codes_text(),
        )  # fmt: skip
        _common(t, 10.0)
        t.set_defaults(func=run)
