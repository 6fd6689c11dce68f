"""The figures of ``robot-ik-nn bench --dds-paths`` (bench/dds_paths.py) from the listener's
records: one path's row, the summary of an arm's paths, and its markdown table."""

from __future__ import annotations

import os
import re

import numpy as np

from .paths import JUMP


def _reason(message: str) -> str:
    """A status message's kind of reason: its words before the first colon after the outcome,
    numbers taken out ("rejected: a jump: the answer moves ..." -> "rejected: a jump")."""
    kind, _, rest = message.partition(": ")
    return f"{kind}: {re.sub(r'[-0-9.]+', 'N', rest.split(':')[0].split(';')[0]).strip()}"


def path_row(seed, n, sent, start, heard, said, keep_joints) -> dict:
    """One path's figures, from the listener's records."""
    answer, why = start
    row = {"seed": seed, "targets": n, "streamed": sent is not None}
    if sent is None:
        row["start_refused"] = why
        return row
    sent, ended = sent
    index = {stamp: i for i, (_, stamp) in enumerate(sent)}
    began = sent[0][0]
    latency = np.full(n, np.inf)
    commands = []
    for when, q, stamp in heard:
        i = index.get(stamp)
        if i is not None and not np.isfinite(latency[i]):
            latency[i] = when - sent[i][0]
            commands.append((i, q))
    window = [
        m for when, m in said if began <= when <= ended and not m.startswith("solved: path of")
    ]
    refused = [m for m in window if not m.startswith("solved")]
    q = np.array([answer] + [c for _, c in commands])
    steps = np.abs(np.diff(q, axis=0)).max(axis=1) if len(q) > 1 else np.zeros(0)
    at = [-1] + [i for i, _ in commands]  # -1: the start's answer
    reasons: dict = {}
    for m in refused:
        reasons[_reason(m)] = reasons.get(_reason(m), 0) + 1
    row.update(
        {
            "sent": n,
            "commanded": len(commands),
            "refused": len(refused),
            "statuses_heard": len(window),
            "refusals": reasons,
            # neither a command nor a refusal heard: dropped by the node's queue, or a message
            # of the node's not heard (its publishers keep 10 for a slow reader)
            "lost": n - len(commands) - len(refused),
            "steps_over_0.2_rad": int((steps > JUMP).sum()),
            "steps_over_0.2_rad_at": [
                [at[j], at[j + 1], float(steps[j])] for j in np.flatnonzero(steps > JUMP)
            ],
            "max_step_rad": float(steps.max()) if len(steps) else 0.0,
            "latency_s": latency.tolist(),
        }
    )
    if keep_joints:
        row["commands"] = [[i, list(c)] for i, c in commands]
    return row


def summary(robot, rows, rate_hz, jump_threshold, targets) -> dict:
    streamed = [r for r in rows if r["streamed"]]
    ms = np.concatenate([np.array(r.pop("latency_s")) * 1000 for r in streamed] or [[]])
    answered = ms[np.isfinite(ms)]
    reasons: dict = {}
    for r in streamed:
        for k, v in r["refusals"].items():
            reasons[k] = reasons.get(k, 0) + v

    def pct(a, q):
        return float(np.percentile(a, q, method="higher")) if len(a) else float("nan")

    return {
        "robot": robot,
        "dds_paths": {
            "rate_hz": rate_hz,
            "jump_threshold": jump_threshold,
            "jump_threshold_default": 0.0,
            "paths": len(rows),
            "targets_max": targets,
            "paths_streamed": len(streamed),
            "paths_start_refused": len(rows) - len(streamed),
            "sent": int(sum(r["sent"] for r in streamed)),
            "commanded": int(sum(r["commanded"] for r in streamed)),
            "refused": int(sum(r["refused"] for r in streamed)),
            "lost": int(sum(r["lost"] for r in streamed)),
            "refusals": reasons,
            "paths_with_a_refusal": int(sum(r["refused"] > 0 for r in streamed)),
            "commanded_steps_over_0.2_rad": int(sum(r["steps_over_0.2_rad"] for r in streamed)),
            "max_commanded_step_rad": max((r["max_step_rad"] for r in streamed), default=0.0),
            "ms_median_every_target_sent": pct(ms, 50),
            "ms_p99_every_target_sent": pct(ms, 99),
            "ms_max_every_target_sent": float(ms.max()) if len(ms) else float("nan"),
            "ms_median_commanded": pct(answered, 50),
            "ms_p99_commanded": pct(answered, 99),
            "ms_max_commanded": float(answered.max()) if len(answered) else float("nan"),
            "load_average_1min": os.getloadavg()[0],
            "rows": rows,
        },
    }


def format_table(r: dict) -> str:
    """The markdown (and terminal) summary of one arm."""
    d = r["dds_paths"]
    reasons = "; ".join(f"{k} ({v})" for k, v in d["refusals"].items()) or "none"
    return (
        f"## {r['robot']}: the inference node streaming paths at {d['rate_hz']:g} Hz\n\n"
        f"{d['paths_streamed']} of {d['paths']} paths streamed (a start the node refused: "
        f"{d['paths_start_refused']}), up to {d['targets_max']} targets each, 5 mm / 0.05 rad "
        f"apart; jump_threshold {d['jump_threshold']:g} rad (the node's default: 0, off); load "
        f"{d['load_average_1min']:.1f}\n\n"
        "| sent | commanded | refused | lost | paths with a refusal | commanded steps > 0.2 rad "
        "(largest) | target -> command, every target sent: median / p99 / max (ms) |\n"
        "|---|---|---|---|---|---|---|\n"
        f"| {d['sent']} | {d['commanded']} | {d['refused']} | {d['lost']} | "
        f"{d['paths_with_a_refusal']} | "
        f"{d['commanded_steps_over_0.2_rad']} ({d['max_commanded_step_rad']:.3f} rad) | "
        f"{d['ms_median_every_target_sent']:.2f} / {d['ms_p99_every_target_sent']:.2f} / "
        f"{d['ms_max_every_target_sent']:.2f} |\n\n"
        f"Refusals: {reasons}. Commanded targets alone: median "
        f"{d['ms_median_commanded']:.2f} ms, p99 {d['ms_p99_commanded']:.2f} ms, max "
        f"{d['ms_max_commanded']:.2f} ms.\n"
    )
