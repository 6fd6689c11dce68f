"""``robot-ik-nn bench --dds``: the inference node over DDS, measured from outside.

The node runs in its own process, as ``ros2 run`` starts it; this process plays the arm (it
publishes ``/joint_states`` at 50 Hz, mid-range joints) and an outside client that sends random
reachable targets (cold: each unrelated to the last) at 200 Hz. Latency is target published ->
``joint_command`` received, both stamped on this process's clock. Start-up is process start ->
first command received (the kernel cache already warm: a first run fills it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from ..evaluate import held_out_targets


def dds_latency(
    model, targets: int = 2000, rate_hz: float = 200.0, seed: int = 99, domain: int | None = None
) -> dict:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from ..ik.solver import Solver
    from ..nodes.common import RELIABLE

    solver = Solver.load(model)
    arm = solver.arm
    _, P, R = held_out_targets(arm, targets, seed)
    Q = matrix_to_quaternion(R)
    env = {
        **os.environ,
        "ROS_DOMAIN_ID": str(domain if domain is not None else 50 + os.getpid() % 40),
    }
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    own_context = not rclpy.ok()
    if own_context:
        rclpy.init()
    node = rclpy.create_node("bench_dds_client")
    received, lock = [], threading.Lock()

    def on_command(msg):
        now = time.perf_counter()
        with lock:
            received.append((now, msg))

    node.create_subscription(JointState, "/joint_command", on_command, RELIABLE)
    targets_pub = node.create_publisher(PoseStamped, "/inference_node/target_pose", RELIABLE)
    states_pub = node.create_publisher(JointState, "/joint_states", RELIABLE)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.01)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()

    def joint_states():
        while not stop.is_set():
            msg = JointState(name=arm.joint_names, position=arm.mid_range.tolist())
            msg.header.stamp = node.get_clock().now().to_msg()
            states_pub.publish(msg)
            time.sleep(0.02)

    threading.Thread(target=joint_states, daemon=True).start()

    def pose(i):
        msg = PoseStamped()
        msg.header.frame_id = arm.base
        msg.header.stamp = node.get_clock().now().to_msg()
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in P[i])
        o.x, o.y, o.z, o.w = (float(v) for v in Q[i])
        return msg

    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "robot_ik_nn.nodes.inference_node",
            "--ros-args",
            "-p",
            f"model_dir:={model}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        while not received:  # start-up: keep offering the first target until it is answered
            if process.poll() is not None:
                raise RuntimeError(f"the inference node exited: {process.stdout.read()[-2000:]}")
            if time.perf_counter() - started > 120:
                raise RuntimeError("the inference node did not answer within 120 s")
            targets_pub.publish(pose(0))
            time.sleep(0.01)
        startup = received[0][0] - started
        time.sleep(0.5)
        with lock:
            received.clear()
        sent = np.empty(targets)
        next_time = time.perf_counter()
        for i in range(targets):
            while time.perf_counter() < next_time:
                time.sleep(0.0001)
            msg = pose(i)
            sent[i] = time.perf_counter()
            targets_pub.publish(msg)
            next_time += 1.0 / rate_hz
        deadline = time.perf_counter() + 10
        while len(received) < targets and time.perf_counter() < deadline:
            time.sleep(0.01)
    finally:
        process.send_signal(2)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        stop.set()
        executor.shutdown()
        node.destroy_node()
        if own_context and rclpy.ok():
            rclpy.shutdown()
    with lock:
        arrivals = list(received)
    latency = _match(arrivals, sent, P, solver)
    ms = latency * 1000
    return {
        "rate_hz": rate_hz,
        "sent": targets,
        "answered": int(np.isfinite(ms).sum()),
        "ms_median": float(np.nanmedian(ms)),
        "ms_p99": float(np.nanpercentile(ms, 99)),
        "ms_max": float(np.nanmax(ms)),
        "startup_s": startup,
    }


def _match(arrivals, sent, P, solver) -> np.ndarray:
    """Latency per target: each command is matched to the target its joints reach (in order)."""
    latency = np.full(len(sent), np.nan)
    if not arrivals:
        return latency
    q = np.array([list(m.position) for _, m in arrivals])
    reached, _ = solver.forward(q)
    k = 0
    for (when, _), p in zip(arrivals, reached):
        while k < len(P) and np.linalg.norm(P[k] - p) > 2e-3:  # skipped: rejected or not solved
            k += 1
        if k == len(P):
            break
        latency[k] = when - sent[k]
        k += 1
    return latency
