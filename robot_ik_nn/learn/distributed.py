"""Training one network in several processes: torch.distributed (gloo on CPU, NCCL on GPUs).

    torchrun --nproc-per-node 2 -m robot_ik_nn.train --minutes 5 --out models/niryo_one
    robot-ik-nn train --nproc 2 ...            (the same, started for you)

torchrun sets RANK, WORLD_SIZE and the rendezvous; :func:`setup` joins the group. Then:

- gradient learners (gradient, distill): DistributedDataParallel. Every rank draws its own
  targets (its own seed), the gradients are averaged, so N processes learn from N batches a step;
- evolution: every rank holds the same population (the same seed and targets) and evaluates its
  share of it; the fitnesses are gathered, and every rank breeds the same next generation.

Each step rank 0 says whether to go on (its clock is the budget, its Ctrl-C stops everyone), so
no rank waits for a partner that has left. Rank 0 alone writes checkpoints, metrics and the model
folder; ``--resume`` loads rank 0's checkpoint on every rank.
"""

from __future__ import annotations

import math
import os

import torch
import torch.distributed as dist
from torch import nn


def world_from_env() -> tuple[int, int]:
    """(rank, world size) that torchrun gave this process; (0, 1) outside torchrun."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def setup(device: str) -> tuple[int, int]:
    """Join the process group when started by torchrun; returns (rank, world size)."""
    rank, world = world_from_env()
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if str(device).startswith("cuda") else "gloo"
        dist.init_process_group(backend)
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    return rank, world


def cpu_threads() -> int:
    """CPU threads per process: the cores shared among this machine's processes."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", 1)))
    return max(1, (os.cpu_count() or 1) // max(1, local))


class _Policy(nn.Module):
    """The network's every-head answer as ``forward``, so DDP sees (and syncs) it."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, pos, rot=None, current=None):
        return self.net.candidates(pos, rot, current)


PARALLEL = ("gradient", "distill", "evolution")  # the learners that run in several processes


def check_parallel(name: str) -> None:
    """Refuse a learner that runs in one process only."""
    if name not in PARALLEL:
        raise ValueError(f"the {name} learner runs in one process; use gradient or evolution")


def attach(learner, rank: int, world: int, seed: int, step: int = 0) -> None:
    """Make a learner one of ``world`` cooperating processes (after a resume, too)."""
    if world <= 1:
        return
    check_parallel(learner.name)
    if learner.name == "evolution":
        learner.rank, learner.world = rank, world  # same population, a share each
        return
    learner.generator.manual_seed(seed * 1_000_003 + 7_919 * rank + step)  # own targets
    ddp = nn.parallel.DistributedDataParallel(_Policy(learner.net))  # rank 0's weights
    learner.policy = ddp


def agree(progress: float, stop: bool) -> tuple[float, bool]:
    """Rank 0's progress and stop flag, on every rank."""
    flags = torch.tensor([progress, float(stop)], dtype=torch.float64)
    dist.broadcast(flags, 0)
    return float(flags[0]), bool(flags[1])


def gather_rows(x: torch.Tensor, total: int) -> torch.Tensor:
    """Every rank's rows of a tensor split by rank (``ceil(total / world)`` each), in order."""
    world = dist.get_world_size()
    per = math.ceil(total / world)
    padded = torch.zeros(per, *x.shape[1:], dtype=x.dtype, device=x.device)
    padded[: len(x)] = x
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    return torch.cat(parts)[:total]


def finish() -> None:
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
