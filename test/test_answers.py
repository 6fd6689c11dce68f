"""The answers users ask for (besides several of them: test_solutions.py): a free tool axis,
position-only targets for a pose model, targets outside the reach, and tracking without flips."""

import math

import numpy as np
import pytest
from fk_oracle import BulletFK, quat_to_matrix, rotation_angle

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.bench.answers import _score
from robot_ik_nn.bench.measure import tracking_path
from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.ik.settings import IKSettings
from robot_ik_nn.ik.solver import Solver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def solver(niryo_model):
    return Solver.load(niryo_model)


def turned_about_tool_z(R, seed):
    angle = np.random.default_rng(seed).uniform(-math.pi, math.pi, len(R))
    turn = np.zeros((len(R), 3, 3))
    c, s = np.cos(angle), np.sin(angle)
    turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1], turn[:, 2, 2] = c, -s, s, c, 1
    return R @ turn


def test_a_free_tool_axis_leaves_the_angle_about_it_free(solver, niryo_model):
    _, P, R = held_out_targets(solver.arm, 400, seed=31)
    R = turned_about_tool_z(R, 31)
    Q = matrix_to_quaternion(R)
    fixed = solver.solve_batch(P, Q)
    free = solver.solve_batch(P, Q, free_axis="z")
    assert free.solved.all() and fixed.solved.mean() < 0.9  # the turn is mostly out of reach
    reached_p, reached_R = solver.forward(free.q)
    assert np.linalg.norm(reached_p - P, axis=1).max() <= 1e-3
    cos = np.einsum("bi,bi->b", reached_R[:, :, 2], R[:, :, 2])
    assert np.arccos(np.clip(cos, -1, 1)).max() <= 0.01  # the tool's z axis is the target's
    # the angle about it is whatever the arm could do: not the target's, in general
    assert np.median(np.abs(np.einsum("bi,bi->b", reached_R[:, :, 0], R[:, :, 0]))) < 0.99
    one = solver.solve(P[0], Q[0], free_axis="z")  # one target, the same settings
    assert one.solved and one.rot_err <= 0.01
    assert Solver.load(niryo_model, IKSettings(free_axis="z")).solve(P[0], Q[0]).solved
    with pytest.raises(ValueError, match="free_axis must be one of"):
        IKSettings(free_axis="w")


def test_the_torch_solver_refuses_a_free_axis_and_collision_checks(niryo_model):
    from robot_ik_nn import model_dir
    from robot_ik_nn.ik.torch_solver import TorchSolver

    loaded = model_dir.load(niryo_model)
    for settings in (IKSettings(free_axis="z"), IKSettings(collision_check=True)):
        with pytest.raises(ValueError, match="free axes .* compiled Solver"):
            TorchSolver(loaded.arm, loaded.net, settings)


def test_a_pose_model_solves_positions_alone(solver):
    assert solver.mode == "pose"
    _, P, _ = held_out_targets(solver.arm, 200, seed=32)
    result = solver.solve_batch(P)
    assert result.solved.all() and np.all(result.rot_err == 0)
    reached, _ = solver.forward(result.q)
    assert np.linalg.norm(reached - P, axis=1).max() <= 1e-3
    assert solver.solve(P[0]).solved


def outside(solver, n, seed, pose):
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    P = solver.origin + d * solver.arm.reach * rng.uniform(1.05, 1.9, (n, 1))
    Q = rng.standard_normal((n, 4)) if pose else None
    return P, None if Q is None else Q / np.linalg.norm(Q, axis=1, keepdims=True)


