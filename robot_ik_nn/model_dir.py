"""A trained model as a self-contained folder, safe to copy to another machine.

    model.safetensors   the network's weights and buffers (never pickle)
    model.json          robot, fingerprint, base/tip, joints, limits, network shape, mode,
                        training summary, and the SHA-256 of model.safetensors
    robot.urdf          the URDF the network was trained on
    report.md           what was trained, how long, how well
    training_curve.png  error against training time
    model.onnx          (after ``robot-ik-nn export MODEL --onnx``) the layers for onnxruntime

:func:`read` opens a folder with numpy alone (serving: no torch); :func:`load` builds the torch
network from it (training, evaluation on a GPU); :func:`save` writes one (needs torch),
replacing an existing folder whole (:func:`write_folder`: a reader finds the old model or the
new one at every moment, even after a kill -9).

Loading checks the weights' checksum and the arm's fingerprint and refuses a mismatch or a
corrupt file with a message that says which. :func:`export` packs the folder (without the
training checkpoint and logs) into one ``.tar.gz`` to carry to another machine; :func:`load`
takes that archive as well as the folder.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import tensor_file
from .arm.model import ArmModel, RobotModelError
from .folder_swap import atomic_write  # noqa: F401  (model_dir.atomic_write, as before)

FORMAT = 1
WEIGHTS, META, URDF, REPORT, CURVE = (
    "model.safetensors",
    "model.json",
    "robot.urdf",
    "report.md",
    "training_curve.png",
)
ONNX = "model.onnx"


class ModelDirError(RuntimeError):
    """A model folder that cannot be used: missing, corrupt, or for another arm."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def weights_bytes(net) -> bytes:
    state = {k: v.detach().cpu().contiguous().numpy() for k, v in net.state_dict().items()}
    # one metadata entry: safetensors writes a map's entries in no fixed order, and identical
    # weights must give identical bytes (their SHA-256 names them in model.json and lineage);
    # the network's settings ride along, so that model.json's copy can be checked against them
    config = getattr(net, "config", None)
    network = f" {NETWORK}{json.dumps(config.to_dict(), sort_keys=True)}" if config else ""
    return tensor_file.dumps(state, metadata={"format": f"robot_ik_nn {FORMAT}{network}"})


NETWORK = "network="


def _recorded_network(blob: bytes) -> dict | None:
    """The network settings saved with the weights (safetensors' header), or None (a folder
    written before they were)."""
    try:
        entry = tensor_file.metadata(blob)["format"]
        return json.loads(entry.split(NETWORK, 1)[1]) if NETWORK in entry else None
    except (ValueError, KeyError, TypeError, IndexError):
        return None


@dataclass
class ModelFolder:
    """A model folder read without torch: its metadata, arm and tensors (numpy); ``archive``:
    the exported file it was unpacked from, if any."""

    meta: dict
    arm: ArmModel
    tensors: dict
    path: Path
    archive: Path | None = None

    @property
    def mode(self) -> str:
        return self.meta["network"]["mode"]


@dataclass
class LoadedModel:
    net: object  # network.IKNet
    arm: ArmModel
    meta: dict
    path: Path
    archive: Path | None = None

    @property
    def mode(self) -> str:
        return self.net.config.mode


def save(
    path: str | Path,
    net,
    arm: ArmModel,
    training: dict | None = None,
    report: str | None = None,
    curve_png: bytes | None = None,
    parents: list[dict] | None = None,
) -> Path:
    path = Path(path)
    blob = weights_bytes(net)
    meta = {
        "format": FORMAT,
        **arm.describe(),
        "network": net.config.to_dict(),
        "mode": net.config.mode,
        "weights_sha256": _sha256(blob),
        "training": training or {},
    }
    if parents:  # the models it started from (train --init) or was merged from (merge)
        meta["parents"] = parents

    def fill(work: Path) -> None:
        (work / URDF).write_bytes(arm.urdf_text.encode())
        (work / WEIGHTS).write_bytes(blob)
        (work / META).write_text(json.dumps(meta, indent=2) + "\n")
        if report is not None:
            (work / REPORT).write_text(report)
        if curve_png is not None:
            (work / CURVE).write_bytes(curve_png)

    write_folder(path, fill)
    return path


def write_folder(path: str | Path, fill) -> list[str]:
    """Write a model folder whole (folder_swap.replace): ``fill(work)`` writes the new model's
    files; the old model's own files (MODEL_FILES) go with it, anything else the folder holds
    (a training run's checkpoint and metrics, a user's notes) is kept. A reader finds the old
    model or the new one, whole, at every moment, even after a kill -9. Returns the names
    kept."""
    from . import folder_swap

    try:
        return folder_swap.replace(path, fill, MODEL_FILES)
    except FileExistsError as err:
        raise ModelDirError(str(err)) from None


