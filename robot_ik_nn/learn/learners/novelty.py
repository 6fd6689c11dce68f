"""Novelty search for the evolution learner: reward for ending up where nobody has been.

A network's behaviour is where it puts the tool on a fixed batch of probe targets (drawn once,
from their own seed): a vector of ``probes`` x 3 positions. Two behaviours are as far apart as
the root mean square of the distances between their tool positions (metres, like the reward).
A network's novelty is its mean distance to the ``novelty_k`` nearest behaviours among the
archive and the rest of the population. Every generation the ``archive_add`` most novel
behaviours join the archive; past ``archive_size`` the oldest make way.
"""

from __future__ import annotations

import math

import torch


class NoveltyArchive:
    def __init__(self, config, kin, device, seed: int):
        self.config, self.device = config, torch.device(device)
        g = torch.Generator(device=self.device).manual_seed(seed + 7_919)
        self.probe_pos, self.probe_rot = kin.forward(kin.sample(config.probes, g))
        self.store = torch.zeros(config.archive_size, 3 * config.probes, device=self.device)
        self.size = 0
        self.next = 0

    def __len__(self) -> int:
        return self.size

    def behaviours(self, learner, flat: torch.Tensor) -> torch.Tensor:
        """(P, probes x 3): where each member puts the tool on the probe targets."""
        _, _, q = learner.distances(flat, self.probe_pos, self.probe_rot)
        return learner.kin.forward(q)[0].reshape(len(flat), -1)

    def novelty(self, learner, flat: torch.Tensor) -> torch.Tensor:
        """Each member's novelty (P,), metres; then the most novel join the archive."""
        b = self.behaviours(learner, flat)
        pool = torch.cat([self.store[: self.size], b])
        d = torch.cdist(b, pool) / math.sqrt(self.config.probes)
        d[torch.arange(len(b)), self.size + torch.arange(len(b))] = float("inf")  # not oneself
        k = max(1, min(self.config.novelty_k, len(pool) - 1))
        novelty = d.topk(k, dim=1, largest=False).values.mean(1)
        self.add(b[novelty.argsort(descending=True)[: self.config.archive_add]])
        return novelty

    def add(self, rows: torch.Tensor) -> None:
        for row in rows:
            self.store[self.next] = row
            self.next = (self.next + 1) % len(self.store)
            self.size = min(len(self.store), self.size + 1)

    def state_dict(self) -> dict:
        return {"store": self.store[: self.size].clone(), "next": self.next}

    def load_state_dict(self, state: dict) -> None:
        n = len(state["store"])
        self.store[:n] = state["store"].to(self.device)
        self.size, self.next = n, int(state["next"])