@pytest.mark.parametrize("pose", [False, True], ids=["position", "pose"])
def test_a_target_outside_the_reach_gets_its_closest_pose_and_says_so(solver, pose):
    P, Q = outside(solver, 30, 33 + pose, pose)
    quats = [None] * len(P) if Q is None else list(Q)
    answers = [solver.solve(p, q) for p, q in zip(P, quats)]
    assert all(a.status == "best_effort" and a.q is not None for a in answers)
    for a in answers:
        assert a.reason.startswith("outside the reach") and "closest reached" in a.reason
    assert all(solver.arm.within_limits(a.q) for a in answers)
    batch = solver.solve_batch(P, Q)
    assert list(batch.codes) == [1] * len(P)
    assert [r.split(";")[0] for r in batch.reason] == [a.reason.split(";")[0] for a in answers]
    # judged by an outside search: scipy's bounded least squares from 8 random joint sets per
    # target over PyBullet's forward kinematics, the score computed from PyBullet too
    ours, best = _outside_search(solver, [a.q for a in answers], P, quats)
    assert np.all(ours - best <= 1e-3), (ours - best).max()
    # the reported errors are the answer's own
    reached, _ = solver.forward(answers[0].q)
    assert abs(np.linalg.norm(reached[0] - P[0]) - answers[0].pos_err) < 1e-9
    far = solver.solve(solver.origin + [0, 0, 2.5 * solver.arm.reach], quats[0])
    assert far.status == "rejected" and far.reason.startswith("far outside the reach")


def _outside_search(solver, answers, P, quats, starts: int = 8):
    """(our answers' weighted errors, the best an outside search finds), both by PyBullet."""
    from scipy.optimize import least_squares
    from scipy.spatial.transform import Rotation

    arm, w = solver.arm, solver.settings.rot_weight
    rng = np.random.default_rng(0)
    with BulletFK.of(arm) as fk:

        def residual(q, p, quat):
            pos, R = fk.fk(q)
            if quat is None:
                return pos - p
            turn = Rotation.from_matrix(quat_to_matrix(quat).T @ R).as_rotvec()
            return np.concatenate([pos - p, w * turn])

        def score(q, p, quat):
            return float(np.linalg.norm(residual(q, p, quat)))

        ours = np.array([score(q, p, quat) for q, p, quat in zip(answers, P, quats)])
        best = np.array(
            [
                min(
                    score(
                        least_squares(
                            residual,
                            x0,
                            bounds=(arm.lower, arm.upper),
                            args=(p, quat),
                            diff_step=1e-4,
                        ).x,
                        p,
                        quat,
                    )
                    for x0 in rng.uniform(arm.lower, arm.upper, (starts, arm.dof))
                )
                for p, quat in zip(P, quats)
            ]
        )
    return ours, best


def test_a_closest_pose_search_ends_once_restarts_stop_bringing_it_closer(solver):
    P, Q = outside(solver, 10, 35, True)
    quick = solver.with_settings(far_restarts=1000, far_patience=5)
    patient = solver.with_settings(far_restarts=1000, far_patience=1000)
    for p, q in zip(P, Q):
        a, b = quick.solve(p, q), patient.solve(p, q)
        assert a.iterations < b.iterations  # 1000 restarts of 100 LM steps: far more
        assert _score(solver, b.q, p, q) <= _score(solver, a.q, p, q) + 1e-9
    with pytest.raises(ValueError, match="far_patience"):
        solver.with_settings(far_patience=-1)


def test_inside_the_bound_but_not_found_says_not_found(solver):
    top = solver.origin + [0.0, 0.0, 0.99 * solver.arm.reach]  # inside the bound, out of reach
    answer = solver.with_settings(restarts=20).solve(top, [0, 0, 0, 1.0])
    assert answer.status == "best_effort" and answer.reason.startswith("not found")


def test_tracking_stays_on_its_branch(solver):
    arm = solver.arm
    for seed in (100, 101):
        q_path, P, R = tracking_path(arm, solver.forward, 1000, seed=seed)
        answers = track(solver, P, matrix_to_quaternion(R), q_path[0])
        assert np.abs(np.diff(answers, axis=0)).max() <= 0.2


def track(solver, P, Q, start):
    """Each target warm-started from the last answer, and the one before it (a stream's step
    carried on where the arm has no self-motion); every one must be solved."""
    last, previous, answers = start, None, []
    for p, q in zip(P, Q):
        answer = solver.solve(p, q, current=last, last=last, previous=previous)
        assert answer.solved
        previous, last = last, answer.q
        answers.append(last)
    return np.array(answers)


