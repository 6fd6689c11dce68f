"""Merging across environments: one arm trained with joint 1 in opposite halves of its range.

    python scripts/merge_limits.py --minutes 3 --out benchmarks/learn_merge_limits.json

Writes two URDFs of the Niryo One (joint 1 held to [lower, 0] and to [0, upper]), trains a
network on each (``robot-ik-nn train --robot URDF``), merges them (``robot-ik-nn merge``), and
judges all three networks alone on the same held-out targets of the whole range. Each command
runs in its own process with one thread, as a user would run it.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.evaluate import network_errors


def measure(minutes: float = 3.0, targets: int = 10_000, robot: str = "niryo_one", say=print):
    whole = ArmModel.load(robot)
    lo, hi = float(whole.lower[0]), float(whole.upper[0])
    root = Path(tempfile.mkdtemp(prefix="merge_limits_"))

    def limited(name: str, a: float, b: float) -> str:
        lower, upper = whole.lower.copy(), whole.upper.copy()
        lower[0], upper[0] = a, b
        path = root / f"{name}.urdf"
        path.write_text(whole.with_limits(lower, upper).urdf_text)
        return str(path)

    budget = ["--minutes", f"{minutes:g}", "--force"]
    commands = {
        "minus": ["train", "--robot", limited("minus", lo, 0.0), *budget],
        "plus": ["train", "--robot", limited("plus", 0.0, hi), *budget],
        "merged": ["merge", str(root / "minus"), str(root / "plus"), *budget],
    }
    runs = {}
    for name, argv in commands.items():
        argv = [*argv, "--out", str(root / name)]
        say(f"{name}: robot-ik-nn --threads 1 {' '.join(argv)}")
        subprocess.run(
            [sys.executable, "-m", "robot_ik_nn.cli", "--threads", "1", *argv, "--quiet"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        model = model_dir.load(root / name)
        runs[name] = {
            "command": "robot-ik-nn --threads 1 " + " ".join(argv),
            "training": model.meta["training"],
            "joint_1_range": [float(model.arm.lower[0]), float(model.arm.upper[0])],
            f"network_alone_on_the_whole_range_{targets}": network_errors(
                model.net, whole, targets=targets, seed=12345
            ),
        }
    key = f"network_alone_on_the_whole_range_{targets}"
    medians = {name: run[key]["pos_mm_median"] for name, run in runs.items()}
    return {
        "what": f"merge of two networks of the {robot} trained with joint 1 held to [lower, 0] "
        "and to [0, upper] (two environments); every network judged on targets of the whole range",
        "machine": {"cpu_cores": 2, "platform": platform.platform(), "threads_per_process": 1},
        "runs": runs,
        "merged_below_both_parents": medians["merged"] < min(medians["minus"], medians["plus"]),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=3.0, help="for each parent and the merge")
    p.add_argument("--targets", type=int, default=10_000)
    p.add_argument("--robot", default="niryo_one")
    p.add_argument("--out", default="benchmarks/learn_merge_limits.json")
    args = p.parse_args(argv)
    result = measure(args.minutes, args.targets, args.robot)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    medians = {
        k: round(v[f"network_alone_on_the_whole_range_{args.targets}"]["pos_mm_median"], 2)
        for k, v in result["runs"].items()
    }
    print(f"network alone, position median (mm): {medians} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
