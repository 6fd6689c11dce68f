"""`robot-ik-nn bench MODEL --web`: IK in a web page against the native package, and against
the JavaScript peers, on the same targets in the same run.

- Targets: joint sets PyBullet finds free (bench/collisions.free_joints, as ``--collisions``
  makes them), their poses by PyBullet's forward kinematics.
- The model exported for the web (robot_ik_nn.web.model, model.web.json) into a temporary
  folder with the targets; the bench harness (web/bench/bench.js) run in Node (web/bench/node.mjs)
  and in headless chromium (web/bench/page.js bundled by web/bench/build-bench.mjs, served from
  localhost, its result POSTed back here): this package's JavaScript solver, closed-chain-ik and
  three.js's CCDIKSolver, one target at a time on one thread, the peers restarting from random
  joints within the same time budget per target; each run timed as a whole by the page's clock.
  This package's solver is timed a second time on the same targets (``second_pass``): the first
  run, a few tenths of a second, includes the engine compiling the solver's code (numba's
  compiling is not in the native figure: its cache); the second's answers must all be the first's
  for its solved/s to be given.
- Every answer the harness returns is judged here by PyBullet's forward kinematics (1 mm /
  0.01 rad, joints inside their limits; CCDIKSolver, which aims positions only, on the position
  alone); solved/s = solved by that judge / the run's seconds.
- The native figure: the compiled solver on the same targets, one at a time on one CPU, as
  ``bench``'s ``single`` row, judged the same way.

Needs node (and web/node_modules: ``cd web && npm ci``) and chromium; collision checking is off
in both (the JavaScript solver has none).
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..arm.rotations import quaternion_to_matrix
from .measure import judge, one_at_a_time, one_cpu, row
from .web_page import CHROMIUM_FLAGS, WEB, WebBenchError, chromium_path, page_result  # noqa: F401

RUNTIMES = ("node", "chromium")
SAME_VERDICT = "pose"  # peers judged on the full pose (CCDIKSolver is not: position only)
HEAVY = ("answers", "judged_solved", "claimed")  # per-target arrays, judged then left out
PACKAGES = ("closed-chain-ik", "three", "esbuild")  # what the bench needs in web/node_modules


def web_folder(web: Path = WEB) -> Path:
    """The repository's web/ folder, checked for what the bench needs."""
    if not (web / "bench" / "bench.js").is_file():
        raise WebBenchError(
            f"no web bench at {web / 'bench'}: bench --web runs from a checkout of the repository"
        )
    missing = [m for m in PACKAGES if not (web / "node_modules" / m).is_dir()]
    if missing:
        raise WebBenchError(
            f"web/node_modules lacks {', '.join(missing)}: run `cd {web} && npm ci` (make web)"
        )
    return web


def node_path() -> str:
    found = shutil.which("node")
    if not found:
        raise WebBenchError("no node on PATH: apt-get install -y nodejs npm")
    return found


def pybullet_fk(sim):
    """PyBullet's forward kinematics as bench.measure.judge takes it: q -> (positions, rotation
    matrices)."""

    def fk(q):
        pos, quat = sim.forward(q)
        return pos, quaternion_to_matrix(quat)

    return fk


def make_targets(solver, sim, n: int, seed: int = 42):
    """``n`` targets from joint sets PyBullet finds free: (joints, positions, quaternions
    x y z w, rotation matrices), the poses by PyBullet's FK; and the largest distance (m)
    between PyBullet's tool position and the package's on them (the two agree on the arm)."""
    from .collisions import free_joints

    shapes = solver.with_settings(collision_check=True).collisions
    q = free_joints(sim, shapes, n, seed=seed)
    P, Q = sim.forward(q)
    ours, _ = solver.forward(q)
    return q, P, Q, quaternion_to_matrix(Q), float(np.max(np.linalg.norm(ours - P, axis=1)))