def test_tracking_a_redundant_arm_beside_a_limit(panda):
    # path 101 passes 4 mrad from the Panda's first joint limit, where the projected steps from
    # the last answer converge slowly: it must not jump to another branch (it did, by 4.7 rad)
    solver = Solver(panda)
    q_path, P, R = tracking_path(panda, solver.forward, 400, seed=101)
    answers = track(solver, P, matrix_to_quaternion(R), q_path[0])
    assert np.abs(np.diff(answers, axis=0)).max() <= 0.2


def test_tracking_beside_a_wrist_alignment_does_not_turn_the_wrist():
    # iiwa path 127, target 307 (found by bench --answers): j1 on its limit, j6 0.07 rad from
    # aligning j5 and j7. Polished Gauss-Newton steps turned j5 and j7 by 0.36 rad for the last
    # half millimetre; an answer within the tolerance lies 0.02 rad from the last one
    solver = Solver(ArmModel.load("kuka_iiwa"))
    last = np.array(
        [-2.9668975490536047, -0.9440318929663152, -1.641255300830803, 1.3030179736664906,
         -0.29651899966789064, -0.0718271241109351, 1.6867298387094467]
    )  # fmt: skip
    p = [0.4884983388928333, -0.38597045415120995, 0.7068229478181821]
    quat = [0.4105526010265133, -0.4835839186574429, 0.7014979162034919, 0.3247981357219201]
    answer = solver.solve(p, quat, current=last, last=last)
    assert answer.solved
    assert np.abs(answer.q - last).max() < 0.1


def test_a_continuous_joint_crosses_pi_without_a_turn(slider_arm):
    solver = Solver(slider_arm)
    t = np.linspace(0, 1, 400)[:, None]
    q_path = np.hstack([2.6 + 1.2 * t, 0.05 + 0 * t, 0.4 - 0.3 * t])  # spin: 2.6 -> 3.8 rad
    P, _ = solver.forward(q_path)
    answers = track(solver, P, [None] * len(P), q_path[0])  # positions alone
    assert np.abs(np.diff(answers, axis=0)).max() <= 0.2
    assert answers[-1, 0] > math.pi  # went on past pi, not back by a whole turn
    without = Solver(slider_arm).solve(P[-1])  # no warm start: the wrapped angle
    assert -math.pi <= without.q[0] < math.pi


def held_to_what_solve_path_says(solver, q_path, P, R, z_only=False, max_step=0.2):
    """What solve_path promises, whatever the tracking does: it plans exactly when the answers
    tracked from ``start`` step over ``max_step`` somewhere (else it returns them as they are);
    no step of its path is over ``max_step`` and its ``max_step`` is its largest; every joint
    is within its limits and every target is reached, as PyBullet's kinematics judges (the
    tool's z axis alone with ``z_only``). Returns the path."""
    arm, Q = solver.arm, matrix_to_quaternion(R)
    tracked = track(solver, P, Q, q_path[0])
    jump = np.abs(np.diff(np.vstack([q_path[0], tracked]), axis=0)).max()
    path = solver.solve_path(P, Q, start=q_path[0], max_step=max_step)
    assert path.ok and path.reason == "" and path.solved.all()
    assert path.planned == (jump > max_step), (path.planned, jump)
    if not path.planned:
        np.testing.assert_array_equal(path.q, tracked)
    steps = np.abs(np.diff(np.vstack([q_path[0], path.q]), axis=0)).max(axis=1)
    assert steps.max() <= max_step and path.max_step == pytest.approx(steps.max())
    assert arm.within_limits(path.q).all()
    with BulletFK.of(arm) as fk:
        reached, turned = fk.fk_batch(path.q)
    assert np.linalg.norm(reached - P, axis=1).max() <= 1e-3
    if z_only:
        assert np.einsum("bi,bi->b", turned[:, :, 2], R[:, :, 2]).min() >= np.cos(0.01)
    else:
        assert rotation_angle(turned, R).max() <= 0.01
    return path


