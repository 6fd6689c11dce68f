"""The drivers, the bridge and the emulators, in one process over real sockets and a real pty.

Every driver talks to its emulator through the real protocol (the Ned driver through Niryo's own
pyniryo); the bridge runs its real worker thread. What DDS adds is tested in test_deploy.py.
"""

import os
import time

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.hardware import calibration
from robot_ik_nn.hardware import inmoov as board
from robot_ik_nn.hardware.bridge import Bridge, BridgeConfig
from robot_ik_nn.hardware.drivers import make_driver
from robot_ik_nn.hardware.emulators import make, start
from robot_ik_nn.hardware.emulators.base import KINDS

pytestmark = pytest.mark.slow

# emulator kind -> driver kind
PAIRS = {"niryo_one": "niryo_one_tcp", "niryo_ned": "niryo_ned", "inmoov_serial": "inmoov_serial"}
# the emulators spoil replies in a fixed turn of four kinds (garbage, truncated, wrong length,
# NaN): 100 gives each kind 25 times; ROBOT_IK_NN_FAULTS=500 for a longer soak
FAULTS = int(os.environ.get("ROBOT_IK_NN_FAULTS", "100"))


def _until(condition, timeout: float, what: str, step: float = 0.01) -> float:
    start_time = time.monotonic()
    while time.monotonic() - start_time < timeout:
        if condition():
            return time.monotonic() - start_time
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _counting_ticks(bridge) -> list:
    """The bridge's command periods, counted: after each one ends, whether it left the bridge
    connected (``len`` of the list: the periods ended so far)."""
    ended, tick = [], bridge.tick

    def counted():
        try:
            tick()
        finally:
            ended.append(bridge.connected)

    bridge.tick = counted  # the worker looks it up every period
    return ended


def _periods(ended, n: int, timeout: float = 60.0) -> None:
    """Wait until ``n`` whole command periods have begun and ended from now on (the one in
    flight does not count), however slow the machine."""
    until = len(ended) + n + 1
    _until(lambda: len(ended) >= until, timeout, f"{n} command periods")


def _rig(kind, tmp_path, faults=0, port=0, link=None, **config):
    link = link or (str(tmp_path / "servo_tty") if kind == "inmoov_serial" else None)
    emulator = start(make(kind, port=port, faults=faults, link=link))
    where = link if link else str(emulator.address[1])
    driver = make_driver(PAIRS[kind], emulator.emulated.arm, port=where, timeout=0.1)
    settings = {"rate": 50.0, "watchdog": 0.5, "reconnect_min": 0.05, "reconnect_max": 0.2}
    bridge = Bridge(driver, BridgeConfig(**{**settings, **config})).start()
    return emulator, bridge


def _goal(arm, seed=0, share=0.5):
    rng = np.random.default_rng(seed)
    mid, half = arm.mid_range, (arm.upper - arm.lower) / 2
    return mid + share * half * rng.uniform(-1, 1, arm.dof)