def write_inputs(folder: Path, solver, P, Q) -> None:
    """model.web.json and targets.json into ``folder``."""
    from ..web.model import write_web_model

    write_web_model(solver, folder / "model.web.json")
    targets = {
        "format": "robot_ik_nn.web_targets/1",
        "robot": solver.arm.name,
        "positions": np.asarray(P).tolist(),
        "quaternions": None if Q is None else np.asarray(Q).tolist(),
    }
    (folder / "targets.json").write_text(json.dumps(targets))


def _deadline(n: int, budget_ms: float) -> float:
    """Seconds a harness run may take: two peers spending the budget on every target, slack."""
    return 180.0 + n * (2 * 3 * budget_ms / 1000 + 0.01)


def run_node(folder: Path, budget_ms: float, warmup: int, web: Path = WEB) -> dict:
    """The harness in Node on ``folder``'s model and targets: its result object."""
    out = folder / "node.json"
    cmd = [node_path(), str(web / "bench" / "node.mjs"), "--model", str(folder / "model.web.json")]
    cmd += ["--targets", str(folder / "targets.json"), "--budget-ms", str(budget_ms)]
    cmd += ["--warmup", str(warmup), "--out", str(out)]
    n = len(json.loads((folder / "targets.json").read_text())["positions"])
    try:
        done = subprocess.run(
            cmd, cwd=web, capture_output=True, text=True, timeout=_deadline(n, budget_ms)
        )
    except subprocess.TimeoutExpired as err:
        raise WebBenchError(f"the Node bench ran past {err.timeout:.0f} s") from err
    if done.returncode != 0 or not out.is_file():
        raise WebBenchError(f"the Node bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(out.read_text())


def build_page(folder: Path, web: Path = WEB) -> None:
    """The bench page bundled into ``folder`` (bench.html, bench.js)."""
    done = subprocess.run(
        [node_path(), str(web / "bench" / "build-bench.mjs"), "--outdir", str(folder)],
        cwd=web,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise WebBenchError(f"the bench page did not build: {done.stderr[-2000:]}")


def run_chromium(folder: Path, budget_ms: float, warmup: int) -> dict:
    """The harness in headless chromium: the page served from ``folder`` on localhost, its
    result POSTed back. Returns the result object (runtime: the browser's version too)."""
    n = len(json.loads((folder / "targets.json").read_text())["positions"])
    query = (
        f"bench.html?model=model.web.json&targets=targets.json&budget={budget_ms}"
        f"&warmup={warmup}&post=/result"
    )
    result = page_result(folder, query, _deadline(n, budget_ms), "bench")
    result["runtime"]["browser"] = _version([chromium_path(), "--version"])
    return result


def _version(cmd) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def judged(harness: dict, arm, fk, P, R, pose: bool) -> dict:
    """The harness's rows, every answer judged by ``fk`` (PyBullet's): solved, solve rate,
    solved/s over the run's own seconds, and how often the harness's judge (or our solver's own
    claim) said solved where PyBullet does not."""
    rows = {}
    for name, r in harness["solvers"].items():
        if "skipped" in r:
            rows[name] = {"skipped": r["skipped"]}
            continue
        q = np.array([[np.nan] * arm.dof if a is None else a for a in r["answers"]], dtype=float)
        full = pose and r["verdict"] == "pose"
        solved, pe, re = judge(fk, arm, q, P, R if full else None)
        js = np.asarray(r["judged_solved"], dtype=bool)
        out = {k: v for k, v in r.items() if k not in HEAVY}
        out.update(
            solved=int(solved.sum()),
            solve_rate=float(solved.mean()),
            solved_per_s=float(solved.sum() / r["seconds"]) if r["seconds"] > 0 else None,
            solved_by_harness_judge=int(js.sum()),
            harness_solved_not_by_pybullet=int(np.sum(js & ~solved)),
        )
        if r.get("claimed") is not None:
            out["claimed_not_by_pybullet"] = int(np.sum(np.asarray(r["claimed"], bool) & ~solved))
        again = r.get("second_pass")
        if again:  # the same targets timed again: solved/s only where every answer is the same
            same = again["same_answers"] == len(q) and again["seconds"] > 0
            out["second_pass"] = {
                **again,
                "solved_per_s": float(solved.sum() / again["seconds"]) if same else None,
            }
        rows[name] = out
    return rows


def ratios(rows: dict, native: dict) -> dict:
    """This package's JavaScript solver against the native one and the best peer with the same
    verdict (and against CCDIKSolver on its position-only verdict, for the record)."""
    ours = rows.get("robot_ik_nn", {}).get("solved_per_s")
    if not ours:
        return {}
    out = {"web_over_native": ours / native["solved_per_s"] if native["solved_per_s"] else None}
    again = (rows["robot_ik_nn"].get("second_pass") or {}).get("solved_per_s")
    if again and native["solved_per_s"]:
        out["second_pass_over_native"] = again / native["solved_per_s"]
    same = {
        k: r["solved_per_s"]
        for k, r in rows.items()
        if k != "robot_ik_nn" and r.get("verdict") == SAME_VERDICT and r.get("solved_per_s")
    }
    if same:
        best = max(same, key=same.get)
        out.update(best_peer=best, web_over_best_peer=ours / same[best])
    else:  # no peer solved any target with the same verdict
        out.update(best_peer=None, web_over_best_peer=None)
    ccd = rows.get("three_ccdik", {}).get("solved_per_s")
    out["web_over_ccdik_position_only"] = ours / ccd if ccd else None
    return out


def native(solver, fk, P, Q, R) -> dict:
    """The compiled solver on the same targets, one at a time on one CPU (bench's ``single``
    row), judged by ``fk``."""
    with one_cpu():
        q, seconds = one_at_a_time(
            lambda p, quat, _R: solver.solve(p, quat).q, P, Q, None, solver.arm.dof
        )
    solved, _, _ = judge(fk, solver.arm, q, P, R)
    return row(solved, seconds, solver="robot_ik_nn compiled (numba), one CPU")


def _commit() -> str:
    root = WEB.parent
    head = _version(["git", "-C", str(root), "rev-parse", "--short", "HEAD"])
    dirty = _version(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return f"{head}{' (uncommitted changes)' if dirty else ''}" if head else ""


def _packages(web: Path) -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = json.loads((web / "node_modules" / name / "package.json").read_text())[
                "version"
            ]
        except (OSError, ValueError, KeyError):
            out[name] = None
    return out


def measure(
    model,
    targets: int = 5000,
    budget_ms: float = 5.0,
    warmup: int = 50,
    runtimes=RUNTIMES,
    seed: int = 42,
    say=None,
    crowd_frames: int = 200,
) -> dict:
    """Targets, the harness in each runtime, the native figure, all judged by PyBullet; with
    chromium, the crowd page's IK time per frame too (``crowd_frames``; 0: not measured)."""
    from ..hardware.pybullet_arm import ArmSim
    from ..ik.solver import Solver
    from . import machine

    say = say or (lambda text: None)
    web = web_folder()
    node_path()
    if "chromium" in runtimes:
        chromium_path()
    solver = Solver.load(model)
    if solver.settings.collision_check:  # the JavaScript solver checks none: neither here
        solver = solver.with_settings(collision_check=False)
    arm, pose = solver.arm, solver.mode != "position"
    result = {
        "robot": arm.name,
        "dof": arm.dof,
        "mode": solver.mode,
        "targets": targets,
        "targets_from": f"joint sets PyBullet finds free (seed {seed}), poses by PyBullet's FK",
        "judge": "PyBullet's forward kinematics on the joints returned: 1 mm / 0.01 rad, inside "
        "the limits (three_ccdik, which aims positions only: the position alone)",
        "budget_ms": budget_ms,
        "warmup": warmup,
        "one_target_at_a_time": "one thread; each run timed as a whole by its own clock; the "
        "native solver pinned to one CPU (bench's single row), Node and chromium not (their "
        "garbage collector and compiler threads run where the OS puts them)",
    }
    with ArmSim(arm) as sim:
        fk = pybullet_fk(sim)
        say(f"{targets:,} targets from joint sets PyBullet finds free")
        _, P, Q, R, agree = make_targets(solver, sim, targets, seed)
        result["fk_agreement_m"] = agree
        with tempfile.TemporaryDirectory(prefix="robot_ik_nn_web_bench_") as tmp:
            folder = Path(tmp)
            write_inputs(folder, solver, P, Q if pose else None)
            result["model_file_bytes"] = (folder / "model.web.json").stat().st_size
            say("native: the compiled solver, one target at a time on one CPU")
            result["native"] = native(solver, fk, P, Q if pose else None, R if pose else None)
            for runtime in runtimes:
                say(f"{runtime}: the web bench ({budget_ms:g} ms budget per target for the peers)")
                if runtime == "node":
                    harness = run_node(folder, budget_ms, warmup, web)
                else:
                    build_page(folder, web)
                    harness = run_chromium(folder, budget_ms, warmup)
                rows = judged(harness, arm, fk, P, R if pose else None, pose)
                result[runtime] = {
                    "runtime": harness["runtime"],
                    "timer_resolution_ms": harness["timer_resolution_ms"],
                    "solvers": rows,
                    "ratios": ratios(rows, result["native"]),
                }
    if "chromium" in runtimes and crowd_frames > 0:
        from .web_crowd import run_crowd

        say(f"chromium: the crowd page, 100 arms, {crowd_frames} frames")
        result["crowd"] = run_crowd(model, solver, frames=crowd_frames)
    result.update(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        commit=_commit(),
        machine=machine(),
        packages=_packages(web),
    )
    return result


def format_table(result: dict) -> str:
    """The figures as a markdown table (the .md beside the JSON)."""
    lines = [
        f"# {result['robot']}: IK in a web page ({result['targets']:,} targets, "
        f"{result['budget_ms']:g} ms budget per target for the peers)",
        "",
        f"{result['targets_from']}; judged by {result['judge']}. {result['date']}, "
        f"commit {result['commit']}, {result['machine'].get('cpu', '')}.",
        "",
        "| runtime | solver | verdict | solved | solved/s | us per target |",
        "|---|---|---|---|---|---|",
    ]
    n = result["native"]
    lines.append(
        f"| native (Python, numba) | robot_ik_nn compiled | pose | {100 * n['solve_rate']:.2f} % "
        f"| {n['solved_per_s']:,.0f} | {n['us_mean']:.1f} |"
    )
    for runtime in RUNTIMES:
        if runtime not in result:
            continue
        for name, r in result[runtime]["solvers"].items():
            if "skipped" in r:
                lines.append(f"| {runtime} | {name} | {r['skipped']} | | | |")
                continue
            rate = "" if r["solved_per_s"] is None else f"{r['solved_per_s']:,.0f}"
            lines.append(
                f"| {runtime} | {r['label']} | {r['verdict']} | {100 * r['solve_rate']:.2f} % "
                f"| {rate} | {r['us_per_target']:.1f} |"
            )
    lines.append("")
    for runtime in RUNTIMES:
        ours = result.get(runtime, {}).get("solvers", {}).get("robot_ik_nn", {})
        again = ours.get("second_pass")
        if again:
            rate = again.get("solved_per_s")
            n = result["targets"]
            lines.append(
                f"- {runtime}: robot_ik_nn timed again on the same targets (its code compiled by "
                f"then): {'-' if rate is None else f'{rate:,.0f}'} solved/s, "
                f"{1e6 * again['seconds'] / n:.1f} us per target; {again['same_answers']:,} of "
                f"{n:,} answers the same as the first pass's"
            )
    for runtime in RUNTIMES:
        ratio = result.get(runtime, {}).get("ratios") or {}
        if ratio:
            parts = [
                f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                for key, value in ratio.items()
            ]
            lines.append(f"- {runtime}: " + ", ".join(parts))
    if "crowd" in result:
        from .web_crowd import format_crowd

        lines.append(format_crowd(result["crowd"]))
    return "\n".join(lines)
