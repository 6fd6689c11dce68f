"""Sessions: one plan for the launch files and for `robot-ik-nn launch`."""

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from robot_ik_nn.nodes.session import plan
from robot_ik_nn.nodes.session_arguments import (
    ARGUMENTS,
    SessionError,
    load_params,
    parse_assignments,
)
from robot_ik_nn.nodes.trajectory import TrajectoryFollower

pytestmark = pytest.mark.ros

ROOT = Path(__file__).resolve().parent.parent


def test_train_plan_nodes_parameters_and_remaps():
    nodes = {
        n.name: n
        for n in plan("train", {"robot": "inmoov_right_arm", "model_dir": "m/x", "minutes": "1"})
    }
    assert list(nodes) == ["sim_node", "learner_node", "robot_state_publisher"]
    assert nodes["learner_node"].parameters["robot"] == "inmoov_right_arm"
    assert nodes["learner_node"].parameters["output_dir"] == "m/x"
    assert nodes["learner_node"].parameters["minutes"] == 1.0
    assert nodes["learner_node"].ends_session
    assert nodes["sim_node"].remappings == [("target_pose", "/learner_node/demo_target")]
    assert (
        '<robot name="inmoov_right_arm">'
        in nodes["robot_state_publisher"].parameters["robot_description"]
    )
    assert nodes["robot_state_publisher"].external


def test_inference_plan_and_use_sim():
    names = [n.name for n in plan("inference", {"controller": "niryo_ctrl"})]
    assert names == ["inference_node", "sim_node", "robot_state_publisher"]
    inference = plan("inference", {"controller": "niryo_ctrl", "use_sim": "false", "rviz": "true"})
    assert [n.name for n in inference] == ["inference_node", "robot_state_publisher", "rviz2"]
    assert inference[0].parameters["controller"] == "niryo_ctrl"
    rviz_file = Path(inference[-1].arguments[1])
    assert "Fixed Frame: base_link" in rviz_file.read_text()


def test_inference_serves_the_model_folders_own_arm_unless_told(tmp_path):
    import json

    named = tmp_path / "inmoov"
    named.mkdir()
    from robot_ik_nn.model_dir import FORMAT

    meta = {"format": FORMAT, "robot": "inmoov_right_arm", "base": "torso_link"}
    meta.update(tip="r_tool_link", fingerprint="", weights_sha256="", joint_names=["j"] * 5)
    meta.update(network={"dof": 5, "mode": "pose", "hidden": [8]})
    (named / "model.json").write_text(json.dumps(meta))
    nodes = {n.name: n for n in plan("inference", {"model_dir": str(named)})}
    assert nodes["inference_node"].parameters["robot"] == ""  # the folder's own robot.urdf
    sim = nodes["sim_node"].parameters
    assert (sim["robot"], sim["base_link"], sim["tip_link"]) == (
        "inmoov_right_arm",
        "torso_link",
        "r_tool_link",
    )
    assert '<robot name="inmoov_right_arm">' in (
        nodes["robot_state_publisher"].parameters["robot_description"]
    )
    own = tmp_path / "own"  # an arm trained from a URDF file: the folder's copy of it
    own.mkdir()
    (own / "model.json").write_text(json.dumps({**meta, "robot": "my_arm"}))
    (own / "robot.urdf").write_text((ROOT / "urdf" / "inmoov_right_arm.urdf").read_text())
    sim = {n.name: n for n in plan("inference", {"model_dir": str(own)})}["sim_node"].parameters
    assert sim["robot"] == str(own / "robot.urdf")
    # ros2 launch passes every declared argument, the ones not given at their defaults
    launched = {name: arg.default for name, arg in ARGUMENTS["inference"].items()}
    nodes = {n.name: n for n in plan("inference", {**launched, "model_dir": str(named)})}
    assert nodes["inference_node"].parameters["robot"] == ""
    assert nodes["sim_node"].parameters["robot"] == "inmoov_right_arm"
    told = {n.name: n for n in plan("inference", {"model_dir": str(named), "robot": "niryo_one"})}
    assert told["inference_node"].parameters["robot"] == "niryo_one"  # refused if it differs
    assert told["sim_node"].parameters["robot"] == "niryo_one"


def test_display_plan_sets_rviz_fixed_frame_to_the_arm_base():
    nodes = plan("display", {"robot": "inmoov_right_arm", "rviz": "true"})
    assert "Fixed Frame: torso_link" in Path(nodes[-1].arguments[1]).read_text()


def test_bad_arguments_are_named():
    with pytest.raises(SessionError, match="unknown argument.*robt"):
        plan("train", {"robt": "x"})
    with pytest.raises(SessionError, match="expected name:=value"):
        parse_assignments(["robot=niryo_one"])
    with pytest.raises(SessionError, match="params file not found"):
        plan("train", {"params_file": "/nope.yaml"})
    for port in ("abc", "\u00b2", "0", "70000"):
        with pytest.raises(SessionError, match=f"view_port:={port} is not a port from 1 to"):
            plan("inference", {"view": "true", "view_port": port})
    with pytest.raises(SessionError, match="minutes:=abc is not a number of minutes above 0"):
        plan("train", {"minutes": "abc"})
    with pytest.raises(SessionError, match="rviz:=maybe is not a switch"):  # was: taken as false
        plan("inference", {"rviz": "maybe"})


