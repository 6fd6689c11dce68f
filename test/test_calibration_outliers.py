"""Which measured poses the geometry fit sets aside as gross outliers: exactly the planted ones.

Simulated measurements of a true arm (the Niryo One's joints moved by 1.5 mm and turned by 1
degree, PyBullet's forward kinematics), 0.2 mm / 0.1 degree noise, and a few rows spoiled by
hand: positions moved by 8 to 12 mm (40 to 60 times the noise, a few times further out than any
honest row), one orientation turned by 4 degrees, one position moved by 5 cm. The fit must set
aside these rows and no others: a cut several times looser keeps the smaller ones (and they drag
the geometry), one several times tighter drops honest rows.
"""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import fit as F
from robot_ik_nn.calibration.true_arm import perturb
from robot_ik_nn.hardware.tracker import measure

NOISE_MM, NOISE_DEG = 0.2, 0.1
MOVED_MM = {7: 8.0, 23: 10.0, 41: 12.0, 66: 50.0}  # row: how far its position is moved
TURNED_DEG = {52: 4.0}  # row: how far its orientation is turned


@pytest.fixture(scope="module")
def spoiled():
    arm = ArmModel.load("niryo_one")
    true = ArmModel(perturb(arm, 4), source="<true arm>", base=arm.base, tip=arm.tip)
    q = np.random.default_rng(21).uniform(arm.lower, arm.upper, (80, arm.dof))
    rows = measure(true, q, NOISE_MM, NOISE_DEG, seed=22)
    rng = np.random.default_rng(23)
    for row, mm in MOVED_MM.items():
        u = rng.normal(size=3)
        rows.position[row] += u / np.linalg.norm(u) * mm / 1000.0
    for row, deg in TURNED_DEG.items():
        u = rng.normal(size=3)
        turn = Rotation.from_rotvec(u / np.linalg.norm(u) * math.radians(deg))
        rows.quaternion[row] = (turn * Rotation.from_quat(rows.quaternion[row])).as_quat()
    return arm, rows


def test_exactly_the_planted_gross_outliers_are_set_aside(spoiled):
    arm, rows = spoiled
    chain, _ = F.chain_of(arm)
    result = F.fit(
        chain, rows, NOISE_MM / 1000.0, math.radians(NOISE_DEG), F.parameter_names(arm, chain)
    )
    planted = sorted({*MOVED_MM, *TURNED_DEG})
    assert sorted(result.rejected.tolist()) == planted
    assert sorted(result.used.tolist()) == sorted(set(range(len(rows))) - set(planted))
