"""``output:=action``: the inference node sends each commanded answer as a
control_msgs/action/FollowJointTrajectory goal (ros2_control's joint_trajectory_controller)
instead of publishing ``<controller>/joint_trajectory``.

Goals carry the path and goal tolerances of the parameters; a new target pre-empts the running
goal (it is cancelled first); ``~/stop`` (std_srvs/Trigger) cancels it, or the goal sent and not
yet accepted as soon as the controller accepts it; each goal's end
(succeeded, aborted with the controller's reason, cancelled, rejected) is reported on
``~/status``. The wording is robot_ik_nn/trajectory_outcome.py's.
"""

from __future__ import annotations

from rclpy.action import ActionClient
from std_srvs.srv import Trigger

from ..trajectory_outcome import outcome, tolerances


class TrajectoryAction:
    def __init__(self, node, action_name: str, report):
        from control_msgs.action import FollowJointTrajectory  # only with output:=action

        self.node, self.report = node, report  # report(level, message, values)
        self.Goal = FollowJointTrajectory.Goal
        self.ErrorCodes = FollowJointTrajectory.Result
        self.client = ActionClient(node, FollowJointTrajectory, action_name)
        self.name = action_name
        self.running = None  # the goal handle of the goal in flight
        self.sent = 0
        self.pending = None  # the number of the goal sent and not yet accepted or rejected
        self.withdrawn = set()  # numbers of goals cancelled before their acceptance came
        node.create_service(Trigger, "~/stop", self.on_stop)

    def send(self, trajectory, path_tolerance, goal_tolerance, goal_time) -> None:
        if not self.client.server_is_ready():
            self.report("error", f"no FollowJointTrajectory server on {self.name}; not sent", {})
            return
        self.cancel("pre-empted by a new target")
        goal = self.Goal(trajectory=trajectory)
        names = list(trajectory.joint_names)
        goal.path_tolerance = [_tolerance(n, v) for n, v in tolerances(names, path_tolerance)]
        goal.goal_tolerance = [_tolerance(n, v) for n, v in tolerances(names, goal_tolerance)]
        goal.goal_time_tolerance = _duration(goal_time)
        self.sent += 1
        number = self.pending = self.sent
        future = self.client.send_goal_async(goal)
        future.add_done_callback(lambda f: self._accepted(f, number))

    def cancel(self, why: str) -> bool:
        handle, self.running = self.running, None
        pending, self.pending = self.pending, None
        if handle is not None:
            handle.cancel_goal_async()
        elif pending is not None:  # cancelled as soon as the controller accepts it
            self.withdrawn.add(pending)
        else:
            return False
        self.node.get_logger().info(f"goal cancelled: {why}")
        return True

    def on_stop(self, _request, response):
        response.success = self.cancel("~/stop")
        response.message = "the running goal is cancelled" if response.success else "no goal"
        return response

    def _accepted(self, future, number: int) -> None:
        handle = future.result()
        if self.pending == number:
            self.pending = None
        withdrawn = number in self.withdrawn
        self.withdrawn.discard(number)
        if not handle.accepted:
            self.report("error", f"goal {number} rejected by {self.name}", {"goal": number})
            return
        if withdrawn or number != self.sent:  # stopped, or a newer target came, meanwhile
            handle.cancel_goal_async()
        else:
            self.running = handle
        handle.get_result_async().add_done_callback(lambda f: self._done(f, handle, number))

    def _done(self, future, handle, number: int) -> None:
        if self.running is handle:
            self.running = None
        wrapped = future.result()
        level, message = outcome(
            wrapped.status, wrapped.result.error_code, wrapped.result.error_string
        )
        self.report(level, f"goal {number} {message}", {"goal": number})


def _tolerance(name, value):
    from control_msgs.msg import JointTolerance

    return JointTolerance(name=name, position=float(value))


def _duration(seconds: float):
    from .common import duration_msg

    return duration_msg(seconds)
