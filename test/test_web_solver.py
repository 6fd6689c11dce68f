"""The JavaScript solver (web/src/ik.js) on model files written by robot_ik_nn.web.model: its
forward kinematics and its network's candidates against the Python solver's (1e-9), and its
answers on targets made here from random joints, judged by PyBullet's forward kinematics
(fk_oracle.py). One Node process for the whole module (web/test/runner.mjs)."""

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fk_oracle import BulletFK, matrix_to_quat, quat_to_matrix, rotation_angle

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.web.model import FORMAT, web_model, write_web_model

# slow: a model trained, Node run once for the module, the compiled solver's first call (on a
# fresh numba cache and a loaded machine, compiling solve_one took 14 minutes of wall here)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "web" / "test" / "runner.mjs"
NODE = shutil.which("node")
need_node = pytest.mark.skipif(
    NODE is None, reason="node is not installed (Debian: apt-get install nodejs)"
)
FK_SETS, SEED_TARGETS, TARGETS = 10_000, 1_000, 1_000


def joint_sets(arm, count, seed, inset=0.0):
    rng = np.random.default_rng(seed)
    lo = np.maximum(arm.lower, -np.pi) + inset
    hi = np.minimum(arm.upper, np.pi) - inset
    return lo + rng.random((count, arm.dof)) * (hi - lo)


def stream_joints(arm, count, step, seed):
    """A random walk of the joints, each step up to ``step`` rad a joint, bouncing off the
    limits."""
    rng = np.random.default_rng(seed)
    q = arm.mid_range.copy()
    out = []
    for _ in range(count):
        q = q + rng.uniform(-step, step, arm.dof)
        q = np.where(q > arm.upper, 2 * arm.upper - q, q)
        q = np.where(q < arm.lower, 2 * arm.lower - q, q)
        out.append(q.copy())
    return np.array(out)


def dead_end(arm):
    """A stream whose last joint is driven past its upper limit (2.57 rad): on the branch it is
    tracked on, LM stalls at the limit (a dead end), and only the wrist turned over (joints 4
    and 6 half a turn round, 5 negated) goes on."""
    q = np.array([0.3, -0.3, 0.2, 0.5 - np.pi, -0.6, 0.0])
    out = []
    for last in np.linspace(2.45, 2.75, 31):
        q[5] = last
        out.append(q.copy())
    return np.array(out)


def poses(oracle, Q):
    """Targets from joints, by PyBullet (position, quaternion x y z w)."""
    P, R = oracle.fk_batch(Q)
    return P, np.array([matrix_to_quat(r) for r in R])


@pytest.fixture(scope="module")
def solvers(niryo_model):
    niryo = Solver.load(niryo_model)
    return {
        "niryo": niryo,
        "niryo_numpy": Solver.load(niryo_model, backend="numpy"),
        "niryo_nonet": niryo.without_network(),
        "inmoov": Solver(ArmModel.load("inmoov_right_arm")),
        "panda": Solver(ArmModel.load("franka_panda")),  # 7 joints: the damped step's m x m form
    }


