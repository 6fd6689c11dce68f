"""The reward by distance: pure, vectorised, and falling with the distance."""

import math

import torch

from robot_ik_nn.arm.rotations import quaternion_to_matrix
from robot_ik_nn.learn.reward import pose_distances, reward, reward_from_distances


def _rot_z(angle):
    return quaternion_to_matrix(
        torch.tensor([0, 0, math.sin(angle / 2), math.cos(angle / 2)], dtype=torch.float64)
    )


def test_zero_at_the_target_and_falling_with_position_distance():
    target = torch.tensor([[0.3, 0.1, 0.2]], dtype=torch.float64)
    offsets = torch.tensor([0.0, 0.001, 0.01, 0.1, 1.0], dtype=torch.float64)
    pos = target + offsets[:, None] * torch.tensor([1.0, 0, 0], dtype=torch.float64)
    r = reward(pos, None, target.expand(5, 3))
    assert r[0] == 0
    assert torch.all(r[1:] < r[:-1])
    torch.testing.assert_close(r, -offsets)


def test_rotation_counts_with_its_weight():
    pos = torch.zeros(3, 3, dtype=torch.float64)
    rot = torch.stack([_rot_z(a) for a in (0.0, 0.01, 0.5)])
    target_rot = _rot_z(0.0).expand(3, 3, 3)
    r = reward(pos, rot, pos, target_rot, w_pos=1.0, w_rot=0.1)
    torch.testing.assert_close(r, torch.tensor([0.0, -0.001, -0.05], dtype=torch.float64))
    # the default weights make 1 mm cost as much as 0.01 rad
    assert torch.isclose(
        reward(pos[:1] + torch.tensor([0.001, 0, 0], dtype=torch.float64), None, pos[:1]),
        reward(pos[1:2], rot[1:2], pos[1:2], target_rot[1:2]),
    )
    # position-only: no rotations, no rotation cost
    assert torch.all(reward(pos, None, pos) == 0)


def test_vectorised_over_any_batch_shape_and_differentiable():
    pos = torch.randn(4, 5, 3, dtype=torch.float64, requires_grad=True)
    target = torch.randn(4, 5, 3, dtype=torch.float64)
    r = reward(pos, None, target, w_pos=2.0)
    assert r.shape == (4, 5)
    r.sum().backward()
    expected = -2.0 * (pos - target) / torch.linalg.norm(pos - target, dim=-1, keepdim=True)
    torch.testing.assert_close(pos.grad, expected.detach())


def test_distances_and_reward_from_distances_agree():
    pos, target = torch.randn(10, 3), torch.randn(10, 3)
    rot = torch.stack([_rot_z(a).float() for a in torch.linspace(0, 3, 10).tolist()])
    d_pos, d_rot = pose_distances(pos, rot, target, _rot_z(0.0).float().expand(10, 3, 3))
    torch.testing.assert_close(d_rot, torch.linspace(0, 3, 10), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        reward_from_distances(d_pos, d_rot, 1.0, 0.1),
        reward(pos, rot, target, _rot_z(0.0).float().expand(10, 3, 3)),
    )
