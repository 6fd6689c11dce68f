"""The compiled kernel against the torch kinematics and the rotation module: forward kinematics,
the Jacobian, the rotation error, and the limit-aware refinement, on revolute, continuous and
prismatic joints."""

import numpy as np
import pytest
import torch

from robot_ik_nn.arm import rotations as rot
from robot_ik_nn.arm.kinematics import Kinematics
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.ik import forward, kernel, layout
from robot_ik_nn.ik.settings import IKSettings
from robot_ik_nn.ik.solver import Solver

ARMS = ["niryo_one", "inmoov_right_arm", "franka_panda"]


def arm_by_name(name, slider_arm):
    return slider_arm if name == "slider" else ArmModel.load(name)


@pytest.mark.parametrize("name", ARMS + ["slider"])
def test_forward_kinematics_and_jacobian_match_torch(name, slider_arm):
    arm = arm_by_name(name, slider_arm)
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(1000, torch.Generator().manual_seed(11))
    q[:, arm.continuous] *= 3  # continuous joints go round more than once
    pos, R, J = kin.jacobian(q)
    chain = layout.pack_chain(arm)
    p, Rk, Jk = np.empty(3), np.empty((3, 3)), np.empty((6, arm.dof))
    work = np.empty((layout.WORK_ROWS, arm.dof))
    for i in range(0, 1000, 7):
        forward.fk(chain, q[i].numpy(), p, Rk, Jk, work, True)
        np.testing.assert_allclose(p, pos[i].numpy(), atol=1e-12)
        np.testing.assert_allclose(Rk, R[i].numpy(), atol=1e-12)
        np.testing.assert_allclose(Jk, J[i].numpy(), atol=1e-12)
    P, RR = Solver(arm).forward(q.numpy())  # the batched, parallel twin
    np.testing.assert_allclose(P, pos.numpy(), atol=1e-12)
    np.testing.assert_allclose(RR, R.numpy(), atol=1e-12)


def test_compiled_rotation_formulas_match_the_rotation_module():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((400, 4))
    R = rot.quaternion_to_matrix(q)
    R2 = rot.quaternion_to_matrix(rng.standard_normal((400, 4)))
    near_pi = R @ rot.quaternion_to_matrix(np.array([0.3, -0.2, 0.9, 1e-5]))
    out, Rk = np.empty(3), np.empty((3, 3))
    for i in range(400):
        forward.quat_to_matrix(q[i], Rk)
        np.testing.assert_allclose(Rk, R[i], atol=1e-14)
        for target in (R2[i], near_pi[i]):
            angle = forward.rotation_error(R[i], target, out, 0)
            np.testing.assert_allclose(out, rot.rotation_error_vector(R[i], target), atol=1e-9)
            assert abs(angle - rot.rotation_angle(R[i], target)) < 1e-12


@pytest.mark.parametrize("name", ARMS + ["slider"])
def test_refinement_reaches_reachable_targets_and_keeps_the_limits(name, slider_arm):
    arm = arm_by_name(name, slider_arm)
    solver = Solver(arm, settings=IKSettings(restarts=100, margin=0.01))
    rng = np.random.default_rng(2)
    lo, hi = arm.lower + 0.01 * ~arm.continuous, arm.upper - 0.01 * ~arm.continuous
    q_true = lo + rng.random((300, arm.dof)) * (hi - lo)
    P, R = solver.forward(q_true)
    full_pose = name != "slider"  # three joints cannot reach every orientation: position only
    result = solver.solve_batch(P, rot.matrix_to_quaternion(R) if full_pose else None)
    assert result.solved.mean() >= 0.99, result.summary()
    q = result.q[result.solved]
    assert np.all(q >= arm.lower + 0.01 * ~arm.continuous - 1e-12)
    assert np.all(q <= arm.upper - 0.01 * ~arm.continuous + 1e-12)
    assert np.all(
        np.abs(q[:, arm.continuous]) <= np.pi
    )  # continuous joints wrapped, no 2 pi turns
    # solved really means solved: checked with the torch kinematics, not the kernel's word
    p, r = Kinematics(arm, torch.float64).forward(torch.from_numpy(q))
    assert np.linalg.norm(p.numpy() - P[result.solved], axis=1).max() <= 1e-3
    if full_pose:
        assert rot.rotation_angle(r.numpy(), R[result.solved]).max() <= 0.01


def test_lm_converges_to_a_closest_pose_that_leans_on_limits():
    # a target far outside the InMoov arm's reach; from this start the closest pose leans on
    # limits. LM must end where no joint inside its limits can bring the pose closer (the
    # gradient J^T e vanishes there) and every joint at a limit is pulled beyond it. Steps
    # clipped at the limits instead of holding such joints stall short of it: after 1000
    # iterations joint 2's gradient was still 6e-4 there.
    solver = Solver(ArmModel.load("inmoov_right_arm"))
    chain, cfg = layout.parts(solver._model)[:2]
    n, lo, hi = solver.arm.dof, solver.arm.lower, solver.arm.upper
    d = np.array([0.3, -0.8, 0.5])
    pt = solver.origin + d / np.linalg.norm(d) * 1.6 * solver.arm.reach
    Rt = rot.quaternion_to_matrix(
        np.array([0.3, -0.2, 0.6, 0.7]) / np.linalg.norm([0.3, -0.2, 0.6, 0.7])
    )
    q = np.array([-0.864, 0.0, 0.378, 0.0, -0.33])
    ws = layout.views(np.zeros(layout.scratch_size(n)), n, 1, 1)
    kernel.refine(chain, cfg, q, pt, Rt, True, 1000, ws)
    assert np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12)
    e, J = np.zeros(6), np.zeros((6, n))
    kernel.residual(chain, cfg, q, pt, Rt, True, e, J, ws, True)
    g = J.T @ e  # the direction that brings the pose closer, per joint
    at_lo, at_hi = q <= lo, q >= hi
    assert (at_lo | at_hi).any()  # the case this test is about: a pose on the limits
    inside = ~(at_lo | at_hi)
    assert np.abs(g[inside]).max() < 1e-6, g
    assert np.all(g[at_lo] < 0) and np.all(g[at_hi] > 0), (g, q)


def test_the_compiled_sines_are_libm_s_within_an_ulp():
    # fk's own sin and 1 - cos (polynomials, no libm call) on joint angles as LM meets them:
    # several turns either way, exact quarter turns, and tiny angles where 1 - cos is all
    # in the last digits and must keep its relative precision
    rng = np.random.default_rng(4)
    q = np.concatenate(
        [
            rng.uniform(-20.0, 20.0, 200_000),
            np.arange(-8, 9) * np.pi / 2,
            [0.0, -0.0, 1e-300, 1e-12, -3e-8, 2e-4],
        ]
    )
    s, c1, k = np.empty_like(q), np.empty_like(q), np.empty(len(q), np.int64)
    forward.sincos(q, s, c1, k)
    assert np.abs(s - np.sin(q)).max() <= 2.3e-16
    assert np.abs(c1 - (1.0 - np.cos(q))).max() <= 4.5e-16
    small = (np.abs(q) < 0.1) & (q != 0)
    exact = 2.0 * np.sin(q[small] / 2.0) ** 2  # 1 - cos without the cancellation
    assert np.all(np.abs(c1[small] - exact) <= 1e-15 * exact)  # a few roundings, relative
