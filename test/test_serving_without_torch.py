"""Serving needs no torch: in processes where importing what ``pip install .[serve]`` leaves out
(torch, onnx, pybullet, the training tools) fails, a model folder is loaded and solved from the
public API (the onnx backend included), ``robot-ik-nn solve`` and ``bench`` run, and the
inference node serves a target over DDS."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from ros_helpers import Probe, publish_until, stop
from sensor_msgs.msg import JointState

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = pytest.mark.ros

NOT_IN_SERVE = ("torch", "onnx", "pybullet", "pybullet_data", "matplotlib", "tensorboard", "tqdm")
NO_TORCH = (  # a serve-only install: importing any of these now fails
    f"import sys; sys.modules.update(dict.fromkeys({NOT_IN_SERVE!r}))\n"
)


def run_without_torch(code: str, *args, timeout=600):
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH + code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_blocker_really_blocks():
    for name in ("torch", "onnx"):
        out = run_without_torch(f"import {name}")
        assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr


def test_api_solve_and_bench_run_without_torch(niryo_model, tmp_path):
    from robot_ik_nn import model_dir

    with_onnx = tmp_path / "niryo_one"
    shutil.copytree(niryo_model, with_onnx)
    model_dir.export_onnx(with_onnx)  # written here, where onnx is installed
    api = run_without_torch(f"""
import json, robot_ik_nn
for backend in ("compiled", "onnx"):
    solver = robot_ik_nn.load({str(with_onnx)!r}, backend=backend)
    answer = solver.solve([0.2452, 0.0, 0.4175], [0, 0, 0, 1])
    batch = solver.solve_batch([[0.2452, 0.0, 0.4175]] * 3, [[0, 0, 0, 1]] * 3)
    torch_loaded = sys.modules.get('torch') is not None
    print(json.dumps([answer.status, batch.status, torch_loaded]))
""")
    assert api.returncode == 0, api.stderr
    assert [json.loads(line) for line in api.stdout.splitlines()] == [
        ["solved", ["solved"] * 3, False]
    ] * 2
    cli = "from robot_ik_nn.cli import main; sys.exit(main(sys.argv[1:]))"
    solve = run_without_torch(
        cli,
        "solve",
        str(niryo_model),
        "--xyz",
        "0.2452",
        "0",
        "0.4175",
        "--quat",
        "0",
        "0",
        "0",
        "1",
        "--json",
    )
    assert solve.returncode == 0, solve.stderr
    assert json.loads(solve.stdout)["status"] == "solved"
    out = tmp_path / "bench.json"
    bench = run_without_torch(
        cli,
        "bench",
        str(niryo_model),
        "--targets",
        "200",
        "--tracking-targets",
        "20",
        "--backends",
        "compiled",
        "numpy",
        "--out",
        str(out),
    )
    assert bench.returncode == 0, bench.stderr
    result = json.loads(out.read_text())
    assert result["single"]["compiled"]["solve_rate"] >= 0.99
    assert "skipped: torch is not installed" in result["batched_torch"]["note"]


def test_the_inference_node_serves_without_torch(niryo_model):
    arm = ArmModel.load("niryo_one")
    _, P, R = held_out_targets(arm, 1, seed=31)
    quat = matrix_to_quaternion(R[0])
    node = subprocess.Popen(
        [
            sys.executable,
            "-c",
            NO_TORCH + "from robot_ik_nn.nodes.inference_node import main; sys.exit(main())",
            "--ros-args",
            "-p",
            f"model_dir:={niryo_model}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    probe = Probe("no_torch_probe")
    try:
        probe.listen(JointState, "/joint_command", RELIABLE)
        states = probe.node.create_publisher(JointState, "/joint_states", RELIABLE)
        targets = probe.node.create_publisher(PoseStamped, "/inference_node/target_pose", RELIABLE)

        def publish():
            now = probe.node.get_clock().now().to_msg()
            state = JointState(name=arm.joint_names, position=arm.mid_range.tolist())
            state.header.stamp = now
            states.publish(state)
            msg = PoseStamped()
            msg.header.frame_id, msg.header.stamp = arm.base, now
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
                float(v) for v in P[0]
            )
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = (float(v) for v in quat)
            targets.publish(msg)

        publish_until(probe, publish, "/joint_command", timeout=60)
        q = np.array(probe.received["/joint_command"][-1].position)
        from robot_ik_nn.ik.solver import Solver

        reached, _ = Solver(arm).forward(q)
        assert np.linalg.norm(reached[0] - P[0]) <= 1e-3
        assert node.poll() is None
    finally:
        probe.close()
        stop(node)
