"""The interface every learner implements, and the settings they share.

A learner owns its optimiser and whatever it remembers (a replay buffer, a schedule), and
improves the network one ``step`` at a time. The trainer decides how many steps, where the
checkpoints go and what is logged; ``progress`` (0 -> 1 over the budget) drives schedules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from ...arm.kinematics import Kinematics
from ...arm.model import ArmModel
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
    hint_weight: float = 0.1  # merge (distill.py): pull toward a better parent's answer
    # explore learner (explore.py): attempts per target, targets per step, the fading share of
    # random attempts and of quaternion noise (start -> end, reached at decay_until), replay
    attempts: int = 8
    explore_targets: int = 64
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    noise_start: float = 0.5  # radians of quaternion turn
    noise_end: float = 0.02
    decay_until: float = 0.5
    buffer_size: int = 50_000
    replay: int = 512
    # evolution learner (evolution.py): population, elites kept unchanged, share of children
    # made by crossover, mutation (share of genes, sigma start -> end), targets per generation;
    # novelty search: weight, k nearest, probe targets, archive capacity, additions per generation
    population: int = 96
    elite: int = 4
    crossover: float = 0.5
    mutation_rate: float = 0.1
    sigma: float = 0.05
    sigma_final: float = 0.002
    evolution_targets: int = 128
    novelty: float = 0.0
    novelty_k: int = 10
    probes: int = 32
    archive_size: int = 2000
    archive_add: int = 2

    def set(self, key: str, value: str) -> None:
        """Set one hyper-parameter from text (``--learn KEY=VALUE``), typed by its default."""
        names = {f.name: f for f in fields(self)}
        if key not in names:
            raise ValueError(
                f"unknown learner setting {key!r}; known: {', '.join(sorted(names))}"
            )
        kind = type(getattr(LearnConfig(), key))
        try:
            typed = kind(value)
        except ValueError as err:
            raise ValueError(f"--learn {key}={value}: expected a {kind.__name__}") from err
        low, high = _RANGES.get(key, (0, math.inf))
        positive = key in _POSITIVE
        if not (math.isfinite(typed) and low <= typed <= high and (typed > 0 or not positive)):
            if positive:
                need = "more than 0" + (" and at most 1" if high == 1 else "")
            else:
                need = "a fraction from 0 to 1" if high == 1 else f"at least {low}"
            raise ValueError(f"--learn {key}={value}: must be {need}")
        setattr(self, key, typed)

    def update(self, pairs: list[str]) -> "LearnConfig":
        """Apply ``KEY=VALUE`` strings; returns self."""
        for pair in pairs or []:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"--learn expects KEY=VALUE, got {pair!r}")
            self.set(key.strip(), value.strip())
        return self


# what each setting may be: counts at least 1 (attempts 2: the network's own and one more),
# fractions from 0 to 1, the rest at least 0; _POSITIVE ones more than 0 (a fade's length, the
# ends of a geometric fade)
_POSITIVE = {"hindsight_until", "decay_until", "noise_start", "noise_end", "sigma", "sigma_final"}
_RANGES = {
    "attempts": (2, math.inf),
    **dict.fromkeys(
        (
            "batch_size", "explore_targets", "buffer_size", "replay", "population",
            "evolution_targets", "novelty_k", "probes", "archive_size",
        ),
        (1, math.inf),
    ),
    **dict.fromkeys(
        (
            "hindsight_until", "losing_heads", "epsilon_start", "epsilon_end", "decay_until",
            "crossover", "mutation_rate",
        ),
        (0, 1),
    ),
}


def parse_region(conditions: list[str] | None, device="cpu"):
    """``["y>0", "z<0.4"]`` -> (lower, upper) bounds on target positions (metres, base frame)."""
    if not conditions:
        return None
    lo = torch.full((3,), -math.inf, device=device)
    hi = torch.full((3,), math.inf, device=device)
    for text in conditions:
        t = text.replace(" ", "")
        axis, op = t[:1], t[1:2]
        try:
            number = float(t[2:])
        except ValueError:
            number = None
        if not axis or axis not in "xyz" or not op or op not in "<>" or number is None:
            raise ValueError(f"region condition {text!r}: write it like y>0 or z<0.4")
        i = "xyz".index(axis)
        if op == ">":
            lo[i] = max(float(lo[i]), number)
        else:
            hi[i] = min(float(hi[i]), number)
    return lo, hi


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
        self.region: tuple[torch.Tensor, torch.Tensor] | None = None  # bounds on target positions
        self.policy = net.candidates  # every head's joints; DDP's wrapper in several processes

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
        """Reachable targets: forward kinematics of uniformly random joints (q, pos, rot),
        kept only inside ``region`` when one is set (train --region)."""
        q = self.draw_joints(n)
        pos, rot = self.kin.forward(q)
        if self.region is None:
            return q, pos, rot
        lo, hi = self.region
        kept, count = [], 0
        for _ in range(200):
            inside = ((pos >= lo) & (pos <= hi)).all(-1)
            kept.append((q[inside], pos[inside], rot[inside]))
            count += int(inside.sum())
            if count >= n:
                q, pos, rot = (torch.cat(parts)[:n] for parts in zip(*kept))
                return q, pos, rot
            q = self.draw_joints(2 * n)
            pos, rot = self.kin.forward(q)
        raise ValueError("the training region holds (almost) no reachable targets")

    def draw_joints(self, n: int) -> torch.Tensor:
        """Joints drawn uniformly inside the arm's limits (where every target starts)."""
        return self.kin.sample(n, self.generator)

    def sample_joints(self, n: int) -> torch.Tensor:
        """Joints whose tool lies inside the region (uniform joints without one)."""
        if self.region is None:
            return self.draw_joints(n)
        return self.targets(n)[0]

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
