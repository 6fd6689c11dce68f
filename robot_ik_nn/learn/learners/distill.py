"""The distill learner: one network learns from several (merge.py), driven by the reward.

It is the gradient learner (the reward differentiated through the kinematics) on targets drawn
from the union of the parents' training regions (and, for parents of different joint limits,
each share inside that parent's ranges), plus a hint: for every target each parent
answers, the reward judges the answers, and where the best parent's answer beats the merged
network's own best head, that head is pulled toward the parent's joints (``hint_weight`` x the
joint distance). Where the merged network is already better no parent is listened to, so it
can end up better than every parent on the whole workspace.
"""

from __future__ import annotations

import torch

from ..reward import pose_distances, reward_from_distances
from .base import parse_region
from .gradient import GradientLearner


class DistillLearner(GradientLearner):
    name = "distill"

    def __init__(self, arm, net, config, device, seed, *, teachers, regions, boxes=None):
        super().__init__(arm, net, config, device, seed)
        self.teachers = [t.to(self.device).eval() for t in teachers]
        for t in self.teachers:
            t.requires_grad_(False)
        # the union of the parents' shares, (region, joint box) each: a batch is split equally
        regions = [parse_region(r, self.device) for r in regions]
        if boxes is None:  # one set of limits: a parent trained everywhere covers the rest
            self.shares = [(None, None)] if None in regions else [(r, None) for r in regions]
        else:
            f = {"dtype": self.kin.dtype, "device": self.device}
            self.shares = [
                (r, (torch.as_tensor(lo, **f), torch.as_tensor(hi, **f)))
                for r, (lo, hi) in zip(regions, boxes)
            ]
        self.box = None

    def draw_joints(self, n: int) -> torch.Tensor:
        if self.box is None:
            return super().draw_joints(n)
        lo, hi = self.box
        u = torch.rand(n, len(lo), generator=self.generator, dtype=lo.dtype, device=lo.device)
        return lo + u * (hi - lo)

    def targets(self, n: int):
        parts, shares = [], self.shares
        for i, (region, box) in enumerate(shares):
            self.region, self.box = region, box
            count = n // len(shares) + (1 if i < n % len(shares) else 0)
            parts.append(super().targets(count))
        self.region, self.box = None, None
        return tuple(torch.cat(x) for x in zip(*parts))

    def guidance(self, q, pos, rot, reward):
        c = self.config
        rot_in = rot if self.pose_mode else None
        with torch.no_grad():
            answers = torch.stack([t(pos, rot_in) for t in self.teachers], 1)  # (B, parents, dof)
            p_a, r_a = self.kin.forward(answers)
            d_pos, d_rot = pose_distances(
                p_a,
                r_a if self.pose_mode else None,
                pos.unsqueeze(1),
                None if rot_in is None else rot_in.unsqueeze(1),
            )
            theirs = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot)  # (B, parents)
            best = theirs.argmax(1)
            hint = answers[torch.arange(len(pos)), best]
            better = theirs.max(1).values > reward.detach().max(1).values
        pull = self.net.joint_distance(q, hint.unsqueeze(1)).min(1).values
        loss = c.hint_weight * (pull * better).mean()
        return loss, {"hinted": float(better.float().mean())}