def _stream(bridge, goal, seconds, until=None):
    """Command ``goal`` afresh every 50 ms for ``seconds``, as the inference node's stream does
    (with ``until``, a condition: until it holds instead, ``seconds`` the most to wait)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if until is not None and until():
            return
        assert bridge.command(goal) == ""
        time.sleep(0.05)
    if until is not None:
        raise AssertionError(f"a stream of {seconds} s did not get there")


def _stream_to(bridge, emulator, goal):
    """Stream ``goal`` until the arm is there (however slow the machine: 120 s at most)."""
    _stream(bridge, goal, 120, lambda: np.max(np.abs(emulator.emulated.joints() - goal)) < 2e-3)


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_nothing_moves_before_resume_then_the_arm_follows_a_stream(kind, tmp_path):
    emulator, bridge = _rig(kind, tmp_path)
    try:
        arm = emulator.emulated.arm
        _until(lambda: bridge.joints is not None, 60, "the first reading")
        start_q = emulator.emulated.joints()
        goal = _goal(arm, seed=1)
        _stream(bridge, goal, 0.6)
        assert emulator.emulated.goals == [], "moved before ~/resume"
        assert np.allclose(emulator.emulated.joints(), start_q, atol=1e-3)
        assert bridge.state()["message"].startswith("holding: stopped")

        bridge.resume()
        _stream_to(bridge, emulator, goal)
        assert emulator.emulated.bad_goals == 0
        steps = np.diff(np.array(emulator.emulated.goals), axis=0)
        quantum = 3e-4  # the servo frames carry 0.1 us = 1.7e-4 rad
        # speed x the time since the last setpoint, which the bridge counts as two periods at most
        # (how many steps take two periods is the machine's load, not asserted here)
        assert np.all(np.abs(steps) <= 2 * bridge.step_limit + quantum), "a step past the limit"
    finally:
        bridge.close()
        emulator.close()


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_watchdog_holds_and_stop_halts_within_one_period(kind, tmp_path):
    emulator, bridge = _rig(kind, tmp_path, start_enabled=True)
    try:
        arm = emulator.emulated.arm
        _until(lambda: bridge.joints is not None, 60, "the first reading")
        far = np.where(np.abs(arm.lower) > np.abs(arm.upper), arm.lower, arm.upper) * 0.9
        ticks = _counting_ticks(bridge)
        assert bridge.command(far) == ""  # once, then silence
        _until(lambda: "watchdog" in bridge.state()["message"], 60, "the watchdog to hold")
        _periods(ticks, 1)  # the period that held has ended
        sent = len(emulator.emulated.goals)
        _periods(ticks, 25)  # half a second's periods
        assert len(emulator.emulated.goals) == sent, "kept moving without fresh commands"
        assert "short of the goal" in bridge.state()["message"]
        assert np.max(np.abs(bridge.joints - far)) > 0.1, "the test goal was too close"
        assert "outside their limits" in bridge.command(arm.upper + 0.5)  # refused: said so
        assert bridge.state()["message"].startswith("refusing commands: joints")
        assert bridge.state()["level"] == 1

        # a stream, then ~/stop: no new goal reaches the arm after one command period
        for _ in range(10):
            bridge.command(far)
            time.sleep(0.02)
        count = len(emulator.emulated.goals)
        bridge.stop()
        _periods(ticks, 1)  # the period in flight may still send its goal; the next one holds
        assert len(emulator.emulated.goals) <= count + 2  # the goal in flight and the hold
        count = len(emulator.emulated.goals)
        _stream_refused = [bridge.command(far) for _ in range(5)]
        _periods(ticks, 15)
        assert _stream_refused == [""] * 5  # goals are taken, but not acted on
        assert len(emulator.emulated.goals) == count, "moved after ~/stop"
        assert not bridge.enabled
    finally:
        bridge.close()
        emulator.close()


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_malformed_replies_leave_the_bridge_holding_and_reporting(kind, tmp_path):
    emulator, bridge = _rig(kind, tmp_path, faults=FAULTS, start_enabled=True)
    try:
        arm = emulator.emulated.arm
        seen, said = set(), set()
        goal = _goal(arm, seed=2, share=0.3)
        deadline = time.monotonic() + 240
        while emulator.faults.left > 0:
            assert time.monotonic() < deadline, f"{emulator.faults.left} faults still unsent"
            bridge.command(goal)
            state = bridge.state()
            seen.add(state["level"])
            said.add(state["message"].split(" (")[0])
            assert bridge._thread.is_alive()
            time.sleep(0.02)
        assert emulator.faults.sent == FAULTS
        assert 2 in seen, "the faults were never reported"
        assert "bad reply" in said, f"no report named a bad reply: {said}"
        if kind != "niryo_ned":  # a reply per line: each malformed one is named, none is read
            # as the arm's joints (Ned's JSON stream may lose its framing on a truncated reply
            # and reconnect instead). A link lost for the machine's own slowness (a write timed
            # out under load) takes at most the one reply in flight with it; a reply that comes
            # too late is named bad too, so only the lower bound holds however loaded
            # On the serial link, in a full test run on 2 loaded cores, 99 of 100 faults were
            # counted once (the one missed not pinned down: a late reply read with the next
            # exchange's is the likeliest); a few are allowed there, none on TCP
            hidden = FAULTS // (5 * len(KINDS)) if kind == "inmoov_serial" else 0
            assert bridge.bad_replies + (bridge.connections - 1) >= FAULTS - hidden, (
                bridge.bad_replies, bridge.connections
            )
        assert emulator.emulated.bad_goals == 0, "something malformed reached the arm"
        assert all(np.all(np.isfinite(g)) for g in emulator.emulated.goals)
        # and once the replies are good again, the arm is driven as before
        _until(lambda: bridge.joints is not None and bridge.state()["level"] < 2, 60, "a reading")
        _stream_to(bridge, emulator, goal)
        assert bridge.state()["level"] == 0
    finally:
        bridge.close()
        emulator.close()


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_a_lost_arm_is_reported_then_reconnected_without_the_stale_goal(kind, tmp_path):
    # no watchdog: the goal from before the loss stays fresh, so only the bridge's dropping it
    # keeps it from the arm after the reconnection
    emulator, bridge = _rig(kind, tmp_path, start_enabled=True, watchdog=0.0)
    port = emulator.address[1] if hasattr(emulator, "address") else None
    link = getattr(emulator, "link", None)
    try:
        ticks = _counting_ticks(bridge)
        arm = emulator.emulated.arm
        goal = _goal(arm, seed=3)
        _stream(bridge, goal, 0.3)
        emulator.close()  # switched off mid-move
        closed = len(ticks)
        _until(lambda: False in ticks[closed:], 60, "the loss to be noticed")
        # noticed by the first read after the switch-off: the period in flight, or the next
        periods = ticks[closed:].index(False) + 1
        assert periods <= 2, f"the loss was noticed {periods} command periods after it"
        said = bridge.state()  # lost, or already trying the link again: an error either way
        assert said["level"] == 2 and any(w in said["message"] for w in ("lost", "connecting"))
        emulator = start(make(kind, port=port or 0, link=link))
        _until(lambda: bridge.connected, 60, "the reconnection")
        _periods(ticks, 25)
        assert emulator.emulated.goals == [], "the stale goal was sent after reconnecting"
        assert bridge.connections == 2
        _stream(bridge, goal, 60, lambda: emulator.emulated.goals)  # fresh goals move it again
    finally:
        bridge.close()
        emulator.close()


def test_goals_outside_the_limits_or_malformed_are_refused_by_name(niryo):
    class Still:
        arm = niryo

    bridge = Bridge(Still())
    assert "outside their limits" in bridge.command(niryo.upper + 0.1)
    assert "non-finite" in bridge.command([np.nan] * 6)
    assert "5 values for 6 joints" in bridge.command([0.0] * 5)
    assert bridge.command(niryo.mid_range) == ""
    assert bridge.refused == 3


def test_a_goal_decided_before_resume_or_a_loss_is_refused_however_often_repeated(niryo):
    class Still:
        arm = niryo

        def close(self):
            pass

    now = [100.0]
    bridge = Bridge(Still(), clock=lambda: now[0])
    goal, decided = niryo.mid_range, 101.0  # a target's goal, streamed again and again
    now[0] = 102.0
    assert bridge.command(goal, decided) == "" and bridge.command(goal) == ""
    bridge.stop()
    assert "outside their limits" in bridge.command(niryo.upper + 0.5)  # refused while stopped
    now[0] = 103.0
    bridge.resume()
    assert bridge.last_refusal == ""  # the status after ~/resume does not read "refusing"
    assert "decided before the last ~/resume" in bridge.command(goal, decided)
    assert bridge.command(goal, 103.5) == ""  # a new target's goal
    now[0] = 104.0
    bridge._lost("switched off mid-move")
    now[0] = 105.0
    assert "loss of the arm" in bridge.command(goal, 103.5)  # its stream, after the loss
    assert bridge.command(goal, 104.5) == "" and bridge.command(goal) == ""


def test_calibration_template_loads_and_maps_servo_ranges_inside_the_urdf(tmp_path, inmoov):
    path = tmp_path / "inmoov.yaml"
    path.write_text(inmoov_template := calibration.template(inmoov))
    assert "gain" in inmoov_template and inmoov_template.startswith("#")
    servos = calibration.load_calibration(path, inmoov)
    assert [s.joint for s in servos] == inmoov.joint_names
    for s, lo, hi in zip(servos, inmoov.lower, inmoov.upper):
        a, b = s.joint_range()
        assert lo - 1e-2 <= a < b <= hi + 1e-2, (s.joint, a, b, lo, hi)
        assert s.joint_angle(s.degrees(0.3)) == pytest.approx(0.3)
    # MyRobotLab's mapping: 90 deg -> round(90 * (2400 - 544) / 180 + 544) = 1472 us
    assert round(servos[0].pulse(90.0)) == 1472


@pytest.mark.parametrize(
    "field, bad, message",
    [
        ("gain", "2", "gain must be 1 or -1"),
        ("rest_deg", "400", "rest_deg 400.0 lies outside"),
        ("pin", "2", "pin 2 must be 0..255 and not shared"),
        ("offset", ".nan", "finite"),
        ("gain", "1.5", "gain must be a whole number, got 1.5"),  # not read as 1
        ("pin", "2.7", "pin must be a whole number, got 2.7"),
        ("gain", "true", "gain must be a whole number, got True"),
    ],
)
def test_bad_calibration_files_are_refused_by_name(tmp_path, inmoov, field, bad, message):
    text = calibration.template(inmoov)
    head, _, tail = text.partition("  r_shoulder_lift:")  # spoil the second joint's entry
    lines = [f"    {field}: {bad}" if ln.strip().startswith(field + ":") else ln
             for ln in tail.splitlines()]
    path = tmp_path / "bad.yaml"
    path.write_text(head + "  r_shoulder_lift:" + "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        calibration.load_calibration(path, inmoov)
    with pytest.raises(ValueError, match="no calibration for joint 'r_wrist_roll'"):
        calibration.load_calibration(text.split("  r_wrist_roll:")[0], inmoov)


def test_a_misspelt_field_or_a_range_off_the_urdf_is_refused_by_name(tmp_path, inmoov):
    from robot_ik_nn.hardware.inmoov import InMoovSerial

    text = calibration.template(inmoov)
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['min_uss'\]"):
        calibration.load_calibration(text.replace("min_us:", "min_uss:", 1), inmoov)
    head, _, tail = text.partition("  r_shoulder_out:")  # its servo turned 150 deg away
    offset = next(ln for ln in tail.splitlines() if ln.strip().startswith("offset:"))
    path = tmp_path / "off.yaml"
    path.write_text(head + "  r_shoulder_out:" + tail.replace(offset, "    offset: 150.0", 1))
    with pytest.raises(ValueError, match="overlaps the URDF's limits by less than 0.001 rad for "
                       "r_shoulder_out"):
        Bridge(InMoovSerial(inmoov, "/dev/null", calibration=path))
    gain = next(ln for ln in tail.splitlines() if ln.strip().startswith("gain:"))
    flipped = "    gain: " + str(-float(gain.split(":")[1]))  # meets the URDF's range at 0 only
    path.write_text(head + "  r_shoulder_out:" + tail.replace(gain, flipped, 1))
    with pytest.raises(ValueError, match="by less than 0.001 rad for r_shoulder_out"):
        Bridge(InMoovSerial(inmoov, "/dev/null", calibration=path))


def test_frames_survive_garbage_between_them():
    good = board.frame(board.WRITE, board.pulses_payload([(2, 1500.0), (3, 600.5)]))
    # magic, size, method, count, (pin, hi, lo) x 2, checksum: written out by hand
    assert good == bytes([0xAA, 8, 0x01, 2, 2, 0x3A, 0x98, 3, 0x17, 0x75,
                          (1 + 2 + 2 + 0x3A + 0x98 + 3 + 0x17 + 0x75) & 0xFF])
    reader = board.FrameReader()
    spoiled = good[:-1] + bytes([good[-1] ^ 1])
    frames = reader.feed(b"\x00\x13" + spoiled + b"\xaa\xff" + good + good[:4])
    assert frames == [(board.WRITE, good[3:-1])]
    assert board.parse_pulses(frames[0][1]) == [(2, 1500.0), (3, 600.5)]
    assert reader.dropped >= 3
    assert reader.feed(good[4:]) == [(board.WRITE, good[3:-1])]


def test_a_driver_that_cannot_reach_its_arm_says_where(niryo):
    driver = make_driver("niryo_one_tcp", niryo, host="127.0.0.1", port="1", timeout=0.2)
    with pytest.raises(RuntimeError, match="127.0.0.1:1"):
        driver.connect()
    with pytest.raises(ValueError, match="serial device"):
        make_driver("inmoov_serial", ArmModel.load("inmoov_right_arm"))
    with pytest.raises(ValueError, match="unknown driver 'ur5'"):
        make_driver("ur5", niryo)


def test_answers_stay_inside_a_narrower_servo_range(tmp_path, inmoov):
    """The inference node's solver with the arm node's calibration (Solver.with_limits): every
    answer is one the bridge takes, where the URDF alone would allow goals it refuses."""
    from robot_ik_nn.ik.solver import Solver

    text = calibration.template(inmoov)
    head, _, tail = text.partition("  r_shoulder_lift:")
    path = tmp_path / "narrow.yaml"  # the shoulder's servo kept to 60 of its 180 degrees
    narrow = tail.replace("max_deg: 180.0", "max_deg: 60.0", 1)
    path.write_text(head + "  r_shoulder_lift:" + narrow)
    lo, hi = zip(*(s.joint_range() for s in calibration.load_calibration(path, inmoov)))
    lo, hi = np.maximum(lo, inmoov.lower), np.minimum(hi, inmoov.upper)
    assert np.any(hi - lo < inmoov.upper - inmoov.lower - 0.5)  # narrower indeed
    solver = Solver(inmoov).with_limits(lo, hi)
    rng = np.random.default_rng(5)
    q = inmoov.lower + (inmoov.upper - inmoov.lower) * rng.random((200, inmoov.dof))
    P, _ = solver.forward(q)  # positions of the whole URDF range: many outside the servos'
    batch = solver.solve_batch(P)
    answered = batch.q[batch.codes != 2]
    assert len(answered) == 200 and batch.solved.sum() > 50
    assert np.all(answered >= lo - 1e-9) and np.all(answered <= hi + 1e-9)
    single = solver.solve(P[0])
    assert np.all(single.q >= lo - 1e-9) and np.all(single.q <= hi + 1e-9)
    with pytest.raises(ValueError, match="do not overlap"):
        Solver(inmoov).with_limits(inmoov.upper + 1, inmoov.upper + 2)
    with pytest.warns(DeprecationWarning, match=r"Solver\.with_limits\(\)"):  # the old name
        old = Solver(inmoov).within(lo, hi)
    np.testing.assert_array_equal(old.arm.lower, solver.arm.lower)
    np.testing.assert_array_equal(old.arm.upper, solver.arm.upper)
