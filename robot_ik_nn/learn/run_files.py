"""The files a training run keeps in its model folder while it runs: the checkpoint (atomic, so
a crash, even ``kill -9``, leaves the old one or the new one) and the metrics CSV."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import torch

from .. import model_dir

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.csv"
FIELDS = ["step", "time_s", "loss", "reward", "pos_mm", "rot_deg", "lr"]
FIELDS += ["mean_reward", "novelty", "archive", "hinted"]  # evolution's, merge's


class TrainingError(RuntimeError):
    pass


def begin(out: Path, resume: bool, force: bool, device) -> tuple[str, object]:
    """What the folder says to do: ("load", checkpoint), ("fresh", None) or ("error", why)."""
    ckpt = out / CHECKPOINT
    if resume and ckpt.exists():
        try:
            return "load", torch.load(ckpt, map_location=device, weights_only=True)
        except Exception as err:  # noqa: BLE001 - any unreadable checkpoint: one message
            return "error", f"cannot resume: {ckpt} is unreadable ({err})"
    if resume:
        return "error", f"cannot resume: {out} holds no {CHECKPOINT} (no run to continue)"
    if out.exists() and not out.is_dir():
        return "error", f"--out {out} is a file, not a folder"
    model = (out / model_dir.META).exists()  # a finished model, maybe copied without its run
    if (ckpt.exists() or model) and not force:
        return "error", (
            f"{out} already holds a training run; pass --resume to continue it "
            f"or --force to start over"
            if ckpt.exists()
            else f"{out} already holds a model; pass --force to train a new one over it"
        )
    # a fresh start: no rows, events or curve from an earlier run in this folder
    (out / METRICS).unlink(missing_ok=True)
    (out / model_dir.CURVE).unlink(missing_ok=True)
    shutil.rmtree(out / "tensorboard", ignore_errors=True)
    return "fresh", None


def save(out: Path, state: dict) -> Path:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = out / CHECKPOINT
    model_dir.atomic_write(path, buffer.getvalue())
    return path


def check(out: Path, state: dict, saved: dict, fingerprint: str, config) -> None:
    """Refuse to resume a checkpoint of another arm or another network shape."""
    if state["fingerprint"] != fingerprint:
        raise TrainingError(
            f"cannot resume: {out / CHECKPOINT} was trained on another arm (fingerprint mismatch)"
        )
    for key in ("mode", "learner", "hidden", "tracking", "heads"):
        if saved.get(key, 1 if key == "heads" else None) != getattr(config, key):
            raise TrainingError(
                f"cannot resume: the checkpoint has {key}={saved[key]!r}, "
                f"this run asks for {getattr(config, key)!r}"
            )


def append_metrics(out: Path, row: dict) -> None:
    path = out / METRICS
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


def trim_metrics(out: Path, step: int) -> None:
    """Rows logged after the checkpoint were lost with the crash: drop them from the CSV."""
    path = out / METRICS
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["step"]) <= step]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
