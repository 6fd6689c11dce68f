"""The trainer: budget, device, progress bar, metrics, atomic checkpoints, resume, model folder.

    trainer = Trainer(TrainConfig(robot="niryo_one", minutes=5, out="models/niryo_one"))
    trainer.run()              # Ctrl-C or stop.set() ends early and still saves everything

``out/checkpoint.pt`` is rewritten atomically every ``checkpoint_every`` seconds; ``resume=True``
continues from it after a crash (even ``kill -9``), losing at most one interval. With a step
budget and a fixed seed a run is reproducible bit for bit; a time budget depends on the machine.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .. import model_dir
from ..arm.model import ArmModel
from . import distributed, run_state
from .learners import LearnConfig, make_learner
from .learners.base import parse_region
from .network import IKNet, NetConfig
from .run_state import CHECKPOINT, FIELDS, METRICS, TrainingError

__all__ = ["CHECKPOINT", "METRICS", "FIELDS", "TrainConfig", "Trainer", "TrainingError"]


@dataclass
class TrainConfig:
    robot: str = "niryo_one"
    base: str | None = None
    tip: str | None = None
    mode: str = "pose"
    learner: str = "gradient"
    minutes: float | None = 5.0
    steps: int | None = None
    device: str = "cpu"
    out: str = "models/niryo_one"
    seed: int = 0
    hidden: list[int] | None = None  # None: [32, 32] for evolution, [128, 128] for the others
    heads: int | None = None  # candidate branches; None: 4 for the gradient learner, else 1
    tracking: bool = False
    checkpoint_every: float = 30.0  # seconds
    log_every: int = 50  # steps
    learn: LearnConfig = field(default_factory=LearnConfig)
    init: str | None = None  # a model folder to start from (transfer): its weights where they fit
    region: list[str] | None = None  # bounds on target positions, e.g. ["y>0"]

    def __post_init__(self):
        if isinstance(self.learn, dict):
            self.learn = LearnConfig(**self.learn)
        if self.heads is None:
            self.heads = 4 if self.learner == "gradient" else 1
        if self.hidden is None:
            self.hidden = [32, 32] if self.learner == "evolution" else [128, 128]
        parse_region(self.region)  # refuse a malformed region now, not after loading the arm
        if self.tracking and self.learner not in ("gradient", "distill"):
            raise ValueError(
                f"a tracking network is trained by the gradient learner: the {self.learner} "
                "learner never gives it the arm's joints"
            )
        if self.learn.novelty > 0 and self.learner != "evolution":
            raise ValueError(
                "novelty search belongs to the evolution learner (--learner evolution)"
            )
        if self.minutes is None and self.steps is None:
            raise ValueError("give a budget: minutes or steps")
        if self.minutes is not None and not 0 < self.minutes < math.inf:
            raise ValueError(
                f"minutes must be a positive number, got {self.minutes} (Ctrl-C stops a run "
                "early and saves it)"
            )
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be positive, got {self.steps}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(
                f"device {self.device!r} is not a torch device (cpu, cuda, cuda:1 ...)"
            ) from err
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(
                f"device {self.device!r} asked for, but this machine has no CUDA device"
            )

    def to_dict(self) -> dict:
        return asdict(self)


class Trainer:
    def __init__(
        self,
        config: TrainConfig,
        *,
        resume: bool = False,
        force: bool = False,
        progress: bool = True,
        on_metrics=None,
        stop: threading.Event | None = None,
        arm: ArmModel | None = None,
        learner=None,
    ):
        self.config = config
        self.out = Path(config.out)
        self.arm = arm or ArmModel.load(config.robot, base=config.base, tip=config.tip)
        self.parents: list[dict] = []
        self.device = torch.device(config.device)
        self.progress_bar = progress
        self.on_metrics = on_metrics  # called with each logged row (the learner node publishes it)
        self.stop = stop or threading.Event()
        self.step = 0
        self.elapsed = 0.0
        self.history: list[dict] = []
        self.interrupted = False
        self.saved = False  # whether run() wrote the model folder
        self.rank, self.world = distributed.setup(config.device)  # (0, 1) outside torchrun
        self.lock = (
            threading.Lock()
        )  # held during each step: others may read the network between steps
        kind, payload = (None, None)
        if self.rank == 0:  # what the folder says: load a checkpoint, start afresh, or refuse
            kind, payload = run_state.begin(self.out, resume, force, self.device)
        if self.world > 1:  # every rank does what rank 0 found (it alone reads the folder)
            shared = [(kind, payload)]
            torch.distributed.broadcast_object_list(shared, 0)
            kind, payload = shared[0]
        if kind == "error":
            raise TrainingError(payload)
        self._fresh = kind == "fresh"  # the folder's earlier run cleared after the first step
        if kind == "load":  # the run's own learner settings, before the learner is built
            config.learn = run_state.resumed_learn(json.loads(payload["config"]), config.learn)
        torch.manual_seed(config.seed)
        net_config = NetConfig(
            self.arm.dof, config.mode, list(config.hidden), config.tracking, heads=config.heads
        )
        self.net = IKNet.for_arm(self.arm, net_config, seed=config.seed)
        if config.init and kind != "load":  # a resumed run has its weights and parents already
            self._start_from(config.init)
        self.net.to(self.device)
        make = learner or make_learner  # merge.py brings its own (distillation from parents)
        self.learner = make(
            config.learner, self.arm, self.net, config.learn, self.device, config.seed
        )
        self.learner.region = parse_region(config.region, self.device)
        if kind == "load":
            self._apply_checkpoint(payload)
        distributed.attach(self.learner, self.rank, self.world, config.seed, self.step)
        # imported here, by the thread that builds the trainer: a learner node runs ``run`` on
        # its own thread, and an import there can meet a Ctrl-C in the main thread mid-import
        self._writer_class = _summary_writer_class()
        from tqdm import tqdm

        self._tqdm = tqdm

    def _start_from(self, folder: str) -> None:
        """Transfer: the weights of another model folder where the shapes fit (any arm: the
        same one after a tool change or new limits, or one with as many joints)."""
        parent = model_dir.load(folder)  # its own arm, rebuilt from the folder's URDF
        copied = self.net.adopt(parent.net)
        self.parents = [{**model_dir.parent_record(parent, "init"), "copied": copied}]

    # -- budget ---------------------------------------------------------------------------------
    @property
    def progress(self) -> float:
        c = self.config
        by_steps = self.step / c.steps if c.steps else 0.0
        by_time = self.elapsed / (c.minutes * 60) if c.minutes else 0.0
        return min(1.0, max(by_steps, by_time))

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> Path:
        """Train until the budget is spent or ``stop`` is set; returns the model folder."""
        writer = None  # opened at the first row (a fresh start first clears the old events)
        bar = self._bar()
        last_ckpt = time.monotonic()
        started = time.monotonic() - self.elapsed
        row = {}
        try:
            while True:
                progress, stop = self.progress, self.stop.is_set()
                if self.world > 1:  # rank 0's clock and Ctrl-C decide for every rank
                    progress, stop = distributed.agree(progress, stop)
                if progress >= 1.0 or stop:
                    if stop:
                        self.stop.set()
                    break
                with self.lock:
                    metrics = self.learner.step(progress)
                self.step += 1
                self.elapsed = time.monotonic() - started
                if self._fresh and not self.rank:
                    run_state.clear(self.out)
                    self._fresh = False
                if self.step % self.config.log_every == 0:
                    row = {"step": self.step, "time_s": round(self.elapsed, 3), **metrics}
                    writer = writer or self._tensorboard()
                    self._log(row, writer)
                    if bar is not None:
                        bar.set_postfix_str(
                            f"pos {row['pos_mm']:.1f} mm  rot {row['rot_deg']:.2f} deg",
                            refresh=False,
                        )
                if bar is not None:
                    bar.update(self._bar_position() - bar.n)  # redraws at most once a second
                if time.monotonic() - last_ckpt >= self.config.checkpoint_every and not self.rank:
                    self.save_checkpoint()
                    last_ckpt = time.monotonic()
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            if bar is not None:
                bar.n = self._bar_position()
                bar.close()
            if writer is not None:
                writer.close()
        self.interrupted = self.interrupted or self.stop.is_set()
        path = self.out
        # stopped before a first step: nothing learnt, so nothing written over the folder's model
        self.saved = self.step > 0 or not self.interrupted
        if self.rank == 0 and self.saved:  # rank 0 alone writes
            self.save_checkpoint()
            path = self.save_model()
        self.learner.close()
        if self.world > 1:
            distributed.finish()
        return path

    def _bar(self):
        if not self.progress_bar or self.rank:
            return None
        if self.config.steps:
            total, unit = self.config.steps, "step"
        else:
            total, unit = round(self.config.minutes * 60), "s"
        return self._tqdm(
            total=total,
            unit=unit,
            desc=f"training {self.arm.name} ({self.config.learner})",
            initial=self._bar_position(),
            mininterval=1.0 if sys.stderr.isatty() else 15.0,
            dynamic_ncols=True,
        )

    def _bar_position(self) -> int:
        return (
            self.step
            if self.config.steps
            else min(round(self.elapsed), round(self.config.minutes * 60))
        )

    def _tensorboard(self):
        if self.rank:
            return None
        if self._writer_class is None:
            return None
        return self._writer_class(
            str(self.out / "tensorboard"), purge_step=self.step + 1 if self.step else None
        )

    def _log(self, row: dict, writer) -> None:
        self.history.append(row)
        if self.rank:
            return
        run_state.append_metrics(self.out, row)
        if writer is not None:
            for key in FIELDS[2:]:
                if key in row:
                    writer.add_scalar(f"train/{key}", row[key], row["step"])
        if self.on_metrics is not None:
            self.on_metrics(row)

    # -- checkpoints -----------------------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        state = {
            "format": 1,
            "config": json.dumps(self.config.to_dict()),
            "fingerprint": self.arm.fingerprint,
            "net": self.net.state_dict(),
            "learner": self.learner.state_dict(),
            "step": self.step,
            "elapsed": self.elapsed,
            "history": self.history,
            "parents": self.parents,
        }
        return run_state.save(self.out, state)

    def _apply_checkpoint(self, state: dict) -> None:
        saved = json.loads(state["config"])
        run_state.check(self.out, state, saved, self.arm.fingerprint, self.config)
        self.net.load_state_dict(state["net"])
        self.learner.load_state_dict(state["learner"])
        self.parents = list(state.get("parents", []))
        self.step, self.elapsed = int(state["step"]), float(state["elapsed"])
        self.history = list(state["history"])
        if self.rank == 0:
            run_state.trim_metrics(self.out, self.step)

    # -- the model folder ------------------------------------------------------------------------
    def summary(self) -> dict:
        from ..evaluate import network_errors

        quick = network_errors(self.net, self.arm, targets=2000, seed=10_000 + self.config.seed)
        return {
            "learner": self.config.learner,
            "steps": self.step,
            "seconds": round(self.elapsed, 1),
            "device": str(self.device),
            "processes": self.world,
            "seed": self.config.seed,
            "budget_minutes": self.config.minutes,
            "budget_steps": self.config.steps,
            "interrupted": self.interrupted,
            "batch_size": self.config.learn.batch_size,
            "region": self.config.region,
            "hyper_parameters": asdict(self.config.learn),
            "final_network": quick,
        }

    def save_model(self) -> Path:
        from ..report import curve_png, training_report

        summary = self.summary()
        curve = curve_png(self.history, self.arm.name)
        return model_dir.save(
            self.out,
            self.net,
            self.arm,
            summary,
            report=training_report(self.arm, self.config, summary, curve is not None),
            curve_png=curve,
            parents=self.parents,
        )


def _summary_writer_class():
    """TensorBoard's writer, or None: tensorboard is optional (the CSV always has the metrics)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter
