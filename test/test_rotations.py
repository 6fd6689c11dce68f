"""One rotation module, numpy and torch twins side by side: each formula against its twin, and
against the textbook."""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_ik_nn.arm import rotations as rot

AXES = np.array([[0, 0, 1.0], [1, 0, 0], [0, 0.6, 0.8]])


def random_rotations(n, seed=0):
    q = np.random.default_rng(seed).standard_normal((n, 4))
    return rot.quaternion_to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True))


def twins(fn, *args):
    """(numpy answer, torch answer) of the same call."""
    return fn(*args), fn(*[torch.as_tensor(a) for a in args]).numpy()


def test_every_twin_agrees_with_its_numpy_sibling():
    R, R2 = random_rotations(500, 1), random_rotations(500, 2)
    q = np.random.default_rng(3).standard_normal((500, 4))
    angles = np.random.default_rng(4).uniform(-3, 3, (500, 3))
    near_pi = R @ rot.quaternion_to_matrix(
        np.array([0.0, 0.0, 1.0, 1e-4])
    )  # 180 deg turns, nearly
    for fn, args in [
        (rot.quaternion_to_matrix, (q,)),
        (rot.matrix_to_quaternion, (R,)),
        (rot.matrix_to_rot6d, (R,)),
        (rot.rotation_angle, (R, R2)),
        (rot.rotation_error_vector, (R, R2)),
        (rot.rotation_error_vector, (R, near_pi)),
        (rot.joint_angles_to_quaternions, (angles, AXES)),
        (rot.wrap_angle, (angles * 3,)),
    ]:
        a, b = twins(fn, *args)
        np.testing.assert_allclose(a, b, atol=1e-12, err_msg=fn.__name__)
    jq = rot.joint_angles_to_quaternions(angles, AXES)
    np.testing.assert_allclose(*twins(rot.quaternions_to_joint_angles, jq, AXES), atol=1e-12)


def test_joint_quaternion_is_rotation_about_the_axis():
    q = rot.joint_angles_to_quaternions(np.array([math.pi / 2, 0.0, math.pi]), AXES)
    s = math.sqrt(0.5)
    np.testing.assert_allclose(q, [[0, 0, s, s], [0, 0, 0, 1], [0, 0.6, 0.8, 0]], atol=1e-12)
    R = rot.quaternion_to_matrix(rot.joint_angles_to_quaternions(np.array([0.3, -1.2, 2.5]), AXES))
    for k, th in enumerate([0.3, -1.2, 2.5]):  # Rodrigues by hand
        a = AXES[k]
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        np.testing.assert_allclose(
            R[k], np.eye(3) + math.sin(th) * K + (1 - math.cos(th)) * K @ K, atol=1e-12
        )


def test_joint_angle_round_trip_and_sign_of_the_quaternion():
    angles = np.random.default_rng(0).uniform(-math.pi + 1e-9, math.pi - 1e-9, (1000, 3))
    quats = rot.joint_angles_to_quaternions(angles, AXES)
    np.testing.assert_allclose(rot.quaternions_to_joint_angles(quats, AXES), angles, atol=1e-12)
    np.testing.assert_allclose(rot.quaternions_to_joint_angles(-quats, AXES), angles, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1)
)
def test_matrix_quaternion_round_trip(v):
    q = np.asarray(v) / np.linalg.norm(v)
    back = rot.matrix_to_quaternion(rot.quaternion_to_matrix(q))
    assert min(np.linalg.norm(back - q), np.linalg.norm(back + q)) < 1e-9  # q and -q: one rotation


def test_rotation_error_vector_turns_one_rotation_onto_the_other():
    R, R2 = random_rotations(300, 5), random_rotations(300, 6)
    w = rot.rotation_error_vector(R, R2)
    angle = np.linalg.norm(w, axis=1)
    np.testing.assert_allclose(angle, rot.rotation_angle(R, R2), atol=1e-9)
    axis = w / angle[:, None]
    turn = rot.quaternion_to_matrix(
        np.concatenate([axis * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], 1)
    )
    np.testing.assert_allclose(turn @ R, R2, atol=1e-9)


def test_rot6d_is_the_first_two_columns():
    R = random_rotations(4)
    np.testing.assert_array_equal(
        rot.matrix_to_rot6d(R), np.concatenate([R[:, :, 0], R[:, :, 1]], axis=1)
    )