def read_meta(path: str | Path) -> dict:
    path = Path(path)
    if path.is_file():
        hint = (
            f": a URDF; train a model for it (robot-ik-nn train --robot {path}), or solve "
            "without one (robot_ik_nn.for_arm)"
            if path.suffix.lower() in (".urdf", ".xacro")
            else ""
        )
        raise ModelDirError(f"{path} is a file, not a model folder{hint}")
    if not path.is_dir():
        raise ModelDirError(f"model folder not found: {path}")
    try:
        meta = json.loads((path / META).read_text())
    except FileNotFoundError as err:
        raise ModelDirError(f"{path} is not a model folder: {META} is missing") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelDirError(f"{path / META} is corrupt: {err}") from err
    for key in ("fingerprint", "network", "weights_sha256", "base", "tip", "joint_names"):
        if key not in meta:
            raise ModelDirError(f"{path / META} is corrupt: no '{key}'")
    if meta.get("format") != FORMAT:
        raise ModelDirError(
            f"{path} has model format {meta.get('format')}; this version reads format {FORMAT}"
        )
    wrong = _network_problem(meta["network"], len(meta["joint_names"]))
    if wrong:
        raise ModelDirError(f"{path / META} is corrupt: its network section has {wrong}")
    return meta


def _network_problem(net, joints: int) -> str:
    """What is wrong with model.json's ``network`` section, or "" (the types NetConfig takes)."""
    if not isinstance(net, dict):
        return f"{net!r} where the network's settings belong"
    whole = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    checks = {
        "dof": lambda v: whole(v) and v == joints,
        "mode": lambda v: v in ("pose", "position"),
        "hidden": lambda v: isinstance(v, list) and v and all(whole(h) and h > 0 for h in v),
        "tracking": lambda v: isinstance(v, bool),
        "yaw_symmetry": lambda v: isinstance(v, bool),
        "heads": lambda v: whole(v) and 1 <= v <= 64,
    }
    for key, fits in checks.items():
        if key not in net:
            if key in ("dof", "mode", "hidden"):  # the others have defaults (older folders)
                return f"no '{key}'"
            continue
        if not fits(net[key]):
            also = f" ({joints} joints are named)" if key == "dof" else ""
            return f"{key}={net[key]!r}{also}"
    return ""


def parent_record(folder: "ModelFolder | LoadedModel", role: str) -> dict:
    """What a model folder says about a model it came from: name, path, arm, weights."""
    meta = folder.meta
    where = Path(folder.archive or folder.path)  # an archive, not the folder it was unpacked to
    return {
        "role": role,
        "name": where.name,
        "path": str(where.resolve()),
        "robot": meta.get("robot"),
        "fingerprint": meta["fingerprint"],
        "weights_sha256": meta["weights_sha256"],
        "mode": meta["network"]["mode"],
        "region": meta.get("training", {}).get("region"),
    }


SHIPPED = (WEIGHTS, META, URDF, REPORT, CURVE, ONNX, "compliance.json")  # + a calibrated arm's
# a model's own files: replaced with it (a calibrated folder's record and picture too)
MODEL_FILES = SHIPPED + ("calibration.json", "calibration.png")
ARCHIVES = (".tar.gz", ".tgz")


def export(path: str | Path, out: str | Path | None = None) -> Path:
    """Pack a model folder into ``out`` (default ``<folder>.tar.gz``): what serving needs."""
    import tarfile

    path = Path(path)
    read_meta(path)  # refuse to pack something that is not a model folder
    out = Path(out) if out else path.with_name(path.name + ".tar.gz")
    if not out.name.endswith(ARCHIVES):
        raise ModelDirError(
            f"--out {out}: an exported model's name ends in .tar.gz (or .tgz), which is how "
            "eval, solve and the inference node tell it from a folder"
        )
    packed = io.BytesIO()  # a few hundred kB: packed in memory, then written atomically
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name in SHIPPED:
            if (path / name).exists():
                tar.add(path / name, arcname=f"{path.name}/{name}")
    atomic_write(out, packed.getvalue())
    return out


