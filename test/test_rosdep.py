"""What `rosdep install --from-paths src` gives a Humble or Jazzy (Ubuntu) user: every key of
package.xml exists in rosdistro's rules (a snapshot under test/data/, its commit named there),
every third-party import of the package is declared by such a key or is an optional part that
is imported only when asked, and the weights format needs no safetensors package."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_ik_nn import tensor_file

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "robot_ik_nn"
SNAPSHOT = yaml.safe_load((ROOT / "test/data/rosdep_snapshot.yaml").read_text())
DISTROS = ("humble", "jazzy")
DEPENDS = ("depend", "exec_depend", "build_depend", "buildtool_depend", "test_depend")

# an imported top-level module -> the rosdep key that installs it
PROVIDED_BY = {
    "numpy": "python3-numpy",
    "numba": "python3-numba",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "urchin": "python3-urchin-pip",
    "trimesh": "python3-urchin-pip",  # urchin's own requirement (and only for non-.obj meshes)
    "serial": "python3-serial",
    "tf2_ros": "tf2_ros_py",
}
ROS_MODULES = {  # ROS packages whose Python module has the package's name
    "rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs", "visualization_msgs",
    "diagnostic_msgs", "std_srvs", "rcl_interfaces", "builtin_interfaces", "action_msgs",
    "ament_index_python", "launch", "launch_ros", "moveit_msgs", "control_msgs",
}  # fmt: skip
# optional parts: pip extras, imported inside the function that needs them, never at the top of
# a module the base install loads
OPTIONAL = {
    "torch", "pybullet", "pybullet_data", "viser", "yourdfpy", "pyniryo", "onnx", "onnxruntime",
    "matplotlib", "tqdm", "tensorboard", "roboticstoolbox", "threadpoolctl", "pytracik",
    "safetensors", "cv2",
}  # fmt: skip
# what the base install is: the nodes, the sessions and launch files, the public API and CLI
BASE_ROOTS = (
    "robot_ik_nn",
    "robot_ik_nn.cli",
    "robot_ik_nn.nodes.session",
    "robot_ik_nn.nodes.inference_node",
    "robot_ik_nn.nodes.arm_node",
    "robot_ik_nn.nodes.launch_description",
    "robot_ik_nn.nodes.runner",  # robot-ik-nn launch: the learner (torch) only for train
    "robot_ik_nn.model_dir",  # reading a model folder (solver.py imports it when loading one)
)


def declared_keys() -> dict[str, str]:
    root = ET.parse(ROOT / "package.xml").getroot()
    return {e.text.strip(): e.tag for tag in DEPENDS for e in root.findall(tag)}


def resolves(rule, codename: str) -> bool:
    """Whether a rosdep rule installs something on Ubuntu ``codename`` (apt names or pip)."""
    if rule is None:
        return False
    if isinstance(rule, list):
        return bool(rule)
    if "pip" in rule or "packages" in rule:
        return bool((rule.get("pip") or rule).get("packages"))
    if "ubuntu" in rule:
        return resolves(rule["ubuntu"], codename)
    if codename in rule:
        return resolves(rule[codename], codename)
    return resolves(rule.get("*"), codename)


@pytest.mark.parametrize("distro", DISTROS)
def test_every_key_resolves_on_ubuntu(distro):
    dist = SNAPSHOT["distributions"][distro]
    keys = declared_keys()
    assert "python3-numba" in keys and "python3-urchin-pip" in keys
    for codename in dist["ubuntu"]:
        unresolved = [
            key
            for key in keys
            if key not in dist["packages"] and not resolves(SNAPSHOT["rosdep"].get(key), codename)
        ]
        assert not unresolved, f"{distro} ({codename}): no rosdep rule for {unresolved}"


def test_the_resolver_refuses_what_rosdep_would():
    rules = SNAPSHOT["rosdep"]
    assert not resolves(rules["python3-torch"], "focal")  # null for focal in the rules
    assert resolves(rules["python3-torch"], "noble")
    assert resolves(rules["python3-urchin-pip"], "jammy")  # '*': pip on any OS
    assert not resolves(rules.get("python3-safetensors-pip"), "noble")  # no such key


def _module_files() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path):
    """(module imported, at module level?) for each import of a module of the package; an
    import inside a function runs only when the function does."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, not in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level:
                parts = package.split(".")
                stem = ".".join(parts[: len(parts) - child.level + 1] + [child.module or ""])
                stem = stem.rstrip(".")
                found.append((stem, not in_function))
                found.extend((f"{stem}.{a.name}", not in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.append((child.module, not in_function))
            inner = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, in_function or inner)

    visit(ast.parse(path.read_text()), False)
    return found


def _third_party(module: str) -> str | None:
    head = module.split(".")[0]
    if head in sys.stdlib_module_names or head in ("robot_ik_nn", "__future__"):
        return None
    return head


def test_every_import_is_declared_or_optional():
    keys = declared_keys()
    files = _module_files()
    undeclared, eager_optional = set(), set()
    base, todo = set(), list(BASE_ROOTS)
    while todo:  # what importing the base install's entry points loads at module level
        name = todo.pop()
        if name in base or name not in files:
            continue
        base.add(name)
        for imported, outermost in _imports(name, files[name]):
            if imported.startswith("robot_ik_nn") and outermost:
                todo.append(imported)
    assert "robot_ik_nn.ik.solver" in base and "robot_ik_nn.model_dir" in base
    for name, path in files.items():
        for imported, outermost in _imports(name, path):
            head = _third_party(imported)
            if head is None:
                continue
            if head in OPTIONAL:
                if name in base and outermost:
                    eager_optional.add(f"{name} imports {head}")
            elif PROVIDED_BY.get(head, head if head in ROS_MODULES else None) not in keys:
                undeclared.add(f"{head} ({name})")
    assert not undeclared, f"imported but declared by no package.xml key: {sorted(undeclared)}"
    assert not eager_optional, f"optional parts loaded by the base install: {eager_optional}"


def test_setup_py_base_install_matches():
    text = (ROOT / "setup.py").read_text()
    base = text.split("install_requires=", 1)[1].split("]", 1)[0]
    assert "safetensors" not in base and "numba" in base and "urchin" in base


# -- the weights format, without the safetensors package ------------------------------------------
def _arrays(rng):
    return {
        "w": rng.normal(size=(3, 5)).astype(np.float32),
        "b": rng.normal(size=5),
        "steps": np.arange(4, dtype=np.int64),
        "mask": np.array([True, False]),
        "empty": np.zeros((0, 3), np.float32),
        "half": rng.normal(size=(2, 2)).astype(np.float16),
    }


def test_tensor_files_cross_read_with_the_library():
    st = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open

    rng = np.random.default_rng(3)
    arrays = _arrays(rng)
    ours = tensor_file.dumps(arrays, {"format": "robot_ik_nn 1"})
    theirs = st.load(ours)
    assert set(theirs) == set(arrays)
    for k, v in arrays.items():
        assert theirs[k].dtype == v.dtype and np.array_equal(theirs[k], v)
    with safe_open_bytes(ours) as path, safe_open(path, "np") as f:
        assert f.metadata() == {"format": "robot_ik_nn 1"}
    blob = st.save(arrays, metadata={"a": "b"})
    back = tensor_file.loads(blob)
    assert tensor_file.metadata(blob) == {"a": "b"}
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k], v)
    assert tensor_file.dumps(arrays) == tensor_file.dumps(dict(reversed(arrays.items())))


