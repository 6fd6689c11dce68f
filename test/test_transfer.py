"""train --init: start from another model's weights where the shapes fit; the parent recorded."""

import json
from pathlib import Path

import pytest
import torch

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.cli import main
from robot_ik_nn.evaluate import network_errors
from robot_ik_nn.learn.training import TrainConfig, Trainer

pytestmark = pytest.mark.slow

LONG_TOOL = str(Path(__file__).parent / "data" / "niryo_one_long_tool.urdf")


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    out = tmp_path_factory.mktemp("transfer") / "parent"
    config = TrainConfig(
        mode="position", steps=250, minutes=None, out=str(out), hidden=[64, 64], heads=1
    )
    Trainer(config, progress=False).run()
    return out


def _child(out, parent, **kw):
    base = dict(robot=LONG_TOOL, mode="position", steps=1, minutes=None, out=str(out))
    base.update(hidden=[64, 64], heads=1, init=str(parent))
    base.update(kw)
    return Trainer(TrainConfig(**base), progress=False)


def test_the_long_tool_arm_differs_only_in_its_tool():
    short, long = ArmModel.load("niryo_one"), ArmModel.load(LONG_TOOL)
    assert short.fingerprint != long.fingerprint
    assert short.joint_names == long.joint_names
    assert abs(float(long.tip_offset[2, 3] - short.tip_offset[2, 3]) - 0.05) < 1e-9


def test_init_copies_the_weights_keeps_the_new_arm_and_starts_closer(tmp_path, parent):
    loaded = model_dir.load(parent)
    child = _child(tmp_path / "child", parent)
    theirs, mine = loaded.net.state_dict(), child.net.state_dict()
    for name, _ in child.net.named_parameters():
        assert torch.equal(mine[name], theirs[name]), name
    assert child.net.arm.fingerprint == ArmModel.load(LONG_TOOL).fingerprint
    fresh = _child(tmp_path / "fresh", parent, init=None)
    started = network_errors(child.net, child.arm, targets=500, seed=3)["pos_mm_median"]
    scratch = network_errors(fresh.net, fresh.arm, targets=500, seed=3)["pos_mm_median"]
    assert started < 0.5 * scratch, (started, scratch)


def test_the_parent_is_recorded_in_model_json(tmp_path, parent):
    out = tmp_path / "cli"
    argv = ["--threads", "1", "train", "--robot", LONG_TOOL, "--mode", "position", "--heads"]
    argv += ["1", "--hidden", "64", "64", "--steps", "3", "--out", str(out), "--quiet"]
    assert main([*argv, "--init", str(parent)]) == 0
    meta = json.loads((out / "model.json").read_text())
    parent_meta = json.loads((parent / "model.json").read_text())
    (record,) = meta["parents"]
    assert record["role"] == "init" and record["name"] == parent.name
    assert record["fingerprint"] == parent_meta["fingerprint"] != meta["fingerprint"]
    assert record["weights_sha256"] == parent_meta["weights_sha256"]
    assert "head.weight" in record["copied"]
    model_dir.load(out)  # an ordinary model folder for the new arm


def test_only_fitting_shapes_are_copied_and_nothing_fitting_is_refused(tmp_path, parent):
    pose = _child(tmp_path / "pose", parent, mode="pose")  # the first layer takes 9 inputs
    copied = pose.parents[0]["copied"]
    assert "body.0.weight" not in copied and "head.weight" in copied
    with pytest.raises(ValueError, match=r"no layer of the starting network \(64 x 64, 1 head\) "
                       r"fits this network's shapes \(8 x 8, 2 heads\); .*--hidden 64 64"):
        _child(tmp_path / "none", parent, mode="pose", hidden=[8, 8], heads=2)
    argv = ["train", "--init", str(tmp_path / "nothing"), "--steps", "1"]
    assert main([*argv, "--out", str(tmp_path / "x"), "--quiet"]) == 2


def test_other_heads_take_the_first_heads_of_the_output_layer(tmp_path, parent):
    """A 1-head parent into a 3-head child: the head both have is copied, so the child's first
    head answers as the parent does."""
    three = _child(tmp_path / "three", parent, heads=3)
    assert "head.weight (first 1 head)" in three.parents[0]["copied"]
    theirs = model_dir.load(parent).net.state_dict()["head.weight"]
    mine = three.net.state_dict()["head.weight"]
    assert mine.shape[0] == 3 * len(theirs) and torch.equal(mine[: len(theirs)], theirs)
