"""``robot-ik-nn bench``: the performance figures, measured side by side, as one JSON object.

- ``network``: the network alone, batched, per backend (answers per second);
- ``single``: one cold target at a time on one CPU, per backend, and the same compiled solver
  seeded without its network (mid-range, then restarts): does the network earn its place?
- ``tracking``: targets about 5 mm apart along a smooth path, warm-started from the last answer;
- ``batched``: batches of 100 / 1,000 / 10,000 over all cores (and the torch solver when torch
  is installed);
- ``peers`` (``--peers``): TRAC-IK, roboticstoolbox's ``ik_LM`` and PyBullet's IK on the same
  targets, one thread each, restarts inside the same time budget per target;
- ``dds`` (``--dds``): the inference node over DDS, target published -> command received.

Every target is reachable (forward kinematics of uniformly random joints) and every answer is
judged by the package's own forward kinematics, never by a solver's own report. Ratios compare
solved per second within this one run.

The modules (one per mode of ``robot-ik-nn bench``, besides the rows above, which live here):

measure.py             what every row is made of: targets, the one judge, timing, one CPU
peers.py               TRAC-IK, ik_LM and PyBullet's IK, driven the same way as ours
report.py              the result for people: a terminal table, markdown
paths.py               --tracking: paths and streams
answers.py             --answers: the answers users ask for
solutions.py           --solutions: a target's distinct answers
collisions.py          --collisions: self-collision checking, judged by PyBullet
calibration.py         --calibration: a true arm, before and after calibration
cuda.py                --cuda: the batched torch solver on a GPU
dds.py                 --dds: the inference node over DDS (and what the DDS modes share)
dds_paths.py           --dds-paths: the node streaming smooth paths over DDS
dds_paths_figures.py   its figures, from the listener's records
moveit.py              --moveit: ~/solve_ik round trips over DDS
hardware.py            --hardware: the deploy session against an emulator, dry run
web.py                 --web: IK in a web page against the native solver and the JS peers
web_page.py            the headless page that posts its result back
web_crowd.py           the exported crowd page, in headless chromium
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from ..evaluate import held_out_targets
from ..ik.network_forward import BACKENDS
from .measure import judge, one_at_a_time, one_cpu, row, tracking_path


def machine() -> dict:
    import numba

    info = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "cpu_count": os.cpu_count(),
        "threads": numba.get_num_threads(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), ""
            )
    except OSError:
        pass
    return info


def _backends(model, settings, wanted):
    """The solvers to measure: one per available backend (onnx only with model.onnx)."""
    from .. import model_dir
    from ..ik.solver import Solver

    model_dir.read_meta(model)  # a missing or corrupt folder said once, before any backend
    solvers, notes = {}, {}
    for backend in wanted:
        try:
            solvers[backend] = Solver.load(model, settings, backend=backend)
        except (model_dir.ModelDirError, ImportError) as err:
            notes[backend] = f"skipped: {err}"
    if not solvers:
        raise model_dir.ModelDirError(
            "no backend could load the model: "
            + "; ".join(f"{backend} {note}" for backend, note in notes.items())
        )
    return solvers, notes


def run(
    model,
    *,
    targets: int = 10000,
    single_targets: int | None = None,
    seed: int = 777,
    batches=(100, 1000, 10000),
    backends=BACKENDS,
    peers: bool = False,
    budget_ms: float = 5.0,
    tracking_targets: int = 1000,
    torch_batched: bool = True,
    progress=None,
) -> dict:
    """Measure a model folder; ``progress(text)`` hears what is being measured."""
    from ..ik.settings import IKSettings

    say = progress or (lambda text: None)
    solvers, notes = _backends(model, IKSettings(), backends)
    main = solvers["compiled"] if "compiled" in solvers else next(iter(solvers.values()))
    arm, fk, pose = main.arm, main.forward, main.mode == "pose"
    n_single = single_targets or targets
    _, P, R = held_out_targets(arm, max(targets, n_single), seed)
    Q = matrix_to_quaternion(R) if pose else None
    Rj = R if pose else None
    result = {
        "robot": arm.name,
        "dof": arm.dof,
        "mode": main.mode,
        "heads": main.heads,
        "seed": seed,
        "targets": n_single,
        "budget_ms": budget_ms,
        "machine": machine(),
        "notes": notes,
        "settings": main.settings.to_dict(),
    }

    say("network alone")
    result["network"] = {}
    for name, solver in solvers.items():
        solver.network_seeds(P[:100], Rj[:100] if pose else None)  # warm up
        started = time.perf_counter()
        solver.network_seeds(P[:targets], Rj[:targets] if pose else None)
        result["network"][name] = {
            "batch": targets,
            "answers_per_s": targets / (time.perf_counter() - started),
        }

    single = result["single"] = {}
    with one_cpu():
        for name, solver in [*solvers.items(), ("without network", main.without_network())]:
            say(f"one target at a time: {name}")
            q, seconds = one_at_a_time(
                lambda p, quat, _R, s=solver: s.solve(p, quat).q,
                P[:n_single],
                None if Q is None else Q[:n_single],
                None,
                arm.dof,
            )
            solved, _, _ = judge(fk, arm, q, P[:n_single], None if Rj is None else Rj[:n_single])
            single[name] = row(solved, seconds)
        say("tracking")
        result["tracking"] = tracking(main, arm, fk, tracking_targets, pose)
        if peers:
            result["peers"] = run_peers(
                arm,
                fk,
                P[:n_single],
                None if Q is None else Q[:n_single],
                None if Rj is None else Rj[:n_single],
                budget_ms / 1000,
                say,
            )
    seedless = single["without network"]["solved_per_s"]
    result["network_gain"] = {
        name: row_["solved_per_s"] / seedless
        for name, row_ in single.items()
        if name != "without network"
    }
    if peers:
        ours = single["compiled"]["solved_per_s"] if "compiled" in single else seedless
        result["ratios"] = {
            name: ours / r["solved_per_s"]
            for name, r in result["peers"].items()
            if isinstance(r, dict) and r.get("solved_per_s")
        }

    say("batches")
    result["batched"] = batched(main, P, Q, Rj, fk, arm, batches, targets)
    if torch_batched:
        result["batched_torch"] = _torch_batched(
            model, main.settings, P, Q, Rj, fk, arm, min(targets, 10000)
        )
    return result


def tracking(solver, arm, fk, n: int, pose: bool) -> dict:
    q_path, P, R = tracking_path(arm, fk, n)
    Q = matrix_to_quaternion(R) if pose else None
    answers, seconds, last = np.full((n, arm.dof), np.nan), np.empty(n), q_path[0]
    for i in range(n):
        started = time.perf_counter()
        answer = solver.solve(P[i], None if Q is None else Q[i], current=last, last=last)
        seconds[i] = time.perf_counter() - started
        if answer.q is not None:
            answers[i] = last = answer.q
    solved, _, _ = judge(fk, arm, answers, P, R if pose else None)
    steps = np.abs(np.diff(answers, axis=0))
    return row(solved, seconds, max_joint_step_rad=float(np.nanmax(steps)) if n > 1 else 0.0)


def batched(solver, P, Q, R, fk, arm, sizes, limit: int, rounds: int = 5) -> list[dict]:
    """Each batch size timed ``rounds`` times over the same targets; the row gives the median
    round (one ~70 ms call is at the mercy of a neighbour on a shared machine) and the spread."""
    rows = []
    for size in sorted({min(size, limit) for size in sizes}):  # sizes above the targets: once
        calls = max(1, min(limit // size, 100))
        n = size * calls
        solver.solve_batch(P[:size], None if Q is None else Q[:size])  # warm up
        rates = []
        for _ in range(rounds):
            started = time.perf_counter()
            parts = [
                solver.solve_batch(P[i : i + size], None if Q is None else Q[i : i + size])
                for i in range(0, n, size)
            ]
            seconds = time.perf_counter() - started
            q = np.concatenate([p.q for p in parts])
            solved, _, _ = judge(fk, arm, q, P[:n], None if R is None else R[:n])
            rates.append((float(solved.sum() / seconds), seconds, float(solved.mean())))
        rate, seconds, rate_solved = sorted(rates)[len(rates) // 2]
        rows.append(
            {
                "batch": size,
                "targets": n,
                "rounds": rounds,
                "solve_rate": rate_solved,
                "solved_per_s": rate,
                "solved_per_s_min": min(r[0] for r in rates),
                "solved_per_s_max": max(r[0] for r in rates),
                "ms_per_call": 1000 * seconds / calls,
            }
        )
    return rows


def _torch_batched(model, settings, P, Q, R, fk, arm, n: int) -> dict:
    try:
        import torch
    except ImportError:
        return {"note": "skipped: torch is not installed"}
    from .. import model_dir
    from ..ik.torch_solver import TorchSolver

    device = "cuda" if torch.cuda.is_available() else "cpu"
    loaded = model_dir.load(model, device=device)
    solver = TorchSolver(loaded.arm, loaded.net, settings, device=device)
    solver.solve(P[:64], None if Q is None else Q[:64])
    started = time.perf_counter()
    result = solver.solve(P[:n], None if Q is None else Q[:n])
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    solved, _, _ = judge(fk, arm, result.q, P[:n], None if R is None else R[:n])
    out = {
        "device": device,
        "batch": n,
        "solve_rate": float(solved.mean()),
        "solved_per_s": float(solved.sum() / seconds),
    }
    if device == "cuda":
        out["device_name"] = torch.cuda.get_device_name(0)
    return out


def run_peers(arm, fk, P, Q, R, budget_s: float, say) -> dict:
    from . import peers

    out = {}
    if Q is None:
        return {name: "skipped: position-only model" for name in peers.PEERS}
    for name in peers.PEERS:
        peer, note = peers.make(name, arm, budget_s)
        if peer is None:
            out[name] = note
            continue
        say(f"peer: {peer.name}")
        q, seconds = one_at_a_time(peer.solve, P, Q, R, arm.dof)
        solved, _, _ = judge(fk, arm, q, P, R)
        out[name] = row(solved, seconds, solver=peer.name)
        getattr(peer, "close", lambda: None)()
    return out


from .report import format_table, markdown  # noqa: E402  (the report reads what run() writes)

__all__ = ["run", "format_table", "markdown", "machine"]
