"""The one home of rotation math: quaternions (ROS order x, y, z, w), rotation matrices, angles.

Every function takes numpy arrays or torch tensors, batched over leading dimensions, and
answers in kind: a numpy twin and a torch twin of each formula sit side by side here and are
tested against each other. The numpy side never imports torch, so serving runs without it.
(The compiled kernel in ``ik/forward.py`` carries scalar copies of two of these formulas for
speed; tests hold it to these.)

Joint quaternions: a joint's rotation by angle ``a`` about its own unit axis ``k`` is
``(k sin(a/2), cos(a/2))``. The network's output head and the inference node's
``~/joint_quaternions`` topic both speak this form.
"""

from __future__ import annotations

import math

import numpy as np


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _torch():
    import torch  # only reached with torch tensors in hand: torch is already imported

    return torch


# -- wrapping -----------------------------------------------------------------------------------
def wrap_angle(x):
    """Angles wrapped to [-pi, pi)."""
    if _is_torch(x):
        return _torch().remainder(x + math.pi, 2 * math.pi) - math.pi
    return np.remainder(np.asarray(x, dtype=float) + math.pi, 2 * math.pi) - math.pi


# -- joint quaternions ----------------------------------------------------------------------------
def joint_angles_to_quaternions(angles, axes):
    """(..., n) angles and (n, 3) unit axes -> (..., n, 4) unit quaternions (x y z w)."""
    if _is_torch(angles):
        torch = _torch()
        half = angles.unsqueeze(-1) / 2.0
        axes = torch.as_tensor(axes).to(angles)
        return torch.cat([axes * torch.sin(half), torch.cos(half)], dim=-1)
    half = np.asarray(angles, dtype=float)[..., None] / 2.0
    return np.concatenate([np.asarray(axes, dtype=float) * np.sin(half), np.cos(half)], axis=-1)


def quaternions_to_joint_angles(quats, axes):
    """(..., n, 4) quaternions about the joints' axes -> (..., n) angles in [-pi, pi).

    The part of a quaternion's vector that is not along the axis is ignored; a quaternion and
    its negative give the same angle.
    """
    if _is_torch(quats):
        torch = _torch()
        axes = torch.as_tensor(axes).to(quats)
        s = (quats[..., :3] * axes).sum(-1)
        return wrap_angle(2.0 * torch.atan2(s, quats[..., 3]))
    quats = np.asarray(quats, dtype=float)
    s = (quats[..., :3] * np.asarray(axes, dtype=float)).sum(-1)
    return wrap_angle(2.0 * np.arctan2(s, quats[..., 3]))


# -- quaternions and matrices -------------------------------------------------------------------
def _matrix_entries(x, y, z, w):
    return [
        1 - 2 * (y * y + z * z),
        2 * (x * y - z * w),
        2 * (x * z + y * w),
        2 * (x * y + z * w),
        1 - 2 * (x * x + z * z),
        2 * (y * z - x * w),
        2 * (x * z - y * w),
        2 * (y * z + x * w),
        1 - 2 * (x * x + y * y),
    ]


def quaternion_to_matrix(q):
    """(..., 4) quaternions (x y z w, normalised here) -> (..., 3, 3) rotation matrices."""
    if _is_torch(q):
        torch = _torch()
        q = q / torch.linalg.norm(q, dim=-1, keepdim=True)
        return torch.stack(_matrix_entries(*q.unbind(-1)), -1).reshape(*q.shape[:-1], 3, 3)
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.stack(_matrix_entries(*np.moveaxis(q, -1, 0)), -1).reshape(*q.shape[:-1], 3, 3)


def _quaternion_candidates(m, stack):
    """The four textbook formulas for the quaternion of ``m`` and their denominators ``t``."""
    t = [
        1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2],
        1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
        1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
        1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2],
    ]
    a, b, c = m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]
    d, e, f = m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1]
    cands = stack(
        [
            stack([a, b, c, t[0]], -1),
            stack([t[1], d, e, a], -1),
            stack([d, t[2], f, b], -1),
            stack([e, f, t[3], c], -1),
        ],
        -2,
    )
    return stack(t, -1), cands


def matrix_to_quaternion(R):
    """(..., 3, 3) rotation matrices -> (..., 4) unit quaternions (x y z w) with w >= 0.

    Of four candidate formulas the one with the largest (best conditioned) denominator is used."""
    if _is_torch(R):
        torch = _torch()
        t, cands = _quaternion_candidates(R, torch.stack)
        best = torch.argmax(t, dim=-1)
        q = torch.gather(cands, -2, best[..., None, None].expand(*best.shape, 1, 4)).squeeze(-2)
        q = q / torch.linalg.norm(q, dim=-1, keepdim=True)
        return torch.where(q[..., 3:] < 0, -q, q)
    t, cands = _quaternion_candidates(np.asarray(R, dtype=float), np.stack)
    best = np.argmax(t, axis=-1)
    q = np.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:] < 0, -q, q)


