"""What the nodes share: QoS, declared parameters, messages, and running a node."""

from __future__ import annotations

import math
import sys

import rclpy
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

# Commands and states must arrive: reliable. Keep a few so a burst is not lost.
RELIABLE = QoSProfile(
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
    history=HistoryPolicy.KEEP_LAST,
)
# Readings of the arm (/joint_states): a best-effort subscription matches a reliable publisher
# and a best-effort one (drivers publish either; a reliable subscription misses the second and
# would only say "no joint state yet"). A lost reading is replaced by the next.
READINGS = QoSProfile(
    depth=10,
    reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
    history=HistoryPolicy.KEEP_LAST,
)


def declare(
    node, name: str, default, description: str, *, read_only: bool = False, lo=None, hi=None
):
    """Declare a parameter with a descriptor (description, range, read-only); its value."""
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    if lo is not None and isinstance(default, bool):
        raise TypeError("booleans have no range")
    if lo is not None and isinstance(default, float):
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)
        ]
    elif lo is not None and isinstance(default, int):
        descriptor.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=1)]
    return node.declare_parameter(name, default, descriptor).value


def live_parameters(node, attributes: dict, checks: dict | None = None) -> None:
    """Parameters that may change while the node runs: ``attributes`` maps a parameter name to
    the node attribute that holds its value; ``checks`` maps a name to a function returning an
    error message (or "") for a proposed value. Ranges and read-only are enforced by rclpy;
    a change is applied only when every proposed value passes."""
    checks = checks or {}

    def callback(params):
        for p in params:
            problem = checks[p.name](p.value) if p.name in checks else ""
            if problem:
                return SetParametersResult(successful=False, reason=f"{p.name}: {problem}")
        for p in params:
            if p.name in attributes:
                setattr(node, attributes[p.name], p.value)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(callback)


def stamp_seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def now_seconds(node) -> float:
    return node.get_clock().now().nanoseconds * 1e-9


def duration_msg(seconds: float):
    from builtin_interfaces.msg import Duration

    whole = math.floor(seconds)
    return Duration(sec=int(whole), nanosec=int(round((seconds - whole) * 1e9)) % 1_000_000_000)


LEVELS = {
    "ok": DiagnosticStatus.OK,
    "warn": DiagnosticStatus.WARN,
    "error": DiagnosticStatus.ERROR,
}


def status(
    name: str, level: str, message: str, values: dict, hardware_id: str = ""
) -> DiagnosticStatus:
    """A DiagnosticStatus; ``level`` is "ok", "warn" or "error"."""
    return DiagnosticStatus(
        level=LEVELS[level],
        name=name,
        message=message,
        hardware_id=hardware_id,
        values=[KeyValue(key=str(k), value=str(v)) for k, v in values.items()],
    )


def executor_for_latency():
    """rclpy's events executor where this ROS 2 has it (Jazzy and later: it wakes on each
    message instead of rebuilding a wait set), else the single-threaded one (Humble)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor()
    return EventsExecutor()


def spin_node(node_factory, args=None) -> int:
    """``main()`` of every node: init, build, spin until Ctrl-C, shutdown or the node's own end
    (a node with a true ``done`` attribute, such as a finished training run), then clean up.
    A node that cannot start says why and exits non-zero."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = node_factory()
        # one executor for the node's life (rclpy.spin_once would add and remove the node, and
        # rebuild its wait set, on every call)
        executor = executor_for_latency()
        executor.add_node(node)
        while rclpy.ok() and not getattr(node, "done", False):
            executor.spin_once(timeout_sec=0.1)
        code = int(getattr(node, "exit_code", 0))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as err:  # noqa: BLE001
        if shut_down_under_spin():
            return code
        name = node.get_name() if node is not None else "robot_ik_nn"
        print(f"[{name}] fatal: {err}", file=sys.stderr)
        code = 1
    finally:
        take_down([node] if node is not None else [])
    return code


def shut_down_under_spin() -> bool:
    """Whether rclpy's context is down: Ctrl-C's handler shuts it while an executor spins, and
    the spin then fails to build its wait set (an RCLError, not ExternalShutdownException, when
    the handler comes between the executor's check and the wait). That failure is the shutdown
    the user asked for, not an error to report."""
    return not rclpy.ok()


def take_down(nodes) -> None:
    """Close (a learner saves its model here), destroy, then shut rclpy down."""
    for node in nodes:
        close = getattr(node, "close", None)
        if close is not None:
            close()
        node.destroy_node()
    if rclpy.ok():
        rclpy.shutdown()
