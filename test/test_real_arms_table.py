"""The table of real arms (robot_ik_nn/hardware/arms.py) is the one place an arm is added: every
entry's classes are what it says, each built-in arm's emulator and driver, built from the table
alone, talk to each other; and a toy arm (test/toy_arm.py), registered through the table and
nothing else, is planned, emulated in another process, driven, and deployed over DDS."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.hardware import arms
from robot_ik_nn.hardware.driver import Driver
from robot_ik_nn.hardware.drivers import make_driver
from robot_ik_nn.hardware.emulators import make, start
from robot_ik_nn.nodes.session import plan
from robot_ik_nn.nodes.session_arguments import SessionError

HERE = Path(__file__).resolve().parent
BUILT_IN = {e.name: e for e in arms.arms()}  # before the toy is registered


@pytest.fixture
def toy(monkeypatch):
    """The toy arm in the table for one test, and in every process the test starts."""
    import toy_arm

    arms.register(toy_arm.TOY, replace=True)  # the module registered it once, on import
    monkeypatch.setenv(arms.ENVIRONMENT, "toy_arm")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]))
    yield toy_arm.TOY
    arms.unregister(toy_arm.TOY.name)


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_each_arm_s_classes_import_and_are_what_the_table_says(name):
    entry = BUILT_IN[name]
    driver = arms.load_class(entry.driver_class)
    assert issubclass(driver, Driver) and driver.kind == entry.driver
    emulator = arms.load_class(entry.emulator_class)
    assert callable(emulator.serve_forever) and callable(emulator.close)
    ArmModel.load(entry.robot)  # a built-in robot
    # the deploy plan drives it with that driver and dry-runs it with that emulator
    dry = plan("deploy", {"arm": name, "dry_run": "true"})
    assert dry[0].command[:3] == ["robot-ik-nn", "emulate", entry.emulator]
    assert (dry[1].parameters["driver"], dry[1].parameters["robot"]) == (entry.driver,
                                                                         entry.robot)
    flag = "--link" if entry.serial else "--port"
    assert dry[1].parameters["port"] == dry[0].command[dry[0].command.index(flag) + 1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_each_arm_s_emulator_and_driver_built_from_the_table_speak_one_protocol(name, tmp_path):
    entry = BUILT_IN[name]
    emulator = start(make(entry.emulator, port=0, link=str(tmp_path / "tty")))
    try:
        arm = emulator.emulated.arm
        assert arm.name == ArmModel.load(entry.robot).name
        where = str(tmp_path / "tty") if entry.serial else str(emulator.address[1])
        driver = make_driver(entry.driver, arm, port=where, timeout=1.0)
        driver.connect()
        try:
            # servos read back through their calibration's whole-step rounding
            assert np.allclose(driver.read(), emulator.emulated.joints(), atol=0.02)
        finally:
            driver.close()
    finally:
        emulator.close()


def test_unknown_names_are_refused_naming_the_known_ones(toy):
    with pytest.raises(SessionError, match="arm must be one of .*inmoov_right_arm, toy_arm"):
        plan("deploy", {"arm": "ur5"})
    with pytest.raises(ValueError, match="unknown driver 'ur5'; choose one of pybullet, .*toy"):
        make_driver("ur5", ArmModel.load("niryo_one"))
    with pytest.raises(ValueError, match="unknown emulator 'ur5'; choose one of .*toy_line"):
        make("ur5")
    with pytest.raises(ValueError, match="driver kind 'toy_line' is already arm 'toy_arm'"):
        arms.register(arms.RealArm("other", "niryo_one", "toy_line", "a:B", "x", "a:C", "tcp",
                                   "", 1))
    with pytest.raises(ValueError, match="link must be one of tcp, serial, not 'usb'"):
        arms.RealArm("other", "niryo_one", "d", "a:B", "e", "a:C", "usb", "")


def test_a_module_named_in_the_environment_that_cannot_load_is_named(tmp_path):
    env = {**os.environ, "ROBOT_IK_NN_ARMS": "no_such_arms_module"}
    run = subprocess.run([sys.executable, "-c", "import robot_ik_nn.hardware.arms"], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0
    assert "ROBOT_IK_NN_ARMS: cannot load 'no_such_arms_module'" in run.stderr, run.stderr


def test_old_names_follow_the_table(toy):
    from robot_ik_nn.hardware.drivers import DRIVERS
    from robot_ik_nn.hardware.emulators import EMULATORS
    from robot_ik_nn.nodes.session_arguments import DEPLOY_ARMS

    assert DEPLOY_ARMS["toy_arm"] == ("toy_line", "toy_line", "niryo_one")
    assert DEPLOY_ARMS["inmoov_right_arm"] == ("inmoov_serial", "inmoov_serial",
                                               "inmoov_right_arm")
    assert "toy_line" in DRIVERS and EMULATORS["toy_line"] == "niryo_one"


def test_a_toy_arm_registered_through_the_table_alone_is_emulated_and_driven(toy, tmp_path):
    """No DDS: the deploy plan's emulator command run in another process (which knows the toy
    only through ROBOT_IK_NN_ARMS), and the arm node's driver, built as arm_node builds it."""
    dry = {n.name: n for n in plan("deploy", {"arm": "toy_arm", "dry_run": "true",
                                              "port": "0"})}
    command = dry["toy_line_emulator"].command
    assert command[:3] == ["robot-ik-nn", "emulate", "toy_line"]
    state = tmp_path / "state.json"
    proc = subprocess.Popen([sys.executable, "-m", "robot_ik_nn.cli", *command[1:],
                             "--state", str(state)], stdout=subprocess.PIPE, text=True)
    try:
        line = json.loads(proc.stdout.readline() or "{}")
        assert line.get("emulator") == "toy_line" and line["robot"] == "niryo_one", line
        params = dry["arm_node"].parameters
        assert params["driver"] == "toy_line" and params["robot"] == "niryo_one"
        arm = ArmModel.load(params["robot"])
        driver = make_driver(params["driver"], arm, host=params["host"], port=str(line["port"]))
        driver.connect()
        goal = arm.lower + 0.3 * (arm.upper - arm.lower)
        driver.write(goal)
        assert np.allclose(driver.read(), goal, atol=1e-6)
        saved = json.loads(state.read_text())  # the other process's own record
        assert np.allclose(saved["joints"], goal, atol=1e-6) and saved["goals"] == 1
        driver.close()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.ros
@pytest.mark.slow
def test_a_toy_arm_registered_through_the_table_alone_is_deployed_dry_run(toy, niryo_model):
    from robot_ik_nn.bench.hardware import deploy_run

    result = deploy_run(niryo_model, "toy_arm", targets=4, kill_at=2, seed=11)
    assert result["driver"] == "toy_line"
    assert result["goals_before_resume"] == 0, "the arm moved before ~/resume"
    assert result["reached"] == 4, f"{result}"
    assert result["pos_mm_max"] <= 1.0 and result["rot_rad_max"] <= 0.01
    assert result["stale_goals_after_reconnect"] == 0, "a stale goal was sent on reconnecting"
    assert result["bad_goals"] == 0
