"""`robot-ik-nn bench MODEL --solutions K`: how many of a target's distinct answers the solver
finds, against a brute-force search of the same kind.

For each target (forward kinematics of random joints, so at least one answer exists) the solver
is asked for K answers with its own settings, one thread, timed; then a brute-force search, the
same compiled search given ``brute_restarts`` uniformly random seeds and no early stop, collects
every distinct answer it meets (same distinctness threshold). Completeness is
found / min(K, brute-force count), averaged over the targets: a redundant arm (the Panda) has
more answers than anyone can list, so K of them is complete. Every answer of both searches is
judged again with the package's forward kinematics.
"""

from __future__ import annotations

import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from ..evaluate import held_out_targets
from ..ik import several_answers
from ..ik.solver import Solver
from .measure import judge, one_cpu


def completeness(
    model, k: int = 8, targets: int = 200, brute_restarts: int = 10000, seed: int = 777, say=None
) -> dict:
    say = say or (lambda text: None)
    solver = Solver.load(model)
    arm, pose = solver.arm, solver.mode == "pose"
    brute = solver.with_settings(solution_attempts=brute_restarts)
    _, P, R = held_out_targets(arm, targets, seed)
    Q = matrix_to_quaternion(R) if pose else None
    found, listed, times, ratios, wrong = [], [], [], [], 0
    with one_cpu():
        solver.solve(P[0], None if Q is None else Q[0], solutions=k)  # compile and warm up
        for i in range(targets):
            if i % 20 == 0:
                say(f"{k} answers and a brute-force search: target {i + 1} of {targets}")
            quat = None if Q is None else Q[i]
            started = time.perf_counter()
            ours = solver.solve(P[i], quat, solutions=k)
            times.append(time.perf_counter() - started)
            everything = brute.solve(P[i], quat, solutions=brute_restarts, patience=brute_restarts)
            ok = [_solved(solver, a, P[i], None if R is None else R[i]) for a in ours]
            wrong += sum(1 for a, good in zip(ours, ok) if a.status == "solved" and not good)
            n_ours = sum(ok)
            n_all = sum(_solved(solver, a, P[i], None if R is None else R[i]) for a in everything)
            found.append(n_ours)
            listed.append(n_all)
            ratios.append(min(1.0, n_ours / min(k, n_all)) if n_all else 1.0)
    times_ms = np.array(times) * 1000
    return {
        "robot": arm.name,
        "solutions": k,
        "targets": targets,
        "brute_restarts": brute_restarts,
        "threshold_rad": solver.settings.solution_threshold,
        "attempts": solver.settings.solution_attempts,
        "completeness_mean": float(np.mean(ratios)),
        "completeness_min": float(np.min(ratios)),
        "found_mean": float(np.mean(found)),
        "brute_force_mean": float(np.mean(listed)),
        "brute_force_max": int(np.max(listed)),
        "ms_median": float(np.median(times_ms)),
        "ms_p99": float(np.percentile(times_ms, 99)),
        "ms_mean": float(np.mean(times_ms)),
        "answers_not_solved_by_our_fk": int(wrong),
        "orders": list(several_answers.ORDERS),
    }


def _solved(solver, answer, p, R) -> bool:
    if answer.q is None:
        return False
    solved, _, _ = judge(
        solver.forward, solver.arm, answer.q[None], p[None], None if R is None else R[None]
    )
    return bool(solved[0])


def format_table(r: dict) -> str:
    return (
        f"{r['robot']}: {r['solutions']} answers asked, {r['targets']} targets, brute force "
        f"{r['brute_restarts']:,} restarts (threshold {r['threshold_rad']} rad)\n"
        f"  completeness {r['completeness_mean'] * 100:.1f} % (min {r['completeness_min']:.2f}); "
        f"found {r['found_mean']:.2f} per target, brute force {r['brute_force_mean']:.2f} "
        f"(max {r['brute_force_max']})\n"
        f"  time per target: median {r['ms_median']:.3f} ms, p99 {r['ms_p99']:.3f} ms\n"
        f"  answers reported solved that our FK does not confirm: "
        f"{r['answers_not_solved_by_our_fk']}"
    )
