"""train --region and robot-ik-nn merge: reward-driven distillation, parents recorded, arms kept
apart."""

import json
from pathlib import Path

import pytest
import torch

from robot_ik_nn import model_dir
from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel, RobotModelError
from robot_ik_nn.cli import main
from robot_ik_nn.learn.learners import LearnConfig
from robot_ik_nn.learn.learners.base import parse_region
from robot_ik_nn.learn.learners.distill import DistillLearner
from robot_ik_nn.learn.learners.gradient import GradientLearner
from robot_ik_nn.learn.merge import MergeError, merge
from robot_ik_nn.learn.network import IKNet, NetConfig
from robot_ik_nn.learn.training import TrainConfig, Trainer

pytestmark = pytest.mark.slow

LONG_TOOL = str(Path(__file__).parent / "data" / "niryo_one_long_tool.urdf")


def _train(out, region=None, robot="niryo_one", steps=150):
    config = TrainConfig(robot=robot, mode="position", steps=steps, minutes=None, out=str(out))
    config.hidden, config.heads, config.region = [32, 32], 1, region
    Trainer(config, progress=False).run()
    return out


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    root = tmp_path_factory.mktemp("halves")
    return _train(root / "left", ["y>0"]), _train(root / "right", ["y<0"])


def test_region_bounds_every_training_target(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "position", [8]))
    learner = GradientLearner(niryo, net, LearnConfig(), "cpu", seed=0)
    learner.region = parse_region(["y>0.05", "z<0.3"])
    _, pos, _ = learner.targets(500)
    assert len(pos) == 500 and (pos[:, 1] > 0.05).all() and (pos[:, 2] < 0.3).all()
    for bad in (["q>0"], ["y=0"], ["y>"], ["y>zero"]):
        with pytest.raises(ValueError, match="region condition"):
            parse_region(bad)
    learner.region = parse_region(["z>5"])
    with pytest.raises(ValueError, match="no reachable targets"):
        learner.targets(10)


def test_hints_come_only_from_a_parent_that_does_better(niryo, halves):
    left = model_dir.load(halves[0]).net
    fresh = IKNet.for_arm(niryo, NetConfig(niryo.dof, "position", [32, 32]))
    config = LearnConfig(batch_size=256)
    learner = DistillLearner(
        niryo, fresh, config, "cpu", 0, teachers=[left], regions=[["y>0"], ["y<0"]]
    )
    _, pos, _ = learner.targets(256)
    assert (pos[:128, 1] > 0).all() and (pos[128:, 1] < 0).all(), "the union of the regions"
    assert learner.step(0.5)["hinted"] > 0.5  # a fresh network: the parent is better nearly always
    twin = IKNet.for_arm(niryo, NetConfig(niryo.dof, "position", [32, 32]))
    twin.load_state_dict(left.state_dict())
    same = DistillLearner(niryo, twin, config, "cpu", 0, teachers=[left], regions=[None])
    assert same.step(0.5)["hinted"] == 0.0  # never better than itself


def test_merge_writes_an_ordinary_folder_that_names_its_parents(tmp_path, halves):
    trainer = merge(list(halves), tmp_path / "merged", minutes=None, steps=60, progress=False)
    meta = json.loads((tmp_path / "merged" / "model.json").read_text())
    assert meta["training"]["learner"] == "distill"
    records = meta["parents"]
    assert [r["name"] for r in records] == ["left", "right"]
    for record, folder in zip(records, halves):
        parent = json.loads((folder / "model.json").read_text())
        assert record["weights_sha256"] == parent["weights_sha256"]
        assert record["fingerprint"] == parent["fingerprint"] == meta["fingerprint"]
        assert record["role"] == "merged"
    assert [r["region"] for r in records] == [["y>0"], ["y<0"]]
    assert sum(r["started_from"] for r in records) == 1  # the parent that scores best
    assert any(row.get("hinted", 0) > 0 for row in trainer.history)
    loaded = model_dir.load(tmp_path / "merged")
    assert loaded.net(torch.tensor([[0.2, 0.1, 0.3]])).shape == (1, 6)


