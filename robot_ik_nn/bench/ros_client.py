"""A client of the deploy session for the hardware bench: targets out, the arm's status in, and
its ``~/stop`` / ``~/resume`` services; rclpy spins in a background thread."""

from __future__ import annotations

import threading
import time


class Client:
    def __init__(self, arm_node: str = "/arm_node", inference: str = "/inference_node"):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        from ..nodes.common import RELIABLE

        self._own = not rclpy.ok()
        if self._own:
            rclpy.init()
        self.node = rclpy.create_node("bench_hardware_client")
        self.PoseStamped = PoseStamped
        self.targets = self.node.create_publisher(PoseStamped, f"{inference}/target_pose",
                                                  RELIABLE)
        self.levels: list[tuple[float, int, str]] = []
        self.node.create_subscription(DiagnosticArray, f"{arm_node}/status", self._status,
                                      RELIABLE)
        self.answers: list[str] = []  # the inference node's verdicts, newest last
        self.node.create_subscription(DiagnosticArray, f"{inference}/status", self._answer,
                                      RELIABLE)
        self.services = {name: self.node.create_client(Trigger, f"{arm_node}/{name}")
                         for name in ("stop", "resume")}
        self.Trigger = Trigger
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
            self.levels.append((time.monotonic(), int.from_bytes(bytes(s.level), "little")
                                if isinstance(s.level, bytes) else int(s.level), s.message))

    def _answer(self, msg) -> None:
        self.answers += [s.message for s in msg.status]

    def _until(self, condition, timeout: float, what: str) -> float:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = condition()
            if found:
                return found
            time.sleep(0.01)
        raise TimeoutError(f"timed out after {timeout} s waiting for {what}")

    def wait_for_status(self, timeout: float) -> float:
        return self._until(lambda: self.levels and self.levels[-1][1] < 2 and time.monotonic(),
                           timeout, "the arm node to report a connected arm")

    def wait_subscribed(self, timeout: float) -> float:
        return self._until(lambda: self.targets.get_subscription_count() > 0 and time.monotonic(),
                           timeout, "the inference node's target subscription")

    def wait_level(self, level: int, timeout: float) -> float:
        """When ``~/status`` first said ``level`` from now on (monotonic seconds)."""
        since = len(self.levels)

        def seen():
            for t, lv, _ in self.levels[since:]:
                if lv == level:
                    return t
            return None

        return self._until(seen, timeout, f"status level {level}")

    def wait_level_below(self, level: int, timeout: float) -> float:
        since = len(self.levels)

        def seen():
            for t, lv, _ in self.levels[since:]:
                if lv < level:
                    return t
            return None

        return self._until(seen, timeout, f"status level below {level}")

    def send(self, position, quaternion, frame: str) -> None:
        msg = self.PoseStamped()
        msg.header.frame_id = frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, position)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = map(float, quaternion)
        self.targets.publish(msg)

    def call(self, name: str, timeout: float = 10.0) -> bool:
        client = self.services[name]
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} not offered")
        future = client.call_async(self.Trigger.Request())
        self._until(future.done, timeout, f"the {name} service's answer")
        return bool(future.result().success)

    def close(self) -> None:
        import rclpy

        self._spin = False
        self.thread.join(2.0)
        self.node.destroy_node()
        if self._own and rclpy.ok():
            rclpy.shutdown()
