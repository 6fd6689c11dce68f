"""learner_node: a training session as a ROS 2 node.

Runs the trainer (training.py) in a background thread with its settings from parameters;
publishes ``~/metrics`` (diagnostic_msgs/DiagnosticArray: step, errors, reward, learning rate)
and, every ``demo_period`` seconds, a demo attempt: the network's current answer for a random
target goes to the simulator on ``joint_command``, the target on ``~/demo_target`` and
``~/markers``, so RViz shows the arm getting better. The model folder is saved when the budget
ends and on Ctrl-C; then the node ends.
"""

from __future__ import annotations

import queue
import sys
import threading
import traceback
from dataclasses import fields

import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.duration import Duration
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from ..arm.kinematics import Kinematics
from ..arm.rotations import matrix_to_quaternion
from ..learn.learners import LEARNERS, LearnConfig
from ..learn.training import TrainConfig, Trainer
from . import markers
from .common import RELIABLE, declare, live_parameters, spin_node, status
from .network_markers import NetworkMarkers


class LearnerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("learner_node", **kwargs)
        ro = dict(read_only=True)
        robot = declare(self, "robot", "niryo_one", "built-in arm name or URDF path", **ro)
        base = declare(self, "base_link", "", "base link ('' = the URDF's root)", **ro)
        tip = declare(self, "tip_link", "", "tip link ('' = the only leaf)", **ro)
        mode = declare(self, "mode", "pose", "pose (position + orientation) or position", **ro)
        learner = declare(self, "learner", "gradient", f"one of {', '.join(LEARNERS)}", **ro)
        minutes = declare(
            self, "minutes", 5.0, "time budget (0 = use steps)", lo=0.0, hi=10000.0, **ro
        )
        steps = declare(self, "steps", 0, "step budget (0 = use minutes)", lo=0, hi=10**9, **ro)
        device = declare(self, "device", "cpu", "cpu or cuda", **ro)
        out = declare(self, "output_dir", "models/niryo_one", "model folder to write", **ro)
        seed = declare(self, "seed", 0, "random seed", **ro)
        hidden = declare(  # an integer array cannot be declared empty: [0] means "unset"
            self,
            "hidden",
            [0],
            "hidden layer widths ([0]: the learner's own, 128 128; evolution 32 32)",
            **ro,
        )
        heads = declare(
            self,
            "heads",
            0,
            "candidate branches per target (0: 4 for gradient, 1 for explore)",
            lo=0,
            hi=64,
            **ro,
        )
        resume = declare(
            self, "resume", False, "continue the run in output_dir from its checkpoint", **ro
        )
        force = declare(self, "force", False, "start over even if output_dir holds a run", **ro)
        ckpt = declare(
            self, "checkpoint_every", 30.0, "seconds between checkpoints", lo=1.0, hi=3600.0, **ro
        )
        progress = declare(self, "progress_bar", True, "show a progress bar on the terminal", **ro)
        log_every = declare(
            self, "log_every", 50, "steps between ~/metrics rows", lo=1, hi=10**6, **ro
        )
        self.demo_period = declare(
            self, "demo_period", 3.0, "seconds between demo attempts", lo=0.1, hi=3600.0
        )
        live_parameters(self, {"demo_period": "demo_period"})
        learn = LearnConfig()  # every learner hyper-parameter, as learn.<name> (read-only)
        for item in fields(LearnConfig):
            value = declare(
                self, f"learn.{item.name}", getattr(learn, item.name), "see LearnConfig", **ro
            )
            learn.set(item.name, str(value))  # the ranges --learn has (a message, not a crash)

        config = TrainConfig(
            robot=robot,
            base=base or None,
            tip=tip or None,
            mode=mode,
            learner=learner,
            minutes=minutes or None,
            steps=steps or None,
            device=device,
            out=out,
            seed=seed,
            hidden=None if list(hidden) == [0] else list(hidden),
            heads=heads or None,
            checkpoint_every=ckpt,
            log_every=log_every,
            learn=learn,
        )
        self.rows: queue.Queue = queue.Queue()
        self.trainer = Trainer(
            config, resume=resume, force=force, progress=progress, on_metrics=self.rows.put
        )
        self.arm = self.trainer.arm
        self.kin = Kinematics(self.arm, torch.float32)
        self.generator = torch.Generator().manual_seed(seed + 1)
        self.finished = threading.Event()
        self.done = False
        self.model_path = None
        self.error = None

        self.metrics_pub = self.create_publisher(DiagnosticArray, "~/metrics", RELIABLE)
        self.command_pub = self.create_publisher(JointState, "joint_command", RELIABLE)
        self.target_pub = self.create_publisher(PoseStamped, "~/demo_target", RELIABLE)
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", RELIABLE)
        network_period = declare(  # ~/network: the network drawn for RViz (0: not drawn)
            self, "network_period", 3.0, "seconds between drawings", lo=0.0, hi=3600.0, **ro
        )
        self.network = NetworkMarkers(
            self, self.trainer, self.arm.base, self.arm.reach, network_period
        )
        self.create_timer(0.2, self.publish_metrics)
        self.demo_timer = self.create_timer(self.demo_period, self.demo)
        self._demo_period_in_use = self.demo_period
        self.thread = threading.Thread(target=self._train, name="trainer", daemon=True)
        self.thread.start()
        budget = f"{minutes:g} min" if minutes else f"{steps} steps"
        self.get_logger().info(
            f"training {self.arm.name} ({mode}, {learner}) for {budget} into {out}"
        )

    def _train(self) -> None:
        try:
            self.model_path = self.trainer.run()
        except Exception as err:  # noqa: BLE001 - reported on ~/metrics and in the log
            self.error = err
        finally:
            self.finished.set()

    # -- what RViz and the operator see -----------------------------------------------------------
    def publish_metrics(self) -> None:
        rows = []
        while not self.rows.empty():
            rows.append(self.rows.get_nowait())
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        for row in rows:
            values = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
            message = f"step {row['step']}: {row['pos_mm']:.2f} mm, {row['rot_deg']:.2f} deg"
            msg.status.append(
                status("learner_node: training", "ok", message, values, self.arm.name)
            )
        if self.finished.is_set():
            if self.error is not None:
                msg.status.append(
                    status(
                        "learner_node: training",
                        "error",
                        f"training failed: {self.error}",
                        {},
                        self.arm.name,
                    )
                )
            else:
                msg.status.append(
                    status(
                        "learner_node: training",
                        "ok",
                        f"finished: model saved to {self.model_path}"
                        if self.trainer.saved
                        else "stopped before the first step: nothing saved",
                        {
                            "model_dir": str(self.model_path),
                            "step": self.trainer.step,
                            "interrupted": self.trainer.interrupted,
                        },
                        self.arm.name,
                    )
                )
        if msg.status:
            self.metrics_pub.publish(msg)
        if self.finished.is_set():
            # the final word must reach the subscribers before the node (maybe the process) ends
            self.metrics_pub.wait_for_all_acked(Duration(seconds=2.0))
            self.done = True

    @property
    def exit_code(self) -> int:
        return 1 if self.error is not None else 0

    def demo(self) -> None:
        if self.demo_period != self._demo_period_in_use:  # changed at run time
            self.demo_timer.cancel()
            self.demo_timer = self.create_timer(self.demo_period, self.demo)
            self._demo_period_in_use = self.demo_period
        q_target = self.kin.sample(1, self.generator)
        pos, rot = self.kin.forward(q_target)
        with self.trainer.lock, torch.no_grad():  # between two training steps
            net = self.trainer.net
            q = net(
                pos.to(self.trainer.device),
                rot.to(self.trainer.device) if net.config.mode == "pose" else None,
            )
        stamp = self.get_clock().now().to_msg()
        command = JointState(name=self.arm.joint_names, position=q[0].double().cpu().tolist())
        command.header.stamp = stamp
        self.command_pub.publish(command)
        target = markers.pose_stamped(
            pos[0].tolist(), matrix_to_quaternion(rot)[0].tolist(), self.arm.base, stamp
        )
        self.target_pub.publish(target)
        reached_pos, reached_rot = self.kin.forward(q.float().cpu())
        reached = markers.pose_stamped(
            reached_pos[0].tolist(),
            matrix_to_quaternion(reached_rot)[0].tolist(),
            self.arm.base,
            stamp,
        )
        self.marker_pub.publish(
            markers.reached_and_target(reached, target, self.arm.base, stamp, self.arm.reach)
        )

    def close(self, wait: float = 60.0) -> None:
        """Stop training (Ctrl-C or shutdown) and wait until the model folder is written: a few
        seconds; past ``wait`` the trainer is reported stuck, with its stack, and left behind."""
        self.trainer.stop.set()
        self.thread.join(wait)
        if self.thread.is_alive():
            frame = sys._current_frames().get(self.thread.ident)
            stack = "".join(traceback.format_stack(frame)) if frame is not None else "?"
            self.get_logger().error(
                f"training did not stop within {wait:g} s of being asked, so its model was not "
                f"saved (the last checkpoint in {self.trainer.out} resumes it); it was at:\n"
                f"{stack}"
            )


def main(args=None) -> int:
    return spin_node(LearnerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
