"""The learner's network drawn for RViz: ``~/network`` (visualization_msgs/MarkerArray).

Every ``period`` seconds the trainer's weights are copied (between two training steps, under
the trainer's lock), drawn by view/network_drawing.py and published: one SPHERE marker per
neuron (namespace ``neurons``, id = the neuron's index, input layer first) and one LINE_LIST
of the strongest connections (namespace ``connections``). The drawing stands beside the arm.
"""

from __future__ import annotations

import time

from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from ..learn.network import weight_matrices
from ..view.network_drawing import draw, network_origin
from .common import RELIABLE


def to_markers(drawing, frame: str, stamp, size: float = 0.014) -> MarkerArray:
    out = MarkerArray()
    for i, (p, c) in enumerate(zip(drawing.positions.tolist(), drawing.colors.tolist())):
        m = Marker(ns="neurons", id=i, type=Marker.SPHERE, action=Marker.ADD)
        m.header.frame_id, m.header.stamp = frame, stamp
        m.pose.position.x, m.pose.position.y, m.pose.position.z = p
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = size
        m.color = ColorRGBA(r=c[0], g=c[1], b=c[2], a=1.0)
        out.markers.append(m)
    lines = Marker(ns="connections", id=0, type=Marker.LINE_LIST, action=Marker.ADD)
    lines.header.frame_id, lines.header.stamp = frame, stamp
    lines.pose.orientation.w = 1.0
    lines.scale.x = size * 0.15
    points = drawing.positions.tolist()
    for (a, b), c in zip(drawing.edges.tolist(), drawing.edge_colors.tolist()):
        color = ColorRGBA(r=c[0], g=c[1], b=c[2], a=0.6)
        for k in (a, b):
            lines.points.append(Point(x=points[k][0], y=points[k][1], z=points[k][2]))
            lines.colors.append(color)
    out.markers.append(lines)
    return out


class NetworkMarkers:
    """Publishes the trainer's network on the node's ``~/network`` every ``period`` seconds;
    ``seconds`` and ``count`` say what drawing has cost so far."""

    def __init__(self, node, trainer, frame: str, reach: float, period: float = 3.0):
        self.node, self.trainer, self.frame = node, trainer, frame
        self.origin = network_origin(reach)  # beside the arm, left of it
        self.pub = node.create_publisher(MarkerArray, "~/network", RELIABLE)
        self.timer = node.create_timer(period, self.publish) if period > 0 else None
        self.seconds, self.count = 0.0, 0

    def publish(self) -> None:
        started = time.perf_counter()
        with self.trainer.lock:  # between two training steps
            weights = weight_matrices(self.trainer.net)
        drawing = draw(weights, origin=self.origin)
        self.pub.publish(to_markers(drawing, self.frame, self.node.get_clock().now().to_msg()))
        self.seconds += time.perf_counter() - started
        self.count += 1
