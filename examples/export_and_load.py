"""Export a trained model folder as one archive, copy it elsewhere and serve it there: the
archive holds the weights, the arm's URDF and model.json; loading it needs no torch.

    python examples/export_and_load.py models/niryo_one    # after `make train`
    (the same archive from the command line: robot-ik-nn export models/niryo_one --out FILE)
"""

import shutil
import sys
import tempfile
from pathlib import Path

import robot_ik_nn
from robot_ik_nn import model_dir

model = Path(sys.argv[1] if len(sys.argv) > 1 else "models/niryo_one")
if not (model / "model.json").is_file():
    sys.exit(f"{model} is not a model folder: train one first (make train)")

with tempfile.TemporaryDirectory() as here, tempfile.TemporaryDirectory() as elsewhere:
    archive = model_dir.export(model, Path(here) / "model.tar.gz")
    print("archive:", archive.name, f"{archive.stat().st_size / 1e6:.2f} MB")
    copied = Path(shutil.copy(archive, elsewhere))  # e.g. scp to the computer beside the arm

    solver = robot_ik_nn.load(copied)  # checks the weights' digest and the arm's fingerprint
    print("arm:", solver.arm.name, "| joints:", ", ".join(solver.arm.joint_names))
    answer = solver.solve([0.25, 0.0, 0.20], [0.0, 0.7071068, 0.0, 0.7071068])
    print("status:", answer.status)
    print("joints (rad):", " ".join(f"{v:.6f}" for v in answer.q))
