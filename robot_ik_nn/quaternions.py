"""Quaternions, all in ROS order (x, y, z, w), batched over leading dimensions.

Joint quaternions: a joint's rotation by angle ``a`` about its own unit axis ``k`` is
``(k sin(a/2), cos(a/2))``. The network's output head and the inference node's
``~/joint_quaternions`` topic both speak this form.
"""
from __future__ import annotations

import math

import torch


def joint_angles_to_quaternions(angles: torch.Tensor, axes: torch.Tensor) -> torch.Tensor:
    """(..., n) angles and (n, 3) unit axes -> (..., n, 4) unit quaternions (x y z w)."""
    half = angles.unsqueeze(-1) / 2.0
    axes = axes.to(angles)
    return torch.cat([axes * torch.sin(half), torch.cos(half)], dim=-1)


def quaternions_to_joint_angles(quats: torch.Tensor, axes: torch.Tensor) -> torch.Tensor:
    """(..., n, 4) quaternions about the joints' axes -> (..., n) angles in (-pi, pi].

    The part of a quaternion's vector that is not along the axis is ignored; a quaternion and
    its negative give the same angle.
    """
    axes = axes.to(quats)
    s = (quats[..., :3] * axes).sum(-1)
    angle = 2.0 * torch.atan2(s, quats[..., 3])
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def quaternion_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) quaternions (x y z w, normalised here) -> (..., 3, 3) rotation matrices."""
    q = q / torch.linalg.norm(q, dim=-1, keepdim=True)
    x, y, z, w = q.unbind(-1)
    rows = [
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ]
    return torch.stack(rows, -1).reshape(*q.shape[:-1], 3, 3)


def matrix_to_quaternion(R: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation matrices -> (..., 4) unit quaternions (x y z w) with w >= 0."""
    m = R
    t = [1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2],
         1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
         1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
         1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2]]
    t = torch.stack(t, -1)
    # Four candidate formulas; use the one with the largest (best conditioned) denominator.
    cands = torch.stack([
        torch.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], t[..., 0]], -1),
        torch.stack([t[..., 1], m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] - m[..., 1, 2]], -1),
        torch.stack([m[..., 0, 1] + m[..., 1, 0], t[..., 2], m[..., 1, 2] + m[..., 2, 1], m[..., 0, 2] - m[..., 2, 0]], -1),
        torch.stack([m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], t[..., 3], m[..., 1, 0] - m[..., 0, 1]], -1),
    ], -2)
    best = torch.argmax(t, dim=-1)
    q = torch.gather(cands, -2, best[..., None, None].expand(*best.shape, 1, 4)).squeeze(-2)
    q = q / torch.linalg.norm(q, dim=-1, keepdim=True)
    return torch.where(q[..., 3:] < 0, -q, q)


def matrix_to_rot6d(R: torch.Tensor) -> torch.Tensor:
    """The continuous 6-D rotation representation: the first two columns, (..., 6)."""
    return torch.cat([R[..., :, 0], R[..., :, 1]], dim=-1)
