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
            **_path_ms(latency),
            "latency_s": latency.tolist(),
        }
    )
    if keep_joints:
        row["commands"] = [[i, list(c)] for i, c in commands]
    return row


def pct(a, q) -> float:
    """The ``q``-th percentile of ``a``, one of its values (nan for none)."""
    return float(np.percentile(a, q, method="higher")) if len(a) else float("nan")


def relay_row(seed, n, sent, heard, said) -> dict:
    """One path's figures for the bare relay (bench/relay.py), from the listener's records of
    the relay's commands and statuses: a target is commanded (its stamp heard back) or lost."""
    sent, ended = sent
    index = {stamp: i for i, (_, stamp) in enumerate(sent)}
    began = sent[0][0]
    latency = np.full(n, np.inf)
    for when, _, stamp in heard:
        i = index.get(stamp)
        if i is not None and not np.isfinite(latency[i]):
            latency[i] = when - sent[i][0]
    commanded = int(np.isfinite(latency).sum())
    statuses = sum(began <= when <= ended for when, _ in said)
    return {
        "seed": seed,
        "sent": n,
        "commanded": commanded,
        "statuses_heard": int(statuses),
        "lost": n - commanded,
        **_path_ms(latency),
        "latency_s": latency.tolist(),
    }


def _path_ms(latency) -> dict:
    """One path's target -> command of its commanded targets (ms): median, p99, max."""
    ms = latency[np.isfinite(latency)] * 1000
    return {
        "ms_median_commanded": pct(ms, 50),
        "ms_p99_commanded": pct(ms, 99),
        "ms_max_commanded": float(ms.max()) if len(ms) else float("nan"),
    }


DONE_WHEN_MS = 0.5  # issue 44: the node's p99 within this of the bare relay's, the same run


def relay_figures(d: dict, rows: list, params=()) -> dict:
    """The relay's figures beside the node's (``d``: the node's ``dds_paths``), and the verdict
    of issue 44's done-when line on them: at 200 Hz, the node's p99 target -> command of its
    commanded targets within DONE_WHEN_MS of the relay's in the same run, and no commanded
    step over 0.2 rad."""
    ms = np.concatenate([np.array(r.pop("latency_s")) * 1000 for r in rows] or [[]])
    answered = ms[np.isfinite(ms)]
    relay = {
        "what": "bench/relay.py: the node's messages in and out (the same types, topics under "
        "/bench_relay, QoS, executor and start), no solving: each path streamed to it too, "
        "at the same rate, the node's turn and the relay's alternating which goes first",
        "params": list(params),
        "sent": int(sum(r["sent"] for r in rows)),
        "commanded": int(sum(r["commanded"] for r in rows)),
        "lost": int(sum(r["lost"] for r in rows)),
        "ms_median_every_target_sent": pct(ms, 50),
        "ms_p99_every_target_sent": pct(ms, 99),
        "ms_max_every_target_sent": float(ms.max()) if len(ms) else float("nan"),
        "ms_median_commanded": pct(answered, 50),
        "ms_p99_commanded": pct(answered, 99),
        "ms_max_commanded": float(answered.max()) if len(answered) else float("nan"),
        "rows": rows,
    }
    node_p99, relay_p99 = d["ms_p99_commanded"], relay["ms_p99_commanded"]
    # path by path, the node's turn and the relay's seconds apart: a stall of the machine
    # (another process's burst) falls on one turn, where the pooled p99 takes it whole
    paired = [
        (a["ms_p99_commanded"] - b["ms_p99_commanded"], a["seed"])
        for a, b in zip(d["rows"], rows)
        if a["streamed"] and np.isfinite(a["ms_p99_commanded"])
        and np.isfinite(b["ms_p99_commanded"])
    ]
    differences = np.array([x for x, _ in paired])
    latency_met = bool(node_p99 <= relay_p99 + DONE_WHEN_MS)
    no_jump = d["commanded_steps_over_0.2_rad"] == 0
    return {
        "relay": relay,
        "node_minus_relay_ms_median_commanded": d["ms_median_commanded"]
        - relay["ms_median_commanded"],
        "node_minus_relay_ms_p99_commanded": node_p99 - relay_p99,
        "per_path": {
            "paths": len(paired),
            "node_minus_relay_ms_p99_commanded_median": pct(differences, 50),
            "paths_node_p99_over_relay_p99_plus_limit": int((differences > DONE_WHEN_MS).sum()),
            "paths_relay_p99_over_node_p99_plus_limit": int((differences < -DONE_WHEN_MS).sum()),
            "node_minus_relay_ms_p99_commanded": [[seed, float(x)] for x, seed in paired],
        },
        "done_when": {
            "line": "the node at 200 Hz: p99 target -> command <= the bare relay's p99 + "
            f"{DONE_WHEN_MS} ms in the same run; no jump commanded (p99 of the commanded "
            "targets, each; a jump: a commanded step over 0.2 rad)",
            "node_ms_p99": node_p99,
            "relay_ms_p99": relay_p99,
            "limit_ms": relay_p99 + DONE_WHEN_MS,
            "latency_met": latency_met,
            "no_jump_commanded": no_jump,
            "at_200_hz": d["rate_hz"] == 200.0,
            "met": latency_met and no_jump and d["rate_hz"] == 200.0,
        },
    }