@pytest.fixture(scope="module")
def web(solvers, tmp_path_factory):
    """Every job of this module through one Node process: {name: (inputs, answers)}."""
    if NODE is None:
        pytest.skip("node is not installed (Debian: apt-get install nodejs)")
    out = tmp_path_factory.mktemp("web")
    niryo = solvers["niryo"]
    files = {}
    for name in ("niryo", "niryo_nonet", "inmoov", "panda"):
        files[name] = str(write_web_model(solvers[name], out / f"{name}.web.json"))
    jobs = {}
    Q = joint_sets(niryo.arm, FK_SETS, 1)
    Q[:100] *= 7.0  # angles beyond a turn, as LM meets them
    jobs["forward"] = {"model": files["niryo"], "forward": Q.tolist()}
    with BulletFK.of(niryo.arm) as oracle:
        P, quats = poses(oracle, joint_sets(niryo.arm, SEED_TARGETS, 2))
        jobs["candidates"] = {
            "model": files["niryo"],
            "candidates": {"positions": P.tolist(), "quaternions": quats.tolist()},
        }
        for name, seed in (("niryo", 4), ("niryo_nonet", 5)):
            P, quats = poses(oracle, joint_sets(niryo.arm, TARGETS, seed))
            jobs[name] = {
                "model": files[name],
                "solve": {"positions": P.tolist(), "quaternions": quats.tolist()},
            }
    for name, seed in (("inmoov", 6), ("panda", 7)):
        arm = solvers[name].arm
        with BulletFK.of(arm) as oracle:
            P, quats = poses(oracle, joint_sets(arm, TARGETS, seed, inset=0.01))
        jobs[name] = {
            "model": files[name],
            "solve": {"positions": P.tolist(), "quaternions": quats.tolist()},
        }
    with BulletFK.of(niryo.arm) as oracle:
        P, quats = poses(oracle, joint_sets(niryo.arm, 200, 8))
    turn = np.array([0.0, 0.0, np.sin(0.6), np.cos(0.6)])  # about the tool's z, 1.2 rad
    jobs["free"] = {
        "model": files["niryo"],
        "solve": {
            "positions": P.tolist(),
            "quaternions": [quat_mul(q, turn).tolist() for q in quats],
            "freeAxis": "z",
        },
    }
    walk = np.concatenate([stream_joints(niryo.arm, 300, 0.02, 9), dead_end(niryo.arm)])
    with BulletFK.of(niryo.arm) as oracle:
        P, quats = poses(oracle, walk)
    for name, carry in (("stream", False), ("carried", True)):
        jobs[name] = {
            "model": files["niryo"],
            "solve": {
                "positions": P.tolist(),
                "quaternions": quats.tolist(),
                "start": walk[0].tolist(),
                "carry": carry,
            },
        }
    odd = [[np.nan, 0.0, 0.2], [0.2, 0.0, 0.2], [0.2, 0.0, 0.2], [3.0, 0.0, 0.2], [0.5, 0.3, 0.4]]
    jobs["statuses"] = {
        "model": files["niryo"],
        "solve": {
            "positions": odd,
            "quaternions": [
                [0, 0, 0, 1.0],
                [0, 0, 0.3, 1.0],
                [0, np.inf, 0, 1.0],
                [0, 0, 0, 1.0],
                [0, 0, 0, 1.0],
            ],
            "oneByOne": True,
        },
    }
    work = out / "jobs.json"
    work.write_text(json.dumps(spelled(list(jobs.values()))))
    done = subprocess.run(
        [NODE, str(RUNNER), str(work)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout)
    return {name: (job, answer) for (name, job), answer in zip(jobs.items(), answers)}


def quat_mul(a, b):
    """The Hamilton product a b of two quaternions (x y z w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def spelled(x):
    """Non-finite numbers as the strings runner.mjs reads back ("NaN", "Infinity"): JSON has
    no word for them."""
    if isinstance(x, dict):
        return {k: spelled(v) for k, v in x.items()}
    if isinstance(x, list):
        return [spelled(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


def nan(values):
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def test_the_file_holds_the_solver_s_buffers_and_their_checksum(solvers, tmp_path):
    solver = solvers["niryo"]
    data = web_model(solver)
    assert data["format"] == FORMAT and data["dof"] == 6 and data["mode"] == "pose"
    model = np.frombuffer(base64.b64decode(data["model"]["base64"]), "<f8")
    netw = np.frombuffer(base64.b64decode(data["netw"]["base64"]), "<f4")
    np.testing.assert_array_equal(model, solver._model)
    np.testing.assert_array_equal(netw, solver._netw)
    digest = hashlib.sha256(model.tobytes() + netw.tobytes()).hexdigest()
    assert data["sha256"] == digest
    path = write_web_model(solver, tmp_path)  # a folder: model.web.json in it
    assert path == tmp_path / "model.web.json"
    assert json.loads(path.read_text())["sha256"] == digest
    assert [p.name for p in tmp_path.iterdir()] == ["model.web.json"]  # no temporary left


def test_a_large_network_stays_well_under_two_megabytes(niryo):
    # hidden [256, 256, 256], 4 heads: the size of the file, weights as float32
    from robot_ik_nn.ik.network_forward import pack_network

    rng = np.random.default_rng(0)
    sizes, state = [9, 256, 256, 256, 48], {}
    for i in range(4):
        name = f"body.{i}" if i < 3 else "head"
        state[f"{name}.weight"] = rng.standard_normal((sizes[i + 1], sizes[i]), np.float32)
        state[f"{name}.bias"] = rng.standard_normal(sizes[i + 1], np.float32)
    state.update(
        j1_R=np.eye(3),
        j1_p=np.zeros(3),
        j1_basis=np.eye(3),
        pos_center=np.zeros(3),
        pos_scale=np.ones(3),
        lower=niryo.lower,
        upper=niryo.upper,
        continuous=niryo.continuous,
    )
    net = pack_network(state, {"dof": 6, "mode": "pose", "heads": 4})
    text = json.dumps(web_model(Solver(niryo, net, network_config={"mode": "pose"})))
    assert len(text) < 1_000_000, len(text)


@need_node
def test_forward_kinematics_equal_the_python_kernel_s(web, solvers):
    job, answer = web["forward"]
    P, R = solvers["niryo"].forward(np.array(job["forward"]))
    assert np.abs(nan(answer["forward"]["positions"]) - P.ravel()).max() <= 1e-9
    assert np.abs(nan(answer["forward"]["rotations"]) - R.ravel()).max() <= 1e-9


@need_node
def test_the_network_s_candidates_equal_the_numpy_backend_s(web, solvers):
    job, answer = web["candidates"]
    c = job["candidates"]
    R = np.array([quat_to_matrix(q) for q in c["quaternions"]])
    want = solvers["niryo_numpy"].network_seeds(np.array(c["positions"]), R)
    got = np.array(answer["candidates"]).reshape(want.shape)
    assert np.abs(got - want).max() <= 1e-9


@need_node
@pytest.mark.parametrize("name", ["niryo", "niryo_nonet", "inmoov", "panda"])
def test_answers_are_right_by_pybullet(web, solvers, name):
    job, answer = web[name]
    arm = solvers[name].arm
    s = answer["solve"]
    Q = nan(s["q"]).reshape(-1, arm.dof)
    status = np.array(s["status"])
    assert np.all(status != 2)  # every target is a pose the arm takes
    assert np.all(Q >= arm.lower - 1e-12) and np.all(Q <= arm.upper + 1e-12)
    with BulletFK.of(arm) as oracle:
        P, R = oracle.fk_batch(Q)
    want_P = np.array(job["solve"]["positions"])
    want_R = np.array([quat_to_matrix(q) for q in job["solve"]["quaternions"]])
    pos = np.linalg.norm(P - want_P, axis=1)
    rot = rotation_angle(R, want_R)
    within = (pos <= 1e-3 + 1e-6) & (rot <= 0.01 + 1e-6)
    assert within.mean() >= 0.999, (within.mean(), pos.max(), rot.max())
    # "solved" means solved: its reported errors are what PyBullet sees
    ok = status == 0
    assert np.all(within[ok])
    assert np.abs(nan(s["posErr"])[ok] - pos[ok]).max() < 1e-6


@need_node
@pytest.mark.parametrize("name", ["niryo", "niryo_nonet", "panda"])
def test_answers_are_the_python_solver_s(web, solvers, name):
    # the same policy, the same restarts' random numbers: the same LM iterations and joints
    # (rounding apart: the JavaScript products and sums are not always in numba's order)
    job, answer = web[name]
    s, solver = job["solve"], solvers[name]
    want = [solver.solve(p, q) for p, q in zip(s["positions"], s["quaternions"])]
    its = np.array(answer["solve"]["iterations"])
    same = its == np.array([a.iterations for a in want])
    assert same.mean() >= 0.99, same.mean()
    Q = nan(answer["solve"]["q"]).reshape(len(want), -1)
    assert np.abs(Q[same] - np.array([a.q for a in want])[same]).max() <= 1e-6
    codes = ["solved", "best_effort", "rejected"]
    assert [codes[c] for c in answer["solve"]["status"]] == [a.status for a in want]


@need_node
@pytest.mark.parametrize("name", ["stream", "carried"])
def test_a_tracked_stream_as_the_python_solver_tracks_it(web, solvers, name):
    # each target from the answer before it: the warm start, the seeds around it where LM is
    # stuck, the network after them; "carried": the last step carried on (previous=); the same
    # iterations and joints as the Python solver
    job, answer = web[name]
    s, solver = job["solve"], solvers["niryo"]
    last, previous, py = np.array(s["start"]), None, []
    for p, q in zip(s["positions"], s["quaternions"]):
        a = solver.solve(p, q, current=last, last=last, previous=previous if s["carry"] else None)
        py.append(a)
        if a.q is not None:
            previous, last = last, a.q
    its = np.array(answer["solve"]["iterations"])
    same = its == [a.iterations for a in py]
    assert same.mean() >= 0.99, same.mean()
    Q = nan(answer["solve"]["q"]).reshape(-1, 6)
    assert np.abs(Q[same] - np.array([a.q for a in py])[same]).max() <= 1e-6
    assert its.max() > 50  # the stream met a dead end, searched around its last answer
    # ... and searched as long (a few targets' iterations differing by rounding would not tip
    # this; one more rung of seeds around the last answer adds hundreds)
    total = sum(a.iterations for a in py)
    assert abs(its.sum() - total) <= 0.01 * total, (its.sum(), total)


@need_node
def test_a_free_tool_axis_as_the_python_solver_leaves_it(web, solvers):
    # targets turned about the tool's z: with z free, the tool's z axis is aligned (PyBullet),
    # the turn about it is not asked for, and the answers are the Python solver's
    job, answer = web["free"]
    s, solver = job["solve"], solvers["niryo"]
    Q = nan(answer["solve"]["q"]).reshape(-1, 6)
    assert np.all(np.array(answer["solve"]["status"]) == 0)
    with BulletFK.of(solver.arm) as oracle:
        P, R = oracle.fk_batch(Q)
    want_R = np.array([quat_to_matrix(q) for q in s["quaternions"]])
    assert np.linalg.norm(P - np.array(s["positions"]), axis=1).max() <= 1e-3 + 1e-6
    cos = np.einsum("bi,bi->b", R[:, :, 2], want_R[:, :, 2])
    assert np.arccos(np.clip(cos, -1, 1)).max() <= 0.01 + 1e-6
    assert rotation_angle(R, want_R).max() > 0.5  # the turn about z was left
    py = [solver.solve(p, q, free_axis="z") for p, q in zip(s["positions"], s["quaternions"])]
    same = np.array(answer["solve"]["iterations"]) == [a.iterations for a in py]
    assert same.mean() >= 0.99
    assert np.abs(Q[same] - np.array([a.q for a in py])[same]).max() <= 1e-6


@need_node
def test_statuses_and_reasons_are_the_python_solver_s(web, solvers):
    job, answer = web["statuses"]
    s, solver = job["solve"], solvers["niryo"]
    for i, (p, q) in enumerate(zip(s["positions"], s["quaternions"])):
        want = solver.solve(p, q)
        assert ["solved", "best_effort", "rejected"][answer["solve"]["status"][i]] == want.status
        assert answer["solve"]["reasons"][i] == want.reason
