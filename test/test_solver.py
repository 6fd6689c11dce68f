"""The batched solver: refinement, restarts, limits, statuses and per-target rejections."""
import math

import numpy as np
import pytest
import torch

from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.kinematics import Kinematics
from robot_ik_nn.network import IKNet, NetConfig
from robot_ik_nn.quaternions import matrix_to_quaternion
from robot_ik_nn.solver import BEST_EFFORT, REJECTED, SOLVED, Solver, summarize


@pytest.mark.parametrize("robot", ["niryo_one", "inmoov_right_arm", "franka_panda"])
def test_refinement_with_restarts_solves_reachable_targets_inside_limits(robot):
    from robot_ik_nn.robot import ArmModel

    arm = ArmModel.load(robot)
    _, pos, rot = held_out_targets(arm, 300, seed=4)
    solver = Solver(arm, None, restarts=20)  # no network: mid-range seed, then random restarts
    result = solver.solve(pos, matrix_to_quaternion(rot))
    solved = np.array(result.status) == SOLVED
    assert solved.mean() >= 0.97, summarize(result)
    assert np.all(arm.within_limits(result.q.numpy()))
    # solved really means solved: check with independent forward kinematics
    p, r = Kinematics(arm, torch.float64).forward(result.q[torch.from_numpy(solved)])
    assert torch.linalg.norm(p - pos[torch.from_numpy(solved)], dim=-1).max() <= 1e-3


def test_position_only_targets(niryo):
    _, pos, _ = held_out_targets(niryo, 200, seed=5)
    result = Solver(niryo).solve(pos)
    assert (np.array(result.status) == SOLVED).mean() >= 0.99
    assert float(result.pos_err.max()) < 1e-3 or BEST_EFFORT in result.status


def test_network_alone_with_refine_zero(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "pose", [16]))
    _, pos, rot = held_out_targets(niryo, 50, seed=6)
    quat = matrix_to_quaternion(rot)
    alone = Solver(niryo, net).solve(pos, quat, refine=0)
    with torch.no_grad():
        expected = net(pos.float(), rot.float()).double()
    torch.testing.assert_close(alone.q, expected)
    refined = Solver(niryo, net).solve(pos, quat)
    assert refined.pos_err.median() < alone.pos_err.median() / 100


def test_bad_targets_are_rejected_one_by_one_with_a_reason(niryo):
    _, pos, rot = held_out_targets(niryo, 8, seed=7)
    quat = matrix_to_quaternion(rot)
    pos[1, 0] = math.nan
    pos[2, 2] = math.inf
    pos[3] = torch.tensor([5.0, 0.0, 0.0])  # 5 m away from a 0.55 m arm
    quat[4] = torch.tensor([0.0, 0.0, 0.0, 0.0])
    quat[5] = torch.tensor([0.0, 0.0, 0.5, 0.5])  # norm 0.707
    quat[6, 3] = math.nan
    result = Solver(niryo).solve(pos, quat)
    assert result.status[1:7] == [REJECTED] * 6
    assert "not finite" in result.reason[1] and "not finite" in result.reason[2]
    assert "reaches at most" in result.reason[3]
    assert "unit length" in result.reason[4] and "unit length" in result.reason[5]
    assert "orientation is not finite" in result.reason[6]
    assert result.status[0] == result.status[7] == SOLVED
    assert torch.isnan(result.q[1:7]).all() and torch.isfinite(result.q[[0, 7]]).all()


def test_unreachable_but_sane_target_is_best_effort(niryo):
    # inside the reach sphere but straight down through the base: no joint values get there
    result = Solver(niryo, restarts=2).solve([[0.0, 0.0, -0.3]], [[0.0, 0.0, 0.0, 1.0]])
    assert result.status == [BEST_EFFORT]
    assert "closest reached" in result.reason[0]
    assert np.all(niryo.within_limits(result.q.numpy()))


def test_pose_model_without_orientation_is_rejected(niryo):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, "pose", [8]))
    result = Solver(niryo, net).solve([[0.2, 0.0, 0.3]])
    assert result.status == [REJECTED] and "orientation" in result.reason[0]


def test_warm_start_from_current_joints_stays_close(niryo):
    kin = Kinematics(niryo, torch.float64)
    q0 = kin.sample(20, torch.Generator().manual_seed(8))
    q_goal = kin.clamp(q0 + 0.05)
    pos, rot = kin.forward(q_goal)
    result = Solver(niryo).solve(pos, matrix_to_quaternion(rot), current=q0)
    assert result.status == [SOLVED] * 20
    # from a nearby current state the solver lands on the nearby solution, not another branch
    assert (result.q - q_goal).abs().max() < 1e-2
