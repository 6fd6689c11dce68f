"""The gradient learner: the reward differentiated through the torch kinematics.

Each step draws reachable targets, asks the network for joints, runs them through the
differentiable forward kinematics and climbs the reward (reward.py) by gradient. The fastest
learner, and the default. Early on a fading hindsight term pulls the network toward the joints
that made each target, which gives it a sensible starting branch; by the first third of the
budget it is gone and only the reward is left.

With several heads (one per solution branch) the learning is winner-takes-most: each target's
reward flows mostly into the head that came closest (the losers get ``losing_heads`` of it, so
none dies), and the hindsight pull goes to the head nearest in joint space to the joints that
made the target, which spreads the heads over the arm's branches.
"""

from __future__ import annotations

import math

import torch

from ..reward import pose_distances, reward_from_distances
from .base import Learner


class GradientLearner(Learner):
    name = "gradient"

    def step(self, progress: float) -> dict:
        c = self.config
        q_star, pos, rot = self.targets(c.batch_size)
        current = self.current_joints(q_star) if self.net.config.tracking else None
        q = self.policy(pos, rot if self.pose_mode else None, current)  # (B, heads, dof)
        p_q, r_q = self.kin.forward(q)
        d_pos, d_rot = pose_distances(
            p_q,
            r_q if self.pose_mode else None,
            pos.unsqueeze(1),
            rot.unsqueeze(1) if self.pose_mode else None,
        )
        reward = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot)  # (B, heads)
        won = reward.argmax(dim=1, keepdim=True)
        winner = torch.gather(reward, 1, won).squeeze(1)
        loss = -winner.mean()
        if q.shape[1] > 1:
            loss = loss - c.losing_heads * reward.mean()
        fade = c.hindsight_weight * max(0.0, 1.0 - progress / c.hindsight_until)
        if fade > 0:
            pull = self.net.joint_distance(q, q_star.unsqueeze(1))  # (B, heads)
            loss = loss + fade * pull.min(dim=1).values.mean()
        if current is not None:
            loss = loss + c.w_move * self.net.joint_distance(q, current.unsqueeze(1)).mean()
        extra, notes = self.guidance(q, pos, rot, reward)
        loss = loss + extra
        d_pos, d_rot = (
            torch.gather(d_pos, 1, won).squeeze(1),
            torch.gather(d_rot, 1, won).squeeze(1),
        )
        reward = winner
        lr = self.apply(loss, progress)
        return {
            "loss": float(loss.detach()),
            "reward": float(reward.detach().mean()),
            "pos_mm": float(d_pos.detach().median()) * 1000,
            "rot_deg": math.degrees(float(d_rot.detach().median())),
            "lr": lr,
            **notes,
        }

    def guidance(self, q, pos, rot, reward) -> tuple[torch.Tensor | float, dict]:
        """An extra loss term and its metrics; none here (distill.py adds its parents' hints)."""
        return 0.0, {}
