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


def command(*args: str, timeout: float = 700, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "robot_ik_nn.cli", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **env},
    )  # fmt: skip


def test_send_and_stop_without_a_session_say_so_at_once():
    """In a DDS domain where nothing runs (201-230: the tests' own domains are 1-200), ``send``
    and ``stop`` say no session is running and how to start one, within seconds, not after
    their --timeout (120 s here; the process gets 60)."""
    empty = str(201 + int(os.environ.get("ROS_DOMAIN_ID", "0")) % 30)
    target = ["--xyz", "0.2", "0", "0.2", "--quat", *map(str, DOWN)]
    for words in (["send", *target], ["stop"]):
        done = command(*words, "--timeout", "120", timeout=60, ROS_DOMAIN_ID=empty)
        assert done.returncode == 6, done.stdout + done.stderr  # no answer
        assert "no session is running" in done.stderr and "robot-ik-nn launch" in done.stderr


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
    # the arm node as launch inference names it (/sim_node), holding until resume as launch
    # deploy's does; the inference node streams rate-limited setpoints as launch deploy's does
    arm = node_process("sim_node", {"start_enabled": False})
    inference = node_process("inference_node", {"model_dir": str(model), "stream": True})
    try:
        yield
    finally:
        print(stop(inference)[-2000:], stop(arm)[-2000:])


def send(xyz, *more: str) -> subprocess.CompletedProcess:
    return command("send", "--xyz", *map(str, xyz), "--quat", *map(str, DOWN), *more)


def reaches(fk, q, xyz) -> bool:
    """PyBullet's judgement: joints ``q`` put the tool on target ``xyz`` pointing DOWN."""
    p, R = fk.fk(np.asarray(q))
    return np.linalg.norm(p - xyz) < 1e-3 and rotation_angle(R, quat_to_matrix(DOWN)) < 0.01


def test_send_to_a_held_arm_says_held_and_prints_the_answer_apart_from_the_setpoint(session):
    """Before resume the arm holds: send says so and exits 5, not 0. The joints it calls the
    answer reach the target (PyBullet); the setpoint, the first rate-limited step of the stream
    from the arm's joints (all 0 at start), is printed apart from them."""
    xyz = [0.22, 0.05, 0.25]
    # a node just started may take a while (a first start compiles the solver: minutes on a
    # loaded machine)
    sent = send(xyz, "--json", "--timeout", "600")
    assert sent.returncode == 5, sent.stdout + sent.stderr  # held
    out = json.loads(sent.stdout)
    assert out["solved"] and out["held"] and out["arm_node"] == "/sim_node", out
    assert out["arm"].startswith("holding: stopped"), out
    with BulletFK.of(NIRYO) as fk:
        assert reaches(fk, out["joints"], xyz), out
    step = NIRYO.velocity_limits / 100.0  # stream_rate 100 Hz: one step from the joints read
    assert np.all(np.abs(out["setpoint"]) <= step + 1e-3), out
    assert np.abs(np.subtract(out["joints"], out["setpoint"])).max() > 0.1, out


def test_resume_send_and_stop_drive_a_running_session(session):
    resumed = command("resume", "--timeout", "300")  # the arm node found by its services
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.startswith("/sim_node/resume:"), resumed.stdout

    xyz = [0.22, 0.05, 0.25]
    sent = send(xyz, "--json", "--timeout", "300")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    answer = json.loads(sent.stdout)
    assert answer["solved"] and answer["joint_names"] == NIRYO.joint_names, answer
    assert not answer["held"], answer
    q = np.array(answer["joints"])
    with BulletFK.of(NIRYO) as fk:
        assert reaches(fk, q, xyz), answer
    assert np.all(q >= NIRYO.lower) and np.all(q <= NIRYO.upper)

    far = send([3, 0, 0.2])
    assert far.returncode == 4, far.stdout + far.stderr  # rejected
    first = far.stdout.splitlines()[0]
    assert first.startswith("/inference_node: rejected"), first

    stopped = command("stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith("/sim_node/stop:"), (
        stopped.stdout + stopped.stderr
    )
    held = send([0.2, -0.05, 0.22])  # after stop: solved, commanded, and nothing moves
    assert held.returncode == 5, held.stdout + held.stderr
    assert "/inference_node: solved" in held.stdout and "/sim_node: HELD" in held.stdout
    assert "the answer's joints (rad):" in held.stdout


def test_stop_with_two_arm_nodes_names_both(session):
    from ros_helpers import Probe, node_process, stop
    from std_srvs.srv import Trigger

    other = node_process("arm_node", {"driver": "pybullet"}, "/joint_states:=/other/joint_states")
    probe = Probe("two_arm_nodes")
    try:  # both offer ~/stop before the command looks
        for name in ("/arm_node", "/sim_node"):
            assert probe.node.create_client(Trigger, f"{name}/stop").wait_for_service(120)
        done = command("stop", "--timeout", "120")
        assert done.returncode == 2, done.stdout + done.stderr  # a usage error: name one
        assert "several arm nodes" in done.stderr and "/arm_node, /sim_node" in done.stderr
        named = command("stop", "--arm-node", "/arm_node")
        assert named.returncode == 0 and named.stdout.startswith("/arm_node/stop:"), (
            named.stdout + named.stderr
        )
    finally:
        probe.close()
        stop(other)


def test_send_names_the_node_that_did_not_answer():
    done = command("send", "--xyz", "0.2", "0", "0.2", "--quat", *map(str, DOWN),
                   "--inference-node", "/nobody_here", "--timeout", "2")  # fmt: skip
    assert done.returncode == 6, done.stdout + done.stderr  # no answer
    assert "no node /nobody_here takes targets on /nobody_here/target_pose" in done.stderr
    assert "/inference_node/target_pose" in done.stderr, done.stderr  # the one there is


def test_resume_names_the_service_that_is_not_offered():
    done = command("resume", "--arm-node", "/nobody_here", "--timeout", "2")
    assert done.returncode == 6, done.stdout + done.stderr
    assert "/nobody_here/resume was not offered" in done.stderr, done.stderr
    assert "Arm nodes found: /sim_node" in done.stderr, done.stderr
