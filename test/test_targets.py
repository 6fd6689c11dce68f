"""One validation: the same bad and borderline targets get the same verdict, in the same words,
from every path that takes targets."""

import gc
import json
import math
import pickle
import weakref

import numpy as np
import pytest

from robot_ik_nn import model_dir
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.ik.torch_solver import TorchSolver
from robot_ik_nn.safety import check_target


def cases(arm):
    _, P, R = held_out_targets(arm, 1, seed=8)
    p, q = P[0], matrix_to_quaternion(R[0])
    return {  # name: (position, quaternion, expected status, words in the reason)
        "fine": (p, q, "solved", ""),
        "nan position": (np.array([math.nan, 0, 0.3]), q, "rejected", "position is not finite"),
        "inf position": (np.array([0.1, math.inf, 0.3]), q, "rejected", "position is not finite"),
        "nan orientation": (
            p,
            np.array([0, 0, math.nan, 1.0]),
            "rejected",
            "orientation is not finite",
        ),
        "norm 0": (p, np.zeros(4), "rejected", "not unit length (norm 0;"),
        "norm 0.5": (p, q * 0.5, "rejected", "not unit length (norm 0.5;"),
        "norm 1.5": (p, q * 1.5, "rejected", "(norm 1.5; within 0.001 of 1 is taken"),
        "norm 1 + 1e-4": (p, q * (1 + 1e-4), "solved", ""),
        "norm 1 - 1e-4": (p, q * (1 - 1e-4), "solved", ""),
        # not rejected: the closest pose, and why the target was missed
        "out of reach": (np.array([0.7, 0.0, 0.2]), q, "best_effort", "outside the reach"),
        "mm for m": (np.array([250.0, 0.0, 200.0]), q, "rejected", "(positions are in metres)"),
        "1e300": (np.array([1e300, 0.0, 0.0]), q, "rejected", "the position is 1e+300 m from"),
        "position only": (p, None, "solved", ""),  # a pose model solves it without its network
    }


def verdicts_single(solver, table):
    return {
        k: (a.status, a.reason) for k, (p, q, _, _) in table.items() for a in [solver.solve(p, q)]
    }


def verdicts_batch(solve, table):
    out = {}
    for name, (p, q, _, _) in table.items():  # one batch per case: position-only needs q=None
        r = solve(p[None], None if q is None else q[None])
        out[name] = (r.status[0], r.reason[0])
    return out


