"""Held-out evaluation: targets from forward kinematics of uniformly random joint values.

"Solved" means position error <= 1 mm and rotation error <= 0.01 rad with every joint inside its
limits (the figures in shared/anchors.md use the same definition).
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from .kinematics import Kinematics
from .quaternions import matrix_to_quaternion
from .reward import pose_distances
from .solver import Solver, summarize


def held_out_targets(arm, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q, position, rotation matrix) of ``n`` reachable targets, float64, CPU."""
    kin = Kinematics(arm, torch.float64)
    q = kin.sample(n, torch.Generator().manual_seed(seed))
    pos, rot = kin.forward(q)
    return q, pos, rot


def network_errors(net, arm, targets: int = 2000, seed: int = 12345) -> dict:
    """The network alone: position and rotation error percentiles on held-out targets."""
    _, pos, rot = held_out_targets(arm, targets, seed)
    device = next(net.parameters()).device
    was_training = net.training
    net.eval()
    with torch.no_grad():
        pose = net.config.mode == "pose"
        current = None
        if net.config.tracking:
            current = ((net.lower + net.upper) / 2).expand(targets, -1)
        q = net(pos.float().to(device), rot.float().to(device) if pose else None, current).double().cpu()
    net.train(was_training)
    p_q, r_q = Kinematics(arm, torch.float64).forward(q)
    d_pos, d_rot = pose_distances(p_q, r_q, pos, rot)
    pe, re = d_pos.numpy() * 1000, np.degrees(d_rot.numpy())
    out = {"pos_mm_median": float(np.median(pe)), "pos_mm_p90": float(np.percentile(pe, 90)),
           "pos_mm_p99": float(np.percentile(pe, 99))}
    if pose:
        out.update(rot_deg_median=float(np.median(re)), rot_deg_p90=float(np.percentile(re, 90)),
                   rot_deg_p99=float(np.percentile(re, 99)))
    return out


def evaluate(loaded, targets: int = 10000, seed: int = 12345, device: str = "cpu", batch: int | None = None,
             solver_options: dict | None = None) -> dict:
    """The ``robot-ik-nn eval --json`` object for a loaded model folder."""
    arm, net = loaded.arm, loaded.net
    pose = net.config.mode == "pose"
    result = {"robot": arm.name, "mode": net.config.mode, "targets": targets, "seed": seed,
              "fingerprint": arm.fingerprint, "device": device, "threads": torch.get_num_threads()}
    result["network"] = network_errors(net.to(device), arm, targets, seed)
    if not pose:
        result["network"].setdefault("rot_deg_median", None)

    _, pos, rot = held_out_targets(arm, targets, seed)
    quat = matrix_to_quaternion(rot) if pose else None
    solver = Solver(arm, net, device=device, **(solver_options or {}))
    batch = batch or targets
    solver.solve(pos[:min(64, targets)], None if quat is None else quat[:min(64, targets)])  # warm up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    parts = [solver.solve(pos[i:i + batch], None if quat is None else quat[i:i + batch])
             for i in range(0, targets, batch)]
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    merged = _merge(parts)
    s = summarize(merged)
    result["refined"] = {
        "solve_rate": s["solved"] / targets, "solved": s["solved"], "best_effort": s["best_effort"],
        "rejected": s["rejected"], "pos_mm_median": s.get("pos_mm_median"), "pos_mm_p99": s.get("pos_mm_p99"),
        "rot_deg_median": s.get("rot_deg_median") if pose else None,
        "rot_deg_p99": s.get("rot_deg_p99") if pose else None,
        "solutions_per_s": targets / seconds, "seconds": seconds, "batch": batch,
        "iterations": solver.iterations, "restarts": solver.restarts,
    }
    return result


def _merge(parts):
    from .solver import SolveResult

    return SolveResult(torch.cat([p.q for p in parts]), sum((p.status for p in parts), []),
                       torch.cat([p.pos_err for p in parts]), torch.cat([p.rot_err for p in parts]),
                       sum((p.reason for p in parts), []))


def format_table(result: dict) -> str:
    """A plain-text table of an evaluation, for people."""
    n, r = result["network"], result["refined"]

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    lines = [
        f"{result['robot']} ({result['mode']}), {result['targets']} held-out targets, seed {result['seed']}, "
        f"{result['device']}, {result['threads']} threads",
        "",
        f"{'':22}{'network alone':>16}{'refined':>16}",
        f"{'position median (mm)':22}{f(n['pos_mm_median'], '.3f'):>16}{f(r['pos_mm_median'], '.4f'):>16}",
        f"{'position p99 (mm)':22}{f(n['pos_mm_p99'], '.3f'):>16}{f(r['pos_mm_p99'], '.4f'):>16}",
        f"{'rotation median (deg)':22}{f(n.get('rot_deg_median'), '.3f'):>16}{f(r['rot_deg_median'], '.4f'):>16}",
        f"{'rotation p99 (deg)':22}{f(n.get('rot_deg_p99'), '.3f'):>16}{f(r['rot_deg_p99'], '.4f'):>16}",
        f"{'solved (1 mm, 0.01 rad)':22}{'':>16}{r['solve_rate'] * 100:>15.2f}%",
        f"{'solutions per second':22}{'':>16}{r['solutions_per_s']:>16,.0f}",
    ]
    if math.isfinite(r["seconds"]):
        lines.append(f"{'':22}{'':>16}{'(batch ' + str(r['batch']) + ')':>16}")
    return "\n".join(lines)
