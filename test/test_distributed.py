"""torchrun with 2 processes on the CPU (gloo): trains, checkpoints, resumes after kill -9,
evaluates; train --nproc 2 starts it for you; evolution splits its population over the ranks."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_training import wait_under_way

from robot_ik_nn import model_dir
from robot_ik_nn.cli import main
from robot_ik_nn.evaluate import evaluate
from robot_ik_nn.learn.training import CHECKPOINT

pytestmark = pytest.mark.slow


def _torchrun(out, *extra):
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "robot_ik_nn.train", "--threads", "1", "--mode", "position", "--steps", "200",
        "--hidden", "32", "--out", str(out), "--quiet", "--checkpoint-every", "0.2", *extra,
    ]  # fmt: skip


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_torchrun_trains_checkpoints_resumes_after_kill_9_and_evaluates(tmp_path):
    out = tmp_path / "ddp"
    proc = subprocess.Popen(
        _torchrun(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_under_way(proc, out)  # a checkpoint and a metrics row, not a sleep that must land
    family = [proc.pid, *_descendants(proc.pid)]  # torchrun starts workers in new sessions
    assert len(family) >= 3, family
    for pid in family:  # held still mid-run: what is judged here cannot move on meanwhile
        os.kill(pid, signal.SIGSTOP)
    step = torch.load(out / CHECKPOINT, weights_only=True)["step"]
    assert 0 < step < 200, "the crash should land mid-run"
    assert not (out / "model.json").exists()
    for pid in family:  # torchrun and both workers at once, as a power cut would
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    assert torch.load(out / CHECKPOINT, weights_only=True)["step"] == step
    done = subprocess.run(_torchrun(out, "--resume"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    meta = json.loads((out / "model.json").read_text())
    assert meta["training"]["steps"] == 200 and meta["training"]["processes"] == 2
    steps = [int(r["step"]) for r in csv.DictReader((out / "metrics.csv").open())]
    assert steps == sorted(set(steps)) and steps[-1] == 200
    result = evaluate(out, targets=300)
    assert result["network"]["pos_mm_median"] < 60, result["network"]
    assert result["refined"]["solve_rate"] > 0.9


def test_nproc_shortcut_runs_evolution_with_the_population_split(tmp_path):
    out = tmp_path / "evo"
    argv = ["--threads", "1", "train", "--nproc", "2", "--learner", "evolution", "--mode"]
    argv += ["position", "--steps", "30", "--out", str(out), "--quiet", "--learn"]
    assert main([*argv, "population=12", "evolution_targets=32"]) == 0
    loaded = model_dir.load(out)
    meta = loaded.meta["training"]
    assert meta["processes"] == 2 and meta["steps"] == 30 and meta["learner"] == "evolution"
    # the same run in one process: the same champion (each rank evaluated half of the same
    # population on the same targets, then all bred the same next generation)
    one = tmp_path / "one"
    argv[argv.index(str(out))] = str(one)
    argv.remove("--nproc"), argv.remove("2")
    assert main([*argv, "population=12", "evolution_targets=32"]) == 0
    a, b = loaded.net.state_dict(), model_dir.load(one).net.state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_nproc_refuses_once_and_a_terminal_s_ctrl_c_stops_it_cleanly(tmp_path, capsys):
    argv = ["--threads", "1", "train", "--nproc", "2", "--mode", "position", "--hidden", "32"]
    assert main([*argv, "--resume", "--out", str(tmp_path / "none"), "--steps", "5"]) == 2
    err = capsys.readouterr().err  # refused here, once, before any worker started
    assert err.count("cannot resume") == 1 and "Traceback" not in err, err
    assert main([*argv, "--device", "foo", "--out", str(tmp_path / "d"), "--steps", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("device 'foo' is not a torch device") == 1 and "Traceback" not in err, err
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "robot_ik_nn.cli", *argv, "--steps", "1000000", "--out", str(out)]
    cmd += ["--quiet", "--checkpoint-every", "0.2"]
    # a terminal's Ctrl-C goes to its foreground process group: this command's
    proc = subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 180
    while not (out / CHECKPOINT).exists() and time.time() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130 and "Traceback" not in output, output
    assert "stopped early; resume with --resume" in output
    assert model_dir.load(out).meta["training"]["interrupted"] is True