def _unpack(archive: Path) -> Path:
    """Extract an exported archive into a fresh temporary folder, refusing anything unexpected."""
    import tarfile

    target = Path(tempfile.mkdtemp(prefix="robot_ik_nn_model_"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)  # in use until the process ends
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            tops = {Path(m.name).parts[0] for m in members if m.name}
            for m in members:
                parts = Path(m.name).parts
                if not m.isfile() or len(parts) != 2 or parts[1] not in SHIPPED or len(tops) != 1:
                    raise ModelDirError(
                        f"{archive} is not an exported model: unexpected entry '{m.name}'"
                    )
            for m in members:
                (target / Path(m.name).name).write_bytes(tar.extractfile(m).read())
    except (tarfile.TarError, OSError, EOFError) as err:
        said = str(err).splitlines()[0].rstrip(":")  # tarfile lists every method it tried
        raise ModelDirError(f"{archive} is not a readable model archive: {said}") from err
    return target


def read(path: str | Path, arm: ArmModel | None = None) -> ModelFolder:
    """Open a model folder (or an exported ``.tar.gz``) with numpy alone. With ``arm``, refuse
    unless it is the arm the model was trained on."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"a model is a folder or a .tar.gz path; got {path!r}")
    path = Path(path)
    archive = None
    if path.is_file() and path.name.endswith(ARCHIVES):
        archive, path = path, _unpack(path)
    meta = read_meta(path)
    try:
        blob = (path / WEIGHTS).read_bytes()
    except FileNotFoundError as err:
        raise ModelDirError(f"{path / WEIGHTS} is missing") from err
    if _sha256(blob) != meta["weights_sha256"]:
        raise ModelDirError(f"{path / WEIGHTS} is corrupt: its checksum does not match model.json")
    recorded = _recorded_network(blob)
    if recorded is not None and recorded != meta["network"]:
        changed = sorted(k for k in recorded.keys() | meta["network"].keys()
                         if recorded.get(k) != meta["network"].get(k))
        raise ModelDirError(
            f"{path / META} is corrupt: its network section differs from the one saved with "
            f"the weights in {', '.join(f'{k} ({recorded.get(k)!r})' for k in changed)}"
        )
    calibrated_for = meta.get("calibration", {}).get("nominal_fingerprint")
    if arm is not None and arm.fingerprint == calibrated_for:
        arm = None  # the nominal arm of a calibrated folder: the folder's calibrated URDF serves
    own_urdf = arm is None
    if own_urdf:
        try:
            arm = ArmModel(
                (path / URDF).read_text(),
                source=str(path / URDF),
                base=meta["base"],
                tip=meta["tip"],
                name=meta.get("robot"),
            )
        except (OSError, RobotModelError) as err:
            raise ModelDirError(f"cannot rebuild the arm from {path / URDF}: {err}") from err
        if meta.get("urdf_source"):  # meshes, if any, are where the URDF was trained from
            arm.mesh_dirs.append(str(Path(meta["urdf_source"]).parent))
    if arm.fingerprint != meta["fingerprint"] and own_urdf:
        raise ModelDirError(
            f"{path / URDF} is not the arm the network was trained on (its joints, limits or "
            f"links changed since: fingerprint {arm.fingerprint[:12]}, trained on "
            f"{meta['fingerprint'][:12]}); put back the file the model was saved with, or "
            "train a model for the changed arm"
        )
    if arm.fingerprint != meta["fingerprint"]:
        raise ModelDirError(
            f"fingerprint mismatch: {path} was trained on '{meta.get('robot')}' "
            f"({meta['base']} -> {meta['tip']}, fingerprint {meta['fingerprint'][:12]}) "
            f"but is used with '{arm.name}' ({arm.base} -> {arm.tip}, "
            f"fingerprint {arm.fingerprint[:12]}); train a model for this arm"
        )
    try:
        tensors = tensor_file.loads(blob)
    except tensor_file.TensorFileError as err:
        raise ModelDirError(f"{path / WEIGHTS} is unreadable: {err}") from err
    return ModelFolder(meta, arm, tensors, path, archive)


def load(path: str | Path, arm: ArmModel | None = None, device="cpu") -> LoadedModel:
    """The torch network of a model folder (or an exported ``.tar.gz``); see :func:`read`."""
    import torch

    from .learn.network import IKNet, NetConfig

    folder = read(path, arm)
    try:
        config = NetConfig(**folder.meta["network"])
        net = IKNet(config, folder.arm)
        net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in folder.tensors.items()})
    except (RuntimeError, TypeError, ValueError) as err:
        raise ModelDirError(f"{folder.path / WEIGHTS} does not fit model.json: {err}") from err
    return LoadedModel(net.to(device).eval(), folder.arm, folder.meta, folder.path, folder.archive)


def export_onnx(path: str | Path) -> Path:
    """Write ``model.onnx`` (the network's layers) into a model folder, from its weights."""
    from .ik.network_forward import pack_network
    from .ik.onnx_layers import onnx_bytes

    folder = read(path)
    if folder.path != Path(path):
        raise ModelDirError(f"{path}: export --onnx writes into a model folder, not an archive")
    blob = onnx_bytes(
        pack_network(folder.tensors, folder.meta["network"]), folder.meta["weights_sha256"]
    )
    atomic_write(folder.path / ONNX, blob)
    return folder.path / ONNX


def check_onnx(folder: ModelFolder) -> None:
    """Refuse a missing ``model.onnx``, or one written from other weights."""
    from .ik.onnx_layers import recorded_weights

    onnx_path = folder.path / ONNX
    if not onnx_path.is_file():
        raise ModelDirError(
            f"{onnx_path} is missing: write it with robot-ik-nn export {folder.path} --onnx"
        )
    try:
        recorded = recorded_weights(onnx_path)
    except ImportError:
        raise  # onnxruntime is not installed: not the file's fault
    except Exception as err:  # noqa: BLE001 - protobuf errors of every kind mean the same here
        raise ModelDirError(f"{onnx_path} is unreadable: {err}") from err
    if recorded != folder.meta["weights_sha256"]:
        raise ModelDirError(
            f"{onnx_path} was written from other weights than {folder.path / WEIGHTS}; "
            f"write it again with robot-ik-nn export {folder.path} --onnx"
        )