def test_a_session_s_processes_run_the_installed_package(tmp_path):
    """Not a robot_ik_nn/ folder in the working folder (a clone of the sources, say)."""
    import os
    import subprocess

    from robot_ik_nn.nodes.runner import _process

    fake = tmp_path / "robot_ik_nn"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "cli.py").write_text("print('the wrong package')")
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        proc = _process(["robot-ik-nn", "--help"])
    finally:
        os.chdir(here)
    assert proc.wait(60) == 0
    proc = subprocess.run(proc.args, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "usage: robot-ik-nn" in proc.stdout and "wrong package" not in proc.stdout


def test_params_files_use_the_ros_layout_and_name_real_parameters():
    declared = {
        "sim_node": _declared("sim_node"),
        "learner_node": _declared("learner_node"),
        "inference_node": _declared("inference_node"),
        "arm_node": _declared("arm_node"),
    }
    for name in ("train", "inference", "display", "deploy"):
        for node, params in load_params(ROOT / "config" / f"{name}.yaml").items():
            assert set(params) <= declared[node], (name, node, set(params) - declared[node])


def _declared(node: str) -> set[str]:
    """Parameter names a node declares: ``declare(node, "name", ...)`` calls in its source, and
    the keys of the ``PARAMETERS`` table its module declares in a loop (wherever it is written)."""
    import importlib

    source = {"sim_node": "arm_node"}.get(node, node)  # sim_node is arm_node with the sim
    tree = ast.parse((ROOT / "robot_ik_nn" / "nodes" / f"{source}.py").read_text())
    called = {
        c.args[1].value
        for c in ast.walk(tree)
        if isinstance(c, ast.Call)
        and getattr(c.func, "id", "") == "declare"
        and isinstance(c.args[1], ast.Constant)
    }
    module = importlib.import_module(f"robot_ik_nn.nodes.{source}")
    return called | set(getattr(module, "PARAMETERS", {}))


class _Action:
    """A stand-in for a launch / launch_ros class (neither is installed here): it keeps what it
    was built with, so the test reads the actions a launch file makes as ros2 launch would."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Action):
    def perform(self, context):
        return context[self.args[0]]  # ros2 launch: the given value or the declared default


def _stand_in_launch(monkeypatch):
    """Modules named as launch and launch_ros name them; each class a recording _Action."""
    import sys
    import types

    names = {
        "launch": ["LaunchDescription"],
        "launch.actions": [
            "DeclareLaunchArgument", "EmitEvent", "ExecuteProcess", "OpaqueFunction",
            "RegisterEventHandler",
        ],
        "launch.event_handlers": ["OnProcessExit"],
        "launch.events": ["Shutdown"],
        "launch.substitutions": ["LaunchConfiguration"],
        "launch_ros": [],
        "launch_ros.actions": ["Node"],
    }  # fmt: skip
    for module, classes in names.items():
        stand_in = types.ModuleType(module)
        for name in classes:
            kind = _LaunchConfiguration if name == "LaunchConfiguration" else _Action
            setattr(stand_in, name, type(name, (kind,), {}))
        monkeypatch.setitem(sys.modules, module, stand_in)
    monkeypatch.delitem(sys.modules, "robot_ik_nn.nodes.launch_description", raising=False)


@pytest.mark.parametrize("session", ["train", "inference", "display", "deploy"])
def test_launch_files_declare_the_session_s_arguments_and_run_its_plan(session, monkeypatch):
    """Each launch file, run with launch stood in for: it declares exactly the session's
    arguments at their defaults, and the actions it makes from them (the values ros2 launch
    hands it) are the nodes robot_ik_nn.nodes.session.plan gives for the same arguments, with their
    executables, names, parameters and remappings, and the session's end where plan says."""
    import importlib.util

    _stand_in_launch(monkeypatch)
    path = ROOT / "launch" / f"{session}.launch.py"
    spec = importlib.util.spec_from_file_location(f"launch_file_{session}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entities = module.generate_launch_description().args[0]
    declared = {
        a.args[0]: a.kwargs["default_value"]
        for a in entities
        if type(a).__name__ == "DeclareLaunchArgument"
    }
    assert declared == {name: arg.default for name, arg in ARGUMENTS[session].items()}
    arm = {"arm"} if session == "deploy" else {"robot", "controller"}
    assert set(declared) >= {"model_dir", "params_file", "rviz"} | arm
    (opaque,) = [a for a in entities if type(a).__name__ == "OpaqueFunction"]
    given = dict(declared)
    if session == "deploy":
        given["dry_run"] = "true"  # the emulator, an ExecuteProcess, is made too
    elif session != "display":
        given.update(view="true", rviz="true")
    actions = opaque.kwargs["function"](given, *opaque.kwargs["args"])
    expected = plan(session, given)
    nodes = [a for a in actions if type(a).__name__ in ("Node", "ExecuteProcess")]
    assert len(nodes) == len(expected)
    console = (ROOT / "setup.py").read_text()
    for action, spec in zip(nodes, expected):
        if spec.command:
            assert type(action).__name__ == "ExecuteProcess"
            assert action.kwargs["cmd"] == spec.command and action.kwargs["name"] == spec.name
            continue
        kw = action.kwargs
        assert (kw["package"], kw["executable"], kw["name"]) == (
            spec.package, spec.executable, spec.name
        )  # fmt: skip
        assert kw["parameters"] == ([spec.parameters] if spec.parameters else [])
        assert kw["remappings"] == spec.remappings and kw["arguments"] == spec.arguments
        if spec.package == "robot_ik_nn":  # ros2 run finds it: a console script of setup.py
            assert f'"{spec.executable} = robot_ik_nn.nodes.{spec.executable}:main"' in console
    ends = [
        a.args[0].kwargs["target_action"]
        for a in actions
        if type(a).__name__ == "RegisterEventHandler"
    ]
    assert [a.kwargs["name"] for a in ends] == [s.name for s in expected if s.ends_session]
    if session == "train":
        assert ends and ends[0].kwargs["executable"] == "learner_node"


def _traj(names, points, stamp=0.0):
    sec = int(stamp)
    return SimpleNamespace(
        joint_names=names,
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=0)),
        points=[
            SimpleNamespace(
                positions=p,
                time_from_start=SimpleNamespace(
                    sec=int(t), nanosec=int(round((t - int(t)) * 1e9))
                ),
            )
            for p, t in points
        ],
    )