@pytest.fixture(scope="module")
def onnx_model(niryo_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("targets") / "niryo_one"
    folder.mkdir()
    for f in niryo_model.iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    model_dir.export_onnx(folder)
    return folder


def test_every_path_gives_each_target_the_same_verdict(onnx_model):
    solver = Solver.load(onnx_model)
    table = cases(solver.arm)
    paths = {
        f"single {b}": verdicts_single(Solver.load(onnx_model, backend=b), table)
        for b in ("compiled", "numpy", "onnx")
    }
    paths["batch compiled"] = verdicts_batch(solver.solve_batch, table)
    paths["batch numpy"] = verdicts_batch(
        Solver.load(onnx_model, backend="numpy").solve_batch, table
    )
    loaded = model_dir.load(onnx_model)
    paths["batch torch"] = verdicts_batch(TorchSolver(loaded.arm, loaded.net).solve, table)
    for name, (_, _, status, words) in table.items():
        seen = {path: v[name] for path, v in paths.items()}
        assert {v[0] for v in seen.values()} == {status}, (name, seen)
        # the same words everywhere (how close a best effort came is each path's own)
        assert len({v[1].split("; closest")[0] for v in seen.values()}) == 1, (name, seen)
        assert words in next(iter(seen.values()))[1], (name, seen)


def test_the_safety_gate_says_what_the_solvers_say(niryo_model):
    solver = Solver.load(niryo_model)
    frame = solver.arm.base
    for name, (p, q, status, _) in cases(solver.arm).items():
        gate = check_target(p, q, frame, 10.0, 10.0, {frame})
        answer = solver.solve(p, q)
        if gate:  # refused at the gate: refused by the solver too, with the same reason
            assert answer.status == "rejected" and answer.reason == gate, name
        else:  # reach is the solver's to judge; the verdict is the same
            assert answer.status == status, name


def test_a_batch_words_its_reasons_when_read_and_keeps_them(niryo_model):
    """Reasons are worded when read (a million best efforts spent longer on words than on
    solving), read like a list, survive concatenation and the caller reusing its arrays."""
    from robot_ik_nn.ik.reasons import Reasons
    from robot_ik_nn.ik.results import BatchResult

    asked = []
    lazy = Reasons(4, lambda i: asked.append(i) or f"r{i}")
    assert asked == [] and len(lazy) == 4
    assert lazy[1] == "r1" and lazy[-1] == "r3" and lazy[1:3] == ["r1", "r2"]
    assert lazy == ["r0", "r1", "r2", "r3"] and ["r0", "r1", "r2", "r3"] == lazy
    assert lazy != ["r0"] and lazy != "r0r1r2r3" and sorted(set(asked)) == [0, 1, 2, 3]
    assert asked.count(1) == 1  # each worded once
    with pytest.raises(IndexError, match="reason 4 of a batch of 4"):
        lazy[4]
    chained = Reasons.chain([["a", "b"], lazy, []])
    assert list(chained) == ["a", "b", "r0", "r1", "r2", "r3"] and chained[-4] == "r0"

    solver = Solver.load(niryo_model)
    P = np.array([[0.7, 0.0, 0.2], [9.0, 9.0, 9.0], [0.0, 0.0, 0.0]])
    Q = np.tile([0.0, 0.0, 0.0, 1.0], (3, 1))
    for solve in (solver.solve_batch, TorchSolver(solver.arm).solve):
        batch = solve(P, Q)
        P_before = P.copy()
        P[:] = np.nan  # the caller reuses its buffer before reading a reason
        assert "outside the reach" in batch.reason[0] and "far outside" in batch.reason[1]
        assert "not finite" not in " ".join(batch.reason)
        P[:] = P_before
        joined = BatchResult.concatenate([batch, batch])
        assert joined.reason == list(batch.reason) * 2 and joined[4].reason == batch.reason[1]
        words = list(batch.reason)
        batch.codes[:], batch.pos_err[:] = 0, 1e3  # the caller edits the result's arrays
        assert list(batch.reason) == words
        assert pickle.loads(pickle.dumps(batch)).reason == words
        assert json.loads(json.dumps(batch.reason.tolist())) == words

    grown = BatchResult.concatenate([batch])
    for _ in range(2000):  # a result grown one batch at a time stays one level deep
        grown = BatchResult.concatenate([grown, batch])
    assert len(grown.reason) == 3 * 2001 and grown.reason[-3] == words[0]

    kept = TorchSolver(solver.arm)
    alive = weakref.ref(kept)
    result = kept.solve(P, Q)
    del kept
    gc.collect()
    assert alive() is None and "far outside" in result.reason[1]  # the result keeps no solver


def test_joints_far_outside_their_limits_are_refused_by_name():
    """current= and a path's start in degrees (or otherwise far past a limit) are refused,
    naming the joint; a read a little past a limit (an encoder's) is taken."""
    from robot_ik_nn.arm.model import ArmModel
    from robot_ik_nn.ik.inputs import BEYOND

    arm = ArmModel.load("niryo_one")
    solver = Solver(arm)
    p, R = solver.forward(arm.mid_range + 0.2)
    q = matrix_to_quaternion(R)[0]
    degrees = np.degrees(arm.mid_range + 0.2)  # the same joints, in degrees
    with pytest.raises(ValueError, match=r"current: joint_\d = .* lies outside its limits"):
        solver.solve(p[0], q, current=degrees)
    small = np.array([0.0, 0.0, 0.0, 0.0, 30.0, 0.0])  # one joint only: 30 rad on the wrist
    with pytest.raises(ValueError, match="joint_5 = 30 lies outside its limits"):
        solver.solve(p[0], q, current=small)
    with pytest.raises(ValueError, match="start: joint_"):
        solver.solve_path(p, q[None], start=degrees)
    worn = arm.upper + 0.5 * BEYOND  # a little past every upper limit: an encoder's read
    assert solver.solve(p[0], q, current=worn).status == "solved"
    assert solver.solve(p[0], q, current=arm.mid_range).status == "solved"
