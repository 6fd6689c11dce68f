"""The inference node's verdicts: one ~/status message per target (its outcome, reason, counts
and timings, and the answer's joints: ``joint_names`` and ``joints``, comma-separated, radians,
whether or not they were commanded) and per FollowJointTrajectory goal, and refusals to the log
at most once a second (inference_node.py mixes this in)."""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray

from ..ik.results import BEST_EFFORT, SOLVED
from .common import status

WARN_EVERY = 1.0  # s: at most one refusal logged per this (all on ~/status)


class StatusReports:
    """For a node with ``arm``, ``names`` (its joints), ``counts`` (outcome -> targets),
    ``status_pub`` and ``warned_at``, ``unwarned`` (the last refusal logged, those since)."""

    def report(
        self, outcome: str, reason: str, started: float, answer=None, duration=None
    ) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        latency_ms = (time.perf_counter() - started) * 1000
        values = {
            "latency_ms": f"{latency_ms:.3f}",
            **{f"count_{k}": v for k, v in self.counts.items()},
        }
        if answer is not None and answer.q is not None:
            values.update(
                pos_err_mm=f"{answer.pos_err * 1000:.4f}",
                rot_err_deg=f"{np.degrees(answer.rot_err):.4f}",
                joint_names=",".join(self.names),  # the answer (a stream's setpoints step to it)
                joints=",".join(map(repr, answer.q.tolist())),
            )
        if duration is not None:
            values["time_from_start_s"] = f"{duration:.3f}"
        level = {SOLVED: "ok", BEST_EFFORT: "warn"}.get(outcome, "error")
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [
            status(
                "inference_node: target",
                level,
                f"{outcome}" + (f": {reason}" if reason else ""),
                values,
                hardware_id=self.arm.name,
            )
        ]
        self.status_pub.publish(msg)
        if outcome != SOLVED:
            self._warn(f"target {outcome}: {reason}")

    def _warn(self, text: str) -> None:
        """A refusal to the log, at most one a second (the rest are counted into the next).
        Throttled here, not by rclpy: its throttle costs 0.2 ms a call even when it logs nothing,
        and a line logged 2 ms, while a 200 Hz stream of refused targets queues behind them."""
        now = time.monotonic()
        if now - self.warned_at < WARN_EVERY:
            self.unwarned += 1
            return
        more = f" ({self.unwarned} more refused since the last)" if self.unwarned else ""
        self.warned_at, self.unwarned = now, 0
        self.get_logger().warning(text + more)

    def report_goal(self, level: str, message: str, values: dict) -> None:
        """How a FollowJointTrajectory goal ended (output:=action), on ~/status."""
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [
            status("inference_node: trajectory goal", level, message, values, self.arm.name)
        ]
        self.status_pub.publish(msg)
        if level != "ok":
            self.get_logger().warning(message, throttle_duration_sec=1.0)
