"""Running a planned session (session.py) in one process: all nodes on one rclpy executor.

The nodes' callbacks are short (a training run has its own thread), so one thread serves them."""

from __future__ import annotations

import importlib
import subprocess
import sys

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter

from .arm_node import ArmNode
from .calibration_node import CalibrationNode
from .common import shut_down_under_spin, take_down
from .inference_node import InferenceNode
from .sim_node import SimNode
from .tracker_node import TrackerNode

NODE_CLASSES = {
    "sim_node": SimNode,
    "arm_node": ArmNode,
    "learner_node": "learner_node.LearnerNode",  # torch: imported when a session trains
    "inference_node": InferenceNode,
    "tracker_node": TrackerNode,
    "calibration_node": CalibrationNode,
}


def node_class(executable: str):
    """The class of a planned node; one written as "module.Class" is imported now, and a
    missing optional package (torch for the learner) is named."""
    found = NODE_CLASSES[executable]
    if not isinstance(found, str):
        return found
    module, name = found.rsplit(".", 1)
    try:
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)
    except ModuleNotFoundError as err:
        raise RuntimeError(
            f"{executable} needs {err.name}, which is not installed (pip install '.[train]')"
        ) from err


def _overrides(parameters: dict) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in parameters.items()]


def run(planned, args=None) -> int:
    """Start ``planned`` nodes, spin until a session-ending node is done or Ctrl-C; 0: success."""
    rclpy.init(
        args=args if args is not None else [sys.argv[0]]
    )  # name:=value are ours, not remaps
    executor = SingleThreadedExecutor()  # callbacks run inline: none is in flight when we stop
    started, processes = [], []
    code = 0
    try:
        for spec in planned:
            if spec.command:  # a process beside the nodes (the emulator of a dry run)
                processes.append((spec.name, _process(spec.command)))
                continue
            if spec.external:
                print(
                    f"[launch] {spec.executable} skipped: it comes with a ROS 2 install "
                    "(not on PyPI); "
                    f"'ros2 launch robot_ik_nn ...' starts it",
                    file=sys.stderr,
                )
                continue
            remaps = [arg for a, b in spec.remappings for arg in ("-r", f"{a}:={b}")]
            node = node_class(spec.executable)(
                parameter_overrides=_overrides(spec.parameters),
                cli_args=["--ros-args", *remaps] if remaps else None,
            )
            started.append((spec, node))
            executor.add_node(node)
        enders = [node for spec, node in started if spec.ends_session]
        running = list(processes)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
            if any(getattr(node, "done", False) for node in enders):
                code = max(int(getattr(node, "exit_code", 0)) for node in enders)
                break
            for name, proc in [(n, p) for n, p in running if p.poll() is not None]:
                running.remove((name, proc))  # said, not left unseen
                print(
                    f"[launch] {name} ended with code {proc.returncode}; the nodes go on "
                    "without it",
                    file=sys.stderr,
                )
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 130
    except Exception as err:  # noqa: BLE001 - a node that cannot start ends the session with its reason
        if shut_down_under_spin():
            code = 130
        else:
            print(f"[launch] fatal: {err}", file=sys.stderr)
            code = 1
    finally:
        executor.shutdown(timeout_sec=5.0)  # no callback runs while the nodes are taken down
        take_down([node for _, node in reversed(started)])
        for _, proc in processes:
            proc.terminate()
            proc.wait(10)
    return code


# ``python -m`` would put the working folder first on sys.path: a robot_ik_nn/ folder there (a
# clone of the sources) would be run instead of the installed package
RUN_CLI = (
    "import os, runpy, sys; "
    "sys.path[:1] = [] if sys.path and sys.path[0] in ('', os.getcwd()) else sys.path[:1]; "
    "runpy.run_module('robot_ik_nn.cli', run_name='__main__')"
)


def _process(command: list[str]) -> subprocess.Popen:
    """Start ``command`` (``robot-ik-nn ...`` runs with this interpreter), output to ours."""
    if command[0] == "robot-ik-nn":
        command = [sys.executable, "-c", RUN_CLI, *command[1:]]
    print(f"[launch] starting {' '.join(command)}", file=sys.stderr)
    return subprocess.Popen(command)
