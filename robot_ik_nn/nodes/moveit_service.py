"""``~/solve_ik`` (moveit_msgs/srv/GetPositionIK) on the inference node: MoveIt's
``srv_kinematics_plugin`` calls it for every IK query. It solves; it never commands the arm.

Offered when moveit_msgs can be imported (a ROS install with MoveIt); without it the node says so
once and serves the rest. The answering is robot_ik_nn/ik_service.py; this copies fields.
"""

from __future__ import annotations

from ..ik_service import IKRequest, IKService


def offer_solve_ik(node, solver, group: str, frames) -> IKService | None:
    """Create the service on ``node``; the IKService behind it, or None without moveit_msgs."""
    try:
        from moveit_msgs.srv import GetPositionIK
    except ImportError:
        node.get_logger().info(
            "moveit_msgs is not installed: ~/solve_ik (GetPositionIK for MoveIt) is not offered; "
            "the topics are served as before"
        )
        return None
    service = IKService(solver, group=group, frames=frames, transform=_tf2_lookup(node, solver))

    def callback(request, response):
        ik = request.ik_request
        pose = ik.pose_stamped.pose
        seed = ik.robot_state.joint_state
        reply = service.answer(
            IKRequest(
                position=(pose.position.x, pose.position.y, pose.position.z),
                quaternion=(
                    pose.orientation.x, pose.orientation.y, pose.orientation.z,
                    pose.orientation.w,
                ),  # fmt: skip
                frame=ik.pose_stamped.header.frame_id,
                link=ik.ik_link_name,
                group=ik.group_name,
                seed=dict(zip(seed.name, seed.position)),
                avoid_collisions=ik.avoid_collisions,
            )
        )
        state = response.solution.joint_state
        state.header.stamp = node.get_clock().now().to_msg()
        state.name = list(reply.joints)
        state.position = [float(v) for v in reply.joints.values()]
        response.error_code.val = reply.code
        if hasattr(response.error_code, "message"):  # newer moveit_msgs carry the reason
            response.error_code.message = reply.message
        if not reply.solved:
            node.get_logger().info(
                f"~/solve_ik: code {reply.code}: {reply.message}", throttle_duration_sec=1.0
            )
        return response

    node.create_service(GetPositionIK, "~/solve_ik", callback)
    return service


def _tf2_lookup(node, solver):
    """A function giving another frame's pose in the arm's base from tf2, or None without tf2
    (poses in other frames are then refused with FRAME_TRANSFORM_FAILURE)."""
    try:
        from rclpy.time import Time
        from tf2_ros import Buffer, TransformException, TransformListener
    except ImportError:
        return None
    buffer = Buffer()
    node._tf_listener = TransformListener(buffer, node)  # kept alive with the node
    base = solver.arm.base

    def lookup(frame: str):
        try:
            t = buffer.lookup_transform(base, frame, Time()).transform
        except TransformException as err:
            raise LookupError(f"no transform from '{frame}' to '{base}': {err}") from err
        r = t.rotation
        return (t.translation.x, t.translation.y, t.translation.z), (r.x, r.y, r.z, r.w)

    return lookup
