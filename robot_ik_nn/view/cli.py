"""``robot-ik-nn view``: the arm in the browser.

robot-ik-nn view models/niryo_one [--port 8080] [--host 127.0.0.1]
robot-ik-nn view --robot kuka_iiwa            (no network: mid-range and restarts)
robot-ik-nn view --ros --robot niryo_one [--learning]   (the arm of a running ROS session)
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from ..arg_types import port


def register(sub) -> None:
    v = sub.add_parser(
        "view", help="a web page with the arm in 3-D, a target to drag and the answer live"
    )
    v.add_argument("model", nargs="?", help="a model folder or its exported .tar.gz")
    v.add_argument("--robot", help="an arm without a model: a named arm or a URDF path")
    v.add_argument("--base", help="with --robot: the base link (default: the URDF's root)")
    v.add_argument(
        "--tip", help="with --robot: the tip link (default: the only leaf; needed at a branch)"
    )
    v.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to open it to the network")
    v.add_argument("--port", type=port, default=8080, help="the page's TCP port")
    v.add_argument(
        "--no-collision-check",
        action="store_true",
        help="allow answers where the arm collides with itself (checked by default)",
    )
    v.add_argument(
        "--ros",
        action="store_true",
        help="connect to a running session: the arm from /joint_states, the handle's targets "
        "to /inference_node/target_pose (needs rclpy)",
    )
    v.add_argument(
        "--learning",
        action="store_true",
        help="with --ros: also the learner node's network drawing, error curve and demo targets",
    )
    v.set_defaults(func=run)


def session_command(session: str, robot: str, model_dir: str, port: str) -> list[str]:
    """The page beside a launch session (``view:=true``), as a process of its own."""
    command = ["robot-ik-nn", "view", "--ros", "--port", str(port)]
    if session == "inference" and model_dir:
        return command + [model_dir]
    return command + ["--robot", robot] + (["--learning"] if session == "train" else [])


def _usage(message: str) -> None:
    print(f"robot-ik-nn view: error: {message}", file=sys.stderr)
    raise SystemExit(2)  # a usage error, as argparse's


def build(args):
    """The page for ``args`` (its server already listening)."""
    from ..ik.settings import IKSettings
    from ..ik.solver import Solver
    from .page import ArmPage

    if bool(args.model) == bool(args.robot):
        _usage(
            "give a model folder or --robot, not both (a model knows its arm)"
            if args.model
            else "give a model folder or --robot"
        )
    chain = {"base": getattr(args, "base", None), "tip": getattr(args, "tip", None)}
    if args.model and any(chain.values()):
        _usage("--base and --tip go with --robot (a model knows its chain)")
    if getattr(args, "learning", False) and not getattr(args, "ros", False):
        _usage("--learning shows a ROS learner node's training: give --ros too")
    settings = IKSettings(collision_check=not args.no_collision_check)
    if args.model:
        solver = Solver.load(args.model, settings)
    else:
        from ..arm.model import ArmModel

        solver = Solver(ArmModel.load(args.robot, **chain), None, settings)
    title = f"{solver.arm.name}, " + (
        f"model {Path(args.model).name}" if args.model else "no network"
    )
    if getattr(args, "learning", False):
        title = f"{solver.arm.name}: the learner node training"
    return ArmPage(solver, host=args.host, port=args.port, title=title)


def run(args) -> int:
    try:
        import viser  # noqa: F401
        import yourdfpy  # noqa: F401
    except ImportError as err:
        print(f"robot-ik-nn view needs viser and yourdfpy: pip install .[view] ({err})")
        return 1
    link, RosLink = None, None
    if getattr(args, "ros", False):
        try:
            from ..nodes.view_link import RosLink
        except ImportError as err:
            print(f"robot-ik-nn view --ros needs rclpy: source ROS 2 or pip install the ROS 2 "
                  f"Python wheels ({err})", file=sys.stderr)
            return 1
    page = build(args)
    if RosLink is not None:
        link = RosLink(page, learning=args.learning)
    stop, interrupted = threading.Event(), threading.Event()

    def on_ctrl_c(*_):  # a flag, not KeyboardInterrupt: raised inside a lock's handling it can
        interrupted.set()  # leave the lock released twice ("release unlocked lock"); and with
        stop.set()  # --ros, rclpy's own handler shut the context under the spinning thread

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, on_ctrl_c)
    print(f"view ready: http://{args.host}:{page.port}", flush=True)
    try:
        page.wait(stop)
    finally:
        if link is not None:
            link.close()
    return 130 if interrupted.is_set() else 0
