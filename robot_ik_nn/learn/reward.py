"""Reward by distance: the one signal every learner in the package maximises.

    r = -(w_pos * |p - p*| + w_rot * angle(R, R*))

Distances are in metres and radians. With the default weights one millimetre of position error
costs as much as 0.01 rad (0.57 deg) of rotation error: the two halves of "solved".
``w_rot = 0`` (or no rotations) is position-only.
"""

from __future__ import annotations

import torch

from ..arm.rotations import rotation_angle


def pose_distances(
    pos: torch.Tensor,
    rot: torch.Tensor | None,
    target_pos: torch.Tensor,
    target_rot: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Position error (m) and rotation error (rad) per row (0 without rotations)."""
    d_pos = torch.linalg.norm(pos - target_pos, dim=-1)
    if rot is None or target_rot is None:
        return d_pos, torch.zeros_like(d_pos)
    return d_pos, rotation_angle(rot, target_rot)


def reward_from_distances(
    d_pos: torch.Tensor, d_rot: torch.Tensor, w_pos: float = 1.0, w_rot: float = 0.1
) -> torch.Tensor:
    """The reward for already measured distances (what :func:`reward` computes)."""
    return -(w_pos * d_pos + w_rot * d_rot)


def reward(
    pos: torch.Tensor,
    rot: torch.Tensor | None,
    target_pos: torch.Tensor,
    target_rot: torch.Tensor | None = None,
    w_pos: float = 1.0,
    w_rot: float = 0.1,
) -> torch.Tensor:
    """Vectorised reward per row: 0 at the target, falling linearly with the distance.

    ``pos`` (..., 3), ``rot`` (..., 3, 3) or None; the same for the targets.
    """
    return reward_from_distances(*pose_distances(pos, rot, target_pos, target_rot), w_pos, w_rot)
