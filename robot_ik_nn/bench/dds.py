"""``robot-ik-nn bench --dds``: the inference node over DDS, measured from outside.

Three processes, as on a robot: the inference node (started as ``ros2 run`` would), a client
that plays the arm (``/joint_states`` at 50 Hz, mid-range joints) and sends random reachable
targets, made from joint sets PyBullet finds free of self-contact (cold: each unrelated to the
last) at 200 Hz, and a listener that
stamps every ``joint_command`` on arrival. Both stamps come from the same monotonic clock
(CLOCK_MONOTONIC, shared by every process), so latency is target published -> command
received; ``ms_p99_of_every_target_sent`` counts a target never commanded as slower than any.
Start-up is node process start -> first command received, the kernel cache warm (this
process compiles the node's entries first, ``Solver.warm_up``, which fills numba's file cache).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from .collisions import free_joints


def dds_latency(model, targets: int = 2000, rate_hz: float = 200.0, seed: int = 99) -> dict:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from ..hardware.pybullet_arm import ArmSim  # the judge of the targets: pybullet
    from ..ik.solver import Solver
    from ..nodes.common import RELIABLE

    solver = Solver.load(model).with_settings(collision_check=True)
    solver.warm_up()  # the entries the node compiles at start, into numba's cache: warm for it
    arm = solver.arm
    # reachable with the node's default joint_limit_margin and clear of the arm itself by
    # PyBullet's contact query (the node checks self-collision by default; its own model never
    # picks the targets); the last one: the start-up target
    with ArmSim(arm) as sim:
        q = free_joints(sim, solver.collisions, targets + 1, seed, limit_margin=0.02)
    P, R = solver.forward(q)
    Q = matrix_to_quaternion(R)
    env, work, listener, own_context = start_listener("robot_ik_nn_dds_")
    client = rclpy.create_node("bench_dds_client")
    targets_pub = client.create_publisher(PoseStamped, "/inference_node/target_pose", RELIABLE)
    states_pub = client.create_publisher(JointState, "/joint_states", RELIABLE)
    last_state = 0.0

    def publish(i):
        nonlocal last_state
        now = time.perf_counter()
        stamp = client.get_clock().now().to_msg()
        if now - last_state >= 0.02:
            state = JointState(name=arm.joint_names, position=arm.mid_range.tolist())
            state.header.stamp = stamp
            states_pub.publish(state)
            last_state = now
        msg = PoseStamped()
        msg.header.frame_id, msg.header.stamp = arm.base, stamp
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in P[i])
        o.x, o.y, o.z, o.w = (float(v) for v in Q[i])
        sent = time.perf_counter()
        targets_pub.publish(msg)
        return sent

    node = None
    try:
        wait_ready(work, listener)
        started = time.perf_counter()
        node = subprocess.Popen(
            inference_node_command(model),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        while not (work / "first").exists():  # offer the start-up target until it is answered
            if node.poll() is not None:
                raise RuntimeError(f"the inference node exited: {node.stdout.read()[-2000:]}")
            if time.perf_counter() - started > 120:
                raise RuntimeError("the inference node did not answer within 120 s")
            publish(targets)
            time.sleep(0.02)
        startup = float((work / "first").read_text()) - started
        time.sleep(0.5)
        sent = np.empty(targets)
        next_time = time.perf_counter()
        for i in range(targets):
            delay = next_time - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent[i] = publish(i)
            next_time += 1.0 / rate_hz
        time.sleep(1.0)
    finally:
        stop(node, listener)
        client.destroy_node()
        if own_context and rclpy.ok():
            rclpy.shutdown()
    heard = json.loads((work / "commands.json").read_text())
    outcomes = json.loads((work / "outcomes.json").read_text())
    latency = _match(heard, sent, P[:targets], solver) * 1000
    answered = np.isfinite(latency)
    every = np.where(answered, latency, np.inf)  # a target never commanded: slower than any
    return {
        "rate_hz": rate_hz,
        "sent": targets,
        "targets": "joint sets PyBullet finds free of self-contact, 0.02 rad inside the limits",
        "answered": int(answered.sum()),
        "commanded_rate": float(answered.mean()),
        "ms_median": float(np.median(latency[answered])),
        "ms_p99": float(np.percentile(latency[answered], 99)),
        "ms_p99_of_every_target_sent": float(np.percentile(every, 99)),
        "ms_max": float(latency[answered].max()),
        "startup_s": startup,
        "node_outcomes": outcomes,
    }


def start_listener(prefix: str, namespaces=()):
    """What both DDS benches start from: a ROS domain (the caller's ``ROS_DOMAIN_ID``, else one
    of this process's own, set here too), a fresh folder named ``prefix...``, the listener
    process (:func:`listen`, also hearing the nodes under ``namespaces``) writing there, and
    rclpy started unless it already is:
    (the environment for child processes, the folder, the listener, whether rclpy was started
    here and is to be shut down by the caller)."""
    import rclpy

    env = {
        **os.environ,
        "ROS_DOMAIN_ID": os.environ.get("ROS_DOMAIN_ID", str(50 + os.getpid() % 40)),
    }
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    work = Path(tempfile.mkdtemp(prefix=prefix))
    listener = subprocess.Popen(
        [sys.executable, "-m", "robot_ik_nn.bench.dds", str(work), *namespaces], env=env
    )
    own_context = not rclpy.ok()
    if own_context:
        rclpy.init()
    return env, work, listener, own_context


def wait_ready(work: Path, listener) -> None:
    """Until the listener has subscribed (it touches ``ready``); raises if it exits first."""
    while not (work / "ready").exists():
        if listener.poll() is not None:
            raise RuntimeError("the DDS listener exited")
        time.sleep(0.05)


def inference_node_command(model, *params: str, module="robot_ik_nn.nodes.inference_node"):
    """The inference node's command line as ``ros2 run`` starts it, ``model_dir`` set to
    ``model`` and each of ``params`` (``"name:=value"``) set too; ``module``: another node
    started the same way (nodes/relay_node.py)."""
    command = [sys.executable, "-m", module, "--ros-args"]
    for param in (f"model_dir:={model}", *params):
        command += ["-p", param]
    return command


def stop(*procs) -> None:
    """SIGINT to each process still running (None: never started), killed after 10 s."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _match(heard, sent, P, solver) -> np.ndarray:
    """Latency per target (s): each command is matched, in order, to the target its joints reach;
    a target with no command (refused, or not solved) stays NaN."""
    latency = np.full(len(sent), np.nan)
    if not heard:
        return latency
    reached, _ = solver.forward(np.array([q for _, q, _ in heard]))
    k = 0
    for (when, _, _), p in zip(heard, reached):
        j = k
        while j < len(P) and np.linalg.norm(P[j] - p) > 2e-3:
            j += 1
        if j == len(P):
            continue  # the start-up target's answer, or a stray
        latency[j], k = when - sent[j], j + 1
    return latency


def listen(work: Path, namespaces=()) -> None:
    """The listener process: stamp every joint_command on arrival (beside it, the target's stamp
    the node copies into its header, in ns) and every ``~/status`` message, until SIGINT. The
    same for each node under ``namespaces`` ("/bench_relay": ``/bench_relay/joint_command`` and
    ``/bench_relay/inference_node/status``), in files named after it (``first_bench_relay``,
    ``said_bench_relay``, ``commands_bench_relay.json``, ``statuses_bench_relay.json``)."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState

    from ..nodes.common import RELIABLE, executor_for_latency

    rclpy.init()
    node = rclpy.create_node("bench_dds_listener")
    outcomes, inside = {}, []
    records = {ns: ([], []) for ns in ("", *namespaces)}  # namespace: (commands, statuses)

    def on_status(msg, ns):
        when = time.perf_counter()
        said = records[ns][1]
        for s in msg.status:
            said.append((when, s.message))
        if len(said) == len(msg.status):
            (work / f"said{suffix(ns)}").touch()
        if not ns:
            kind = s.message.split(":")[0]
            outcomes.setdefault(kind, []).append(s.message)
            inside.extend(float(v.value) for v in s.values if v.key == "latency_ms")

    def on_command(msg, ns):
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        heard = records[ns][0]
        heard.append((time.perf_counter(), list(msg.position), stamp))
        if len(heard) == 1:
            first = work / f"first{suffix(ns)}"
            first.with_suffix(".tmp").write_text(repr(heard[0][0]))
            os.replace(first.with_suffix(".tmp"), first)

    # a deep queue: DDS keeps what arrives while this process is descheduled (10 would drop)
    deep = QoSProfile(depth=10_000, reliability=RELIABLE.reliability)
    for ns in records:
        node.create_subscription(
            JointState, f"{ns}/joint_command", lambda m, ns=ns: on_command(m, ns), deep
        )
        node.create_subscription(
            DiagnosticArray,
            f"{ns}/inference_node/status",
            lambda m, ns=ns: on_status(m, ns),
            deep,
        )
    executor = executor_for_latency()
    executor.add_node(node)
    (work / "ready").touch()
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for ns, (heard, said) in records.items():
            (work / f"commands{suffix(ns)}.json").write_text(json.dumps(heard))
            (work / f"statuses{suffix(ns)}.json").write_text(json.dumps(said))
        summary = {k: {"count": len(v), "examples": v[:3]} for k, v in outcomes.items()}
        if inside:  # the node's own time per target, from receipt to its last publication
            summary["inside_node_ms"] = {
                "median": float(np.median(inside)),
                "p99": float(np.percentile(inside, 99)),
            }
        (work / "outcomes.json").write_text(json.dumps(summary))
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def suffix(namespace: str) -> str:
    """The listener's file-name suffix for the node under ``namespace`` ("" for none:
    ``commands.json``; "/bench_relay": ``commands_bench_relay.json``)."""
    return namespace.replace("/", "_")


if __name__ == "__main__":
    listen(Path(sys.argv[1]), sys.argv[2:])
