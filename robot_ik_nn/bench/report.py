"""The bench result for people: a terminal table, and markdown for benchmarks/ and the README."""

from __future__ import annotations


def _single_line(name: str, r: dict) -> str:
    return (
        f"  {name:34}{r['solve_rate'] * 100:>9.2f}%{r['us_median']:>10.1f}{r['us_p99']:>10.1f}"
        f"{r['solved_per_s']:>14,.0f}"
    )


def format_table(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"{result['robot']} ({result['mode']}, {result['heads']} heads), "
        f"{result['targets']} targets, "
        f"{m.get('cpu') or m['processor']}, {m['cpu_count']} cores",
        "",
    ]
    lines.append(
        "network alone, batch "
        + str(next(iter(result["network"].values()))["batch"])
        + ": "
        + ", ".join(f"{k} {v['answers_per_s']:,.0f}/s" for k, v in result["network"].items())
    )
    lines += [
        "",
        f"{'one target at a time (1 CPU)':36}{'solved':>10}{'median us':>10}{'p99 us':>10}"
        f"{'solved/s':>14}",
    ]
    for name, r in result["single"].items():
        lines.append(_single_line(name, r))
    for name, r in result.get("peers", {}).items():
        lines.append(_single_line(r["solver"], r) if isinstance(r, dict) else f"  {name:34}{r}")
    t = result["tracking"]
    lines.append(_single_line("tracking (5 mm steps, warm)", t))
    lines += [
        "",
        "the network earns: "
        + ", ".join(f"{k} {v:.1f}x" for k, v in result["network_gain"].items())
        + " the solved per second of the same solver without it",
    ]
    if result.get("ratios"):
        lines.append(
            "ours (compiled) against the peers, solved per second: "
            + ", ".join(f"{k} {v:.1f}x" for k, v in result["ratios"].items())
        )
    lines += [
        "",
        f"{'batched, all cores':24}{'solved':>10}{'solved/s':>14}{'ms/call':>10}  (median round)",
    ]
    for r in result["batched"]:
        lines.append(
            f"  batch {r['batch']:<16,}{r['solve_rate'] * 100:>9.2f}%{r['solved_per_s']:>14,.0f}"
            f"{r['ms_per_call']:>10.2f}"
        )
    tb = result.get("batched_torch", {})
    if "solve_rate" in tb:
        lines.append(
            f"  torch ({tb['device']}), {tb['batch']:,}{'':>6}{tb['solve_rate'] * 100:>9.2f}%"
            f"{tb['solved_per_s']:>14,.0f}"
        )
    if "dds" in result:
        d = result["dds"]
        lines += [
            "",
            f"inference node over DDS at {d['rate_hz']:g} Hz, cold targets: median "
            f"{d['ms_median']:.2f} ms, p99 {d['ms_p99']:.2f} ms, {d['answered']}/{d['sent']} "
            f"answered; start-up to first answer {d['startup_s']:.2f} s",
        ]
    for name, note in result.get("notes", {}).items():
        lines.append(f"note: {name}: {note}")
    return "\n".join(lines)


def markdown(result: dict) -> str:
    """One arm's side-by-side table (single targets, one CPU) in markdown."""
    m = result["machine"]
    lines = [
        f"### {result['robot']} — {result['targets']:,} targets, one at a time on one CPU "
        f"({m.get('cpu') or m['processor']}), budget {result['budget_ms']:g} ms per target",
        "",
        "| solver | solved | median | p99 | solved per second | ours is |",
        "|---|---|---|---|---|---|",
    ]
    ours = result["single"].get("compiled", {}).get("solved_per_s")

    def line(name, r):
        ratio = f"{ours / r['solved_per_s']:.1f}x" if ours and r["solved_per_s"] else "—"
        return (
            f"| {name} | {r['solve_rate'] * 100:.2f} % | {r['us_median']:.1f} µs | "
            f"{r['us_p99']:.1f} µs | {r['solved_per_s']:,.0f} | {ratio} |"
        )

    for name, r in result["single"].items():
        label = (
            "robot_ik_nn, no network (mid-range + restarts)"
            if name == "without network"
            else f"robot_ik_nn, {name} network + compiled LM"
        )
        lines.append(line(label, r))
    for name, r in result.get("peers", {}).items():
        lines.append(line(r["solver"], r) if isinstance(r, dict) else f"| {name} | {r} | | | | |")
    t = result["tracking"]
    lines.append(line("robot_ik_nn, tracking (5 mm steps)", t))
    b = {r["batch"]: r for r in result["batched"]}
    lines += [
        "",
        "Batched over all cores (median of the rounds): "
        + ", ".join(
            f"batch {k:,}: {r['solved_per_s']:,.0f} solved/s ({r['solve_rate'] * 100:.2f} %)"
            for k, r in b.items()
        )
        + ".",
    ]
    return "\n".join(lines)
