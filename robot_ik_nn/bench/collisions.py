"""`robot-ik-nn bench MODEL --collisions`: self-collision-free answers, judged by PyBullet.

- ``model_vs_pybullet``: random joint configurations, each judged by the sphere model
  (ik/collision.py) and by PyBullet's own contact query (``getClosestPoints`` at twice the model's
  margin, the gap the model keeps between two shapes) on the links the model covers, but not two
  links on one rigid body or one joint apart (PyBullet itself skips only a link and its parent, so
  it would report a hand touching the flange it is bolted to). A false negative (the model says
  free, PyBullet finds contact) is what must not happen; a false positive (the model says
  collision, PyBullet says free) costs answers.
- ``answers``: targets from uniformly random joints, solved with ``collision_check`` on; every
  answer reported solved is put into PyBullet and queried the same way.
- ``solve_rate``: on targets that have a collision-free answer: those made by collision-free
  joints (free by the model: an answer exists by construction), and, on a sample of the targets
  the solver left unsolved, a brute-force search (``brute_restarts`` seeds) that looks for a free
  answer the solver missed.
- ``cost``: the same targets one at a time on one CPU, with and without checking.
"""

from __future__ import annotations

import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from ..evaluate import held_out_targets
from .measure import judge, one_cpu


def measure(model, targets: int = 10000, compare: int = 2000, brute: int = 200, **kw) -> dict:
    from ..hardware.pybullet_arm import ArmSim
    from ..ik.solver import Solver

    say = kw.get("say") or (lambda text: None)
    plain = Solver.load(model)
    solver = plain.with_settings(collision_check=True)
    arm, spheres = solver.arm, solver.collisions
    pose = solver.mode == "pose"
    out = {
        "robot": arm.name,
        "model": spheres.describe(),
        "margin_m": solver.settings.collision_margin,
    }
    with ArmSim(arm) as sim:
        contact = _pybullet_judge(sim, spheres, 2 * solver.settings.collision_margin)
        say("the sphere model against PyBullet")
        Q = held_out_targets(arm, compare, seed=41)[0]
        ours = spheres.in_collision_batch(Q)
        theirs = np.array([contact(q) for q in Q])
        out["model_vs_pybullet"] = {
            "configurations": compare,
            "pybullet_in_collision": int(theirs.sum()),
            "model_in_collision": int(ours.sum()),
            "false_negatives": int(np.sum(~ours & theirs)),
            "false_positives": int(np.sum(ours & ~theirs)),
            "false_positive_rate_of_free": float(np.sum(ours & ~theirs) / max(1, np.sum(~theirs))),
        }
        say(f"{targets:,} targets solved with collision checking")
        q_made, P, R = held_out_targets(arm, targets, seed=42)
        Qt = matrix_to_quaternion(R) if pose else None
        result = solver.solve_batch(P, Qt)
        solved, _, _ = judge(solver.forward, arm, result.q, P, R if pose else None)
        solved &= result.solved
        hits = [int(i) for i in np.flatnonzero(solved) if contact(result.q[i])]
        out["answers"] = {
            "targets": targets,
            "solved": int(solved.sum()),
            "solved_in_collision_by_pybullet": len(hits),
            "solved_in_collision_by_the_model": int(
                spheres.in_collision_batch(result.q[solved]).sum()
            ),
            "batch_seconds": result.seconds,
        }
    free_made = ~spheres.in_collision_batch(q_made)
    say("a brute-force search on targets left unsolved")
    missed = np.flatnonzero(~result.solved & (result.codes != 2))
    sample = missed[: min(brute, len(missed))]
    searcher = solver.with_settings(restarts=10000)
    found = searcher.solve_batch(P[sample], None if Qt is None else Qt[sample]).solved
    out["solve_rate"] = {
        "targets_from_free_joints": int(free_made.sum()),
        "solved_of_those": int(result.solved[free_made].sum()),
        "solve_rate_from_free_joints": float(result.solved[free_made].mean()),
        "unsolved": len(missed),
        "unsolved_searched_by_brute_force": len(sample),
        "brute_force_restarts": 10000,
        "brute_force_found_free": int(found.sum()),
        "estimated_solve_rate_where_a_free_answer_exists": float(
            solved.sum() / (solved.sum() + found.sum() / max(1, len(sample)) * len(missed))
        ),
    }
    say("cost of checking, one target at a time")
    out["cost"] = _cost(
        plain, solver, P[free_made][:2000], None if Qt is None else Qt[free_made][:2000]
    )
    return out


def _pybullet_judge(sim, spheres, distance: float):
    """q -> whether PyBullet finds two of the model's links closer than ``distance``, links
    that one rigid body carries (a hand fixed to a flange) or one joint connects left out; the
    pairs the model leaves out as never in contact are judged too."""
    frame = spheres.links

    def contact(q) -> bool:
        sim.set_joints(q)
        return any(
            a in frame and b in frame and abs(frame[a] - frame[b]) > 1
            for a, b in sim.self_collisions(distance)
        )

    return contact


def _cost(plain, checked, P, Q) -> dict:
    times = {}
    with one_cpu():
        for name, solver in (("without", plain), ("with", checked)):
            solver.solve(P[0], None if Q is None else Q[0])
            seconds = np.empty(len(P))
            for i in range(len(P)):
                started = time.perf_counter()
                solver.solve(P[i], None if Q is None else Q[i])
                seconds[i] = time.perf_counter() - started
            times[name] = seconds * 1e6
    return {
        "targets": len(P),
        "us_median_without": float(np.median(times["without"])),
        "us_median_with": float(np.median(times["with"])),
        "us_mean_without": float(times["without"].mean()),
        "us_mean_with": float(times["with"].mean()),
        "ratio_median": float(np.median(times["with"]) / np.median(times["without"])),
        "ratio_mean": float(times["with"].mean() / times["without"].mean()),
    }


def format_table(r: dict) -> str:
    m, a, s, c = r["model_vs_pybullet"], r["answers"], r["solve_rate"], r["cost"]
    d = r["model"]
    return (
        f"{r['robot']}: {d['spheres']} spheres, {d['sphere_pairs']} sphere pairs checked "
        f"(frame pairs: {d['frame_pairs_enabled']} checked, {d['disabled']} left out)\n"
        f"  model vs PyBullet on {m['configurations']} random joints: {m['false_negatives']} "
        f"false negatives, {m['false_positives']} false positives "
        f"({m['false_positive_rate_of_free'] * 100:.1f} % of the free ones)\n"
        f"  {a['targets']:,} targets: {a['solved']:,} solved, "
        f"{a['solved_in_collision_by_pybullet']} of them in collision by PyBullet\n"
        f"  solve rate where a free answer exists: {s['solve_rate_from_free_joints'] * 100:.2f} % "
        f"(targets from free joints); brute force found {s['brute_force_found_free']} free "
        f"answers in {s['unsolved_searched_by_brute_force']} unsolved targets\n"
        f"  cost: median {c['us_median_with']:.1f} µs with, {c['us_median_without']:.1f} µs "
        f"without ({c['ratio_median']:.2f}x); mean {c['ratio_mean']:.2f}x"
    )
