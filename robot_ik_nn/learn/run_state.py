"""The files a training run keeps in its model folder while it runs: the checkpoint (atomic, so
a crash, even ``kill -9``, leaves the old one or the new one) and the metrics CSV. The model
already in the folder stays whole and loadable until the run's own replaces it in one step
(model_dir.write_folder); a run killed mid-way is mended when the next one starts."""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import fields
from pathlib import Path

import torch

from .. import folder_swap, model_dir

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.csv"
FIELDS = ["step", "time_s", "loss", "reward", "pos_mm", "rot_deg", "lr"]
FIELDS += ["mean_reward", "novelty", "archive", "hinted"]  # evolution's, merge's


class TrainingError(RuntimeError):
    pass


def refusal(out: Path, resume: bool, force: bool) -> str:
    """Why the folder refuses this run ("" when it does not): resuming without a checkpoint,
    or starting over a run or a model without ``force``."""
    ckpt = out / CHECKPOINT
    if resume and force:
        return "--resume continues the run in --out and --force starts it over: give one"
    if resume:
        return "" if ckpt.exists() else (
            f"cannot resume: {out} holds no {CHECKPOINT} (no run to continue)"
        )
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder"
    model = (out / model_dir.META).exists()  # a finished model, maybe copied without its run
    if (ckpt.exists() or model) and not force:
        return (
            f"{out} already holds a training run; pass --resume to continue it "
            f"or --force to start over"
            if ckpt.exists()
            else f"{out} already holds a model; pass --force to train a new one over it"
        )
    return ""


def begin(out: Path, resume: bool, force: bool, device) -> tuple[str, object]:
    """What the folder says to do: ("load", checkpoint), ("fresh", None) or ("error", why).
    A fresh start over an earlier run clears it (:func:`clear`) once its own first step is done,
    so a run that stops before that leaves the folder as it was."""
    folder_swap.recover(out)  # what a run killed while replacing the folder left
    why = refusal(out, resume, force)
    if why:
        return "error", why
    ckpt = out / CHECKPOINT
    if resume:
        try:
            return "load", torch.load(ckpt, map_location=device, weights_only=True)
        except Exception as err:  # noqa: BLE001 - any unreadable checkpoint: one message
            return "error", f"cannot resume: {ckpt} is unreadable ({err})"
    return "fresh", None


def clear(out: Path) -> None:
    """A fresh start's folder: no checkpoint (a later --resume would go on with the earlier
    run), rows or events from an earlier run. The model there (its curve too) stays, whole,
    until this run's replaces it."""
    (out / CHECKPOINT).unlink(missing_ok=True)
    (out / METRICS).unlink(missing_ok=True)
    shutil.rmtree(out / "tensorboard", ignore_errors=True)


def save(out: Path, state: dict) -> Path:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = out / CHECKPOINT
    model_dir.atomic_write(path, buffer.getvalue())
    return path


def saved_config(out: Path) -> dict | None:
    """The training settings in ``out``'s checkpoint, or None (no checkpoint, or unreadable:
    resuming then refuses with the reason)."""
    try:
        state = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=True)
        return json.loads(state["config"])
    except Exception:  # noqa: BLE001 - begin() says what is wrong when the run resumes
        return None


def resumed_learn(saved: dict, learn):
    """The learner's settings of a resumed run: the checkpoint's. Settings given again must be
    the same (the defaults stand for none given): the learner's buffers and population were
    shaped by them, and the report names them."""
    from .learners import LearnConfig

    theirs = LearnConfig(**saved.get("learn", {}))
    if learn in (LearnConfig(), theirs):
        return theirs
    changed = [
        f"{f.name}={getattr(learn, f.name)!r} (the run has {getattr(theirs, f.name)!r})"
        for f in fields(LearnConfig)
        if getattr(learn, f.name) != getattr(theirs, f.name)
    ]
    raise TrainingError(
        "cannot resume with other learner settings: " + ", ".join(changed)
        + "; a resumed run keeps its own (leave out --learn, or start over with --force)"
    )


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