def matrix_to_rot6d(R):
    """The continuous 6-D rotation representation: the first two columns, (..., 6)."""
    if _is_torch(R):
        return _torch().cat([R[..., :, 0], R[..., :, 1]], dim=-1)
    return np.concatenate([R[..., :, 0], R[..., :, 1]], axis=-1)


# -- distances between rotations ------------------------------------------------------------------
def _vee_and_cos(E):
    v = [E[..., 2, 1] - E[..., 1, 2], E[..., 0, 2] - E[..., 2, 0], E[..., 1, 0] - E[..., 0, 1]]
    return v, (E[..., 0, 0] + E[..., 1, 1] + E[..., 2, 2] - 1.0) / 2.0


def rotation_angle(R, R_target):
    """Geodesic angle (rad) between rotation matrices, accurate near zero and near pi."""
    if _is_torch(R):
        torch = _torch()
        v, cos = _vee_and_cos(R_target @ R.transpose(-1, -2))
        return torch.atan2(torch.linalg.norm(torch.stack(v, -1), dim=-1) / 2.0, cos)
    v, cos = _vee_and_cos(np.asarray(R_target) @ np.swapaxes(R, -1, -2))
    return np.arctan2(np.linalg.norm(np.stack(v, -1), axis=-1) / 2.0, cos)


def rotation_error_vector(R, R_target):
    """Axis * angle (base frame) that turns ``R`` onto ``R_target``; (..., 3).

    Near pi the antisymmetric part vanishes, so the axis is taken from the symmetric part."""
    if _is_torch(R):
        return _rotation_error_torch(R, R_target)
    E = np.asarray(R_target, dtype=float) @ np.swapaxes(np.asarray(R, dtype=float), -1, -2)
    v, cos = _vee_and_cos(E)
    v = np.stack(v, -1)
    sin2 = np.linalg.norm(v, axis=-1, keepdims=True)  # = 2 sin(angle)
    angle = np.arctan2(sin2 / 2.0, cos[..., None])
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(sin2 > 1e-9, v * (angle / np.maximum(sin2, 1e-300)), v / 2.0)
    near_pi = cos < -0.99
    if np.any(near_pi):
        En, cn, vn, an = E[near_pi], cos[near_pi], v[near_pi], angle[near_pi]
        S = (En + np.swapaxes(En, -1, -2)) / 2.0 - cn[:, None, None] * np.eye(3)  # (1 - cos) a a^T
        col = np.argmax(np.diagonal(S, axis1=-2, axis2=-1), axis=-1)
        axis = S[np.arange(len(S)), :, col]
        axis = axis / np.maximum(np.linalg.norm(axis, axis=-1, keepdims=True), 1e-12)
        sign = np.where(np.sum(axis * vn, axis=-1, keepdims=True) < 0, -1.0, 1.0)
        out[near_pi] = axis * sign * an
    return out


def _rotation_error_torch(R, R_target):
    torch = _torch()
    E = R_target @ R.transpose(-1, -2)
    v, cos = _vee_and_cos(E)
    v, cos = torch.stack(v, -1), cos.unsqueeze(-1)
    sin2 = torch.linalg.norm(v, dim=-1, keepdim=True)
    angle = torch.atan2(sin2 / 2.0, cos)
    scale = torch.where(sin2 > 1e-9, angle / sin2.clamp_min(1e-12), torch.full_like(sin2, 0.5))
    out = v * scale
    near_pi = (cos < -0.99).squeeze(-1)
    if bool(near_pi.any()):
        En = E[near_pi]
        eye = torch.eye(3, dtype=E.dtype, device=E.device)
        S = (En + En.transpose(-1, -2)) / 2.0 - cos[near_pi].unsqueeze(-1) * eye
        col = torch.argmax(torch.diagonal(S, dim1=-2, dim2=-1), dim=-1)
        axis = S[torch.arange(S.shape[0]), :, col]
        axis = axis / torch.linalg.norm(axis, dim=-1, keepdim=True).clamp_min(1e-12)
        sign = torch.where((axis * v[near_pi]).sum(-1, keepdim=True) < 0, -1.0, 1.0).to(axis)
        out = out.clone()
        out[near_pi] = axis * sign * angle[near_pi]
    return out
