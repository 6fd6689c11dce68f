"""Learners improve on a short budget; checkpoints, resume and reproducibility hold."""

import csv
import json
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

from robot_ik_nn import model_dir
from robot_ik_nn.evaluate import network_errors
from robot_ik_nn.learn.training import CHECKPOINT, TrainConfig, Trainer, TrainingError

pytestmark = pytest.mark.slow


def _errors_before_after(config):
    trainer = Trainer(config, progress=False)
    before = network_errors(trainer.net, trainer.arm, targets=500, seed=99)
    trainer.run()
    after = network_errors(trainer.net, trainer.arm, targets=500, seed=99)
    return trainer, before, after


def test_gradient_learner_improves_on_a_short_budget(tmp_path):
    trainer, before, after = _errors_before_after(
        TrainConfig(
            robot="niryo_one",
            mode="pose",
            steps=300,
            minutes=None,
            out=str(tmp_path / "g"),
            hidden=[128, 128],
            log_every=25,
        )
    )
    assert after["pos_mm_median"] < 0.5 * before["pos_mm_median"], (before, after)
    assert after["rot_deg_median"] < 0.7 * before["rot_deg_median"], (before, after)
    assert trainer.step == 300


def test_explore_learner_improves_on_a_short_budget(tmp_path):
    trainer, before, after = _errors_before_after(
        TrainConfig(
            robot="niryo_one",
            mode="position",
            learner="explore",
            steps=250,
            minutes=None,
            out=str(tmp_path / "e"),
            hidden=[128, 128],
            log_every=25,
        )
    )
    assert after["pos_mm_median"] < 0.6 * before["pos_mm_median"], (before, after)
    assert trainer.learner.sim_calls == 250 * 64 * 9  # the simulator really was the judge


