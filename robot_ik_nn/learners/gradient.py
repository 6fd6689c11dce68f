"""The gradient learner: the reward differentiated through the torch kinematics.

Each step draws reachable targets, asks the network for joints, runs them through the
differentiable forward kinematics and climbs the reward (reward.py) by gradient. The fastest
learner, and the default. Early on a fading hindsight term pulls the network toward the joints
that made each target, which gives it a sensible starting branch; by the first third of the
budget it is gone and only the reward is left.
"""
from __future__ import annotations

import math

import torch

from ..reward import pose_distances, reward_from_distances
from .base import Learner


class GradientLearner(Learner):
    name = "gradient"
    hindsight_weight = 0.1
    hindsight_until = 0.3

    def step(self, progress: float) -> dict:
        c = self.config
        q_star, pos, rot = self.targets(c.batch_size)
        current = self.current_joints(q_star) if self.net.config.tracking else None
        q = self.net(pos, rot if self.pose_mode else None, current)
        p_q, r_q = self.kin.forward(q)
        d_pos, d_rot = pose_distances(p_q, r_q if self.pose_mode else None, pos, rot if self.pose_mode else None)
        reward = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot)
        loss = -reward.mean()
        fade = self.hindsight_weight * max(0.0, 1.0 - progress / self.hindsight_until)
        if fade > 0:
            loss = loss + fade * self.net.joint_distance(q, q_star).mean()
        if current is not None:
            loss = loss + c.w_move * self.net.joint_distance(q, current).mean()
        lr = self.apply(loss, progress)
        return {"loss": float(loss.detach()), "reward": float(reward.detach().mean()),
                "pos_mm": float(d_pos.detach().median()) * 1000, "rot_deg": math.degrees(float(d_rot.detach().median())),
                "lr": lr}