def test_networks_of_different_arms_are_refused(tmp_path, halves, capsys):
    other = _train(tmp_path / "long", robot=LONG_TOOL, steps=2)
    with pytest.raises(MergeError, match="different arms"):
        merge([halves[0], other], tmp_path / "m", minutes=None, steps=1, progress=False)
    argv = ["merge", str(halves[0]), str(other), "--out", str(tmp_path / "m"), "--steps", "1"]
    assert main([*argv, "--quiet"]) == 2
    assert "cannot merge networks of different arms" in capsys.readouterr().err
    with pytest.raises(MergeError, match="at least two"):
        merge([halves[0]], tmp_path / "m", minutes=None, steps=1, progress=False)
    with pytest.raises(MergeError, match="one was given twice"):
        merge([halves[0], halves[0]], tmp_path / "m", minutes=None, steps=1, progress=False)
    with pytest.raises(MergeError, match="is one of the networks merged"):  # never over a parent
        merge(list(halves), halves[1], minutes=None, steps=1, force=True, progress=False)


def _limited(niryo, tmp_path, name, lo0, hi0):
    """The Niryo One in another environment: joint 1 held to [lo0, hi0]."""
    lower, upper = niryo.lower.copy(), niryo.upper.copy()
    lower[0], upper[0] = lo0, hi0
    path = tmp_path / f"{name}.urdf"
    path.write_text(niryo.with_limits(lower, upper).urdf_text)
    return str(path)


def test_an_arm_with_other_limits_keeps_its_chain(niryo, tmp_path):
    other = ArmModel.load(_limited(niryo, tmp_path, "half", -1.0, 0.0))
    assert other.lower[0] == -1.0 and other.upper[0] == 0.0
    assert (other.lower[1:] == niryo.lower[1:]).all()
    assert (other.upper[1:] == niryo.upper[1:]).all()
    assert other.fingerprint != niryo.fingerprint
    assert other.geometry_fingerprint == niryo.geometry_fingerprint
    q = torch.rand(20, niryo.dof) - 0.5
    assert torch.allclose(Kinematics(other).forward(q)[0], Kinematics(niryo).forward(q)[0])
    with pytest.raises(RobotModelError, match="empty range"):
        niryo.with_limits(niryo.upper, niryo.lower)


def test_networks_of_different_joint_limits_merge_into_the_union(niryo, tmp_path):
    lo, hi = float(niryo.lower[0]), float(niryo.upper[0])
    minus = _train(tmp_path / "minus", robot=_limited(niryo, tmp_path, "minus", lo, 0.0), steps=60)
    plus = _train(tmp_path / "plus", robot=_limited(niryo, tmp_path, "plus", 0.0, hi), steps=60)
    trainer = merge([minus, plus], tmp_path / "merged", minutes=None, steps=20, progress=False)
    # every batch: half inside each parent's range of joint 1
    q, _, _ = trainer.learner.targets(200)
    assert (q[:100, 0] <= 0).all() and (q[100:, 0] >= 0).all()
    merged = model_dir.load(tmp_path / "merged")
    assert merged.arm.lower[0] == pytest.approx(lo) and merged.arm.upper[0] == pytest.approx(hi)
    assert merged.arm.fingerprint == niryo.fingerprint  # the union is the arm's own range here
    records = merged.meta["parents"]
    assert [r["upper"][0] for r in records] == pytest.approx([0.0, hi])
    assert [r["lower"][0] for r in records] == pytest.approx([lo, 0.0])


def test_a_parent_of_another_shape_merges_in_the_best_parent_s_shape(tmp_path, halves):
    """The merged network starts from the best parent: in its shape, so all of it is copied (a
    first parent of another width used to give a fresh network said to start from the best)."""
    narrow = tmp_path / "narrow"
    config = TrainConfig(mode="position", steps=2, minutes=None, out=str(narrow), hidden=[8])
    config.heads = 1
    Trainer(config, progress=False).run()  # two steps: the other parent is better
    trainer = merge([narrow, halves[0]], tmp_path / "m", minutes=None, steps=1, progress=False)
    assert trainer.net.config.hidden == [32, 32]
    assert [r["started_from"] for r in trainer.parents] == [False, True]
    from robot_ik_nn.evaluate import network_errors

    best = model_dir.load(halves[0])  # one step from it: about as good, not a fresh network
    theirs = network_errors(best.net, best.arm, targets=300, seed=5)["pos_mm_median"]
    mine = network_errors(trainer.net, trainer.arm, targets=300, seed=5)["pos_mm_median"]
    assert mine < 1.5 * theirs, (mine, theirs)


def test_a_stopped_merge_resumes(tmp_path, halves, capsys):
    argv = ["merge", *map(str, halves), "--out", str(tmp_path / "m"), "--steps", "3", "--quiet"]
    assert main(argv) == 0
    argv[argv.index("3")] = "6"
    assert main(argv) == 2 and "pass --resume to continue it" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0
    assert json.loads((tmp_path / "m" / "model.json").read_text())["training"]["steps"] == 6
