"""Every script in examples/ runs as a user runs it, and what it prints is judged by what the
package does not share: joints by PyBullet's forward kinematics (fk_oracle.py), contacts by
PyBullet's contact query. The README's Python blocks are examples too: each is found in an
example file and run here, so neither can drift from the code."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fk_oracle import BulletFK, quat_to_matrix, rotation_angle

from robot_ik_nn.arm.model import ArmModel

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NIRYO = ArmModel.load("niryo_one")
POS_TOL, ROT_TOL = 1e-3, 0.01  # solved: 1 mm and 0.01 rad


def run(script: str, *args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def constants(script: str) -> dict:
    """The example's own top-level constants (its target), read from its source."""
    out = {}
    for node in ast.parse((EXAMPLES / script).read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def joints_after(label: str, text: str) -> np.ndarray:
    line = next(line for line in text.splitlines() if line.startswith(label))
    return np.array([float(v) for v in line[len(label):].split()])


def rows(text: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Lines "i x y z qx qy qz qw | joints": each target and the joints printed for it."""
    out = []
    for line in text.splitlines():
        if " | " in line and re.match(r"^\d+ ", line):
            left, right = line.split(" | ")
            out.append((np.array(left.split()[1:], float), np.array(right.split(), float)))
    return out


def assert_reaches(fk, q, position, quaternion):
    p, R = fk.fk(q)
    assert np.linalg.norm(p - np.asarray(position)) < POS_TOL, (q, p, position)
    assert rotation_angle(R, quat_to_matrix(quaternion)) < ROT_TOL, q
    assert np.all(q >= NIRYO.lower - 1e-9) and np.all(q <= NIRYO.upper + 1e-9), q


@pytest.fixture(scope="module")
def fk():
    with BulletFK.of(NIRYO) as oracle:
        yield oracle


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A Niryo One model folder with an untrained network, made in a moment: the examples that
    need a folder get one without training (the answers come from refinement either way)."""
    from robot_ik_nn import model_dir
    from robot_ik_nn.learn.network import IKNet, NetConfig

    out = tmp_path_factory.mktemp("models") / "niryo_one"
    return model_dir.save(out, IKNet(NetConfig(dof=NIRYO.dof, hidden=[16]), NIRYO), NIRYO)


def test_solve_one(fk):
    out = run("solve_one.py")
    target = constants("solve_one.py")
    assert "status: solved" in out, out
    assert_reaches(fk, joints_after("joints (rad):", out), target["position"],
                   target["quaternion"])


def test_solve_batch(fk):
    out = run("solve_batch.py")
    got = rows(out)
    assert len(got) == 20 and "solved 20 of 20" in out, out
    for target, q in got:
        assert_reaches(fk, q, target[:3], target[3:])


def test_solve_path_steps_at_most_its_max_step(fk):
    out = run("solve_path.py")
    got = rows(out)
    assert len(got) == 41 and "ok: True" in out, out
    for target, q in got:
        assert_reaches(fk, q, target[:3], target[3:])
    Q = np.array([q for _, q in got])
    assert np.abs(np.diff(Q, axis=0)).max() <= 0.2 + 1e-6
    ys = np.array([t[1] for t, _ in got])
    assert ys[0] == pytest.approx(-0.10) and ys[-1] == pytest.approx(0.10)  # the whole line


def test_the_suction_cup_frees_the_tool_x_axis_of_the_niryo_one(fk):
    """The approach axis of the Niryo One's tool_link is x: freed, the tool points straight down
    whatever its turn about it (freeing "z" instead left it 5.9 degrees off for this target)."""
    out = run("free_axis.py")
    target = constants("free_axis.py")
    q = joints_after("joints (rad):", out)
    p, R = fk.fk(q)
    assert np.linalg.norm(p - target["position"]) < POS_TOL
    wanted = quat_to_matrix(target["quaternion"])[:, 0]
    assert wanted == pytest.approx([0, 0, -1], abs=1e-6)  # the example asks for x straight down
    assert np.arccos(np.clip(R[:, 0] @ wanted, -1, 1)) < ROT_TOL
    printed = float(re.search(r"from straight down: ([\d.]+) deg", out).group(1))
    assert printed == pytest.approx(np.degrees(np.arccos(-R[2, 0])), abs=1e-3)


def test_several_answers_keep_clear_of_the_obstacles_and_the_arm(fk):
    import pybullet as pb

    out = run("obstacles_and_answers.py")
    c = constants("obstacles_and_answers.py")
    answers = [np.array(line.split(" | ")[1].split(), float)
               for line in out.splitlines() if re.match(r"^\d+ solved ", line)]
    assert len(answers) >= 2, out  # this target has two branches clear of the box
    for a in answers:
        assert_reaches(fk, a, c["position"], c["quaternion"])
    for a, b in zip(answers, answers[1:]):
        assert np.abs(a - b).max() > 0.1  # distinct
    moves = [np.abs(a).max() for a in answers]
    assert moves == sorted(moves)  # nearest to the arm (all zeros) first
    client, body = fk.client, fk.body
    (centre, half), (normal, offset) = c["BOX"], c["TABLE"]
    box = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half,
                                                        physicsClientId=client),
                             basePosition=centre, physicsClientId=client)
    table = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, planeNormal=normal,
                                                          physicsClientId=client),
                               basePosition=[0, 0, offset], physicsClientId=client)
    links = range(-1, pb.getNumJoints(body, physicsClientId=client))
    parent = {i: pb.getJointInfo(body, i, physicsClientId=client)[16] for i in links if i >= 0}
    try:
        for q in answers:
            fk.fk(q)
            assert not pb.getClosestPoints(body, box, 0.0, physicsClientId=client), q
            touching = {p[3] for p in pb.getClosestPoints(body, table, 0.0,
                                                          physicsClientId=client)}
            assert touching <= {-1}, (q, touching)  # only the base stands on the table
            for a in links:
                for b in links:
                    if a < b and parent.get(b) != a and parent.get(a) != b:
                        assert not pb.getClosestPoints(body, body, 0.0, a, b,
                                                       physicsClientId=client), (q, a, b)
    finally:
        pb.removeBody(box, physicsClientId=client)
        pb.removeBody(table, physicsClientId=client)