def test_trajectory_follower_interpolates_in_joint_order():
    f = TrajectoryFollower(["a", "b"])
    assert f.sample(0.0) is None
    assert f.load(_traj(["b", "a"], [([2.0, 1.0], 1.0), ([4.0, 3.0], 2.0)]), [0.0, 0.0], now=10.0)
    assert f.sample(10.0).tolist() == [0.0, 0.0]
    assert f.sample(10.5).tolist() == [0.5, 1.0]
    assert f.sample(11.5).tolist() == [2.0, 3.0]
    assert f.sample(99.0).tolist() == [3.0, 4.0]
    assert not f.load(_traj(["a"], [([1.0], 1.0)]), [0.0, 0.0], now=0.0)  # missing joint b
    assert not f.load(_traj(["a", "b"], [([1.0, float("nan")], 1.0)]), [0.0, 0.0], now=0.0)
    assert f.sample(99.0).tolist() == [3.0, 4.0]  # a refused trajectory changes nothing


def test_deploy_plan_drives_the_arm_through_its_driver_and_a_dry_run_adds_the_emulator():
    nodes = {n.name: n for n in plan("deploy", {"arm": "niryo_ned", "host": "10.0.0.7"})}
    assert list(nodes) == ["arm_node", "inference_node", "robot_state_publisher"]
    arm = nodes["arm_node"].parameters
    assert (arm["driver"], arm["robot"], arm["host"], arm["start_enabled"]) == (
        "niryo_ned", "niryo_ned2", "10.0.0.7", False
    )
    assert arm["watchdog_timeout"] == 0.5 and nodes["inference_node"].parameters["stream"]
    dry = plan("deploy", {"arm": "inmoov_right_arm", "dry_run": "true"})
    assert dry[0].command[:3] == ["robot-ik-nn", "emulate", "inmoov_serial"]
    assert dry[1].parameters["port"] == dry[0].command[dry[0].command.index("--link") + 1]
    given = plan("deploy", {"arm": "inmoov_right_arm", "dry_run": "true", "calibration": "c.yaml"})
    # the arm node drives with it, and the inference node answers inside its servo ranges
    assert given[1].parameters["calibration"] == given[2].parameters["calibration"] == "c.yaml"
    with pytest.raises(SessionError, match="needs port:= the serial device"):
        plan("deploy", {"arm": "inmoov_right_arm"})
    with pytest.raises(SessionError, match="arm must be one of"):
        plan("deploy", {"arm": "ur5"})


def test_an_exported_model_serves_its_own_arm(tmp_path, inmoov):
    from robot_ik_nn import model_dir
    from robot_ik_nn.learn.network import IKNet, NetConfig

    net = IKNet.for_arm(inmoov, NetConfig(inmoov.dof, "pose", [8]))
    folder = model_dir.save(tmp_path / "inmoov", net, inmoov, {"steps": 0})
    archive = model_dir.export(folder, tmp_path / "inmoov.tar.gz")
    launched = {name: arg.default for name, arg in ARGUMENTS["inference"].items()}
    nodes = {n.name: n for n in plan("inference", {**launched, "model_dir": str(archive)})}
    assert nodes["sim_node"].parameters["robot"] == "inmoov_right_arm"
    assert nodes["inference_node"].parameters["robot"] == ""
