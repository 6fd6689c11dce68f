"""Each named arm's tool axes, as `solve --help` and docs/arms.md state them (arm/resources.py
TOOL_AXES), checked against what the package does not share: the axis the last joint turns
about is measured with PyBullet's forward kinematics (turn the last joint a little and see which
tool axis the tool frame turned about), and the docs' table is read for the approach axis."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fk_oracle import BulletFK

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.resources import TOOL_AXES

DOCS = Path(__file__).resolve().parent.parent / "docs" / "arms.md"
UNIT = {"x": np.eye(3)[0], "y": np.eye(3)[1], "z": np.eye(3)[2]}


def _axis_of(R) -> np.ndarray:
    """The unit axis a small rotation matrix turns about (its skew part), written out here."""
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    return w / np.linalg.norm(w)


@pytest.mark.parametrize("name", sorted(TOOL_AXES))
def test_the_last_joint_turns_about_the_named_tool_axis(name):
    arm = ArmModel.load(name)
    last = TOOL_AXES[name][1]
    rng = np.random.default_rng(3)
    with BulletFK.of(arm) as fk:
        for q in arm.lower + (arm.upper - arm.lower) * rng.random((5, arm.dof)):
            _, R0 = fk.fk(q)
            q2 = q.copy()
            q2[-1] += 1e-3 if q[-1] < arm.upper[-1] - 1e-3 else -1e-3
            _, R1 = fk.fk(q2)
            axis = _axis_of(R0.T @ R1)  # in the tool frame
            assert abs(abs(axis @ UNIT[last]) - 1) < 1e-6, (name, axis, last)


def test_the_docs_table_names_the_same_approach_axes():
    rows = {}
    for line in DOCS.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        found = re.match(r"`(\w+)`", cells[0]) if len(cells) >= 5 else None
        if found:
            rows[found.group(1)] = cells[4]
    for name, (approach, _) in TOOL_AXES.items():
        assert name in rows, f"docs/arms.md has no row for {name}"
        words = re.sub(r"[*−]", lambda m: "-" if m.group() == "−" else "", rows[name])
        assert words.split()[0] == approach, (name, rows[name], approach)


def test_solve_help_names_each_arms_tool_axes():
    out = subprocess.run([sys.executable, "-m", "robot_ik_nn.cli", "solve", "--help"],
                         capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    for name, (approach, last) in TOOL_AXES.items():
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(name)), "")
        assert f"along its {approach} axis" in line and f"tool {last}" in line, (name, out)
