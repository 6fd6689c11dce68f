"""RViz markers and poses the nodes publish."""

from __future__ import annotations

from geometry_msgs.msg import Point, PoseStamped
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray


def pose_stamped(pos, quat, frame: str, stamp) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id, msg.header.stamp = frame, stamp
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(v) for v in pos)
    o.x, o.y, o.z, o.w = (float(v) for v in quat)
    return msg


def _axes(ns: str, marker_id: int, pose, frame: str, stamp, length: float, alpha: float) -> Marker:
    """Three short lines (x red, y green, z blue) showing a pose's orientation."""
    m = Marker(ns=ns, id=marker_id, type=Marker.LINE_LIST, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose = pose
    m.scale.x = length * 0.08
    for k, rgb in enumerate(((1.0, 0.1, 0.1), (0.1, 0.9, 0.1), (0.1, 0.3, 1.0))):
        end = [0.0, 0.0, 0.0]
        end[k] = length
        m.points += [Point(x=0.0, y=0.0, z=0.0), Point(x=end[0], y=end[1], z=end[2])]
        color = ColorRGBA(r=rgb[0], g=rgb[1], b=rgb[2], a=alpha)
        m.colors += [color, color]
    return m


def _sphere(ns: str, marker_id: int, pose, frame: str, stamp, size: float, rgba) -> Marker:
    m = Marker(ns=ns, id=marker_id, type=Marker.SPHERE, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose = pose
    m.scale.x = m.scale.y = m.scale.z = size
    m.color = ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])
    return m


def reached_and_target(
    reached: PoseStamped, target: PoseStamped | None, frame: str, stamp, reach: float
) -> MarkerArray:
    """The reached tool pose (solid) and the target (translucent), sized for the arm."""
    size = max(0.01, 0.04 * reach)
    out = MarkerArray()
    out.markers.append(
        _sphere("reached", 0, reached.pose, frame, stamp, size * 0.5, (0.1, 0.6, 1.0, 1.0))
    )
    out.markers.append(_axes("reached", 1, reached.pose, frame, stamp, size * 2, 1.0))
    if target is not None:
        t_frame = target.header.frame_id or frame
        out.markers.append(
            _sphere("target", 0, target.pose, t_frame, stamp, size, (1.0, 0.6, 0.1, 0.5))
        )
        out.markers.append(_axes("target", 1, target.pose, t_frame, stamp, size * 2.5, 0.5))
    return out
