"""calibration_node: a live calibration session, from a model folder to a calibrated one.

It plans poses (calibration/poses.py: random joints first, then the network's own proposals
for targets spread over the workspace), moves the arm to each through
``<controller>/joint_trajectory`` behind the gate (joint limits with a margin, scaled speeds, no
self-collision, above ``table_z``, the tool inside the workspace box), waits for
``/joint_states`` to settle, takes the first ``measured_pose`` (geometry_msgs/PoseStamped, in
the tracker's ``frame_id``) stamped after the settle, and after ``poses`` poses fits and writes
``out`` (calibration/folder.py's ``calibrate``; ``frame: unknown`` estimates the tracker's
frame with the rest). The logic is calibration/session.py's; this node moves messages.

``~/status`` (DiagnosticArray) and a progress bar on the terminal say how far it is and what was
skipped; ``~/stop`` holds the arm (the arm node's ``~/stop``) and pauses, ``~/resume`` goes on.
It ends by itself: 0 with the folder written, 1 with the reason and nothing written (too many
skipped poses, a silent tracker, a frame that never matched, a fit refused). Ctrl-C writes
nothing half-done.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..calibration import session as S
from ..calibration.folder import Stopped, calibrate
from ..calibration.poses import MoveGate, Workspace, plan_poses, visiting_order
from ..ik.solver import Solver
from .common import READINGS, RELIABLE, declare, duration_msg, now_seconds, spin_node, status
from .common import stamp_seconds as seconds


class CalibrationNode(Node):
    def __init__(self, **kwargs):
        super().__init__("calibration_node", **kwargs)
        ro = {"read_only": True}

        def p(name, default, text, **options):
            return declare(self, name, default, text, **options, **ro)

        model = p("model_dir", "", "the nominal model folder (never modified)")
        self.out = p("out", "", "the calibrated model folder to write")
        self.force = p("force", False, "replace out when it exists")
        self.frame = p("frame", "unknown", "the tracker frame: unknown (estimated with the "
                       "rest: eye-to-hand) or base (poses in the arm's base frame)")
        self.noise = (p("noise_mm", 0.2, "the tracker's noise (mm)", lo=1e-6, hi=1e3),
                      p("noise_deg", 0.1, "the tracker's noise (deg)", lo=1e-6, hi=90.0))
        controller = p("controller", "arm_controller", "moves go to "
                       "<controller>/joint_trajectory")
        arm_node = p("arm_node", "/sim_node", "the arm node whose ~/stop and ~/resume hold it")
        box_min = p("workspace_min", [-0.45, -0.45, 0.05], "the tool stays above these (m)")
        box_max = p("workspace_max", [0.45, 0.45, 0.6], "and below these (m, base frame)")
        space = Workspace(p("table_z", 0.0, "the table's height (m, base frame)"),
                          tuple(box_min), tuple(box_max))
        config = S.CollectConfig(
            poses=p("poses", 40, "poses to measure", lo=1, hi=100),
            settle_s=p("settle_s", 0.3, "still this long: settled (s)", lo=0.01, hi=10.0),
            near_rad=p("near_rad", 0.05, "settled this near the goal (rad)", lo=1e-4, hi=1.0),
            still_rad=p("still_rad", 2e-4, "moving less than this: still (rad)",
                        lo=1e-7, hi=0.1),
            measure_timeout=p("measure_timeout", 1.0, "wait this long for a measured pose "
                              "after the settle (s)", lo=0.01, hi=60.0),
            tracker_timeout=p("tracker_timeout", 20.0, "the tracker must be heard within this "
                              "(s)", lo=0.1, hi=600.0),
            max_failures=p("max_failures", 20, "skipped poses before giving up", lo=0, hi=1000),
            implausible_m=p("implausible_m", 0.05, "a measurement this far from the nominal "
                            "arm's tool is implausible (m)", lo=1e-3, hi=10.0),
            frame_id=p("frame_id", "tracker", "the frame_id measured poses carry"),
            topic=self.resolve_topic_name("measured_pose"),
        )
        if not model or not self.out:
            raise RuntimeError("parameters model_dir (the nominal model) and out (the folder "
                               "to write) are required")
        if Path(self.out).exists() and not self.force:  # said now, not after the session
            raise RuntimeError(f"{self.out} exists (force:=true replaces it)")
        if self.frame not in ("unknown", "base"):
            raise RuntimeError(f"frame must be unknown or base, not {self.frame!r}")
        self.model = model
        self.solver = Solver.load(model)
        self.names = self.solver.arm.joint_names
        self.gate = MoveGate(self.solver, space, p("joint_margin", 0.05, "kept from each joint "
                             "limit (rad)", lo=0.0, hi=1.0),
                             p("speed_scale", 0.5, "share of the speed limits", lo=0.01, hi=1.0),
                             p("collision_margin", 0.005, "kept between the arm's surfaces "
                               "and from the table (m)", lo=0.0, hi=0.1))
        self.schedule = (p("seed", 0, "the poses' seed", lo=0, hi=2**31 - 1),
                         p("decay_until", 0.5, "random joints fade until this share of the "
                           "poses", lo=0.01, hi=1.0),
                         p("epsilon_end", 0.1, "then this share stays random", lo=0.0, hi=1.0))
        self.config, self.collector, self.done, self.exit_code = config, None, False, 0
        self.started = now_seconds(self)
        self._shown = self._bar = None
        self.traj_pub = self.create_publisher(
            JointTrajectory, f"{controller}/joint_trajectory", RELIABLE)
        self.status_pub = self.create_publisher(DiagnosticArray, "~/status", RELIABLE)
        self.create_subscription(JointState, "/joint_states", self.on_joints, READINGS)
        self.create_subscription(PoseStamped, "measured_pose", self.on_pose, READINGS)
        self.create_service(Trigger, "~/stop", self.on_stop)
        self.create_service(Trigger, "~/resume", self.on_resume)
        self.arm_stop = self.create_client(Trigger, f"{arm_node}/stop")
        self.arm_resume = self.create_client(Trigger, f"{arm_node}/resume")
        self.readings = []  # before the plan exists
        self.create_timer(0.05, self.tick)
        self.get_logger().info(
            f"calibrating {model} into {self.out}: {config.poses} poses measured on "
            f"{config.topic} (frame {config.frame_id}, {self.frame} to the base)")

    # -- inputs ---------------------------------------------------------------------------------
    def on_joints(self, msg: JointState) -> None:
        given = dict(zip(msg.name, msg.position))
        if any(n not in given for n in self.names):
            return
        t = seconds(msg.header.stamp) or now_seconds(self)
        q = [given[n] for n in self.names]
        if self.collector is None:
            self.readings = [(t, q)]
        else:
            self.collector.joints(t, q)

    def on_pose(self, msg: PoseStamped) -> None:
        if self.collector is None:
            return
        p, o = msg.pose.position, msg.pose.orientation
        self.collector.measurement(msg.header.frame_id, seconds(msg.header.stamp),
                                   [p.x, p.y, p.z], [o.x, o.y, o.z, o.w])

    def on_stop(self, _request, response):
        if self.collector is not None:
            self.collector.pause()
        self.arm_stop.call_async(Trigger.Request())
        response.success, response.message = True, "holding; ~/resume goes on"
        return response

    def on_resume(self, _request, response):
        def go_on(_future=None):  # after the arm's resume: a move sent before it is refused
            if self.collector is not None:
                self.collector.resume()

        if self.arm_resume.service_is_ready():
            self.arm_resume.call_async(Trigger.Request()).add_done_callback(go_on)
        else:  # an arm without the service: nothing to wait for
            go_on()
        response.success, response.message = True, "going on from the pose it was on"
        return response

    # -- the loop ---------------------------------------------------------------------------------
    def tick(self) -> None:
        if self.done:
            return
        now = now_seconds(self)
        if self.collector is None:
            if not self.readings:
                if now - self.started > self.config.tracker_timeout:
                    self._end(1, "no joint states on /joint_states for joints "
                              f"{', '.join(self.names)} in {self.config.tracker_timeout:g} s")
                return
            self._plan(self.readings[-1])
            return
        action, what = self.collector.step(now)
        self._report()
        if action == "move":
            msg = JointTrajectory(joint_names=self.names)
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.points = [JointTrajectoryPoint(positions=what.positions.tolist(),
                                               time_from_start=duration_msg(what.duration))]
            self.traj_pub.publish(msg)
        elif action == "fail":
            self._end(1, f"{what}; nothing written")
        elif action == "fit":
            self._fit()

    def _plan(self, reading) -> None:
        seed, decay, end = self.schedule
        spare = self.config.max_failures
        poses = plan_poses(self.solver, self.gate, self.config.poses + spare, seed, decay, end)
        start = np.asarray(reading[1])
        self.collector = S.Collector(self.config, self.gate,
                                     visiting_order(self.gate, start, poses), self.started)
        self.collector.joints(*reading)
        kinds = [p.source for p in poses]
        self.get_logger().info(f"planned {len(poses)} poses ({kinds.count('network')} the "
                               "network's proposals, the rest random joints)")

    def _fit(self) -> None:
        m = self.collector.measurements()
        self._report(force=True, message=f"fitting {len(m)} measured poses")
        out = Path(self.out)
        if out.exists() and not self.force:
            return self._end(1, f"calibration refused: {out} exists (force:=true replaces it)")
        try:  # written whole, only if no Ctrl-C came during the fit (rclpy's handler ends the
            # context and lets the callback finish); a kill at any moment leaves the old
            # calibrated folder or the new one, never neither (model_dir.write_folder)
            summary = calibrate(self.model, m, out, noise_mm=self.noise[0],
                                noise_deg=self.noise[1], force=True, say=self.get_logger().info,
                                frame=self.frame, keep_going=self.context.ok)
        except Stopped:
            return self._end(130, "stopped (Ctrl-C) during the fit; nothing written")
        except ValueError as err:  # refused: the reason, nothing written
            return self._end(1, f"calibration refused: {err}")
        cv = summary["cross_validation"]
        self._end(0, f"wrote {self.out}: held-out tool error {cv['nominal_mm_median']:.3f} mm "
                  f"(nominal) -> {cv['calibrated_mm_median']:.3f} mm (calibrated), median, "
                  f"from {len(m)} poses")

    def _end(self, code: int, message: str) -> None:
        self.done, self.exit_code = True, code
        self._report(force=True, message=message, level="ok" if code == 0 else "error")
        (self.get_logger().info if code == 0 else self.get_logger().error)(message)

    def _report(self, force=False, message="", level="ok") -> None:
        progress = self.collector.progress() if self.collector else {"state": "planning"}
        key = tuple(v for k, v in progress.items() if k != "last_skip")
        if key == self._shown and not force:
            return
        self._shown = key
        if "taken" in progress:
            line = S.progress_bar(progress)
            if line != self._bar:  # the terminal's bar: a new line per pose unless a tty
                self._bar = line
                end = "\r" if sys.stderr.isatty() else "\n"
                print(f"[calibration_node] {line}", end=end, file=sys.stderr, flush=True)
            message = message or f"{progress['state']}: {line}"
        msg = DiagnosticArray(status=[status("calibration_node: session", level,
                                             message or progress["state"], progress)])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)


def main(args=None) -> int:
    return spin_node(CalibrationNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