def summary(robot, rows, rate_hz, jump_threshold, targets) -> dict:
    streamed = [r for r in rows if r["streamed"]]
    ms = np.concatenate([np.array(r.pop("latency_s")) * 1000 for r in streamed] or [[]])
    answered = ms[np.isfinite(ms)]
    reasons: dict = {}
    for r in streamed:
        for k, v in r["refusals"].items():
            reasons[k] = reasons.get(k, 0) + v

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
    ) + (_relay_table(d) if "relay" in d else "")


def _relay_table(d: dict) -> str:
    """The node beside the bare relay of the same run, and the done-when line's verdict."""
    rel, w, pp = d["relay"], d["done_when"], d["per_path"]

    def line(name, x):
        return (
            f"| {name} | {x['sent']} | {x['commanded']} | {x['lost']} | "
            f"{x['ms_median_commanded']:.2f} / {x['ms_p99_commanded']:.2f} / "
            f"{x['ms_max_commanded']:.2f} | {x['ms_p99_every_target_sent']:.2f} |\n"
        )

    verdict = "met" if w["met"] else "not met"
    return (
        "\nThe same paths, at the same rate, in the same run, to a bare rclpy relay (the node's "
        "messages in and out, no solving; bench/relay.py), the node's turn and the relay's "
        "alternating which goes first:\n\n"
        "| | sent | commanded | lost | target -> command, commanded: median / p99 / max (ms) "
        "| p99, every target sent (ms) |\n"
        "|---|---|---|---|---|---|\n"
        + line("inference node", d)
        + line("bare relay", rel)
        + f"\nNode minus relay: median {d['node_minus_relay_ms_median_commanded']:+.2f} ms, "
        f"p99 {d['node_minus_relay_ms_p99_commanded']:+.2f} ms. Path by path (each path's "
        f"two turns seconds apart): the node's p99 minus the relay's, median over "
        f"{pp['paths']} paths {pp['node_minus_relay_ms_p99_commanded_median']:+.2f} ms; over "
        f"+{DONE_WHEN_MS} ms on {pp['paths_node_p99_over_relay_p99_plus_limit']} paths, under "
        f"-{DONE_WHEN_MS} ms on {pp['paths_relay_p99_over_node_p99_plus_limit']}. "
        "Done when (issue 44): node p99 "
        f"{w['node_ms_p99']:.2f} <= relay p99 + {DONE_WHEN_MS} = {w['limit_ms']:.2f} ms: "
        f"{'yes' if w['latency_met'] else 'no'}; no jump commanded: "
        f"{'yes' if w['no_jump_commanded'] else 'no'}; at 200 Hz: "
        f"{'yes' if w['at_200_hz'] else 'no'}: **{verdict}**.\n"
    )
