"""``robot-ik-nn resume | send | stop`` against a running session: the arm node (PyBullet driver)
and the inference node, each in its own process over DDS, and each command run as a user runs
it. The joints ``send`` prints are judged by PyBullet's forward kinematics (fk_oracle.py), not
by the verdict the node printed."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from fk_oracle import BulletFK, quat_to_matrix, rotation_angle

from robot_ik_nn.arm.model import ArmModel

pytestmark = pytest.mark.ros

NIRYO = ArmModel.load("niryo_one")
DOWN = [0.0, 0.7071068, 0.0, 0.7071068]  # the Niryo One's tool x pointing down


def command(*args: str, timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "robot_ik_nn.cli", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ},
    )  # fmt: skip


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    from ros_helpers import node_process, stop

    from robot_ik_nn import model_dir
    from robot_ik_nn.learn.network import IKNet, NetConfig

    # an untrained network: the answers come from refinement either way
    model = model_dir.save(
        tmp_path_factory.mktemp("models") / "niryo_one",
        IKNet(NetConfig(dof=NIRYO.dof, hidden=[16]), NIRYO),
        NIRYO,
    )
    arm = node_process("arm_node", {"driver": "pybullet"})
    inference = node_process("inference_node", {"model_dir": str(model)})
    try:
        yield
    finally:
        print(stop(inference)[-2000:], stop(arm)[-2000:])


def test_resume_send_and_stop_drive_a_running_session(session):
    with BulletFK.of(NIRYO) as fk:
        resumed = command("resume", "--timeout", "300")  # a node just started may take a while
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert resumed.stdout.startswith("/arm_node/resume:"), resumed.stdout

        xyz = [0.22, 0.05, 0.25]
        sent = command("send", "--xyz", *map(str, xyz), "--quat", *map(str, DOWN), "--json",
                       "--timeout", "300")  # fmt: skip
        assert sent.returncode == 0, sent.stdout + sent.stderr
        answer = json.loads(sent.stdout)
        assert answer["solved"] and answer["joint_names"] == NIRYO.joint_names, answer
        q = np.array(answer["joints"])
        p, R = fk.fk(q)
        assert np.linalg.norm(p - xyz) < 1e-3, (p, xyz)
        assert rotation_angle(R, quat_to_matrix(DOWN)) < 0.01
        assert np.all(q >= NIRYO.lower) and np.all(q <= NIRYO.upper)

    far = command("send", "--xyz", "3", "0", "0.2", "--quat", *map(str, DOWN))
    assert far.returncode == 1, far.stdout + far.stderr  # answered, not solved
    first = far.stdout.splitlines()[0]
    assert first.startswith("/inference_node: ") and "solved" != first.split(": ", 1)[1], first

    stopped = command("stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith("/arm_node/stop:"), (
        stopped.stdout + stopped.stderr
    )


def test_send_names_the_node_that_did_not_answer():
    done = command("send", "--xyz", "0.2", "0", "0.2", "--quat", *map(str, DOWN),
                   "--inference-node", "/nobody_here", "--timeout", "2")  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "/nobody_here/target_pose" in done.stderr and "timed out after 2 s" in done.stderr


def test_resume_names_the_service_that_is_not_offered():
    done = command("resume", "--arm-node", "/nobody_here", "--timeout", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "/nobody_here/resume was not offered" in done.stderr, done.stderr
