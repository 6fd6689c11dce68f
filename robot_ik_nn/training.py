"""The trainer: budget, device, progress bar, metrics, atomic checkpoints, resume, model folder.

    trainer = Trainer(TrainConfig(robot="niryo_one", minutes=5, out="models/niryo_one"))
    trainer.run()              # Ctrl-C or stop.set() ends early and still saves everything

``out/checkpoint.pt`` is rewritten atomically every ``checkpoint_every`` seconds; ``resume=True``
continues from it after a crash (even ``kill -9``), losing at most one interval. With a step
budget and a fixed seed a run is reproducible bit for bit; a time budget depends on the machine.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import model_dir
from .arm.model import ArmModel
from .learners import LearnConfig, make_learner
from .network import IKNet, NetConfig

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.csv"
FIELDS = ["step", "time_s", "loss", "reward", "pos_mm", "rot_deg", "lr"]


class TrainingError(RuntimeError):
    pass


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
    hidden: list[int] = field(default_factory=lambda: [128, 128])
    heads: int | None = None  # candidate branches; None: 4 for the gradient learner, 1 for explore
    tracking: bool = False
    checkpoint_every: float = 30.0  # seconds
    log_every: int = 50  # steps
    learn: LearnConfig = field(default_factory=LearnConfig)

    def __post_init__(self):
        if isinstance(self.learn, dict):
            self.learn = LearnConfig(**self.learn)
        if self.heads is None:
            self.heads = 1 if self.learner == "explore" else 4
        if self.minutes is None and self.steps is None:
            raise ValueError("give a budget: minutes or steps")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"minutes must be positive, got {self.minutes}")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be positive, got {self.steps}")
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
    ):
        self.config = config
        self.out = Path(config.out)
        self.arm = ArmModel.load(config.robot, base=config.base, tip=config.tip)
        self.device = torch.device(config.device)
        self.progress_bar = progress
        self.on_metrics = on_metrics  # called with each logged row (the learner node publishes it)
        self.stop = stop or threading.Event()
        self.step = 0
        self.elapsed = 0.0
        self.history: list[dict] = []
        self.interrupted = False
        self.lock = (
            threading.Lock()
        )  # held during each step: others may read the network between steps
        torch.manual_seed(config.seed)
        net_config = NetConfig(
            self.arm.dof, config.mode, list(config.hidden), config.tracking, heads=config.heads
        )
        self.net = IKNet.for_arm(self.arm, net_config, seed=config.seed).to(self.device)
        self.learner = make_learner(
            config.learner, self.arm, self.net, config.learn, self.device, config.seed
        )
        ckpt = self.out / CHECKPOINT
        if resume and ckpt.exists():
            self._load_checkpoint(ckpt)
        elif ckpt.exists() and not force:
            raise TrainingError(
                f"{self.out} already holds a training run; pass --resume to continue it "
                f"or --force to start over"
            )
        elif not resume:  # a fresh start: no rows or events from an earlier run in this folder
            (self.out / METRICS).unlink(missing_ok=True)
            shutil.rmtree(self.out / "tensorboard", ignore_errors=True)

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
        writer = self._tensorboard()
        bar = self._bar()
        last_ckpt = time.monotonic()
        started = time.monotonic() - self.elapsed
        row = {}
        try:
            while self.progress < 1.0 and not self.stop.is_set():
                with self.lock:
                    metrics = self.learner.step(self.progress)
                self.step += 1
                self.elapsed = time.monotonic() - started
                if self.step % self.config.log_every == 0:
                    row = {"step": self.step, "time_s": round(self.elapsed, 3), **metrics}
                    self._log(row, writer)
                    if bar is not None:
                        bar.set_postfix_str(
                            f"pos {row['pos_mm']:.1f} mm  rot {row['rot_deg']:.2f} deg",
                            refresh=False,
                        )
                if bar is not None:
                    bar.update(self._bar_position() - bar.n)  # redraws at most once a second
                if time.monotonic() - last_ckpt >= self.config.checkpoint_every:
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
        self.save_checkpoint()
        path = self.save_model()
        self.learner.close()
        return path

    def _bar(self):
        if not self.progress_bar:
            return None
        from tqdm import tqdm

        if self.config.steps:
            total, unit = self.config.steps, "step"
        else:
            total, unit = round(self.config.minutes * 60), "s"
        return tqdm(
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
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard is optional at run time; the CSV always has the metrics
            return None
        return SummaryWriter(
            str(self.out / "tensorboard"), purge_step=self.step + 1 if self.step else None
        )

    def _log(self, row: dict, writer) -> None:
        self.history.append(row)
        path = self.out / METRICS
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        with path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow(row)
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
        }
        buffer = io.BytesIO()
        torch.save(state, buffer)
        path = self.out / CHECKPOINT
        model_dir.atomic_write(path, buffer.getvalue())
        return path

    def _load_checkpoint(self, path: Path) -> None:
        try:
            state = torch.load(path, map_location=self.device, weights_only=True)
        except Exception as err:  # noqa: BLE001 - any unreadable checkpoint gets the same message
            raise TrainingError(f"cannot resume: {path} is unreadable ({err})") from err
        saved = json.loads(state["config"])
        if state["fingerprint"] != self.arm.fingerprint:
            raise TrainingError(
                f"cannot resume: {path} was trained on another arm (fingerprint mismatch)"
            )
        for key in ("mode", "learner", "hidden", "tracking", "heads"):
            if saved.get(key, 1 if key == "heads" else None) != getattr(self.config, key):
                raise TrainingError(
                    f"cannot resume: the checkpoint has {key}={saved[key]!r}, "
                    f"this run asks for {getattr(self.config, key)!r}"
                )
        self.net.load_state_dict(state["net"])
        self.learner.load_state_dict(state["learner"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed"])
        self.history = list(state["history"])
        self._trim_metrics_csv()

    def _trim_metrics_csv(self) -> None:
        """Rows logged after the checkpoint were lost with the crash: drop them from the CSV."""
        path = self.out / METRICS
        if not path.exists():
            return
        with path.open(newline="") as f:
            rows = [r for r in csv.DictReader(f) if int(r["step"]) <= self.step]
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)

    # -- the model folder ------------------------------------------------------------------------
    def summary(self) -> dict:
        from .evaluate import network_errors

        quick = network_errors(self.net, self.arm, targets=2000, seed=10_000 + self.config.seed)
        return {
            "learner": self.config.learner,
            "steps": self.step,
            "seconds": round(self.elapsed, 1),
            "device": str(self.device),
            "seed": self.config.seed,
            "budget_minutes": self.config.minutes,
            "budget_steps": self.config.steps,
            "interrupted": self.interrupted,
            "batch_size": self.config.learn.batch_size,
            "final_network": quick,
        }

    def save_model(self) -> Path:
        from .report import curve_png, training_report

        summary = self.summary()
        return model_dir.save(
            self.out,
            self.net,
            self.arm,
            summary,
            report=training_report(self.arm, self.config, summary),
            curve_png=curve_png(self.history, self.arm.name),
        )
