"""``robot-ik-nn launch``: a ROS 2 session (the launch file's nodes) in one process."""

from __future__ import annotations


def cmd_launch(args) -> int:
    from ..nodes.session import run_session

    return run_session(args.session, args.arguments)



def register(sub) -> None:
    la = sub.add_parser(
        "launch", help="run a ROS 2 session (the launch file's nodes) in one process"
    )
    la.add_argument(
        "session", choices=["train", "inference", "display", "deploy", "calibrate"]
    )
    la.add_argument("arguments", nargs="*", metavar="name:=value")
    la.set_defaults(func=cmd_launch)
