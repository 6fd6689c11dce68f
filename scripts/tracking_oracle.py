"""Experiment (issue 32, streams): would a stream that keeps to the MIDDLE of its self-motion
interval stop jumping? Slow on purpose: at every target the whole self-motion through the
answer is swept (tangent continuation, adapted from the unmerged ``paths-wip`` branch's
ik/selfmotion.py) and the answer moved towards the middle of the interval the joint limits cut,
measured along the curve, by at most ``--recentre`` rows (each row ``SPACING`` rad on its
largest joint) per target, so that re-centring itself never jumps.

    PYTHONPATH=$PWD .venv/bin/python scripts/tracking_oracle.py /tmp/models/franka_panda --paths 50

Prints, for the first ``--paths`` bench paths (seeds 1000..) that jump today: how many still jump
with the oracle, and each remaining jump's kind: the interval under the stream shrank to
nothing ("vanished"), the stream sat at an end of a long interval ("end"), or neither ("other").
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from numba import njit

from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.bench.paths import spline_path, streamed
from robot_ik_nn.ik.forward import quat_to_matrix
from robot_ik_nn.ik.kernel import LAM_TRACK, _damped_step, refine, residual
from robot_ik_nn.ik.layout import ITERS, POS_TOL, ROT_TOL, parts, views
from robot_ik_nn.ik.solver import Solver

SPACING, MAX_STEP, MOST = 0.01, 0.05, 3000
# why a sweep ended one way
LIMIT, THROWN, MISSED, LOOPED, CAPPED, FLAT = 1, 2, 3, 4, 5, 6
WHY = {
    LIMIT: "limit",
    THROWN: "thrown",
    MISSED: "missed",
    LOOPED: "loop",
    CAPPED: "cap",
    FLAT: "flat",
}


@njit(cache=True)
def _null(J, m, n, v, ws, out):
    Jv, H, rhs, step = np.empty(6), ws[8], ws[3], ws[2]
    for r in range(m):
        acc = 0.0
        for j in range(n):
            acc += J[r, j] * v[j]
        Jv[r] = acc
    _damped_step(J, Jv, m, n, 1e-9, H, rhs, step)
    for j in range(n):
        out[j] = v[j] - step[j]


@njit(cache=True)
def _largest(v):
    b = 0.0
    for j in range(v.shape[0]):
        b = max(b, abs(v[j]))
    return b


@njit(cache=True)
def sweep_both(model, p, quat, has_quat, seed, spacing, max_step, most, scratch, plus, minus, why):
    """The self-motion through exact ``seed``: rows one way into ``plus``, the other into
    ``minus`` (each from its row 0, the seed not included), ``why[0]``/``why[1]`` the reason each
    way ended. Returns (rows plus, rows minus)."""
    chain, cfg, _, _ = parts(model)
    n = seed.shape[0]
    ws = views(scratch, n, int(model[7]), max(int(model[2]), 1))
    Rt = ws[12]
    if has_quat:
        quat_to_matrix(quat, Rt)
    iters = int(cfg[ITERS])
    m = 6 if has_quat else 3
    q, prev, t, v, t0 = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    counts = np.zeros(2, np.int64)
    why[0], why[1] = FLAT, FLAT
    residual(chain, cfg, seed, p, Rt, has_quat, ws[4], ws[6], ws, True)
    best = 0.0
    for j0 in range(n):
        for j in range(n):
            v[j] = 0.0
        v[j0] = 1.0
        _null(ws[6], m, n, v, ws, ws[1])
        size = _largest(ws[1])
        if size > best:
            best = size
            t0[:] = ws[1]
    if best < 1e-6:
        return 0, 0
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0
        out = plus if side == 0 else minus
        if side == 1 and why[0] == LOOPED:
            why[1] = LOOPED
            break
        prev[:] = seed
        for j in range(n):
            v[j] = sign * t0[j] / best
        count = 0
        why[side] = CAPPED
        h = spacing  # the step, halved (down to spacing / 16) where the curve turns fast
        while count < most:
            for j in range(n):
                q[j] = prev[j] + h * v[j]
            pe, re, _ = refine(chain, cfg, q, p, Rt, has_quat, iters, ws, LAM_TRACK, LAM_TRACK)
            moved = 0.0
            for j in range(n):
                moved = max(moved, abs(q[j] - prev[j]))
            bad = pe > cfg[POS_TOL] or re > cfg[ROT_TOL] or moved > max_step * h / spacing
            if bad and h > spacing / 16:
                h *= 0.5
                continue
            if pe > cfg[POS_TOL] or re > cfg[ROT_TOL]:
                why[side] = MISSED
                break
            if moved < 0.25 * h:
                why[side] = LIMIT
                break
            if moved > max_step * h / spacing:
                why[side] = THROWN
                break
            h = min(spacing, 2.0 * h)
            closed = 0.0
            for j in range(n):
                closed = max(closed, abs(q[j] - seed[j]))
            if count > 2 and closed < spacing:
                why[side] = LOOPED
                break
            out[count] = q
            count += 1
            residual(chain, cfg, q, p, Rt, has_quat, ws[4], ws[6], ws, True)
            for j in range(n):
                v[j] = q[j] - prev[j]
            _null(ws[6], m, n, v, ws, t)
            size = _largest(t)
            if size < 1e-3 * moved:
                why[side] = FLAT
                break
            for j in range(n):
                v[j] = t[j] / size
            prev[:] = q
        counts[side] = count
    return counts[0], counts[1]


class Sweeper:
    def __init__(self, solver):
        self.s = solver
        n = solver.arm.dof
        self.plus, self.minus = np.empty((MOST, n)), np.empty((MOST, n))
        self.why = np.zeros(2, np.int64)
        self.q = np.empty(n)

    def curve(self, p, quat, q):
        """(rows along the curve (k, dof), index of q in them, (why minus, why plus))."""
        self.q[:] = q
        a, b = sweep_both(
            self.s._model,
            p,
            quat,
            True,
            self.q,
            SPACING,
            MAX_STEP,
            MOST,
            self.s._scratch,
            self.plus,
            self.minus,
            self.why,
        )
        rows = np.vstack([self.minus[:b][::-1], q[None], self.plus[:a]])
        return rows, b, (int(self.why[1]), int(self.why[0]))


def oracle_stream(solver, sweeper, P, Q, start, recentre, q_path=None):
    """The stream, re-centred along the self-motion after each answer. Returns answers and per
    target (interval rows, rows to the nearer end, why the ends ended)."""
    n = len(P)
    out = np.full((n, solver.arm.dof), np.nan)
    info = []
    last = start
    for i in range(n):
        ans = solver.solve(P[i], Q[i], current=last, last=last)
        if ans.q is None:
            info.append((0, 0, (0, 0), False))
            continue
        q = ans.q
        rows, at, why = sweeper.curve(P[i], Q[i], q)
        length = len(rows) - 1
        on = bool(np.abs(rows - q_path[i]).max(axis=1).min() < 0.05) if q_path is not None else 0
        if why == (LOOPED, LOOPED) or length == 0:
            info.append((-1 if LOOPED in why else 0, 0, why, on))
        else:
            mid = length / 2.0
            goal = int(round(mid))
            move = max(-recentre, min(recentre, goal - at))
            at = at + move
            q = rows[at]
            info.append((length, min(at, length - at), why, on))
        out[i] = last = q
    return out, info


def largest_step(start, q):
    s = np.abs(np.diff(np.vstack([start, q]), axis=0)).max(axis=1)
    return np.where(np.isnan(s), np.inf, s)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--paths", type=int, default=50)
    ap.add_argument("--recentre", type=int, default=5, help="rows per target at most")
    ap.add_argument("--track-limits", type=float, default=None)
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    solver = Solver.load(a.model).without_network()
    if a.track_limits is not None:
        solver = solver.with_settings(track_limits=a.track_limits)
    arm = solver.arm
    sweeper = Sweeper(solver)
    results = []
    seed = 1000
    while len(results) < a.paths and seed < 1500:
        q_path, P, R = spline_path(arm, solver.forward, seed)
        Q = matrix_to_quaternion(R)
        start = q_path[0]
        q_today, _ = streamed(solver, P, Q, start)
        today = largest_step(start, q_today)
        if today.max() <= 0.2:
            seed += 1
            continue
        q, info = oracle_stream(solver, sweeper, P, Q, start, a.recentre, q_path)
        steps = largest_step(start, q)
        p_q, r_q = solver.forward(np.nan_to_num(q))
        ok = (np.linalg.norm(p_q - P, axis=1) <= 1e-3) & np.all(np.isfinite(q), axis=1)
        jumps = np.flatnonzero(steps > 0.2)
        kinds = []
        for i in jumps:
            length, margin, why, on = info[i - 1] if i > 0 else (0, 0, (0, 0), True)
            left = [k for k in range(i) if info[k][3]]
            left = left[-1] + 1 if left else 0  # the first target off the path's component
            hist = [info[k][0] for k in range(max(0, i - 30), i)]
            if 0 <= length <= 10:
                kind = "vanished"
            elif margin <= 2:
                kind = "end"
            else:
                kind = "other"
            kinds.append(
                {
                    "target": int(i),
                    "step": float(steps[i]),
                    "kind": kind,
                    "interval_rows": int(length),
                    "margin_rows": int(margin),
                    "ends": [WHY.get(w, "?") for w in why],
                    "interval_before": hist[::5],
                    "on_path_component": bool(on),
                    "left_path_component_at": int(left),
                    "interval_when_left": [
                        info[k][0] for k in range(max(0, left - 3), min(i, left + 2))
                    ],
                }
            )
        first_today = int(np.flatnonzero(today > 0.2)[0])
        row = {
            "seed": seed,
            "jumps_today": int((today > 0.2).sum()),
            "first_jump_today": first_today,
            "jumps_oracle": len(jumps),
            "largest_oracle": float(steps.max()),
            "solved": int(ok.sum()),
            "targets": len(P),
            "remaining": kinds[:3],
        }
        results.append(row)
        print(json.dumps(row), flush=True)
        seed += 1
    still = sum(r["jumps_oracle"] > 0 for r in results)
    kinds = [r["remaining"][0]["kind"] for r in results if r["remaining"]]
    summary = {
        "paths_jumping_today": len(results),
        "seeds_scanned": seed - 1000,
        "still_jumping_with_oracle": still,
        "first_jump_kind": {k: kinds.count(k) for k in set(kinds)},
        "unsolved": sum(r["targets"] - r["solved"] for r in results),
    }
    print(json.dumps(summary))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "paths": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
