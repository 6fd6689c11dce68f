"""``robot-ik-nn bench --moveit``: ~/solve_ik (moveit_msgs/GetPositionIK) round trips over DDS,
measured from outside, as MoveIt's srv_kinematics_plugin calls it.

The inference node runs in its own process (as ``ros2 run`` starts it); this process is the
client: one request at a time (the plugin waits for each answer), filled as the plugin fills it
(the whole robot state as the seed, the pose in the base frame, the tip as ik_link_name,
avoid_collisions), for random reachable targets made from joint sets PyBullet finds free of
self-contact. Round trip: request sent -> response received, perf_counter in this process.
Needs moveit_msgs (a ROS install with MoveIt; in a source checkout the test fixture
``test/interfaces`` built by the tests, its folders on PYTHONPATH and LD_LIBRARY_PATH).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from .collisions import free_joints


def moveit_round_trips(model, targets: int = 1000, seed: int = 30, warm: int = 20) -> dict:
    import rclpy
    from moveit_msgs.srv import GetPositionIK  # ImportError: said by the caller

    from ..hardware.pybullet_arm import ArmSim  # the judge of the targets: pybullet
    from ..ik.solver import Solver
    from ..nodes.common import executor_for_latency

    solver = Solver.load(model).with_settings(collision_check=True)
    solver.warm_up()  # numba's file cache filled for the node
    arm = solver.arm
    with ArmSim(arm) as sim:
        q = free_joints(sim, solver.collisions, targets + warm, seed, limit_margin=0.02)
        seeds = free_joints(sim, solver.collisions, targets + warm, seed + 1, limit_margin=0.02)
    P, R = solver.forward(q)
    Q = matrix_to_quaternion(R)
    node = subprocess.Popen(
        [sys.executable, "-m", "robot_ik_nn.nodes.inference_node", "--ros-args",
         "-p", f"model_dir:={model}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
    )  # fmt: skip
    own_context = not rclpy.ok()
    if own_context:
        rclpy.init()
    client_node = rclpy.create_node("bench_moveit_client")
    executor = executor_for_latency()
    executor.add_node(client_node)
    client = client_node.create_client(GetPositionIK, "/inference_node/solve_ik")
    trips, codes, answers = [], [], []
    try:
        deadline = time.monotonic() + 180
        while not client.service_is_ready():
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"no ~/solve_ik from the node: {node.stdout.read()[-2000:]}")
            executor.spin_once(timeout_sec=0.1)
        for i in range(targets + warm):
            req = GetPositionIK.Request()
            ik = req.ik_request
            ik.avoid_collisions, ik.group_name, ik.ik_link_name = True, "arm", arm.tip
            state = ik.robot_state.joint_state
            state.name = ["other_group_joint", *arm.joint_names]
            state.position = [0.0, *(float(v) for v in seeds[i])]
            ik.pose_stamped.header.frame_id = arm.base
            p, o = ik.pose_stamped.pose.position, ik.pose_stamped.pose.orientation
            p.x, p.y, p.z = (float(v) for v in P[i])
            o.x, o.y, o.z, o.w = (float(v) for v in Q[i])
            sent = time.perf_counter()
            future = client.call_async(req)
            while not future.done():
                executor.spin_once(timeout_sec=1.0)
            done = time.perf_counter()
            if i < warm:
                continue
            res = future.result()
            trips.append(done - sent)
            codes.append(res.error_code.val)
            given = dict(zip(res.solution.joint_state.name, res.solution.joint_state.position))
            answers.append([given[n] for n in arm.joint_names])
    finally:  # this process may go on with rclpy (a test): nothing of ours left in its context
        executor.remove_node(client_node)
        executor.shutdown()
        client_node.destroy_node()
        if own_context and rclpy.ok():
            rclpy.shutdown()
        if node.poll() is None:
            node.send_signal(signal.SIGINT)
            try:
                node.wait(10)
            except subprocess.TimeoutExpired:
                node.kill()
    ms = np.array(trips) * 1000
    solved = np.array(codes) == 1
    reached_p, reached_r = solver.forward(np.array(answers))
    pos_err = np.linalg.norm(reached_p - P[warm:], axis=1)
    rot_err = np.arccos(np.clip(
        (np.trace(np.swapaxes(reached_r, -1, -2) @ R[warm:], axis1=-2, axis2=-1) - 1) / 2, -1, 1
    ))  # fmt: skip
    within = solved & (pos_err <= 1e-3) & (rot_err <= 0.01)
    return {
        "machine": {"cpus": os.cpu_count(), "load_average_1min_at_end": os.getloadavg()[0]},
        "targets": targets,
        "warm_up_calls_not_counted": warm,
        "target_source": "joint sets PyBullet finds free of self-contact, 0.02 rad inside "
        "the limits; seeds drawn the same way",
        "success_rate": float(solved.mean()),
        "within_1mm_001rad_rate": float(within.mean()),
        "round_trip_ms_median": float(np.median(ms)),
        "round_trip_ms_p90": float(np.percentile(ms, 90)),
        "round_trip_ms_p99": float(np.percentile(ms, 99)),
        "round_trip_ms_max": float(ms.max()),
        "codes": {str(c): int((np.array(codes) == c).sum()) for c in sorted(set(codes))},
    }


def format_table(result: dict) -> str:
    return (
        "| GetPositionIK over DDS | value |\n|---|---|\n"
        f"| targets | {result['targets']} |\n"
        f"| SUCCESS | {result['success_rate']:.1%} |\n"
        f"| within 1 mm / 0.01 rad | {result['within_1mm_001rad_rate']:.1%} |\n"
        f"| round trip median / p90 / p99 / max (ms) | {result['round_trip_ms_median']:.2f} / "
        f"{result['round_trip_ms_p90']:.2f} / {result['round_trip_ms_p99']:.2f} / "
        f"{result['round_trip_ms_max']:.2f} |"
    )
