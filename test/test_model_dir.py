"""Model folders: save, load, and refuse what does not fit."""

import json
from pathlib import Path

import pytest
import torch

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.learn.network import IKNet, NetConfig
from robot_ik_nn.model_dir import ModelDirError


@pytest.fixture()
def saved(tmp_path, niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "pose", [32, 32]))
    path = model_dir.save(
        tmp_path / "m", net, niryo, {"steps": 3}, report="# hi\n", curve_png=b"\x89PNG"
    )
    return path, net


def test_round_trip_gives_the_same_answers(saved, niryo):
    path, net = saved
    assert sorted(p.name for p in path.iterdir()) == [
        "model.json",
        "model.safetensors",
        "report.md",
        "robot.urdf",
        "training_curve.png",
    ]
    loaded = model_dir.load(path)
    x = torch.rand(10, 3) * 0.2 + torch.tensor([0.1, 0.0, 0.2])
    rot = torch.eye(3).expand(10, 3, 3)
    torch.testing.assert_close(loaded.net(x, rot), net(x, rot), rtol=0, atol=0)
    assert loaded.arm.fingerprint == niryo.fingerprint
    meta = json.loads((path / "model.json").read_text())
    assert (
        meta["robot"] == "niryo_one"
        and meta["mode"] == "pose"
        and meta["network"]["hidden"] == [32, 32]
    )
    assert meta["joint_names"] == niryo.joint_names and meta["training"] == {"steps": 3}


def test_loading_moves_with_the_folder(saved, tmp_path):
    path, _ = saved
    moved = path.rename(tmp_path / "elsewhere")
    assert model_dir.load(moved).arm.name == "niryo_one"


def test_weights_are_not_pickle(saved):
    path, _ = saved
    head = (path / "model.safetensors").read_bytes()[:8]
    header_len = int.from_bytes(head, "little")
    header = json.loads((path / "model.safetensors").read_bytes()[8 : 8 + header_len])
    assert "head.weight" in header


def test_refuses_another_arm(saved):
    path, _ = saved
    with pytest.raises(ModelDirError, match="fingerprint mismatch.*niryo_one.*inmoov_right_arm"):
        model_dir.load(path, arm=ArmModel.load("inmoov_right_arm"))
    with pytest.raises(ModelDirError, match="fingerprint mismatch"):
        model_dir.load(path, arm=ArmModel.load("niryo_one", tip="hand_link"))


def test_refuses_an_edited_urdf(saved):
    path, _ = saved
    urdf = path / "robot.urdf"
    urdf.write_text(urdf.read_text().replace('velocity="2.2"', 'velocity="9.9"'))
    # said as what happened (was: "trained on 'niryo_one' but used with 'niryo_one'")
    with pytest.raises(ModelDirError, match="robot.urdf is not the arm the network was trained"):
        model_dir.load(path)


def test_refuses_corrupt_weights(saved):
    path, _ = saved
    blob = bytearray((path / "model.safetensors").read_bytes())
    blob[-5] ^= 0xFF
    (path / "model.safetensors").write_bytes(bytes(blob))
    with pytest.raises(ModelDirError, match="model.safetensors is corrupt"):
        model_dir.load(path)


def test_refuses_corrupt_or_missing_metadata(saved, tmp_path):
    path, _ = saved
    (path / "model.json").write_text("{ not json")
    with pytest.raises(ModelDirError, match="model.json is corrupt"):
        model_dir.load(path)
    (path / "model.json").unlink()
    with pytest.raises(ModelDirError, match="model.json is missing"):
        model_dir.load(path)
    with pytest.raises(ModelDirError, match="model folder not found"):
        model_dir.load(tmp_path / "nothing")
    (tmp_path / "arm.urdf").write_text("<robot/>")  # a URDF given where a model belongs
    with pytest.raises(ModelDirError, match=r"arm.urdf is a file, not a model folder: a URDF; "
                       r"train a model for it \(robot-ik-nn train --robot .*arm.urdf\)"):
        model_dir.load(tmp_path / "arm.urdf")


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    target = tmp_path / "x.bin"
    model_dir.atomic_write(target, b"one")
    model_dir.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]


def test_export_then_load_elsewhere(saved, tmp_path):
    import shutil

    path, net = saved
    archive = model_dir.export(path, tmp_path / "m.tar.gz")
    with pytest.raises(ModelDirError, match="--out .*m.tar: an exported model's name ends in"):
        model_dir.export(path, tmp_path / "m.tar")  # solve and eval would not know it
    elsewhere = tmp_path / "other_machine"
    elsewhere.mkdir()
    moved = Path(shutil.move(str(archive), elsewhere / "m.tar.gz"))
    shutil.rmtree(path)  # the original folder is gone: the archive carries everything
    loaded = model_dir.load(moved)
    x, rot = torch.tensor([[0.2, 0.05, 0.3]]), torch.eye(3)[None]
    torch.testing.assert_close(loaded.net(x, rot), net(x, rot), rtol=0, atol=0)
    assert loaded.arm.name == "niryo_one"
    record = model_dir.parent_record(loaded, "init")  # the archive, not where it was unpacked
    assert record["name"] == "m.tar.gz" and record["path"] == str(moved.resolve())


def test_an_unpacked_archive_is_removed_when_the_process_ends(saved, tmp_path):
    import subprocess
    import sys

    archive = model_dir.export(saved[0], tmp_path / "m.tar.gz")
    code = f"from robot_ik_nn import model_dir; print(model_dir.read({str(archive)!r}).path)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    unpacked = Path(run.stdout.strip())
    assert unpacked.name.startswith("robot_ik_nn_model_") and not unpacked.exists()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("hidden", "128x128", "hidden='128x128'"),
        ("dof", 5, r"dof=5 \(6 joints are named\)"),
        ("heads", 0, "heads=0"),
        ("tracking", "yes", "tracking='yes'"),
    ],
)
def test_an_edited_network_section_is_named(saved, field, value, message):
    path, _ = saved
    meta = json.loads((path / "model.json").read_text())
    meta["network"][field] = value
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelDirError, match=f"model.json is corrupt: its network section has "
                       f"{message}"):
        model_dir.read(path)


def test_network_settings_edited_to_other_valid_values_are_refused(saved):
    """The weights carry their network's settings: a yaw_symmetry flipped in model.json (valid
    types, wrong seeds) is named, not served."""
    path, _ = saved
    meta = json.loads((path / "model.json").read_text())
    meta["network"]["yaw_symmetry"] = not meta["network"]["yaw_symmetry"]
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelDirError, match=r"differs from the one saved with the weights in "
                       r"yaw_symmetry \(True\)"):
        model_dir.read(path)


def test_a_hostile_archive_is_refused(tmp_path):
    import io
    import tarfile

    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("m/../../escape.txt")
        data = b"x"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ModelDirError, match="unexpected entry"):
        model_dir.load(bad)
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(ModelDirError, match="not a readable model archive"):
        model_dir.load(tmp_path / "junk.tar.gz")


def test_the_same_weights_give_the_same_bytes_in_every_process():
    import subprocess
    import sys

    code = (
        "import torch; from robot_ik_nn.model_dir import weights_bytes, _sha256; "
        "torch.manual_seed(0); print(_sha256(weights_bytes(torch.nn.Linear(3, 4))))"
    )
    names = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(4)
    }  # safetensors writes a metadata map in an order of its own per process
    assert len(names) == 1, names
