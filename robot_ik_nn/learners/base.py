"""The interface every learner implements, and the settings they share.

A learner owns its optimiser and whatever it remembers (a replay buffer, a schedule), and
improves the network one ``step`` at a time. The trainer decides how many steps, where the
checkpoints go and what is logged; ``progress`` (0 -> 1 over the budget) drives schedules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..arm.kinematics import Kinematics
from ..arm.model import ArmModel
from ..network import IKNet


@dataclass
class LearnConfig:
    batch_size: int = 1024
    lr: float = 3e-3
    lr_final: float = 1e-5  # cosine decay to this by the end of the budget
    warmup_steps: int = 200
    w_pos: float = 1.0  # reward weights (reward.py): metres and radians
    w_rot: float = 0.1
    # tracking networks: how far the current joints lie from a solution, and the cost of moving
    tracking_noise: float = 0.3
    w_move: float = 0.002
    # gradient learner: the fading pull toward the joints that made each target, and (with
    # several heads) the share of the reward's gradient the losing heads still get
    hindsight_weight: float = 0.1
    hindsight_until: float = 0.3
    losing_heads: float = 0.02


class Learner:
    name = "base"

    def __init__(
        self, arm: ArmModel, net: IKNet, config: LearnConfig, device: torch.device, seed: int
    ):
        self.arm, self.net, self.config = arm, net, config
        self.device = torch.device(device)
        self.kin = Kinematics(arm, torch.float32, self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
        self.steps = 0

    @property
    def pose_mode(self) -> bool:
        return self.net.config.mode == "pose"

    def learning_rate(self, progress: float) -> float:
        c = self.config
        warm = min(1.0, (self.steps + 1) / max(1, c.warmup_steps))
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, max(0.0, progress))))
        return warm * (c.lr_final + (c.lr - c.lr_final) * cosine)

    def apply(self, loss: torch.Tensor, progress: float) -> float:
        lr = self.learning_rate(progress)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
        self.optimizer.step()
        self.steps += 1
        return lr

    def targets(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reachable targets: forward kinematics of uniformly random joints (q, pos, rot)."""
        q = self.kin.sample(n, self.generator)
        pos, rot = self.kin.forward(q)
        return q, pos, rot

    def current_joints(self, solution: torch.Tensor) -> torch.Tensor:
        """For tracking networks: a 'current' joint state near a known solution."""
        noise = torch.randn(solution.shape, generator=self.generator, device=self.device)
        return self.kin.clamp(solution + self.config.tracking_noise * noise)

    def step(self, progress: float) -> dict:
        """One update; returns metrics: pos_mm, rot_deg (batch medians), reward, lr, loss."""
        raise NotImplementedError

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "steps": self.steps,
        }

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.steps = int(state["steps"])

    def close(self) -> None:
        """Release what the learner holds (a simulator, say)."""
