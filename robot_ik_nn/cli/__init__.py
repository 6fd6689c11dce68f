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
    common.py      use_threads(): the CPU threads numba (and torch) may use
    train.py       train, merge
    train_run.py   train --nproc under torchrun; the stop between steps (signals, stop file)
    solve.py       eval, solve
    calibrate.py   calibrate, true-arm
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
import textwrap

from ..arg_types import count

# The exit codes, one table for every command (docs/cli.md says the same; a test compares them):
# solve, send, resume and stop answer with these; the rest use 0, 1, 2, 130 and 141.
SOLVED, FAILED, USAGE, BEST_EFFORT, REJECTED, HELD, NO_ANSWER = 0, 1, 2, 3, 4, 5, 6
EXIT_CODES = (
    (SOLVED, "solved: every target asked for, within the tolerances (send: and commanded, the "
     "arm free to move; resume, stop: done)"),
    (FAILED, "failed: a part this install lacks, or an unexpected error (a traceback)"),
    (USAGE, "usage error: a bad option, value or file (the message names it)"),
    (BEST_EFFORT, "best effort: an answer short of the tolerances, printed with how far (solve "
     "--path: a target missed or a step over --max-step left)"),
    (REJECTED, "rejected: no answer, or one the safety checks refuse to command (the reason "
     "printed; resume, stop: the arm node refused)"),
    (HELD, "held: send's answer commanded, but the arm holds (before resume, after stop): "
     "nothing moved"),
    (NO_ANSWER, "no answer: no session running, or nothing answered within --timeout (the "
     "node or service named)"),
    (130, "interrupted (Ctrl-C)"),
    (141, "the reader of the output went away (piped into head)"),
)


def exit_codes_text() -> str:
    """The table of exit codes, for --help's epilog."""
    rows = (
        textwrap.fill(text, 79, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
        for code, text in EXIT_CODES
    )
    return "exit codes:\n" + "\n".join(rows)


def parts() -> tuple:
    """The dispatch table: the modules whose register() hooks add the sub-commands, in --help's
    order (imported here, on use, so that importing one part never loads the others)."""
    from ..hardware import cli as hardware_cli
    from ..view import cli as view_cli
    from . import bench, calibrate, collisions, export, launch, ros, solve, train

    return (
        train, solve, calibrate, collisions, bench, export, launch, ros, view_cli, hardware_cli
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