def test_export_and_load_serves_the_archive_elsewhere(fk, model):
    out = run("export_and_load.py", str(model))
    assert "archive: model.tar.gz" in out and "arm: niryo_one" in out, out
    assert "status: solved" in out, out
    assert_reaches(fk, joints_after("joints (rad):", out), [0.25, 0.0, 0.20],
                   [0.0, 0.7071068, 0.0, 0.7071068])


def test_export_and_load_names_a_folder_that_is_not_a_model(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "export_and_load.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "is not a model folder" in done.stderr


@pytest.mark.ros
def test_ros_client_resumes_sends_a_target_and_stops(fk, model):
    """The arm node (PyBullet driver, nothing moves before ~/resume) and the inference node, each
    in its own process; the example resumes the arm, sends a target over DDS, prints the command
    it got back and stops the arm, all without the ros2 command line."""
    from geometry_msgs.msg import PoseStamped
    from ros_helpers import Probe, node_process, stop

    arm = node_process("arm_node", {"driver": "pybullet"})
    inference = node_process("inference_node", {"model_dir": str(model)})
    probe = Probe("examples_probe")
    try:  # a user starts the client once the nodes are up: a first compile may take minutes
        targets = probe.node.create_publisher(PoseStamped, "/inference_node/target_pose", 10)
        probe.wait_for(lambda: targets.get_subscription_count() >= 1, 600, "the inference node")
        probe.wait_for(lambda: "/arm_node/resume" in dict(
            probe.node.get_service_names_and_types()), 600, "the arm node's ~/resume")
        xyz, quat = [0.22, 0.05, 0.25], [0.0, 0.7071068, 0.0, 0.7071068]
        out = run("ros_client.py", "--resume", "--stop", "--xyz", *map(str, xyz),
                  "--quat", *map(str, quat), timeout=240)
        assert "/arm_node/resume ->" in out and "/arm_node/stop ->" in out, out
        assert "status: solved" in out, out
        assert_reaches(fk, joints_after("joints (rad):", out), xyz, quat)
    finally:
        probe.close()
        print(stop(inference)[-2000:], stop(arm)[-2000:])


def python_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown.read_text(), flags=re.S)


def test_the_readme_python_quickstart_is_an_example_that_runs():
    blocks = python_blocks(ROOT / "README.md")
    assert blocks, "the README has a Python quickstart"
    sources = {p.name: p.read_text() for p in EXAMPLES.glob("*.py")}
    for block in blocks:
        homes = [name for name, text in sources.items() if block.strip() in text]
        assert homes, f"this README block is in no example file:\n{block}"
        done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert "status: solved" in done.stdout, done.stdout


def test_every_example_is_run_by_a_test():
    tested = (Path(__file__).read_text())
    for script in EXAMPLES.glob("*.py"):
        assert f'"{script.name}"' in tested, f"{script.name} is run by no test"
