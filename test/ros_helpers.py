"""Helpers for tests that spin real rclpy nodes over DDS (no mocks)."""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node


def node_process(module: str, params: dict, *remaps: str, ros_args=()) -> subprocess.Popen:
    """Start ``python -m robot_ik_nn.nodes.<module>`` with parameters, as ros2 run would."""
    args = [sys.executable, "-m", f"robot_ik_nn.nodes.{module}", "--ros-args"]
    for k, v in params.items():
        args += ["-p", f"{k}:={v}"]
    for r in remaps:
        args += ["-r", r]
    args += list(ros_args)
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_die_with_parent,
    )


def _die_with_parent():
    """A node started by a test ends with the test process, even when that one is killed."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop(proc: subprocess.Popen, timeout: float = 30) -> str:
    if proc.poll() is None:
        proc.send_signal(2)  # SIGINT, as Ctrl-C
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    out = proc.stdout.read() if proc.stdout else ""
    return out


class Probe:
    """A test node spinning in a background thread; collects messages per topic."""

    def __init__(self, name: str = "probe"):
        if not rclpy.ok():
            rclpy.init()
        self.node = Node(name)
        self.received: dict[str, list] = {}
        self.times: dict[str, list] = {}
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self.paused = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while not self._stop.is_set():
            if self.paused.is_set():  # messages wait in DDS meanwhile
                time.sleep(0.01)
                continue
            self.executor.spin_once(timeout_sec=0.01)

    def listen(self, msg_type, topic: str, qos=10):
        self.received[topic], self.times[topic] = [], []

        def callback(msg):
            self.times[topic].append(time.perf_counter())
            self.received[topic].append(msg)

        return self.node.create_subscription(msg_type, topic, callback, qos)

    def wait_for(self, predicate, timeout: float, what: str = "condition"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate():
                return
            time.sleep(0.01)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def close(self):
        self._stop.set()
        self.thread.join()
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def publish_until(probe, publish, topic: str, timeout: float = 30.0, every: float = 1.0):
    """Publish (a fresh message each time) until something new arrives on ``topic``.

    Nodes in other processes discover each other at their own pace: a first target can reach
    the inference node before the arm's joint states do, and is rightly refused."""
    before = len(probe.received[topic])
    deadline = time.time() + timeout
    while time.time() < deadline:
        publish()
        until = time.time() + every
        while time.time() < until:
            if len(probe.received[topic]) > before:
                return
            time.sleep(0.01)
    raise AssertionError(f"nothing on {topic} after publishing for {timeout} s")


def set_parameter(probe, name, value, kind, node: str = "/inference_node"):
    """Set ``node``'s parameter ``name`` through its set_parameters service, as ``ros2 param
    set`` does; the service's result (``successful``, ``reason``)."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    client = probe.node.create_client(SetParameters, f"{node}/set_parameters")
    assert client.wait_for_service(10)
    field = {
        ParameterType.PARAMETER_DOUBLE: "double_value",
        ParameterType.PARAMETER_STRING: "string_value",
    }[kind]
    value_msg = ParameterValue(type=kind, **{field: value})
    future = client.call_async(
        SetParameters.Request(parameters=[Parameter(name=name, value=value_msg)])
    )
    probe.wait_for(future.done, 10, "set_parameters")
    return future.result().results[0]
