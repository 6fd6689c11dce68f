"""Shared fixtures. Every test run gets its own ROS_DOMAIN_ID so parallel runs don't cross-talk."""

import os
import shutil

# OpenMP threads (torch's, numba's) sleep when idle instead of spinning: read once, when the
# runtime loads (before torch is imported, here and in every process a test starts). Spinning
# threads burn the cores the nodes and runs beside them need: a 200-step training took 76 s of
# wall and 31 s of CPU beside other processes, 12 s and 5 s with PASSIVE.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402

# make test runs two pytest-xdist workers (gw0, gw1): each its own DDS domain, so the nodes of one
# never answer the other's probes (set, not defaulted: a worker inherits the domain its controller
# chose for itself). They share one numba cache: each kernel is compiled once, not once a worker
# (numba writes a cache index whole, by rename: two compiles at once of one function leave one
# of their entries, and the other is compiled again when next needed). A cache a worker
# (3 minutes of compiling each, most of it twice) made make test ~17 % slower.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER:
    _n = int(_WORKER.lstrip("gw") or 0)
    os.environ["ROS_DOMAIN_ID"] = str(1 + (os.getppid() % 50) * 4 + _n % 4)
    _ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(_ROOT, ".numba_cache", "workers"))
else:
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
os.environ.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "1")
torch.set_num_threads(min(2, os.cpu_count() or 1))


REQUIRE_CUDA = "ROBOT_IK_NN_REQUIRE_CUDA"


def pytest_collection_modifyitems(items):
    """A cuda test is a gpu test too: -m gpu selects them, -m "not gpu" leaves them out.
    The modules marked slow run first (each module keeps its own order): with two workers
    (make test), a long module left for last would keep one worker busy while the other idles."""
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(pytest.mark.gpu)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # a stable sort


def pytest_runtest_setup(item):
    """Tests marked cuda skip on a machine without CUDA, or fail there when
    ROBOT_IK_NN_REQUIRE_CUDA=1 (make test-gpu): a GPU run must not pass by skipping."""
    if item.get_closest_marker("cuda") is None or torch.cuda.is_available():
        return
    if os.environ.get(REQUIRE_CUDA, "") not in ("", "0"):
        pytest.fail(f"{REQUIRE_CUDA} is set, but torch sees no CUDA device", pytrace=False)
    pytest.skip("no CUDA device on this machine (CI has none)")


@pytest.fixture(scope="session")
def niryo():
    from robot_ik_nn.arm.model import ArmModel

    return ArmModel.load("niryo_one")


@pytest.fixture(scope="session")
def inmoov():
    from robot_ik_nn.arm.model import ArmModel

    return ArmModel.load("inmoov_right_arm")


@pytest.fixture(scope="session")
def panda():
    from robot_ik_nn.arm.model import ArmModel

    return ArmModel.load("franka_panda")


SLIDER_URDF = """<?xml version="1.0"?>
<robot name="slider">
  <link name="a">{i}</link><link name="b">{i}</link><link name="c">{i}</link>
  <link name="d">{i}</link>
  <joint name="spin" type="continuous"><parent link="a"/><child link="b"/>
    <origin xyz="0 0 0.2" rpy="0.1 0.2 0.3"/><axis xyz="0 0 1"/></joint>
  <joint name="slide" type="prismatic"><parent link="b"/><child link="c"/>
    <origin xyz="0.1 0 0" rpy="0 0.5 0"/><axis xyz="0.6 0 0.8"/>
    <limit lower="-0.2" upper="0.3" effort="10" velocity="0.5"/></joint>
  <joint name="bend" type="revolute"><parent link="c"/><child link="d"/><origin xyz="0 0.1 0.05"/>
    <axis xyz="1 1 0"/><limit lower="-2" upper="2" effort="10" velocity="1"/></joint>
</robot>""".format(
    i='<inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" '
    'izz="1e-4"/></inertial>'
)


@pytest.fixture(scope="session")
def slider_arm(tmp_path_factory):
    """A continuous, a prismatic and a revolute joint about skewed axes."""
    from robot_ik_nn.arm.model import ArmModel

    urdf = tmp_path_factory.mktemp("urdf") / "slider.urdf"
    urdf.write_text(SLIDER_URDF)
    return ArmModel.load(urdf)


@pytest.fixture(scope="module")
def served_model(request, tmp_path_factory):  # the DDS tests of MoveIt and the action
    """The model folder served: niryo_model below (trained here), or a copy of a trained
    Niryo One folder named by ROBOT_IK_NN_TEST_MODEL (a loaded machine's shortcut)."""
    given = os.environ.get("ROBOT_IK_NN_TEST_MODEL")
    if not given:
        return request.getfixturevalue("niryo_model")
    out = tmp_path_factory.mktemp("given") / "niryo_one"
    shutil.copytree(given, out)
    return out


@pytest.fixture(scope="session")
def niryo_model(tmp_path_factory):
    """A small Niryo One pose network with two heads, trained for a few seconds, shared by the
    node, solver and backend tests. Trained once for all of make test's workers (in the folder
    above each worker's own, under a lock); each worker serves its own copy."""
    from filelock import FileLock

    from robot_ik_nn.learn.training import TrainConfig, Trainer

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's
    trained, done = shared / "niryo_model_trained" / "niryo_one", shared / "niryo_model.done"
    with FileLock(str(shared / "niryo_model.lock")):
        if not done.is_file():
            shutil.rmtree(trained, ignore_errors=True)  # a run that failed part way
            Trainer(
                TrainConfig(robot="niryo_one", steps=1500, minutes=None, out=str(trained),
                            hidden=[128, 128], heads=2),
                progress=False,
            ).run()  # fmt: skip
            done.touch()
    out = tmp_path_factory.mktemp("models") / "niryo_one"
    shutil.copytree(trained, out)
    return out


@pytest.fixture(scope="session", autouse=True)
def _ros_context_closed_at_exit():
    """Tests that spin rclpy share the default context; shut it down once, at the end."""
    yield
    import sys

    if "rclpy" in sys.modules:
        import rclpy

        if rclpy.ok():
            rclpy.shutdown()
