"""A client of a running session, without the ``ros2`` command line: targets out to the inference
node, its verdicts and joint commands in, the arm node's status and its ``~/stop`` and
``~/resume`` services. rclpy spins in a background thread, so the caller just waits.

    client = SessionClient(arm_node=None)  # the arm node found by its services
    answer = client.ask((0.25, 0.0, 0.2), (0.0, 0.7071068, 0.0, 0.7071068), "base_link")
    client.call("resume")
    client.close()

The arm node is whichever node offers ``~/stop`` and ``~/resume`` (std_srvs/srv/Trigger) and
publishes ``~/end_effector_pose``: ``/arm_node`` under ``launch deploy``, ``/sim_node`` under
``launch inference``. With no ROS node at all after DISCOVERY_S seconds, no session is running
(NoSession), and the caller is told at once rather than after its whole timeout.

Used by ``robot-ik-nn send | resume | stop`` (cli/ros.py) and ``bench --hardware``.
"""

from __future__ import annotations

import os
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
DISCOVERY_S = 5.0  # s: a session's nodes are seen within this (DDS discovery on one host: ~1 s)
# s: the arm nodes are taken as all found once the graph has not changed for this long (a
# second arm node went unseen with 1 s, beside a test run on both cores)
GRAPH_QUIET_S = 2.0
# s after the client starts: how long ``send`` looks for the session's arm node (its services are
# discovered after the inference node's topics: 2 s from the first verdict missed it under CI load)
ARM_DISCOVERY_S = 2 * DISCOVERY_S
SETTLE_S = 0.3  # s: the arm node's state is read from its first ~/status this long after a verdict
START = (
    "start one in another shell (robot-ik-nn launch deploy, or launch inference "
    "model_dir:=FOLDER) with the same ROS_DOMAIN_ID"
)


class NoSession(LookupError):
    """No node to talk to: no session running, or none by the name given (the message says
    which nodes there are)."""


class SeveralArmNodes(LookupError):
    """More than one arm node: the caller names one (the message lists them)."""


@dataclass
class Answer:
    """The inference node's verdict on one target: the answer's joints (its ~/status), the first
    joint command that followed it (the answer itself, or with ``stream`` the first rate-limited
    setpoint toward it) and the arm node's state after it."""

    verdict: str  # "solved", "best effort: ...", "rejected: ..."
    level: int  # diagnostic_msgs' OK 0, WARN 1, ERROR 2
    values: dict = field(default_factory=dict)  # pos_err_mm, rot_err_deg, latency_ms, ...
    names: list = field(default_factory=list)  # the joints' names ...
    joints: list | None = None  # ... the answer's joints (rad); None when there is no answer
    setpoint: list | None = None  # the first command on the command topic; None: nothing sent
    arm: str = ""  # the arm node's state after the command ("" when no arm node was heard)
    held: bool = False  # the arm node holds (stopped, not resumed) or refused the command

    @property
    def solved(self) -> bool:
        return self.verdict == "solved"


def _level(value) -> int:
    return int.from_bytes(bytes(value), "little") if isinstance(value, bytes) else int(value)


