"""Merging networks: several model folders of one arm become one, by reward-driven distillation.

    robot-ik-nn merge models/left models/right --out models/merged --minutes 3

The parents may have been trained on different parts of the workspace (``train --region``) or
with different joint limits (the same chain in different environments: a URDF with other
``<limit>`` values). The merged network trains on targets from the union, each parent's share
drawn inside its own region and its own joint ranges, with the distill learner
(learners/distill.py): the reward, plus each parent's answer as a hint where that parent does
better. Its arm is the parents' chain with, per joint, the union of their ranges. It starts from
the weights of the parent whose answers score best by the reward on held-out targets of the whole
workspace, in that parent's shape (``fresh=True``: from nothing, in the first parent's shape).
The merged folder is an ordinary model folder whose model.json lists its parents (name, path,
fingerprint, SHA-256 of the weights, region, limits). A stopped merge resumes (``resume=True``).
Networks of different chains (different arms), or of different modes, are refused.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import model_dir
from ..evaluate import network_errors
from . import run_state
from .learners import LearnConfig
from .training import TrainConfig, Trainer


class MergeError(ValueError):
    """Parents that cannot become one network."""


def check_parents(parents: list) -> None:
    """Refuse fewer than two parents, parents of different arms, or of different modes."""
    if len(parents) < 2:
        raise MergeError("merge needs at least two model folders")
    first = parents[0]
    for other in parents[1:]:
        if other.arm.geometry_fingerprint != first.arm.geometry_fingerprint:
            raise MergeError(
                f"cannot merge networks of different arms: {first.path} was trained on "
                f"'{first.meta.get('robot')}' (fingerprint {first.meta['fingerprint'][:12]}), "
                f"{other.path} on '{other.meta.get('robot')}' "
                f"(fingerprint {other.meta['fingerprint'][:12]}), and their chains differ "
                "in more than joint limits"
            )
        if other.mode != first.mode:
            raise MergeError(
                f"cannot merge a {first.mode}-mode network ({first.path}) with a "
                f"{other.mode}-mode one ({other.path})"
            )


def _where(parent) -> Path:
    """Where a parent lives: its folder, or the archive it was unpacked from."""
    return Path(parent.archive or parent.path).resolve()


def merged_arm(parents: list):
    """The parents' chain with, per joint, the union of their ranges (their own arm when every
    parent has the same limits)."""
    first = parents[0].arm
    if all(p.arm.fingerprint == first.fingerprint for p in parents):
        return first
    lower = np.min([p.arm.lower for p in parents], axis=0)
    upper = np.max([p.arm.upper for p in parents], axis=0)
    return first.with_limits(lower, upper)


def best_parent(parents: list, learn: LearnConfig, targets: int = 2000):
    """The parent with the best mean reward on held-out targets of the whole workspace."""
    def cost(p):
        e = network_errors(p.net, p.arm, targets=targets, seed=10_001)
        rot = math.radians(e.get("rot_deg_median", 0.0))
        return learn.w_pos * e["pos_mm_median"] / 1000 + learn.w_rot * rot

    return min(parents, key=cost)


def merge(
    paths: list[str | Path],
    out: str | Path,
    *,
    minutes: float | None = 3.0,
    steps: int | None = None,
    seed: int = 0,
    fresh: bool = False,
    learn: LearnConfig | None = None,
    force: bool = False,
    resume: bool = False,
    progress: bool = True,
    stop=None,
) -> Trainer:
    """Train the merged network into ``out``; returns the finished trainer."""
    where = {Path(p).resolve() for p in paths}
    if len(where) < len(paths):
        raise MergeError("merge needs two different model folders; one was given twice")
    if Path(out).resolve() in where:
        raise MergeError(f"--out {out} is one of the networks merged: write the merge elsewhere")
    parents = [model_dir.load(p) for p in paths]
    check_parents(parents)
    learn = learn or LearnConfig()
    first = parents[0]
    saved = run_state.saved_config(Path(out)) if resume else None
    if saved is not None:  # resumed: the parent the run started from, not a new choice
        begun = Path(saved["init"]).resolve() if saved.get("init") else None
        start = next((p for p in parents if _where(p) == begun), None)
    else:
        start = None if fresh else best_parent(parents, learn)
    regions = [p.meta.get("training", {}).get("region") for p in parents]
    arm = merged_arm(parents)
    # each parent's share of targets inside its own joint ranges (None: the merged arm's)
    boxes = None if arm is first.arm else [(p.arm.lower, p.arm.upper) for p in parents]
    net = (start or first).net.config  # started from: all of its weights fit
    config = TrainConfig(
        robot=first.meta.get("robot") or first.arm.name,
        base=first.arm.base,
        tip=first.arm.tip,
        mode=net.mode,
        learner="distill",
        minutes=minutes,
        steps=steps,
        out=str(out),
        seed=seed,
        hidden=list(net.hidden),
        heads=net.heads,
        tracking=net.tracking,
        learn=learn,
        init=None if start is None else str(_where(start)),
    )

    def make(name, arm, net_, learn_config, device, seed_):
        from .learners.distill import DistillLearner

        teachers = [p.net for p in parents]
        return DistillLearner(
            arm, net_, learn_config, device, seed_, teachers=teachers, regions=regions,
            boxes=boxes,
        )

    trainer = Trainer(
        config, resume=resume, force=force, progress=progress, stop=stop, arm=arm, learner=make
    )
    trainer.parents = [
        {
            **model_dir.parent_record(p, "merged"),
            "started_from": p is start,
            "lower": p.arm.lower.tolist(),
            "upper": p.arm.upper.tolist(),
        }
        for p in parents
    ]
    trainer.run()
    return trainer
