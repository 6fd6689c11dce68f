"""`robot-ik-nn bench MODEL --collisions`: self-collision checking, judged by PyBullet.

The judge is PyBullet's own contact query (``getClosestPoints`` at the model's margin) on the
URDF's shapes, over the link pairs the model checks: two links on one rigid body and the pairs
the model leaves out (the SRDF list, ik/collision.py) are left out of both. The model never picks
a test case: targets are made from joints PyBullet finds free.

- ``model_vs_pybullet``: random joint sets judged by both. A false negative (the model says free,
  PyBullet finds contact) must not happen; a false positive (the model says collision, PyBullet
  says free) refuses an answer the arm can take. Contacts on the pairs left out as "Never" are
  counted too (the sampling that left them out can miss a rare contact).
- ``answers``: targets made from joint sets PyBullet finds free (so a free answer exists),
  solved with checking on; each answer reported solved is put through forward kinematics and
  into PyBullet.
- ``cost``: the same targets one at a time on one CPU, with and without checking.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..arm.model import ArmModel
from ..arm.resources import PYBULLET_DATA_ARMS, pybullet_data_path
from ..arm.rotations import matrix_to_quaternion
from ..ik.collision import CollisionModel
from ..ik.solver import Solver
from .measure import judge, one_cpu


def pybullet_contacts(sim, model):
    """q -> (the checked link pairs PyBullet finds closer than the model's margin, the pairs
    left out as "Never" it finds so)."""
    frame, disabled = model.links, model.disabled

    def contacts(q):
        sim.set_joints(q)
        checked, never = set(), set()
        for a, b in sim.self_collisions(model.margin):
            if a not in frame or b not in frame or frame[a] == frame[b]:
                continue
            key = (a, b) if a <= b else (b, a)
            if key not in disabled:
                checked.add(key)
            elif disabled[key] == "Never":
                never.add(key)
        return checked, never

    return contacts


def free_joints(sim, model, n: int, seed: int, limit_margin: float = 0.0) -> np.ndarray:
    """``n`` uniformly random joint sets that PyBullet finds free on the checked pairs, limited
    joints ``limit_margin`` inside their limits."""
    arm, rng = sim.arm, np.random.default_rng(seed)
    keep = np.where(arm.continuous, 0.0, limit_margin)
    lo = np.where(np.isfinite(arm.lower), arm.lower + keep, -np.pi)
    hi = np.where(np.isfinite(arm.upper), arm.upper - keep, np.pi)
    contacts, out = pybullet_contacts(sim, model), []
    while len(out) < n:
        q = rng.uniform(lo, hi)
        if not contacts(q)[0]:
            out.append(q)
    return np.array(out).reshape(-1, arm.dof)


def compare(sim, model, Q) -> dict:
    """The model against PyBullet on joint sets ``Q``."""
    contacts = pybullet_contacts(sim, model)
    ours = model.in_collision_batch(Q)
    found = [contacts(q) for q in Q]
    theirs = np.array([bool(c) for c, _ in found])
    never = sorted({p for _, n in found for p in n})
    return {
        "configurations": len(Q),
        "pybullet_in_collision": int(theirs.sum()),
        "model_in_collision": int(ours.sum()),
        "false_negatives": int(np.sum(~ours & theirs)),
        "false_positives": int(np.sum(ours & ~theirs)),
        "false_positive_rate_of_free": float(np.sum(ours & ~theirs) / max(1, np.sum(~theirs))),
        "never_pairs_found_in_contact": [list(p) for p in never],
    }


def measure(model, targets: int = 1000, compare_n: int = 2000, **kw) -> dict:
    from ..hardware.pybullet_arm import ArmSim
    say = kw.get("say") or (lambda text: None)
    plain = Solver.load(model)
    solver = plain.with_settings(collision_check=True)
    arm, shapes = solver.arm, solver.collisions
    pose = solver.mode == "pose"
    out = {"robot": arm.name, "model": shapes.describe()}
    with ArmSim(arm) as sim:
        say(f"the collision model against PyBullet on {compare_n:,} random joint sets")
        lo = np.where(np.isfinite(arm.lower), arm.lower, -np.pi)
        hi = np.where(np.isfinite(arm.upper), arm.upper, np.pi)
        Q = np.random.default_rng(41).uniform(lo, hi, (compare_n, arm.dof))
        out["model_vs_pybullet"] = compare(sim, shapes, Q)
        say(f"{targets:,} targets from joint sets PyBullet finds free, solved with checking")
        q_made = free_joints(sim, shapes, targets, seed=42)
        P, R = solver.forward(q_made)
        Qt = matrix_to_quaternion(R) if pose else None
        result = solver.solve_batch(P, Qt)
        solved, _, _ = judge(solver.forward, arm, result.q, P, R if pose else None)
        solved &= result.solved
        contacts = pybullet_contacts(sim, shapes)
        hits = [int(i) for i in np.flatnonzero(solved) if contacts(result.q[i])[0]]
        out["answers"] = {
            "targets_from_pybullet_free_joints": targets,
            "solved": int(solved.sum()),
            "solve_rate": float(solved.mean()),
            "reported_solved_but_not_by_fk": int(np.sum(result.solved & ~solved)),
            "solved_in_collision_by_pybullet": len(hits),
            "unsolved_reasons": sorted({result.reason[int(i)] for i in np.flatnonzero(~solved)}),
            "batch_seconds": result.seconds,
        }
    say("every arm in pybullet_data against PyBullet")
    out["pybullet_data_arms"] = vendor_arms(compare_n, say)
    say("cost of checking, one target at a time")
    out["cost"] = _cost(plain, solver, P[:2000], None if Qt is None else Qt[:2000])
    return out


def vendor_arms(n: int, say) -> dict:
    """The model against PyBullet on ``n`` random joint sets of every arm in pybullet_data."""
    from ..hardware.pybullet_arm import ArmSim
    out = {}
    for relative, tip in PYBULLET_DATA_ARMS.items():
        say(f"  {relative}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vendors' files: missing inertials and the like
            arm = ArmModel.load(pybullet_data_path() / relative, tip=tip)
            model = CollisionModel.from_arm(arm)
            with ArmSim(arm) as sim:
                lo = np.where(np.isfinite(arm.lower), arm.lower, -np.pi)
                hi = np.where(np.isfinite(arm.upper), arm.upper, np.pi)
                Q = np.random.default_rng(43).uniform(lo, hi, (n, arm.dof))
                out[relative] = {"model": model.describe(), **compare(sim, model, Q)}
    return out


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
    m, a, c, d = r["model_vs_pybullet"], r["answers"], r["cost"], r["model"]
    lines = [
        f"  {name}: {v['false_negatives']} false negatives, {v['false_positives']} false "
        f"positives ({v['false_positive_rate_of_free'] * 100:.2f} % of the free ones), "
        f"{v['pybullet_in_collision']} of {v['configurations']} in contact by PyBullet"
        for name, v in r.get("pybullet_data_arms", {}).items()
    ]
    if "dds" in r:
        x = r["dds"]
        lines.append(
            f"  over DDS: {x['answered']}/{x['sent']} commanded, median {x['ms_median']:.2f} ms, "
            f"p99 of every target sent {x['ms_p99_of_every_target_sent']:.2f} ms, start-up "
            f"{x['startup_s']:.2f} s"
        )
    return "\n".join([_summary(r, m, a, c, d), *lines])


def _summary(r, m, a, c, d) -> str:
    return (
        f"{r['robot']}: {d['shapes']} shapes, {d['link_pairs_checked']} link pairs checked "
        f"(left out: {d['disabled']}), margin {d['margin_m']} m\n"
        f"  model vs PyBullet on {m['configurations']} random joint sets: "
        f"{m['false_negatives']} false negatives, {m['false_positives']} false positives "
        f"({m['false_positive_rate_of_free'] * 100:.2f} % of the free ones)\n"
        f"  {a['targets_from_pybullet_free_joints']:,} targets from PyBullet-free joints: "
        f"{a['solved']:,} solved ({a['solve_rate'] * 100:.2f} %), "
        f"{a['solved_in_collision_by_pybullet']} of them in contact by PyBullet\n"
        f"  cost: median {c['us_median_with']:.1f} µs with, {c['us_median_without']:.1f} µs "
        f"without ({c['ratio_median']:.2f}x); mean {c['ratio_mean']:.2f}x"
    )
