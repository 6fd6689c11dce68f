"""Building the interface fixtures (moveit_msgs, control_msgs and what they name) with rosidl from
the PyPI wheels, once: the install is cached under the venv, keyed by a digest of these files,
so a second test run (or a second module) pays nothing, and a second process building at the
same time waits for the first (a file lock) and uses its build.

``interfaces()`` returns the install folder and makes the packages importable here and in the
node processes a test starts (PYTHONPATH, LD_LIBRARY_PATH, AMENT_PREFIX_PATH).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = ("object_recognition_msgs", "moveit_msgs", "control_msgs")  # dependency order
# the rosidl wheels' CMake files name the include folders of the machine that built them
WHEEL_PATHS = {
    "/opt/python/cp311-cp311/include/python3.11": lambda: sysconfig.get_paths()["include"],
    "/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include": lambda: (
        __import__("numpy").get_include()
    ),
}
LIBRARY_KINDS = (  # each package's libraries, each after those it links to
    "rosidl_generator_c", "rosidl_typesupport_c", "rosidl_typesupport_cpp",
    "rosidl_typesupport_introspection_c", "rosidl_typesupport_introspection_cpp",
    "rosidl_typesupport_fastrtps_c", "rosidl_typesupport_fastrtps_cpp", "rosidl_generator_py",
)  # fmt: skip


class BuildUnavailable(RuntimeError):
    """What building needs is missing (the message says what to install)."""


def digest() -> str:
    h = hashlib.sha256()
    for path in sorted(HERE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(HERE)).encode() + b"\0" + path.read_bytes())
    h.update(f"{sys.version_info[:2]}".encode())
    return h.hexdigest()[:16]


def _link_wheel_paths() -> None:
    for fixed, actual in WHEEL_PATHS.items():
        if Path(fixed).exists():
            continue
        try:
            Path(fixed).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(actual(), fixed)
        except OSError as err:
            raise BuildUnavailable(
                f"the rosidl wheels' CMake files need {fixed}; link it to {actual()} ({err})"
            ) from err


def _build(out: Path) -> None:
    prefix = sys.prefix
    colcon = Path(prefix) / "bin" / "colcon"
    for tool in (colcon, Path(prefix) / "bin" / "cmake"):
        if not tool.exists():
            raise BuildUnavailable(f"{tool} is missing: pip install '.[test]'")
    if not (Path(prefix) / "share" / "rosidl_default_generators").exists():
        raise BuildUnavailable(
            "rosidl_default_generators is not in the venv: see the Makefile's ROS_WHEELS line"
        )
    _link_wheel_paths()
    env = {
        **os.environ,
        "PATH": f"{Path(prefix) / 'bin'}:{os.environ.get('PATH', '')}",
        "AMENT_PREFIX_PATH": prefix,
        "CMAKE_PREFIX_PATH": prefix,
    }
    work = Path(tempfile.mkdtemp(prefix="interfaces_", dir=out.parent))
    try:
        done = subprocess.run(
            [str(colcon), "build", "--base-paths", str(HERE), "--merge-install",
             "--install-base", str(work / "install"), "--build-base", str(work / "build"),
             "--cmake-args", "-Wno-dev", "-Wno-deprecated"],
            cwd=work, env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"colcon build of {HERE} failed:\n{done.stdout[-4000:]}")
        try:
            os.replace(work / "install", out)  # whole or not at all: a parallel run may win
        except OSError:
            if not out.exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def interfaces() -> Path:
    """The built fixtures' install folder, importable from now on (built when not cached)."""
    cache = Path(sys.prefix) / "share" / "robot_ik_nn_test_interfaces"
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / digest()
    if not (out / "lib").is_dir():
        # one build at a time: a second test process (an xdist worker) waits for the first's
        # and uses it, instead of building the same packages beside it
        with open(cache / f"{out.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / "lib").is_dir():
                _build(out)
    lib = out / "lib"
    site = lib / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    for name, value in (
        ("PYTHONPATH", site), ("LD_LIBRARY_PATH", lib), ("AMENT_PREFIX_PATH", out)
    ):  # fmt: skip
        parts = [p for p in os.environ.get(name, "").split(os.pathsep) if p]
        if str(value) not in parts:
            os.environ[name] = os.pathsep.join([str(value), *parts])
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    # this process started before LD_LIBRARY_PATH named the folder: load the libraries now, so
    # the Python extensions find them by name
    for package in PACKAGES:
        for kind in LIBRARY_KINDS:
            path = lib / f"lib{package}__{kind}.so"
            if path.exists():
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return out
