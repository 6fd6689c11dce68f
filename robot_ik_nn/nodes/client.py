"""A client of a running session, without the ``ros2`` command line: targets out to the inference
node, its verdicts and joint commands in, the arm node's status and its ``~/stop`` and
``~/resume`` services. rclpy spins in a background thread, so the caller just waits.

    client = SessionClient()
    answer = client.ask((0.25, 0.0, 0.2), (0.0, 0.7071068, 0.0, 0.7071068), "base_link")
    client.call("resume")
    client.close()

Used by ``robot-ik-nn send | resume | stop`` (cli/ros.py) and ``bench --hardware``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from .common import RELIABLE

TARGET_STATUS = "inference_node: target"  # the name of the inference node's verdict on a target


@dataclass
class Answer:
    """The inference node's verdict on one target, and the joint command it sent (if any)."""

    verdict: str  # "solved", "best effort: ...", "rejected: ..."
    level: int  # diagnostic_msgs' OK 0, WARN 1, ERROR 2
    values: dict = field(default_factory=dict)  # pos_err_mm, rot_err_deg, latency_ms, ...
    names: list = field(default_factory=list)  # the commanded joints' names ...
    joints: list | None = None  # ... and positions (rad); None when nothing was commanded

    @property
    def solved(self) -> bool:
        return self.verdict == "solved"


def _level(value) -> int:
    return int.from_bytes(bytes(value), "little") if isinstance(value, bytes) else int(value)


class SessionClient:
    def __init__(
        self,
        arm_node: str = "/arm_node",
        inference: str = "/inference_node",
        command_topic: str = "/joint_command",
    ):
        self._own = not rclpy.ok()
        if self._own:
            rclpy.init()
        self.node = rclpy.create_node("robot_ik_nn_client")
        self.arm_node, self.inference = arm_node, inference
        self.targets = self.node.create_publisher(
            PoseStamped, f"{inference}/target_pose", RELIABLE
        )
        self.levels: list[tuple[float, int, str]] = []  # the arm node's ~/status, newest last
        self.node.create_subscription(
            DiagnosticArray, f"{arm_node}/status", self._status, RELIABLE
        )
        self.answers: list[str] = []  # the inference node's verdicts, newest last
        self._verdicts: list[tuple[int, str, dict]] = []
        self.node.create_subscription(
            DiagnosticArray, f"{inference}/status", self._answer, RELIABLE
        )
        self.commands: list[JointState] = []
        self.node.create_subscription(JointState, command_topic, self.commands.append, RELIABLE)
        self.services = {
            name: self.node.create_client(Trigger, f"{arm_node}/{name}")
            for name in ("stop", "resume")
        }
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._spin = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while self._spin:
            self.executor.spin_once(timeout_sec=0.05)

    def _status(self, msg) -> None:
        for s in msg.status:
            self.levels.append((time.monotonic(), _level(s.level), s.message))

    def _answer(self, msg) -> None:
        for s in msg.status:
            self.answers.append(s.message)
            if s.name == TARGET_STATUS:
                values = {kv.key: kv.value for kv in s.values}
                self._verdicts.append((_level(s.level), s.message, values))

    def _until(self, condition, timeout: float, what: str):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = condition()
            if found:
                return found
            time.sleep(0.01)
        raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")

    def wait_for_status(self, timeout: float) -> float:
        return self._until(
            lambda: self.levels and self.levels[-1][1] < 2 and time.monotonic(),
            timeout,
            "the arm node to report a connected arm",
        )

    def wait_subscribed(self, timeout: float) -> float:
        return self._until(
            lambda: self.targets.get_subscription_count() > 0 and time.monotonic(),
            timeout,
            f"{self.inference}/target_pose to have a subscriber (is the inference node running?)",
        )

    def wait_level(self, level: int, timeout: float) -> float:
        """When ``~/status`` first said ``level`` from now on (monotonic seconds)."""
        since = len(self.levels)

        def seen():
            return next((t for t, lv, _ in self.levels[since:] if lv == level), None)

        return self._until(seen, timeout, f"status level {level}")

    def wait_level_below(self, level: int, timeout: float) -> float:
        since = len(self.levels)

        def seen():
            return next((t for t, lv, _ in self.levels[since:] if lv < level), None)

        return self._until(seen, timeout, f"status level below {level}")

    def send(self, position, quaternion, frame: str) -> None:
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, position)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = map(float, quaternion)
        self.targets.publish(msg)

    def ask(self, position, quaternion, frame: str, timeout: float = 30.0) -> Answer:
        """Send one target and wait for the inference node's verdict on it (and the command that
        comes with a solved one). The target is sent again, freshly stamped, each second until a
        verdict comes, and after a verdict of "stale": the node refuses a target stamped long
        ago (a first message can wait for discovery) and one sent before it knows the arm."""
        self.wait_subscribed(timeout)
        end = time.monotonic() + timeout
        while True:
            verdicts, commands = len(self._verdicts), len(self.commands)
            self.send(position, quaternion, frame)
            try:
                self._until(lambda n=verdicts: len(self._verdicts) > n, 1.0, "a verdict")
            except TimeoutError:
                if time.monotonic() > end:
                    raise TimeoutError(
                        f"no verdict from {self.inference} in {timeout:g} s (still starting? a "
                        "first solve compiles the kernel once)"
                    ) from None
                continue
            level, verdict, values = self._verdicts[verdicts]
            if "stale" not in verdict or time.monotonic() > end:
                break
        if level < 2:  # a command may accompany an answer (published before the verdict, on
            try:  # another topic: it can arrive a little after it)
                self._until(lambda: len(self.commands) > commands, 1.0, "the joint command")
            except TimeoutError:
                pass  # a best effort the node does not command
        command = self.commands[commands] if len(self.commands) > commands else None
        return Answer(
            verdict,
            level,
            values,
            list(command.name) if command is not None else [],
            list(command.position) if command is not None else None,
        )

    def call(self, name: str, timeout: float = 10.0) -> bool:
        """Call the arm node's ``~/stop`` or ``~/resume``; whether it succeeded."""
        return self.call_with_message(name, timeout)[0]

    def call_with_message(self, name: str, timeout: float = 10.0) -> tuple[bool, str]:
        client = self.services[name]
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(
                f"{self.arm_node}/{name} was not offered in {timeout:g} s: is the arm node "
                "running?"
            )
        future = client.call_async(Trigger.Request())
        self._until(future.done, timeout, f"the answer of {self.arm_node}/{name}")
        result = future.result()
        return bool(result.success), result.message

    def close(self) -> None:
        self._spin = False
        self.thread.join(2.0)
        self.node.destroy_node()
        if self._own and rclpy.ok():
            rclpy.shutdown()
