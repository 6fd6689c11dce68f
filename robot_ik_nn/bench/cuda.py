"""`robot-ik-nn bench MODEL --cuda`: the batched torch solver on a GPU, measured.

For each batch size (10,000 / 100,000 / 1,000,000 held-out targets by default), three calls of
``TorchSolver.solve`` on the whole batch, timed from the call to the device's last answer: the
median call's time is reported, and the last call's answers are judged (the calls differ only
in their restarts' random numbers). The same batch is also solved by the network alone
(``iterations=0``) and by the first pass without restarts (``restarts=0``), so that the report
shows where the time goes. Every answer is judged by the package's own (numpy) forward
kinematics, as in every bench.
"""

from __future__ import annotations

import time

from ..arm.rotations import matrix_to_quaternion
from ..evaluate import held_out_targets
from .measure import judge

SIZES = (10_000, 100_000, 1_000_000)
PARTS = {
    "full": {},
    "first pass (no restarts)": {"restarts": 0},
    "network alone": {"iterations": 0},
}


def measure(model, sizes=SIZES, *, device="cuda", calls: int = 3, seed: int = 777, say=None):
    """The ``--cuda`` JSON object; ``device="cpu"`` runs the same measurement on the CPU."""
    import torch

    from .. import model_dir
    from ..ik.settings import IKSettings
    from ..ik.solver import Solver
    from ..ik.torch_solver import TorchSolver
    from . import machine

    say = say or (lambda text: None)
    device = torch.device(device)
    on_cuda = device.type == "cuda"
    if on_cuda and not torch.cuda.is_available():
        raise ValueError("bench --cuda: this machine has no CUDA device (torch sees none)")
    loaded = model_dir.load(model, device=device)
    judge_with = Solver(loaded.arm)
    pose = loaded.net is None or loaded.net.config.mode == "pose"
    _, P, R = held_out_targets(loaded.arm, max(sizes), seed)
    Q = matrix_to_quaternion(R) if pose else None
    sync = (lambda: torch.cuda.synchronize(device)) if on_cuda else (lambda: None)
    out = {
        "robot": loaded.arm.name,
        "device": torch.cuda.get_device_name(device) if on_cuda else str(device),
        "torch": torch.__version__,
        "machine": machine(),
        "calls": calls,
        "seed": seed,
        "rows": [],
    }
    for part, change in PARTS.items():
        settings = IKSettings().replace(**change) if change else IKSettings()
        solver = TorchSolver(loaded.arm, loaded.net, settings, device=device)
        out["round_rows"] = solver.round_rows
        solver.solve(P[:256], None if Q is None else Q[:256])  # warm up
        sync()
        for n in sizes:
            say(f"{part}: batch {n:,}")
            times = []
            for _ in range(calls):
                sync()
                started = time.perf_counter()
                result = solver.solve(P[:n], None if Q is None else Q[:n])
                sync()
                times.append(time.perf_counter() - started)
            seconds = sorted(times)[len(times) // 2]
            solved, _, _ = judge(
                judge_with.forward, loaded.arm, result.q, P[:n], R[:n] if pose else None
            )
            out["rows"].append(
                {
                    "part": part,
                    "batch": n,
                    "solve_rate": float(solved.mean()),
                    "solved_per_s": float(solved.sum() / seconds),
                    "seconds": seconds,
                    "seconds_all": times,
                }
            )
    return out


def format_table(r: dict) -> str:
    lines = [
        f"{r['robot']} on {r['device']} (torch {r['torch']}), median of {r['calls']} calls",
        f"  {'':26s} {'batch':>10s} {'solved':>9s} {'solved/s':>12s} {'ms':>9s}",
    ]
    for row in r["rows"]:
        lines.append(
            f"  {row['part']:26s} {row['batch']:10,d} {row['solve_rate'] * 100:8.3f}% "
            f"{row['solved_per_s']:12,.0f} {row['seconds'] * 1000:9.1f}"
        )
    return "\n".join(lines)


def markdown(r: dict) -> str:
    lines = [
        f"{r['robot']} on {r['device']} (torch {r['torch']}), median of {r['calls']} calls\n",
        "| | batch | solved | solved per second | ms per call |",
        "|---|---|---|---|---|",
    ]
    for row in r["rows"]:
        lines.append(
            f"| {row['part']} | {row['batch']:,} | {row['solve_rate'] * 100:.3f} % | "
            f"{row['solved_per_s']:,.0f} | {row['seconds'] * 1000:.1f} |"
        )
    return "\n".join(lines)
