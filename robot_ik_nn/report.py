"""What a model folder tells a person: report.md and the training-curve PNG."""

from __future__ import annotations

import io


def curve_png(history: list[dict], title: str) -> bytes | None:
    """Position (mm) and rotation (deg) error of the training batches against time, log scale."""
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    t = [row["time_s"] / 60 for row in history]
    fig = Figure(figsize=(7, 4), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(
        t, [max(row["pos_mm"], 1e-3) for row in history], color="tab:blue", label="position (mm)"
    )
    if any(row.get("rot_deg", 0) > 0 for row in history):
        ax.plot(
            t,
            [max(row["rot_deg"], 1e-3) for row in history],
            color="tab:orange",
            label="rotation (deg)",
        )
    ax.set_yscale("log")
    ax.set_xlabel("training time (min)")
    ax.set_ylabel("median error of the batch")
    ax.set_title(f"{title}: network error while training")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _per_step(config) -> str:
    """What one step of the learner looks at."""
    learn = config.learn
    if config.learner == "explore":
        return f"{learn.explore_targets} targets x {learn.attempts} attempts a step"
    if config.learner == "evolution":
        return f"a population of {learn.population} on {learn.evolution_targets} targets a step"
    return f"batch {learn.batch_size}"


def training_report(arm, config, summary: dict, curve: bool = True) -> str:
    net = summary.get("final_network", {})
    rot = f"{net['rot_deg_median']:.2f} deg" if "rot_deg_median" in net else "n/a (position only)"
    lines = [
        f"# {arm.name}: IK network",
        "",
        f"- arm: `{arm.name}`, chain `{arm.base}` -> `{arm.tip}`, {arm.dof} joints "
        f"({', '.join(arm.joint_names)})",
        f"- fingerprint: `{arm.fingerprint}`",
        f"- mode: {config.mode}{' (tracking)' if config.tracking else ''}; network "
        f"{config.hidden}, {config.heads} head{'s' if config.heads != 1 else ''}",
        f"- learner: {config.learner}; {summary['steps']} steps in "
        f"{summary['seconds'] / 60:.1f} min "
        f"on {summary['device']}, seed {config.seed}, {_per_step(config)}"
        + (
            "; stopped early (interrupted), everything up to then is saved"
            if summary.get("interrupted")
            else ""
        ),
        "",
        "## Network alone on 2,000 held-out targets",
        "",
        "| position median | position p99 | rotation median |",
        "|---|---|---|",
        f"| {net.get('pos_mm_median', float('nan')):.2f} mm "
        f"| {net.get('pos_mm_p99', float('nan')):.2f} mm | {rot} |",
        "",
        "The solver refines the network's answer to sub-millimetre accuracy: run "
        f"`robot-ik-nn eval {config.out}` for the full table.",
        "",
    ]
    if curve:  # none for a run shorter than one logging interval
        lines += ["![training curve](training_curve.png)", ""]
    return "\n".join(lines)
