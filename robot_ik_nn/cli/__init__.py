"""``robot-ik-nn``: train, evaluate and use IK networks; works without ROS.

robot-ik-nn train --robot niryo_one --minutes 5 --out models/niryo_one [--view]
robot-ik-nn eval models/niryo_one --targets 10000 [--json]
robot-ik-nn solve models/niryo_one --xyz 0.25 0 0.3 --quat 0 0.7071 0 0.7071 [--json]
robot-ik-nn solve models/niryo_one --path poses.csv [--start J1 ... J6]   (a whole path, as CSV)
robot-ik-nn bench models/niryo_one [--peers] [--json] [--out FILE]
robot-ik-nn export models/niryo_one [--out niryo_one.tar.gz] [--onnx]
robot-ik-nn merge models/left models/right --out models/merged [--minutes 3]
robot-ik-nn launch train|inference|display|deploy [name:=value ...]     (needs rclpy)
robot-ik-nn resume | send --xyz X Y Z [--quat X Y Z W] | stop    (a running session; rclpy)
robot-ik-nn view models/niryo_one [--port 8080]    (a web page: needs viser, yourdfpy)

The modules of this package, each with one ``register(subparsers)`` hook (the sub-commands it
adds, each bound to the function that runs it):

    __init__.py    main(): the parser from parts(), the refusals every command shares
    __main__.py    python -m robot_ik_nn.cli
    common.py      use_threads(): the CPU threads numba (and torch) may use; say_if_compiling()
    exit_codes.py  the exit codes, one table (a leaf: the commands import it)
    train.py       train, merge
    train_run.py   train --nproc under torchrun; the stop between steps (signals, stop file)
    solve.py       eval, solve (solve_path.py: solve --path)
    calibrate.py   calibrate, true-arm
    marker.py      marker (a printable ArUco marker for the camera tracker)
    collisions.py  collisions
    bench.py       bench (each mode measures; one block writes and prints)
    export.py      export
    launch.py      launch
    ros.py         send, resume, stop (a running session, through nodes/client.py)
    ../view/cli.py       view              (beside the code it drives)
    ../hardware/cli.py   servo-template, emulate
    ../arg_types.py      the argument types they share (a leaf: imports nothing of the package)
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys

from ..arg_types import count
from .exit_codes import (  # noqa: F401  (the table, re-exported: cli.EXIT_CODES)
    BEST_EFFORT,
    EXIT_CODES,
    FAILED,
    HELD,
    NO_ANSWER,
    REJECTED,
    SOLVED,
    USAGE,
    exit_codes_text,
)


def parts() -> tuple:
    """The dispatch table: the modules whose register() hooks add the sub-commands, in --help's
    order (imported here, on use, so that importing one part never loads the others)."""
    from ..hardware import cli as hardware_cli
    from ..view import cli as view_cli
    from . import bench, calibrate, collisions, export, launch, marker, ros, solve, train

    return (
        train, solve, calibrate, marker, collisions, bench, export, launch, ros, view_cli,
        hardware_cli,
    )


def parser() -> argparse.ArgumentParser:
    """The command line's words, each sub-command bound (``func``) to what it runs."""
    p = argparse.ArgumentParser(
        prog="robot-ik-nn",
        description=__doc__.split("\n")[0].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=exit_codes_text(),
    )
    p.add_argument(
        "--threads",
        type=count,
        default=None,
        help="CPU threads for batches and training (default: all cores)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for part in parts():
        part.register(sub)
    return p


def _stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's stack: what a run that will not stop is doing."""
    if not hasattr(signal, "SIGUSR1"):  # Windows
        return
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, OSError):  # stderr is no file (captured, embedded)
        pass


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None and "spatialgeometry" in sys.modules:
        # roboticstoolbox's scene graph (bench --peers) leaks its nanobind objects by design and
        # nanobind lists each one at interpreter exit: dozens of lines after the results. The
        # command is done and its files are written; leave without the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    _stacks_on_sigusr1()
    args.argv = list(sys.argv[1:] if argv is None else argv)
    from ..arm.model import RobotModelError
    from ..model_dir import ModelDirError

    # what a user can mend: a bad value, a missing or busy file or port (OSError)
    refusals = (ModelDirError, RobotModelError, ValueError, OSError)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:
        # imported only by commands that train
        training = sys.modules.get("robot_ik_nn.learn.training")
        if isinstance(err, refusals) or (
            training is not None and isinstance(err, training.TrainingError)
        ):
            print(f"robot-ik-nn {args.command}: error: {err}", file=sys.stderr)
            return USAGE
        raise
    except KeyboardInterrupt:
        return 130