def test_model_folder_has_everything(tmp_path):
    out = tmp_path / "m"
    Trainer(
        TrainConfig(steps=60, minutes=None, out=str(out), hidden=[32], log_every=10),
        progress=False,
    ).run()
    names = {p.name for p in out.iterdir()}
    assert {
        "model.safetensors",
        "model.json",
        "robot.urdf",
        "report.md",
        "training_curve.png",
        "metrics.csv",
        CHECKPOINT,
        "tensorboard",
    } <= names
    assert (out / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tensorboard").iterdir())
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [int(r["step"]) for r in rows] == [10, 20, 30, 40, 50, 60]
    meta = json.loads((out / "model.json").read_text())
    assert meta["training"]["steps"] == 60 and meta["training"]["learner"] == "gradient"
    assert "niryo_one" in (out / "report.md").read_text()
    model_dir.load(out)


def test_same_seed_same_steps_same_network(tmp_path):
    for name in ("a", "b"):
        Trainer(
            TrainConfig(steps=40, minutes=None, out=str(tmp_path / name), hidden=[32], seed=3),
            progress=False,
        ).run()
    a, b = (
        load_file(tmp_path / "a" / "model.safetensors"),
        load_file(tmp_path / "b" / "model.safetensors"),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)
    Trainer(
        TrainConfig(steps=40, minutes=None, out=str(tmp_path / "c"), hidden=[32], seed=4),
        progress=False,
    ).run()
    c = load_file(tmp_path / "c" / "model.safetensors")
    assert not torch.equal(a["head.weight"], c["head.weight"])


def test_existing_run_needs_resume_or_force(tmp_path):
    config = TrainConfig(steps=5, minutes=None, out=str(tmp_path / "r"), hidden=[8])
    Trainer(config, progress=False).run()
    # shorter than one logging interval: no curve, and the report links none
    assert not (tmp_path / "r" / "training_curve.png").exists()
    assert "training_curve.png" not in (tmp_path / "r" / "report.md").read_text()
    with pytest.raises(TrainingError, match="--resume"):
        Trainer(config, progress=False)
    Trainer(config, progress=False, force=True)
    finished = tmp_path / "finished"  # a model folder copied without its run: kept all the same
    finished.mkdir()
    for f in (tmp_path / "r").iterdir():
        if f.is_file() and f.name != "checkpoint.pt":
            (finished / f.name).write_bytes(f.read_bytes())
    again = TrainConfig(steps=5, minutes=None, out=str(finished), hidden=[8])
    with pytest.raises(TrainingError, match="already holds a model; pass --force"):
        Trainer(again, progress=False)
    with pytest.raises(TrainingError, match="cannot resume: .* holds no checkpoint.pt"):
        Trainer(again, resume=True, progress=False)
    with pytest.raises(TrainingError, match="is a file, not a folder"):
        Trainer(TrainConfig(steps=5, minutes=None, out=str(finished / "model.json")))
    with pytest.raises(TrainingError, match="mode='pose'"):
        Trainer(
            TrainConfig(
                steps=5, minutes=None, out=str(tmp_path / "r"), hidden=[8], mode="position"
            ),
            resume=True,
            progress=False,
        )


def _train_cli(out, *extra):
    return [
        sys.executable,
        "-m",
        "robot_ik_nn.cli",
        "--threads",
        "1",
        "train",
        "--steps",
        "400",
        "--out",
        str(out),
        "--hidden",
        "32",
        "--seed",
        "5",
        "--quiet",
        "--checkpoint-every",
        "0.2",
        *extra,
    ]


def under_way(out) -> bool:
    """A progress marker: a checkpoint exists and a metrics row was logged (the run is under
    way; how far is read from the checkpoint once the run is held still)."""
    try:
        torch.load(out / CHECKPOINT, weights_only=True)
        rows = (out / "metrics.csv").read_text().splitlines()
    except (OSError, RuntimeError, EOFError):
        return False
    return len(rows) >= 2


def wait_under_way(proc, out, timeout: float = 300.0) -> None:
    """Wait for :func:`under_way`, however slow the machine (not a fixed sleep that has to land
    mid-run)."""
    deadline = time.monotonic() + timeout
    while not under_way(out):
        assert proc.poll() is None, "the run ended before it was under way"
        assert time.monotonic() < deadline, f"no checkpoint and metrics row after {timeout} s"
        time.sleep(0.05)


def _identity(path) -> tuple[int, int]:
    """Which file ``path`` is: its inode and when it was written. The inode alone is not enough:
    two saves after the frozen one (the periodic one then the stop's) can hand the second file
    the inode the first one freed."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    clean = tmp_path_factory.mktemp("uninterrupted") / "clean"
    subprocess.run(_train_cli(clean), check=True, capture_output=True, timeout=600)
    return load_file(clean / "model.safetensors")


@pytest.mark.parametrize(
    "stop",
    [signal.SIGKILL, signal.SIGINT, signal.SIGTERM],
    ids=["kill -9", "Ctrl-C", "SIGTERM (torchrun's)"],
)
def test_a_stopped_run_resumes_to_the_uninterrupted_one(tmp_path, stop, uninterrupted):
    crashed = tmp_path / "crashed"
    proc = subprocess.Popen(_train_cli(crashed), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_under_way(proc, crashed)
    proc.send_signal(signal.SIGSTOP)  # held still mid-run while it is judged and signalled
    frozen = torch.load(crashed / CHECKPOINT, weights_only=True)["step"]
    frozen_file = _identity(crashed / CHECKPOINT)  # rewritten: another file (os.replace)
    assert 0 < frozen < 400 and not (crashed / "model.json").exists()
    proc.send_signal(stop)  # Ctrl-C and SIGTERM end the step in flight first: its random state
    if stop != signal.SIGKILL:  # is saved
        proc.send_signal(signal.SIGCONT)
    output = proc.communicate(timeout=300)[0].decode()
    ckpt = torch.load(crashed / CHECKPOINT, weights_only=True)
    rewritten = _identity(crashed / CHECKPOINT) != frozen_file
    if stop == signal.SIGKILL:
        assert ckpt["step"] == frozen and not rewritten
        assert not (crashed / "model.json").exists()
    else:  # a checkpoint of the step it stopped at, and the model saved as interrupted
        assert proc.returncode == 130 and "resume with --resume" in output, output
        assert rewritten and frozen <= ckpt["step"] < 400
        assert model_dir.load(crashed).meta["training"]["interrupted"] is True
    done = subprocess.run(
        _train_cli(crashed, "--resume"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    a = load_file(crashed / "model.safetensors")
    assert all(torch.equal(a[k], uninterrupted[k]) for k in a), (
        "resumed training must equal the uninterrupted run"
    )
    steps = [int(r["step"]) for r in csv.DictReader((crashed / "metrics.csv").open())]
    assert steps == sorted(set(steps)) and steps[-1] == 400
    assert json.loads((crashed / "model.json").read_text())["training"]["steps"] == 400


def test_sigint_stops_early_and_saves_a_loadable_model(tmp_path):
    out = tmp_path / "int"
    cmd = _train_cli(out)
    cmd[cmd.index("--steps") + 1] = "1000000"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not (out / CHECKPOINT).exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "resume with --resume" in output
    loaded = model_dir.load(out)
    assert loaded.meta["training"]["interrupted"] is True


@pytest.mark.cuda  # skipped without CUDA; make test-gpu fails instead (conftest.py)
def test_training_on_cuda(tmp_path):
    trainer = Trainer(
        TrainConfig(
            steps=50, minutes=None, device="cuda", out=str(tmp_path / "cuda"), hidden=[32]
        ),
        progress=False,
    )
    trainer.run()
    assert model_dir.load(tmp_path / "cuda").net(
        torch.zeros(1, 3) + 0.2, torch.eye(3)[None]
    ).shape == (1, 6)


def test_cuda_request_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error is for machines without it")
    with pytest.raises(ValueError, match="no CUDA device"):
        TrainConfig(device="cuda")


def test_options_a_learner_would_ignore_are_refused(tmp_path):
    from robot_ik_nn.learn.learners import LearnConfig

    out = str(tmp_path / "x")
    with pytest.raises(ValueError, match="tracking network is trained by the gradient learner"):
        TrainConfig(learner="explore", tracking=True, steps=1, minutes=None, out=out)
    with pytest.raises(ValueError, match="novelty search belongs to the evolution learner"):
        TrainConfig(learn=LearnConfig(novelty=0.5), steps=1, minutes=None, out=out)


def test_a_fresh_start_over_a_run_leaves_no_checkpoint_to_resume(tmp_path):
    """--force starts over: once its first step is done, a crash must not leave the old run's
    checkpoint for a later --resume to mix in (before its first step, the old run stays)."""
    config = TrainConfig(steps=5, minutes=None, out=str(tmp_path / "r"), hidden=[8])
    Trainer(config, progress=False).run()
    ckpt = tmp_path / "r" / CHECKPOINT
    seen = []  # at the new run's first row: before its own first checkpoint (every 30 s)
    again = TrainConfig(**{**config.to_dict(), "seed": 2, "steps": 3, "log_every": 1})
    def row(_):
        seen.append(ckpt.exists())

    trainer = Trainer(again, force=True, progress=False, on_metrics=row)
    assert ckpt.exists()  # not cleared yet: nothing of the new run has happened
    trainer.run()
    assert seen[0] is False
    assert json.loads(torch.load(ckpt, weights_only=True)["config"])["seed"] == 2


def test_a_resumed_run_keeps_its_learner_settings(tmp_path):
    from robot_ik_nn.learn.learners import LearnConfig

    small = LearnConfig(population=8, evolution_targets=16)
    config = TrainConfig(learner="evolution", steps=2, minutes=None, out=str(tmp_path / "e"),
                         hidden=[8], learn=small)
    Trainer(config, progress=False).run()
    again = TrainConfig(**{**config.to_dict(), "steps": 4, "learn": LearnConfig()})
    trainer = Trainer(again, resume=True, progress=False)  # none given: the run's own
    assert trainer.config.learn == small and len(trainer.learner.population) == 8
    trainer.run()
    meta = json.loads((tmp_path / "e" / "model.json").read_text())
    assert meta["training"]["hyper_parameters"]["population"] == 8
    other = TrainConfig(**{**again.to_dict(), "learn": LearnConfig(population=20)})
    with pytest.raises(TrainingError, match=r"population=20 \(the run has 8\).*leave out --learn"):
        Trainer(other, resume=True, progress=False)


def test_a_stop_before_the_first_step_writes_nothing(tmp_path):
    import threading

    config = TrainConfig(steps=60, minutes=None, out=str(tmp_path / "m"), hidden=[8])
    Trainer(config, progress=False).run()
    folder = tmp_path / "m"
    before = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    assert {"checkpoint.pt", "metrics.csv", "training_curve.png"} <= set(before)
    stop = threading.Event()
    stop.set()  # Ctrl-C at once, over a trained model (--force)
    trainer = Trainer(TrainConfig(**{**config.to_dict(), "seed": 3}), force=True, stop=stop,
                      progress=False)
    trainer.run()
    assert trainer.interrupted and not trainer.saved and trainer.step == 0
    after = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    assert after == before  # the earlier run whole: its checkpoint, rows and curve too
    Trainer(TrainConfig(**{**config.to_dict(), "steps": 1, "seed": 3}), force=True,
            progress=False).run()  # one step: now the earlier run is gone
    assert not (folder / "checkpoint.pt").exists() or (
        torch.load(folder / "checkpoint.pt", weights_only=True)["step"] == 1
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"device": "foo"}, "device 'foo' is not a torch device"),
        ({"minutes": float("inf")}, "minutes must be a positive number"),
    ],
)
def test_bad_devices_and_budgets_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


@pytest.mark.parametrize(
    "pair, message",
    [
        ("hindsight_until=0", "more than 0 and at most 1"),
        ("decay_until=0", "more than 0 and at most 1"),
        ("noise_start=0", "more than 0"),
        ("sigma=0", "more than 0"),
        ("attempts=1", "at least 2"),
    ],
)
def test_learner_values_that_would_divide_by_zero_are_refused(pair, message):
    from robot_ik_nn.learn.learners import LearnConfig

    with pytest.raises(ValueError, match=message):
        LearnConfig().update([pair])
