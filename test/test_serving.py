"""The single-target solver behind the inference node: same kinematics, same answers, fast."""
import math

import numpy as np
import pytest
import torch

from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.kinematics import Kinematics
from robot_ik_nn.quaternions import matrix_to_quaternion
from robot_ik_nn.robot import ArmModel
from robot_ik_nn.serving import NumpyChain, ServingSolver
from robot_ik_nn.solver import BEST_EFFORT, REJECTED, SOLVED


@pytest.mark.parametrize("robot", ["niryo_one", "inmoov_right_arm", "franka_panda"])
def test_numpy_chain_matches_the_torch_kinematics(robot):
    arm = ArmModel.load(robot)
    kin, chain = Kinematics(arm, torch.float64), NumpyChain(arm)
    q = kin.sample(100, torch.Generator().manual_seed(0))
    pos, rot, J = kin.jacobian(q)
    for k in range(100):
        p, R, Jk = chain.forward(q[k].numpy(), jacobian=True)
        np.testing.assert_allclose(p, pos[k].numpy(), atol=1e-12)
        np.testing.assert_allclose(R, rot[k].numpy(), atol=1e-12)
        np.testing.assert_allclose(Jk, J[k].numpy(), atol=1e-12)


def test_solves_cold_and_warm(niryo):
    q, pos, rot = held_out_targets(niryo, 100, seed=21)
    quat = matrix_to_quaternion(rot).numpy()
    solver = ServingSolver(niryo, None, restarts=10)
    cold = [solver.solve(pos[k].numpy(), quat[k]) for k in range(100)]
    assert sum(a.status == SOLVED for a in cold) >= 97
    warm = [solver.solve(pos[k].numpy(), quat[k], current=q[k].numpy() + 0.01) for k in range(100)]
    assert all(a.status == SOLVED for a in warm)
    # from a nearby state it finds the nearby solution
    assert max(np.abs(a.q - q[k].numpy()).max() for k, a in enumerate(warm)) < 0.01
    assert all(niryo.within_limits(a.q) for a in warm)


def test_margin_keeps_answers_off_the_limits(niryo):
    q = torch.tensor([[0.0, 0.64, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)  # joint_2 at its upper limit
    pos, rot = Kinematics(niryo, torch.float64).forward(q)
    answer = ServingSolver(niryo, margin=0.05, restarts=3).solve(pos[0].numpy(), matrix_to_quaternion(rot)[0].numpy())
    if answer.status == SOLVED:  # another branch may reach it from inside the margin
        assert answer.q[1] <= 0.640187 - 0.05 + 1e-12
    else:
        assert answer.status == BEST_EFFORT and answer.q[1] <= 0.640187 - 0.05 + 1e-12


def test_rejections(niryo):
    solver = ServingSolver(niryo)
    assert solver.solve([math.nan, 0, 0], [0, 0, 0, 1]).status == REJECTED
    far = solver.solve([3.0, 0, 0], [0, 0, 0, 1])
    assert far.status == REJECTED and "reaches at most" in far.reason
