"""Every arm URDF in ``pybullet_data``, as its vendor wrote it: load, train, evaluate.

    python scripts/vendor_arms.py --minutes 1 --out benchmarks/vendor_arms.json

The list is robot_ik_nn.arm.resources.PYBULLET_DATA_ARMS (``bench --collisions`` checks the
same arms). The files load through arm/vendor.py unchanged; each trains for ``minutes``
(gradient learner, full pose) and is evaluated on held-out targets with the compiled solver.
test_vendor_urdf.py loads and solves the same list on every run; this is the longer check, run
by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.resources import PYBULLET_DATA_ARMS, pybullet_data_path
from robot_ik_nn.evaluate import evaluate
from robot_ik_nn.learn.training import TrainConfig, Trainer


def measure(minutes: float = 1.0, targets: int = 1000, say=print) -> dict:

    data = pybullet_data_path()
    if data is None:
        raise RuntimeError("pybullet_data is not installed (pip install pybullet)")
    rows = {}
    work = Path(tempfile.mkdtemp(prefix="robot_ik_nn_vendor_"))
    for relative, tip in PYBULLET_DATA_ARMS.items():
        say(f"{relative}: {minutes:g} min of training, then {targets} targets")
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            out = work / relative.replace("/", "_").removesuffix(".urdf")
            trainer = Trainer(TrainConfig(robot=str(data / relative), tip=tip, minutes=minutes,
                                          out=str(out)), progress=False)
            trainer.run()
            result = evaluate(out, targets=targets)
        rows[relative] = {
            "tip": tip,
            "warnings": sorted({str(w.message) for w in said}),
            "seconds": round(time.monotonic() - started, 1),
            "dof": ArmModel.load(data / relative, tip=tip).dof,
            "network": result["network"],
            "refined": result["refined"],
        }
    return {"minutes": minutes, "targets": targets, "arms": rows,
            "measured": time.strftime("%Y-%m-%d %H:%M")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/vendor_arms.py")
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--targets", type=int, default=1000)
    p.add_argument("--out")
    args = p.parse_args(argv)
    result = measure(args.minutes, args.targets, say=lambda t: print(t, file=sys.stderr))
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
