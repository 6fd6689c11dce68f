"""The safety gate: for any input, either None or a command that satisfies every bound."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.safety import (
    JointBounds,
    check_target,
    gate_command,
    gate_path,
    not_commanded,
    stream_step,
)

ARM = ArmModel.load("niryo_one")
BOUNDS = JointBounds.from_arm(ARM, margin=0.02)
FRAMES = {"base_link"}

any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
joint_vectors = arrays(np.float64, 6, elements=st.one_of(any_float, st.floats(-4, 4)))
sane_vectors = arrays(np.float64, 6, elements=st.floats(-3.2, 3.2))


@settings(max_examples=500, deadline=None)
@given(
    solution=joint_vectors,
    current=joint_vectors,
    min_duration=st.one_of(any_float, st.floats(0, 2)),
)
def test_gate_command_is_none_or_within_every_bound(solution, current, min_duration):
    cmd = gate_command(solution, current, BOUNDS, min_duration)
    if cmd is None:
        return
    q = cmd.positions
    assert np.all(np.isfinite(q)) and math.isfinite(cmd.duration)
    assert np.all(q >= ARM.lower + 0.02) and np.all(q <= ARM.upper - 0.02)
    # no joint is asked to move faster than its velocity limit
    with np.errstate(over="ignore"):
        assert np.all(np.abs(q - current) <= BOUNDS.velocity * cmd.duration)
    assert cmd.duration >= min_duration


@settings(max_examples=300, deadline=None)
@given(solution=sane_vectors, current=sane_vectors)
def test_gate_accepts_every_safe_solution(solution, current):
    assume(BOUNDS.inside(solution))
    cmd = gate_command(solution, current, BOUNDS)
    assert cmd is not None
    np.testing.assert_array_equal(cmd.positions, solution)
    # and the duration is the shortest the slowest joint allows, no longer
    assert math.isclose(
        cmd.duration,
        float(np.max(np.abs(solution - current) / BOUNDS.velocity)),
        rel_tol=1e-9,
        abs_tol=1e-300,
    )


SPOILS = ("setpoint_outside", "setpoint_not_finite", "goal_outside", "goal_not_finite", "dt_bad")


@st.composite
def stream_inputs(draw):
    """A setpoint inside the limits, a goal inside the bounds and a positive dt, with one of
    them spoilt in about a third of the examples (each kind of spoiling drawn alike)."""
    spoil = draw(st.sampled_from((None,) * 10 + SPOILS))
    inside = arrays(np.float64, 6, elements=st.floats(0, 1))
    setpoint = ARM.lower + draw(inside) * (ARM.upper - ARM.lower)
    goal = BOUNDS.lo + draw(inside) * (BOUNDS.hi - BOUNDS.lo)
    dt = draw(st.floats(1e-9, 0.5))
    j = draw(st.integers(0, 5))
    out_by = draw(st.floats(1e-6, 1e6))
    if spoil == "setpoint_outside":
        setpoint[j] = ARM.upper[j] + out_by if draw(st.booleans()) else ARM.lower[j] - out_by
    elif spoil == "setpoint_not_finite":
        setpoint[j] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    elif spoil == "goal_outside":  # past the margin, possibly still inside the limits
        goal[j] = BOUNDS.hi[j] + out_by * 1e-3 if draw(st.booleans()) else BOUNDS.lo[j] - out_by
    elif spoil == "goal_not_finite":
        goal[j] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    elif spoil == "dt_bad":
        dt = draw(st.one_of(st.sampled_from([0.0, -0.0, np.nan, np.inf]), st.floats(max_value=0)))
    return spoil, setpoint, goal, dt


def test_stream_step_is_none_or_a_bounded_step():
    reached = {"asserts": 0, "examples": 0}

    @settings(max_examples=500, deadline=None, database=None)
    @given(stream_inputs())
    def check(drawn):
        spoil, setpoint, goal, dt = drawn
        reached["examples"] += 1
        nxt = stream_step(setpoint, goal, BOUNDS, dt)
        assert (nxt is None) == (spoil is not None), spoil
        if nxt is None:
            return
        reached["asserts"] += 1
        assert np.all(np.isfinite(nxt))
        assert np.all(nxt >= ARM.lower) and np.all(nxt <= ARM.upper)
        # the step is at most velocity * dt; adding it to the setpoint rounds by up to an ulp of
        # the joint's value, which outweighs a step of tens of nanoradians (dt ~ 1e-8 s)
        bound = BOUNDS.velocity * dt * (1 + 1e-9) + np.spacing(np.abs(np.asarray(setpoint)))
        assert np.all(np.abs(nxt - setpoint) <= bound)
        # toward the goal: no joint moves away from it, and the goal itself once within reach
        assert np.all(np.abs(goal - nxt) <= np.abs(goal - setpoint))
        if np.all(np.abs(goal - setpoint) <= BOUNDS.velocity * dt):
            np.testing.assert_array_equal(nxt, goal)

    check()
    print(f"\nstream_step: {reached['asserts']} of {reached['examples']} examples asserted on")
    assert reached["asserts"] >= 0.5 * reached["examples"]


@settings(max_examples=200, deadline=None)
@given(start=sane_vectors, goal=sane_vectors, dt=st.floats(1e-3, 0.1))
def test_stream_ends_exactly_at_the_goal(start, goal, dt):
    assume(BOUNDS.inside(goal) and np.all(start >= ARM.lower) and np.all(start <= ARM.upper))
    s, steps = start, 0
    needed = math.ceil(float(np.max(np.abs(goal - start) / (BOUNDS.velocity * dt))))
    while not np.array_equal(s, goal):
        s = stream_step(s, goal, BOUNDS, dt)
        assert s is not None
        steps += 1
        assert steps <= needed + 1
    assert steps <= max(needed, 1)


def test_continuous_joints_get_no_margin():
    arm = ArmModel("""<robot name="c"><link name="a"/><link name="b"/>
      <joint name="spin" type="continuous"><parent link="a"/><child link="b"/>
      <axis xyz="0 0 1"/></joint></robot>""")
    bounds = JointBounds.from_arm(arm, margin=0.1)
    assert gate_command([math.pi - 0.01], [0.0], bounds) is not None
    assert bounds.velocity[0] == 1.0  # no velocity limit in the URDF: a conservative default
    # past pi: the solver answers a continuous joint within pi of the arm's joints (found by a
    # review: every target past pi was refused, with the arm at 3.10 rad and the answer 3.20)
    cmd = gate_command([3.20], [3.10], bounds)
    assert cmd is not None and cmd.positions[0] == 3.20 and cmd.duration < 0.2
    assert stream_step([3.15], [3.20], bounds, 0.01)[0] == pytest.approx(3.16)
    assert gate_command([np.inf], [3.10], bounds) is None


def test_a_path_is_timed_point_by_point_and_refused_whole():
    start = np.zeros(6)
    path = np.array([[0.1, 0, 0, 0, 0, 0], [0.1, 0.2, 0, 0, 0, 0], [0.1, 0.2, 0, 0, 0, 0]])
    commands = gate_path(path, start, BOUNDS)
    times = [c.duration for c in commands]
    v = BOUNDS.velocity
    assert times[0] == pytest.approx(0.1 / v[0]) and times[1] == pytest.approx(
        times[0] + 0.2 / v[1]
    )
    assert times[2] == pytest.approx(times[1] + 1e-3)  # the same point again: times still grow
    assert [c.positions.tolist() for c in commands] == path.tolist()
    stretched = gate_path(path, start, BOUNDS, min_duration=10.0)
    assert stretched[-1].duration == pytest.approx(10.0)
    assert stretched[0].duration == pytest.approx(10.0 * times[0] / times[-1])
    beyond = path.copy()
    beyond[1, 1] = ARM.upper[1] + 0.1  # one point outside the limits: nothing of the path
    assert gate_path(beyond, start, BOUNDS) is None
    assert gate_path(np.zeros((0, 6)), start, BOUNDS) is None


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="no room"):
        JointBounds.from_arm(ARM, margin=2.0)
    with pytest.raises(ValueError, match="speed_scale"):
        JointBounds.from_arm(ARM, speed_scale=0)


GOOD = dict(
    position=[0.2, 0.0, 0.3],
    orientation=[0, 0, 0, 1],
    frame_id="base_link",
    stamp=10.0,
    now=10.05,
    frames=FRAMES,
)


@pytest.mark.parametrize(
    "change, reason",
    [
        ({}, ""),
        ({"position": [math.nan, 0, 0]}, "position is not finite"),
        ({"position": [0, math.inf, 0]}, "position is not finite"),
        ({"orientation": [0, 0, 0, 0]}, "not unit length"),
        ({"orientation": [0, 0, 0, 2]}, "not unit length"),
        ({"orientation": [0, math.nan, 0, 1]}, "orientation is not finite"),
        ({"frame_id": ""}, "frame_id is empty"),
        ({"frame_id": "map"}, "unknown frame_id 'map'"),
        ({"stamp": 9.0}, "stale"),
        ({"stamp": 0.0}, "not stamped (header.stamp is zero)"),
        ({"stamp": 11.0}, "in the future"),
        ({"orientation": None}, ""),
    ],
)
def test_check_target(change, reason):
    got = check_target(**{**GOOD, **change})
    assert (reason in got) if reason else got == ""


TARGET_SPOILS = ("position", "norm", "orientation_not_finite", "frame", "stale", "future",
                 "unstamped", "stamp_not_finite")


@st.composite
def target_inputs(draw):
    """A finite position, a unit quaternion (or None), a known frame and a fresh stamp, with one
    of them spoilt in about 40 % of the examples (each kind of spoiling drawn alike)."""
    spoil = draw(st.sampled_from((None,) * 12 + TARGET_SPOILS))
    pos = draw(arrays(np.float64, 3, elements=st.floats(-1e6, 1e6)))
    quat = draw(arrays(np.float64, 4, elements=st.floats(-1, 1)))
    if np.linalg.norm(quat) < 1e-3:
        quat = np.array([0.0, 0.0, 0.0, 1.0])
    quat = quat / np.linalg.norm(quat) * draw(st.floats(1 - 9e-4, 1 + 9e-4))
    frame, stamp = "base_link", 100.0 - draw(st.floats(-0.049, 0.199))
    i = draw(st.integers(0, 3))
    bad = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    if spoil == "position":
        pos[i % 3] = bad
    elif spoil == "norm":
        norm = draw(st.one_of(st.floats(0, 1 - 1.1e-3), st.floats(1 + 1.1e-3, 1e6)))
        quat = quat / np.linalg.norm(quat) * norm
    elif spoil == "orientation_not_finite":
        quat[i] = bad
    elif spoil == "frame":
        frame = draw(st.text(max_size=12).filter(lambda f: f not in FRAMES))
    elif spoil == "stale":
        stamp = 100.0 - draw(st.floats(0.201, 1e9))
    elif spoil == "future":
        stamp = 100.0 + draw(st.floats(0.051, 1e9))
    elif spoil == "unstamped":
        stamp = 0.0
    elif spoil == "stamp_not_finite":
        stamp = bad
    orientation = None if spoil is None and draw(st.integers(0, 9)) == 0 else quat
    return spoil, pos, orientation, frame, stamp


def test_check_target_never_passes_anything_bad():
    reached = {"asserts": 0, "examples": 0}

    @settings(max_examples=900, deadline=None, database=None)
    @given(target_inputs())
    def check(drawn):
        spoil, pos, quat, frame, stamp = drawn
        reached["examples"] += 1
        reason = check_target(pos, quat, frame, stamp, 100.0, FRAMES)
        assert (reason == "") == (spoil is None), (spoil, reason)
        if reason != "":
            return
        reached["asserts"] += 1
        assert np.all(np.isfinite(pos)) and frame in FRAMES and -0.05 <= 100.0 - stamp <= 0.2
        assert quat is None or abs(np.linalg.norm(quat) - 1) <= 1e-3

    check()
    print(f"\ncheck_target: {reached['asserts']} of {reached['examples']} examples passed")
    assert reached["asserts"] >= 0.5 * reached["examples"]


def test_a_pose_that_collides_is_never_commanded():
    """accept_best_effort relaxes the tolerance, never the collision check: with a plane above
    the shoulder every pose collides, so the best effort does too."""
    from robot_ik_nn.ik.settings import IKSettings
    from robot_ik_nn.ik.solver import Solver

    solver = Solver(ARM, settings=IKSettings(collision_check=True, restarts=50))
    buried = solver.with_obstacles(planes=[((0, 0, 1), 1.0)])  # free only above z = 1 m
    inside = buried.solve(solver.forward(ARM.mid_range)[0][0])
    assert inside.status == "best_effort" and inside.q is not None and inside.collides
    assert buried.collisions.in_collision(inside.q) and inside.reason.startswith("collides")
    # "collides" is said of joints that do; a free closest pose after colliding answers is not
    from robot_ik_nn.ik import verdicts

    free = solver._reason(1, verdicts.COLLIDES, np.zeros(3), None, 0.2, 0.5, collides=False)
    assert free.startswith("not found: the answers within tolerance collide; this is the closest")
    assert not_commanded(inside, accept_best_effort=False) == inside.reason
    assert "a pose that collides is never commanded" in not_commanded(inside, True)
    batch = buried.solve_batch(solver.forward(ARM.mid_range)[0])
    assert batch[0].collides
    far = solver.solve(solver.origin + [0.0, 0.0, 1.5 * ARM.reach])  # out of reach, clear
    assert far.status == "best_effort" and not far.collides
    assert not_commanded(far, True) == "" and not_commanded(far, False) == far.reason
    assert not_commanded(solver.solve(solver.forward(ARM.mid_range)[0][0]), False) == ""
    rejected = solver.solve(np.array([np.nan, 0.0, 0.0]))
    assert not_commanded(rejected, True) == rejected.reason != ""