class safe_open_bytes:
    """A temporary file holding ``blob`` (safe_open reads files only)."""

    def __init__(self, blob):
        import tempfile

        self.file = tempfile.NamedTemporaryFile(suffix=".safetensors")
        self.file.write(blob)
        self.file.flush()

    def __enter__(self):
        return self.file.name

    def __exit__(self, *exc):
        self.file.close()


def test_an_existing_model_folder_reads_without_the_library(served_model):
    st = pytest.importorskip("safetensors.numpy")
    blob = (served_model / "model.safetensors").read_bytes()
    theirs, ours = st.load(blob), tensor_file.loads(blob)
    assert set(theirs) == set(ours) and len(ours) > 2
    assert all(np.array_equal(theirs[k], ours[k]) for k in ours)


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda b: b[:4], "shorter than"),
        (lambda b: (10**9).to_bytes(8, "little") + b[8:], "does not fit"),
        (lambda b: b[:8] + b"[" + b[9:], "not JSON"),
        (lambda b: b + b"\0\0\0\0", "after the last tensor"),
        (lambda b: b[:-4], "offsets"),
    ],
)
def test_a_damaged_file_is_refused_with_what_is_wrong(damage, words):
    blob = tensor_file.dumps(_arrays(np.random.default_rng(0)))
    with pytest.raises(tensor_file.TensorFileError, match=words):
        tensor_file.loads(damage(blob))


# -- a base install starts the inference node ---------------------------------------------------
BLOCKED = sorted(OPTIONAL | {"moveit_msgs", "control_msgs"})  # no MoveIt here either


@pytest.mark.ros
def test_inference_node_starts_without_the_optional_parts(served_model):
    """Importing any optional package (torch, pybullet, viser, pyniryo, safetensors, ...) fails
    in this process, as in a base install; the node still loads the model and serves, and says
    once that ~/solve_ik is not offered without moveit_msgs."""
    code = (
        f"import sys; sys.modules.update(dict.fromkeys({BLOCKED!r}))\n"
        "from robot_ik_nn.nodes.inference_node import main\n"
        "raise SystemExit(main())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--ros-args", "-p", f"model_dir:={served_model}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    deadline = time.time() + 300
    try:
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "serving" in line:
                break
    finally:
        proc.send_signal(2)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    said = "".join(lines)
    assert "serving" in said, said[-3000:]
    assert said.count("moveit_msgs is not installed") == 1, said[-3000:]
