"""Held-out evaluation: targets from forward kinematics of uniformly random joint values.

"Solved" means position error <= 1 mm and rotation error <= 0.01 rad with every joint inside its
limits (the figures in shared/anchors.md use the same definition). On the CPU the compiled core
answers (no torch needed); with ``device="cuda"`` the batched torch solver does.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from numba import get_num_threads

from . import model_dir
from .arm.rotations import matrix_to_quaternion, rotation_angle
from .ik.results import BatchResult
from .ik.solver import Solver


def held_out_targets(arm, n: int, seed: int, margin: float = 0.0):
    """(q, position, rotation matrix) of ``n`` reachable targets, float64 numpy: the joints are
    uniform inside the limits (less ``margin`` for limited joints)."""
    rng = np.random.default_rng(seed)
    keep = np.where(arm.continuous, 0.0, margin)
    lo, hi = arm.lower + keep, arm.upper - keep
    q = lo + rng.random((n, arm.dof)) * (hi - lo)
    pos, rot = Solver(arm).forward(q)
    return q, pos, rot


def errors_mm_deg(pos_err, rot_err, prefix: str = "") -> dict:
    """Median, p90 and p99 of position (mm) and rotation (deg) errors."""
    pe, re = np.asarray(pos_err) * 1000, np.degrees(np.asarray(rot_err))
    out = {}
    for name, v in (("pos_mm", pe), ("rot_deg", re)):
        for tag, pct in (("median", 50), ("p90", 90), ("p99", 99)):
            out[f"{prefix}{name}_{tag}"] = float(np.percentile(v, pct))
    return out


def network_errors(net, arm, targets: int = 2000, seed: int = 12345) -> dict:
    """The torch network alone (while it trains): error percentiles on held-out targets."""
    import torch

    _, pos, rot = held_out_targets(arm, targets, seed)
    device = next(net.parameters()).device
    pose = net.config.mode == "pose"
    was_training = net.training
    net.eval()
    with torch.no_grad():
        q = net(
            torch.as_tensor(pos, dtype=torch.float32, device=device),
            torch.as_tensor(rot, dtype=torch.float32, device=device) if pose else None,
        )
    net.train(was_training)
    p_q, r_q = Solver(arm).forward(q.double().cpu().numpy())
    out = errors_mm_deg(np.linalg.norm(p_q - pos, axis=1), rotation_angle(r_q, rot))
    if not pose:
        out = {k: v for k, v in out.items() if k.startswith("pos")}
    return out


def evaluate(
    model,
    targets: int = 10000,
    seed: int = 12345,
    device: str = "cpu",
    batch: int | None = None,
    settings=None,
) -> dict:
    """The ``robot-ik-nn eval --json`` object for a model folder (path or archive)."""
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device {device!r}: eval runs on cpu (compiled) or cuda[:N] (torch)")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked for, but this machine has no CUDA device")

    solver = Solver.load(model, settings)
    arm, pose = solver.arm, solver.mode == "pose"
    _, pos, rot = held_out_targets(arm, targets, seed)
    quat = matrix_to_quaternion(rot) if pose else None
    result = {
        "robot": arm.name,
        "mode": solver.mode,
        "targets": targets,
        "seed": seed,
        "fingerprint": arm.fingerprint,
        "device": device,
        "threads": _threads(device),
        "heads": solver.heads,
    }
    alone = solver.with_settings(iterations=0).solve_batch(pos, quat)
    result["network"] = errors_mm_deg(alone.pos_err, alone.rot_err)
    if not pose:
        result["network"].update(rot_deg_median=None, rot_deg_p90=None, rot_deg_p99=None)
    if device.startswith("cuda"):
        solve, sync = _torch_solver(model, solver.settings, device)
    else:
        solve, sync = solver.solve_batch, (lambda: None)
    batch = batch or targets
    solve(pos[: min(64, targets)], None if quat is None else quat[: min(64, targets)])  # warm up
    sync()
    started = time.perf_counter()
    parts = [
        solve(pos[i : i + batch], None if quat is None else quat[i : i + batch])
        for i in range(0, targets, batch)
    ]
    sync()
    seconds = time.perf_counter() - started
    s = BatchResult.concatenate(parts).summary()
    result["refined"] = {
        "solve_rate": s["solved"] / targets,
        "solved": s["solved"],
        "best_effort": s["best_effort"],
        "rejected": s["rejected"],
        "pos_mm_median": s.get("pos_mm_median"),
        "pos_mm_p99": s.get("pos_mm_p99"),
        "rot_deg_median": s.get("rot_deg_median") if pose else None,
        "rot_deg_p99": s.get("rot_deg_p99") if pose else None,
        "solutions_per_s": targets / seconds,
        "solved_per_s": s["solved"] / seconds,
        "seconds": seconds,
        "batch": batch,
        "iterations": solver.settings.iterations,
        "restarts": solver.settings.restarts,
    }
    return result


def _threads(device: str) -> int:
    if device.startswith("cuda"):
        return 1
    return get_num_threads() or os.cpu_count() or 1


def _torch_solver(model, settings, device):
    import torch

    from .ik.torch_solver import TorchSolver

    loaded = model_dir.load(model, device=device)
    solver = TorchSolver(loaded.arm, loaded.net, settings, device=device)
    return solver.solve, (lambda: torch.cuda.synchronize() if device.startswith("cuda") else None)


def format_table(result: dict) -> str:
    """A plain-text table of an evaluation, for people."""
    n, r = result["network"], result["refined"]

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    heads = result.get("heads", 1)
    r_ = result

    def row(label, key):
        return f"{label:22}{f(n.get(key), '.3f'):>16}{f(r.get(key), '.4f'):>16}"

    lines = [
        f"{r_['robot']} ({r_['mode']}, {heads} head{'s' if heads > 1 else ''}), {r_['targets']} "
        f"held-out targets, seed {r_['seed']}, {r_['device']}, {r_['threads']} threads",
        "",
        f"{'':22}{'network alone':>16}{'refined':>16}",
        row("position median (mm)", "pos_mm_median"),
        row("position p99 (mm)", "pos_mm_p99"),
        row("rotation median (deg)", "rot_deg_median"),
        row("rotation p99 (deg)", "rot_deg_p99"),
        f"{'solved (1 mm, 0.01 rad)':22}{'':>16}{r['solve_rate'] * 100:>15.2f}%",
        f"{'solutions per second':22}{'':>16}{r['solutions_per_s']:>16,.0f}",
    ]
    if math.isfinite(r["seconds"]):
        lines.append(f"{'':22}{'':>16}{'(batch ' + str(r['batch']) + ')':>16}")
    return "\n".join(lines)
