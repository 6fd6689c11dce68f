"""Watching it learn, on the page: the network drawn in 3-D beside the arm and the error curve
growing as the metrics come in, the demo attempts as the arm moving.

``LearningView(page)`` sets an ``ArmPage`` up for it; two feeds fill it: the learner node's
topics (``view --ros --learning``, nodes/view_link.py) and a trainer in the same process
(``train --view``, view/training.py).
"""

from __future__ import annotations

import threading

import numpy as np

from .network_drawing import network_origin


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

    def show_drawing(self, drawing) -> None:
        """From a view/network_drawing.py ``Drawing``."""
        self.show(
            drawing.positions,
            drawing.colors,
            drawing.positions[drawing.edges].reshape(-1, 2, 3),
            drawing.edge_colors,
        )

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

    def __init__(
        self, gui, order: float | None = None, waiting: str = "waiting for the learner node"
    ):
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
        self.status = gui.add_text("training", waiting, disabled=True, order=order)

    def add(self, step: float, error_mm: float, message: str = "") -> None:
        with self._lock:
            self.steps.append(float(step))
            self.errors.append(max(float(error_mm), 1e-6))
            self.plot.data = (np.array(self.steps), np.array(self.errors))
        if message:
            self.status.value = message


class LearningView:
    """An ``ArmPage`` set up for watching a network learn: the camera takes in the arm and the
    network drawn beside it, the target handle and its fields are hidden (nobody answers them),
    the error curve tops the panel and a small frame marks the demo target. ``source`` names
    what trains, in the intro ("the learner node")."""

    def __init__(self, page, source: str = "the learner node", waiting: str | None = None):
        self.page = page
        arm = page.solver.arm
        side = network_origin(arm.reach)[1] / 2  # halfway from the arm to its network
        page.server.initial_camera.position = (0.95, side - 1.2, 0.75)
        page.server.initial_camera.look_at = (0.0, side, 0.25)
        self.network = NetworkLayer(page.server)
        for item in (page.handle, page.xyz, page.rpy, page.mode):
            item.visible = False
        page.intro.content = (
            f"**{arm.name}**: {source} training; the arm shows its demo attempts, the network "
            "its weights (dark blue: weak, white: strong)."
        )
        self.curve = ErrorCurve(  # on top of the panel
            page.server.gui,
            order=page.mode.order - 0.1,
            waiting=waiting or f"waiting for {source}",
        )
        self.demo = page.server.scene.add_frame(
            "/arm/base/demo_target", axes_length=0.04, axes_radius=0.003
        )
        self.attempts = 0  # demo attempts shown by show_attempt

    def show_drawing(self, drawing) -> None:
        """The network as view/network_drawing.py drew it (``draw(..., origin=network_origin(
        reach))``)."""
        self.network.show_drawing(drawing)

    def show_markers(self, msg) -> None:
        """The network as the learner node publishes it (a MarkerArray on ``~/network``)."""
        self.network.show_markers(msg)

    def add_metrics(self, step: float, pos_mm: float, message: str = "") -> None:
        """One point of the error curve (a logged metrics row)."""
        self.curve.add(step, pos_mm, message)

    def set_status(self, message: str) -> None:
        """The line under the error curve: what the training is doing (finished, failed)."""
        self.curve.status.value = message

    def show_demo(self, position, wxyz) -> None:
        """The demo target's frame (the arm itself comes from elsewhere: ``/joint_states``)."""
        with self.page.server.atomic():
            self.demo.position = tuple(float(v) for v in position)
            self.demo.wxyz = tuple(float(v) for v in wxyz)
        self.page.server.flush()

    def show_attempt(self, q, position, wxyz, status: str, errors: str) -> None:
        """A whole demo attempt: the arm at the network's answer ``q`` (the page's reached
        frame at its tool), the target's frame, and the panel's status and error lines."""
        self.page.show_joints(q)
        self.show_demo(position, wxyz)
        with self.page.server.atomic():
            self.page.status.value, self.page.errors.value = status, errors
            self.page.timing.value = ""
            self.page.reason.content = ""
        self.page.server.flush()
        self.attempts += 1
