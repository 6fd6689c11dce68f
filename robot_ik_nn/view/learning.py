"""Watching it learn, on the page: the network drawn in 3-D beside the arm (the learner node's
``~/network`` drawing) and the error curve growing as the metrics come in."""

from __future__ import annotations

import threading

import numpy as np


class NetworkLayer:
    """The network as viser points (one per neuron, infrared) and line segments (the strongest
    connections), replaced at each drawing."""

    def __init__(self, server, name: str = "/arm/base/network"):
        self.server, self.name = server, name
        self.drawings = 0

    def show(self, positions, colors, segments, segment_colors) -> None:
        """positions (N, 3) and colors (N, 3) 0..1; segments (E, 2, 3), segment_colors (E, 3)."""
        positions = np.asarray(positions, dtype=np.float32)
        with self.server.atomic():
            self.server.scene.add_point_cloud(
                f"{self.name}/neurons",
                positions,
                (np.asarray(colors) * 255).astype(np.uint8),
                point_size=0.014,
                point_shape="circle",
                precision="float32",
            )
            if len(segments):
                self.server.scene.add_line_segments(
                    f"{self.name}/connections",
                    np.asarray(segments, dtype=np.float32),
                    (np.repeat(np.asarray(segment_colors)[:, None], 2, axis=1) * 255).astype(
                        np.uint8
                    ),
                    thickness=1.0,
                    thickness_units="screen",
                )
        self.server.flush()
        self.drawings += 1

    def show_markers(self, msg) -> None:
        """From a visualization_msgs/MarkerArray as nodes/network_markers.py publishes it."""
        neurons = sorted((m for m in msg.markers if m.ns == "neurons"), key=lambda m: m.id)
        if not neurons:
            return
        positions = [(m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in neurons]
        colors = [(m.color.r, m.color.g, m.color.b) for m in neurons]
        segments, segment_colors = [], []
        for m in msg.markers:
            if m.ns == "connections":
                pts = [(p.x, p.y, p.z) for p in m.points]
                segments += [(pts[k], pts[k + 1]) for k in range(0, len(pts) - 1, 2)]
                segment_colors += [(c.r, c.g, c.b) for c in m.colors[::2]]
        self.show(positions, colors, np.reshape(segments, (-1, 2, 3)), segment_colors)


class ErrorCurve:
    """The network's median position error (mm) against the training step, growing live."""

    def __init__(self, gui, order: float | None = None):
        import viser.uplot as up

        self.steps: list[float] = []
        self.errors: list[float] = []
        self._lock = threading.Lock()
        self.plot = gui.add_uplot(
            data=(np.zeros(1), np.zeros(1)),
            series=(up.Series(label="step"), up.Series(label="median error (mm)", stroke="red")),
            scales={"x": up.Scale(time=False), "y": up.Scale(distr=3)},  # y: log (decades)
            title="network error while training",
            aspect=1.6,
            order=order,
        )
        self.status = gui.add_text(
            "training", "waiting for the learner node", disabled=True, order=order
        )

    def add(self, step: float, error_mm: float, message: str = "") -> None:
        with self._lock:
            self.steps.append(float(step))
            self.errors.append(max(float(error_mm), 1e-6))
            self.plot.data = (np.array(self.steps), np.array(self.errors))
        if message:
            self.status.value = message
