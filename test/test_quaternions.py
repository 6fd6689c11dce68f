"""Joint quaternions and pose quaternions: conversions and round trips."""
import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_ik_nn.quaternions import (joint_angles_to_quaternions, matrix_to_quaternion, matrix_to_rot6d,
                                     quaternion_to_matrix, quaternions_to_joint_angles)

AXES = torch.tensor([[0, 0, 1.0], [1, 0, 0], [0, 0.6, 0.8]], dtype=torch.float64)


def test_joint_quaternion_is_rotation_about_the_axis():
    q = joint_angles_to_quaternions(torch.tensor([math.pi / 2, 0.0, math.pi], dtype=torch.float64), AXES)
    s = math.sqrt(0.5)
    np.testing.assert_allclose(q[0].numpy(), [0, 0, s, s], atol=1e-12)
    np.testing.assert_allclose(q[1].numpy(), [0, 0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(q[2].numpy(), [0, 0.6, 0.8, 0], atol=1e-12)
    np.testing.assert_allclose(torch.linalg.norm(q, dim=-1).numpy(), 1.0)


def test_joint_angle_round_trip_batched():
    g = torch.Generator().manual_seed(0)
    angles = (torch.rand(1000, 3, generator=g, dtype=torch.float64) * 2 - 1) * (math.pi - 1e-9)
    quats = joint_angles_to_quaternions(angles, AXES)
    assert quats.shape == (1000, 3, 4)
    back = quaternions_to_joint_angles(quats, AXES)
    np.testing.assert_allclose(back.numpy(), angles.numpy(), atol=1e-12)
    # q and -q are the same rotation
    np.testing.assert_allclose(quaternions_to_joint_angles(-quats, AXES).numpy(), angles.numpy(), atol=1e-12)


def test_joint_quaternion_matches_the_rotation_matrix():
    angles = torch.tensor([0.3, -1.2, 2.5], dtype=torch.float64)
    R = quaternion_to_matrix(joint_angles_to_quaternions(angles, AXES))
    for k in range(3):  # Rodrigues by hand
        a, th = AXES[k].numpy(), angles[k].item()
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        expected = np.eye(3) + math.sin(th) * K + (1 - math.cos(th)) * K @ K
        np.testing.assert_allclose(R[k].numpy(), expected, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1))
def test_matrix_quaternion_round_trip(v):
    q = torch.tensor(v, dtype=torch.float64)
    q = q / torch.linalg.norm(q)
    q = torch.where(q[3] < 0, -q, q)
    back = matrix_to_quaternion(quaternion_to_matrix(q))
    # w = 0 leaves a sign choice: compare as rotations
    assert min(torch.linalg.norm(back - q), torch.linalg.norm(back + q)) < 1e-9


def test_rot6d_is_first_two_columns():
    R = quaternion_to_matrix(torch.tensor([0.1, 0.2, 0.3, 0.9], dtype=torch.float64))
    np.testing.assert_allclose(matrix_to_rot6d(R).numpy(), np.concatenate([R[:, 0], R[:, 1]]))
