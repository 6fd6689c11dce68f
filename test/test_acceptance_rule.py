"""The acceptance rule ("solved": position error <= pos_tol and rotation error <= rot_tol) has one
home, ik/verdicts.py: ``reached`` (compiled, called inside the kernel, the policy, the walks, the
self-motion and the several answers) and ``reached_all`` (the same on numpy arrays and torch
tensors: the torch solver, the bench's judge). No other module compares an error with a
tolerance."""

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from robot_ik_nn.ik.verdicts import reached, reached_all

ROOT = Path(__file__).resolve().parent.parent / "robot_ik_nn"
# an error compared with a tolerance: `pe <= pos_tol`, `re > cfg[ROT_TOL]`, `x <= self.rot_tol`
COMPARED = re.compile(
    r"(<=|>=|<|>)\s*(self\.)?(settings\.)?(pos_tol|rot_tol|cfg\[POS_TOL\]|cfg\[ROT_TOL\])\b"
)
VALUES = [0.0, 1e-3, np.nextafter(1e-3, 1.0), 0.01, np.nextafter(0.01, 1.0), np.inf, np.nan]


def test_the_rule_at_its_edges():
    assert reached(1e-3, 0.01, 1e-3, 0.01)  # on the tolerance is within it
    assert not reached(np.nextafter(1e-3, 1.0), 0.0, 1e-3, 0.01)
    assert not reached(0.0, np.nextafter(0.01, 1.0), 1e-3, 0.01)
    assert not reached(np.nan, 0.0, 1e-3, 0.01) and not reached(0.0, np.nan, 1e-3, 0.01)


def test_the_array_form_is_the_same_rule():
    pe, re_ = (np.array(v) for v in zip(*itertools.product(VALUES, VALUES)))
    want = [reached(a, b, 1e-3, 0.01) for a, b in zip(pe, re_)]
    assert list(reached_all(pe, re_, 1e-3, 0.01)) == want
    assert sum(want) == 8  # position 0 or 1e-3, times rotation 0, 1e-3, just over it or 0.01
    torch = pytest.importorskip("torch")
    got = reached_all(torch.tensor(pe), torch.tensor(re_), 1e-3, 0.01)
    assert got.dtype == torch.bool and got.tolist() == want


def test_the_rule_is_written_in_one_place():
    found = {
        str(path.relative_to(ROOT.parent))
        for path in ROOT.rglob("*.py")
        if COMPARED.search(path.read_text())
    }
    assert found == {"robot_ik_nn/ik/verdicts.py"}, sorted(found)