class SessionClient:
    def __init__(
        self,
        arm_node: str | None = "/arm_node",
        inference: str = "/inference_node",
        command_topic: str = "/joint_command",
    ):
        """``arm_node`` None: found by its services when first needed (find_arm_node)."""
        self._own = not rclpy.ok()
        if self._own:
            rclpy.init()
        self.node = rclpy.create_node("robot_ik_nn_client")
        self.started = time.monotonic()
        self.arm_node, self.inference = None, inference
        self.targets = self.node.create_publisher(
            PoseStamped, f"{inference}/target_pose", RELIABLE
        )
        self.levels: list[tuple[float, int, str]] = []  # the arm node's ~/status, newest last
        self.states: list[tuple[float, str, dict]] = []  # ... and its values
        self.answers: list[str] = []  # the inference node's verdicts, newest last
        self._verdicts: list[tuple[int, str, dict]] = []
        self.node.create_subscription(
            DiagnosticArray, f"{inference}/status", self._answer, RELIABLE
        )
        self.commands: list[JointState] = []
        self.node.create_subscription(JointState, command_topic, self.commands.append, RELIABLE)
        self.services = {}
        if arm_node is not None:
            self.use_arm_node(arm_node)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._spin = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while self._spin:
            self.executor.spin_once(timeout_sec=0.05)

    def use_arm_node(self, name: str) -> None:
        """Talk to arm node ``name``: its ``~/status`` heard, its ``~/stop`` and ``~/resume``."""
        self.arm_node = name
        self.node.create_subscription(DiagnosticArray, f"{name}/status", self._status, RELIABLE)
        self.services = {
            call: self.node.create_client(Trigger, f"{name}/{call}") for call in ("stop", "resume")
        }

    def _status(self, msg) -> None:
        for s in msg.status:
            now = time.monotonic()
            self.levels.append((now, _level(s.level), s.message))
            self.states.append((now, s.message, {kv.key: kv.value for kv in s.values}))

    # -- the ROS graph: which nodes there are -------------------------------------------------
    def node_names(self) -> list[str]:
        """The nodes of a session in the graph, by their full names: not hidden ones (``_``:
        the ros2 command line's daemon) nor clients like this one."""
        return sorted({
            ns.rstrip("/") + "/" + name
            for name, ns in self.node.get_node_names_and_namespaces()
            if not name.startswith("_") and name != self.node.get_name()
        })  # fmt: skip

    def trigger_services(self) -> list[str]:
        return sorted(
            name
            for name, types in self.node.get_service_names_and_types()
            if "std_srvs/srv/Trigger" in types
        )

    def arm_nodes(self) -> list[str]:
        """The nodes offering ``~/stop`` and ``~/resume`` (std_srvs/srv/Trigger) that publish
        ``~/end_effector_pose``: arm nodes (a calibration node offers the two services too)."""
        services = set(self.trigger_services())
        topics = {name for name, _ in self.node.get_topic_names_and_types()}
        return sorted(
            name[: -len("/stop")]
            for name in services
            if name.endswith("/stop")
            and name[: -len("/stop")] + "/resume" in services
            and name[: -len("/stop")] + "/end_effector_pose" in topics
        )

    def _no_session(self, waited: float) -> None:
        """Raise NoSession when the graph holds no other node after ``waited`` seconds."""
        if not self.node_names():
            raise NoSession(
                f"no session is running: no ROS 2 node answered in {waited:g} s "
                f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}); {START}"
            )

    def look_for_arm_node(self, timeout: float | None = None) -> str:
        """Use the session's arm node if there is exactly one (found within ``timeout`` seconds;
        None: until ARM_DISCOVERY_S after the client started, at least 2 s); otherwise say why
        its state will not be known ("" when found)."""
        if timeout is None:
            timeout = max(2.0, ARM_DISCOVERY_S - (time.monotonic() - self.started))
        end = time.monotonic() + timeout
        while not (found := self.arm_nodes()) and time.monotonic() < end:
            time.sleep(0.05)
        if len(found) == 1:
            self.use_arm_node(found[0])
            return ""
        if found:
            return f"several arm nodes ({', '.join(found)}): name one with --arm-node"
        return "no arm node found (none offers ~/stop and ~/resume)"

    def find_arm_node(self, timeout: float = 10.0) -> str:
        """The one arm node of the session (see arm_nodes), found within ``timeout`` seconds;
        NoSession when there is none, SeveralArmNodes when there are more (discovery goes on
        after the first is found until the graph's nodes and arm nodes have not changed for
        GRAPH_QUIET_S: a second arm node's topics can arrive seconds after its name on a busy
        machine)."""
        start = time.monotonic()
        found, seen, settled_at = [], None, None
        while time.monotonic() - start < timeout:
            found = self.arm_nodes()
            now = (tuple(found), tuple(sorted(self.node_names())))
            if now != seen:
                seen, settled_at = now, time.monotonic()
            if found and time.monotonic() - settled_at >= GRAPH_QUIET_S:
                break
            if not found and time.monotonic() - start >= min(DISCOVERY_S, timeout):
                self._no_session(time.monotonic() - start)
            time.sleep(0.05)
        if len(found) == 1:
            return found[0]
        if found:
            raise SeveralArmNodes(
                f"several arm nodes offer ~/stop and ~/resume: {', '.join(found)}; name one "
                "with --arm-node"
            )
        triggers = self.trigger_services()
        raise NoSession(
            f"no arm node found in {timeout:g} s: none offers ~/stop and ~/resume "
            "(std_srvs/srv/Trigger) beside ~/end_effector_pose. Services of that type: "
            f"{', '.join(triggers) or 'none'}; nodes: {', '.join(self.node_names())}. Name the "
            "arm node with --arm-node"
        )

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

    def wait_for_inference(self, timeout: float) -> None:
        """Until the inference node takes targets; at once (after DISCOVERY_S) NoSession when no
        node runs, or when the inference node is not among those that do (naming the nodes
        that take targets); a node that is there but still starting is waited for."""
        start = time.monotonic()
        while self.targets.get_subscription_count() == 0:
            waited = time.monotonic() - start
            if waited >= min(DISCOVERY_S, timeout):
                self._no_session(waited)
                nodes = self.node_names()
                if self.inference not in nodes:
                    takers = sorted(
                        name
                        for name, types in self.node.get_topic_names_and_types()
                        if name.endswith("/target_pose")
                        and "geometry_msgs/msg/PoseStamped" in types
                        and self.node.count_subscribers(name) > 0
                    )
                    raise NoSession(
                        f"no node {self.inference} takes targets on "
                        f"{self.inference}/target_pose: the nodes running are "
                        f"{', '.join(nodes)}; target topics with a subscriber: "
                        f"{', '.join(takers) or 'none'}. Name the node with --inference-node"
                    )
            if waited >= timeout:
                raise TimeoutError(
                    f"timed out after {timeout:g} s waiting for {self.inference}/target_pose to "
                    "have a subscriber (the node is there: still starting? a first start "
                    "compiles the solver once)"
                )
            time.sleep(0.02)

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
        comes with a solved one, and the arm node's state after it). The target is sent again,
        freshly stamped, each second until a verdict comes, and after a verdict of "stale": the
        node refuses a target stamped long ago (a first message can wait for discovery) and one
        sent before it knows the arm. NoSession at once when no session runs."""
        self.wait_for_inference(timeout)
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
        answered = time.monotonic()
        if level < 2:  # a command may accompany an answer (published before the verdict, on
            try:  # another topic: it can arrive a little after it)
                self._until(lambda: len(self.commands) > commands, 1.0, "the joint command")
            except TimeoutError:
                pass  # a best effort the node does not command
        command = self.commands[commands] if len(self.commands) > commands else None
        names = values.pop("joint_names", "")
        joints = values.pop("joints", "")
        answer = Answer(
            verdict,
            level,
            values,
            names.split(",") if names else (list(command.name) if command is not None else []),
            [float(v) for v in joints.split(",")] if joints else None,
            list(command.position) if command is not None else None,
        )
        if command is not None:
            answer.arm, answer.held = self._arm_after(answered)
        return answer

    def _arm_after(self, since: float, timeout: float = 3.0) -> tuple[str, bool]:
        """The arm node's state in its first ``~/status`` SETTLE_S after ``since`` (it says one
        at least every half second), and whether it holds: stopped (not resumed), or refusing the
        commands. ("", False) when no arm node is known or heard."""
        if self.arm_node is None:
            return "", False
        since += SETTLE_S  # a status sent before the command reached the arm can come after
        try:
            at = self._until(
                lambda: next((s for s in self.states if s[0] > since), None), timeout,
                f"{self.arm_node}/status",
            )  # fmt: skip
        except TimeoutError:
            return "", False
        _, message, values = at
        held = values.get("enabled") == "False" or values.get("connected") == "False"
        return message, held or message.startswith("refusing commands")

    def call(self, name: str, timeout: float = 10.0) -> bool:
        """Call the arm node's ``~/stop`` or ``~/resume``; whether it succeeded."""
        return self.call_with_message(name, timeout)[0]

    def call_with_message(self, name: str, timeout: float = 10.0) -> tuple[bool, str]:
        if self.arm_node is None:
            self.use_arm_node(self.find_arm_node(timeout))
        client = self.services[name]
        start = time.monotonic()
        while not client.wait_for_service(timeout_sec=0.2):
            waited = time.monotonic() - start
            if waited >= min(DISCOVERY_S, timeout):
                self._no_session(waited)
            if waited >= timeout:
                raise TimeoutError(
                    f"{self.arm_node}/{name} was not offered in {timeout:g} s: is the arm node "
                    f"running? Arm nodes found: {', '.join(self.arm_nodes()) or 'none'}"
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
