"""The evolution learner: a genetic algorithm over whole networks; no gradient flows.

Each generation (one ``step``):

1. every network of the population answers the same fresh batch of reachable targets, all of
   them in one batched pass (``IKNet.population_candidates``: one ``baddbmm`` per layer), and
   the kinematics (a black box here) says where each answer puts the tool;
2. fitness = the mean reward by distance (reward.py) over the batch, the best head per target;
   with ``novelty`` > 0 plus ``novelty`` x the network's novelty (novelty.py);
3. the ``elite`` fittest networks pass unchanged; the other places go to children of parents
   drawn by roulette wheel: fitness-proportional after shifting the fitnesses so the worst is 0
   (rewards are negative distances, so the raw values cannot serve as wheel slices);
4. a share ``crossover`` of the children mixes two parents unit by unit (a hidden unit's
   incoming weights and bias travel together, so units are not torn apart); every child is
   mutated: a share ``mutation_rate`` of its genes gets Gaussian noise of ``sigma``, which fades
   geometrically to ``sigma_final`` over the budget.

The trainer's network always holds the best member of the latest generation, so checkpoints,
the model folder and the learner node see the champion. With several processes (distributed.py)
every rank holds the same population (same seed, same targets) and evaluates its share of it.
"""

from __future__ import annotations

import math

import torch

from ..reward import pose_distances, reward_from_distances
from .base import Learner
from .novelty import NoveltyArchive


class EvolutionLearner(Learner):
    name = "evolution"

    def __init__(self, arm, net, config, device, seed):
        super().__init__(arm, net, config, device, seed)
        c = config
        if not 0 <= c.elite < c.population or c.population < 2:
            raise ValueError(
                f"evolution needs population >= 2 and 0 <= elite < population, got "
                f"population={c.population}, elite={c.elite}"
            )
        center = net.flat_parameters().to(self.device)
        self.n_genes = center.numel()
        noise = torch.randn(
            c.population, self.n_genes, generator=self.generator, device=self.device
        )
        self.population = center + c.sigma * noise
        self.population[0] = center  # the starting network itself (a transferred one, say)
        self.unit = self._units().to(self.device)
        self.archive = NoveltyArchive(c, self.kin, self.device, seed) if c.novelty > 0 else None
        self.rank, self.world = 0, 1  # set by distributed.py
        self.evaluations = 0

    def _units(self) -> torch.Tensor:
        """For every gene, the unit it feeds (its row in a weight matrix, or its bias)."""
        ids, unit = [], 0
        for layer in [*(m for m in self.net.body if hasattr(m, "weight")), self.net.head]:
            n_out, n_in = layer.weight.shape
            rows = torch.arange(unit, unit + n_out)
            ids += [rows.repeat_interleave(n_in), rows]
            unit += n_out
        return torch.cat(ids)

    def sigma(self, progress: float) -> float:
        c = self.config
        return c.sigma * (c.sigma_final / c.sigma) ** min(1.0, max(0.0, progress))

    # -- fitness ----------------------------------------------------------------------------------
    def distances(self, flat, pos, rot) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every member's answers on the targets: position, rotation error (P, B), and joints
        (P, B, dof), the best head per target."""
        rot_in = rot if self.pose_mode else None
        with torch.no_grad():
            q = self.net.population_candidates(flat, pos, rot_in)  # (P, B, heads, dof)
            p_q, r_q = self.kin.forward(q)
            d_pos, d_rot = pose_distances(
                p_q,
                r_q if self.pose_mode else None,
                pos[:, None],
                None if rot_in is None else rot_in[:, None],
            )
        c = self.config
        best = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot).argmax(-1, keepdim=True)
        pick = best.unsqueeze(-1).expand(*best.shape, q.shape[-1])
        q = torch.gather(q, 2, pick).squeeze(2)
        return torch.gather(d_pos, 2, best)[..., 0], torch.gather(d_rot, 2, best)[..., 0], q

    def _share(self) -> slice:
        per = math.ceil(len(self.population) / self.world)
        return slice(self.rank * per, min(len(self.population), (self.rank + 1) * per))

    def fitness(self, pos, rot) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mean reward per member (P,) and every member's errors (P, B) on these targets; with
        several processes each computes its share and all gather the rest."""
        c = self.config
        share = self._share()
        d_pos, d_rot, _ = self.distances(self.population[share], pos, rot)
        self.evaluations += d_pos.numel()
        if self.world > 1:
            from ..distributed import gather_rows

            d_pos, d_rot = (
                gather_rows(d_pos, len(self.population)),
                gather_rows(d_rot, len(self.population)),
            )
        reward = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot)
        return reward.mean(1), d_pos, d_rot

    # -- one generation ---------------------------------------------------------------------------
    def step(self, progress: float) -> dict:
        c = self.config
        _, pos, rot = self.targets(c.evolution_targets)
        fit, d_pos, d_rot = self.fitness(pos, rot)
        score, novelty = fit, None
        if self.archive is not None:
            novelty = self.archive.novelty(self, self.population)
            score = fit + c.novelty * novelty
        champion = int(fit.argmax())
        self.net.load_flat(self.population[champion])
        sigma = self.sigma(progress)
        self.population = self._next_generation(score, sigma)
        self.steps += 1
        out = {
            "loss": -float(fit[champion]),
            "reward": float(fit[champion]),
            "pos_mm": float(d_pos[champion].median()) * 1000,
            "rot_deg": math.degrees(float(d_rot[champion].median())),
            "lr": sigma,
            "mean_reward": float(fit.mean()),
        }
        if novelty is not None:
            out.update(novelty=float(novelty.mean()), archive=len(self.archive))
        return out

    def _next_generation(self, score: torch.Tensor, sigma: float) -> torch.Tensor:
        c, g = self.config, self.generator
        order = score.argsort(descending=True)
        elites = self.population[order[: c.elite]]
        n = len(self.population) - c.elite
        wheel = score - score.min()  # the shift: the worst gets no slice, all others a share
        wheel = wheel + 1e-12 if float(wheel.sum()) > 0 else torch.ones_like(wheel)
        parents = torch.multinomial(wheel, 2 * n, replacement=True, generator=g).view(n, 2)
        mom, dad = self.population[parents[:, 0]], self.population[parents[:, 1]]
        n_units = int(self.unit.max()) + 1
        from_dad = torch.rand(n, n_units, generator=g, device=self.device) < 0.5
        crossed = torch.rand(n, 1, generator=g, device=self.device) < c.crossover
        children = torch.where(crossed & from_dad[:, self.unit], dad, mom)
        mutate = torch.rand(children.shape, generator=g, device=self.device) < c.mutation_rate
        noise = torch.randn(children.shape, generator=g, device=self.device)
        children = children + sigma * noise * mutate
        return torch.cat([elites, children])

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        state.update(population=self.population.clone(), evaluations=self.evaluations)
        if self.archive is not None:
            state["archive"] = self.archive.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.population = state["population"].to(self.device)
        self.evaluations = int(state["evaluations"])
        if self.archive is not None and "archive" in state:
            self.archive.load_state_dict(state["archive"])