def test_a_known_path_is_planned_past_the_dead_end_tracking_meets(panda):
    """Panda path 129: tracked target by target, the answers drift along the self-motion into a
    dead end (they jumped 0.9 rad at target 265 when this was written); given the whole path,
    solve_path plans over the sampled self-motion instead."""
    solver = Solver(panda)
    q_path, P, R = tracking_path(panda, solver.forward, 300, seed=129)
    held_to_what_solve_path_says(solver, q_path, P, R)


def test_a_known_path_changes_branch_where_two_meet(niryo):
    """Niryo One path 184 (6 joints: no self-motion): tracked target by target, the answers
    leave the path's own branch where two meet at a singular pose, and that branch ends at the
    third joint's limit (a 0.35 rad jump at target 262 when this was written). Given the whole
    path, solve_path takes the branches' answers, tracks them both ways and changes branch
    where they meet. (The stream's step not carried, carry_step 0: carried, it crosses with the
    path, and the branches would not be asked.)"""
    solver = Solver(niryo, settings=IKSettings(carry_step=0.0))
    q_path, P, R = tracking_path(niryo, solver.forward, 1000, seed=184)
    held_to_what_solve_path_says(solver, q_path, P, R)


def test_a_path_pressed_on_a_limit_is_planned_over_the_branches(panda):
    """Panda path 567: its own joints press on the seventh joint's limit from target 67 on.
    Tracked, the answers left the path's stretch of self-motion (a 2.9 rad jump when this was
    written); holding any one joint samples no way through either. The branches (the distinct
    answers and the stretches through them, tracked both ways between marks) hold one."""
    solver = Solver(panda)
    q_path, P, R = tracking_path(panda, solver.forward, 300, seed=567)
    held_to_what_solve_path_says(solver, q_path, P, R)


def test_a_path_with_a_free_tool_axis_is_planned_through(niryo):
    """With the tool's z axis free the Niryo One keeps one joint of room per pose, a
    self-motion like a 7-joint arm's: tracked, path 109 jumped; given whole, it is planned
    through, with the tool's z axis on the target's everywhere."""
    solver = Solver(niryo, settings=IKSettings(free_axis="z"))
    q_path, P, R = tracking_path(niryo, solver.forward, 1000, seed=109)
    held_to_what_solve_path_says(solver, q_path, P, R, z_only=True)
    with pytest.raises(TypeError, match="give the settings by name"):
        Solver(niryo, IKSettings())


def test_a_path_without_a_jump_is_the_tracked_one_and_bad_requests_are_named(solver):
    q_path, P, R = tracking_path(solver.arm, solver.forward, 200, seed=100)
    Q = matrix_to_quaternion(R)
    path = solver.solve_path(P, Q, start=q_path[0])
    assert path.ok and not path.planned
    np.testing.assert_array_equal(path.q, track(solver, P, Q, q_path[0]))
    for bad, said in [
        (dict(start=q_path[0][:5]), r"start must be joint values of shape \(6\)"),
        (dict(start=q_path[0], max_step=-1), "max_step must be a finite number"),
        (dict(start=q_path[0], joint=6), "joint must be a joint's index from 0 to 5"),
    ]:
        with pytest.raises(ValueError, match=said):
            solver.solve_path(P, Q, **bad)
    with pytest.raises(ValueError, match="a path needs at least one target"):
        solver.solve_path(np.zeros((0, 3)), np.zeros((0, 4)), start=q_path[0])
    far = np.array(q_path[0]) + 1.0  # the first answer lies a turn of every joint away
    for n in (20, 1):  # one target: no way can begin (a path of one, planned, said so)
        jumped = solver.solve_path(P[:n], Q[:n], start=far)
        assert (
            not jumped.ok
            and jumped.at == 0
            and "no path found without a step over 0.2" in (jumped.reason)
        )
