"""The IK core's solvers: the network without torch (every backend), the compiled solver for one
target and for batches, the batched torch solver, and what each setting does."""

import copy
import time

import numba
import numpy as np
import pytest
import torch

from robot_ik_nn import model_dir
from robot_ik_nn.arm.rotations import matrix_to_quaternion, rotation_angle, wrap_angle
from robot_ik_nn.evaluate import held_out_targets
from robot_ik_nn.ik import candidates, kernel, layout
from robot_ik_nn.ik.forward import quat_to_matrix
from robot_ik_nn.ik.network_forward import net_forward
from robot_ik_nn.ik.settings import IKSettings
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.ik.torch_solver import TorchSolver


@pytest.fixture(scope="module")
def targets(niryo):
    _, P, R = held_out_targets(niryo, 1000, seed=21)
    return P, R, matrix_to_quaternion(R)


@pytest.fixture(scope="module")
def with_onnx(niryo_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx") / "niryo_one"
    for f in niryo_model.iterdir():
        if f.is_file():
            (folder.parent / "niryo_one").mkdir(exist_ok=True)
            (folder / f.name).write_bytes(f.read_bytes())
    model_dir.export_onnx(folder)
    return folder


def angle_gap(a, b):
    return np.abs(wrap_angle(np.asarray(a) - np.asarray(b))).max()


def test_an_onnx_file_not_of_these_weights_is_refused(with_onnx, tmp_path):
    from robot_ik_nn.ik.network_forward import pack_network
    from robot_ik_nn.ik.onnx_layers import onnx_bytes

    folder = tmp_path / "niryo_one"
    folder.mkdir()
    for f in with_onnx.iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    assert Solver.load(folder, backend="onnx").solve([0.2452, 0.0, 0.4175], [0, 0, 0, 1]).solved
    read = model_dir.read(folder)
    (folder / "model.onnx").write_bytes(
        onnx_bytes(pack_network(read.tensors, read.meta["network"]), "0" * 64)
    )
    with pytest.raises(model_dir.ModelDirError, match="written from other weights"):
        Solver.load(folder, backend="onnx")
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(model_dir.ModelDirError, match="model.onnx is unreadable"):
        Solver.load(folder, backend="onnx")
    (folder / "model.onnx").unlink()
    with pytest.raises(model_dir.ModelDirError, match="export .* --onnx"):
        Solver.load(folder, backend="onnx")


def test_every_backend_gives_the_torch_networks_joints(with_onnx, targets):
    P, R, _ = targets
    net = model_dir.load(with_onnx).net
    with torch.no_grad():  # the network's exact function: its float32 weights evaluated in float64
        exact = (
            copy.deepcopy(net)
            .double()
            .candidates(torch.from_numpy(P), torch.from_numpy(R))
            .numpy()
        )
        single = (
            net.candidates(torch.from_numpy(P).float(), torch.from_numpy(R).float())
            .double()
            .numpy()
        )
    assert exact.shape == (1000, 2, 6)
    compiled = Solver.load(with_onnx)
    chain, cfg, meta, sizes = layout.parts(compiled._model)
    out, h1, h2 = (
        np.empty((2, 6)),
        np.empty(2 * compiled.network.width),
        np.empty(2 * compiled.network.width),
    )
    # the README: the three torch-free backends agree with the float64 torch network within
    # 1e-12 rad on 1,000 targets (the test's network: 6e-14 compiled, 4e-13 numpy and onnx)
    gaps = {"compiled": 0.0}
    for i in range(1000):
        net_forward(compiled._netw, sizes, meta, P[i], R[i], np.zeros(6), False, out, h1, h2)
        gaps["compiled"] = max(gaps["compiled"], angle_gap(out, exact[i]))
    for backend in ("numpy", "onnx"):
        seeded = Solver.load(with_onnx, backend=backend).network_seeds(P, R)
        gaps[backend] = angle_gap(seeded, exact)
    print("\nlargest gap to the float64 torch network (rad):", gaps)
    assert max(gaps.values()) <= 1e-12, gaps
    # torch's own float32 pass is the one that strays (ill-conditioned at wrist singularities)
    assert angle_gap(single, exact) <= 1e-2
    # and the torch backend is that float32 network, seeding the same compiled refinement
    with_torch = Solver.load(with_onnx, backend="torch")
    np.testing.assert_array_equal(with_torch.network_seeds(P, R), single)
    assert with_torch.solve_batch(P[:50], matrix_to_quaternion(R[:50])).solved.all()


def test_refine_iterations_zero_is_the_network_alone(niryo_model, targets):
    P, R, Q = targets
    solver = Solver.load(niryo_model, IKSettings(iterations=0, restarts=50))
    result = solver.solve_batch(P[:200], Q[:200])
    cands = solver.network_seeds(P[:200], R[:200])  # (B, heads, dof)
    p, r = solver.forward(cands.reshape(-1, 6))
    score = solver.settings.score(
        np.linalg.norm(p - np.repeat(P[:200], 2, 0), axis=1),
        rotation_angle(r, np.repeat(R[:200], 2, 0)),
    ).reshape(200, 2)
    closest = cands[np.arange(200), score.argmin(1)]
    np.testing.assert_allclose(
        result.q, np.clip(closest, solver.arm.lower, solver.arm.upper), atol=1e-12
    )
    assert np.all(result.iterations == 0)
    one = solver.solve(P[0], Q[0])
    np.testing.assert_allclose(one.q, result.q[0], atol=1e-12)
    assert one.iterations == 0
    refined = Solver.load(niryo_model).solve_batch(P[:200], Q[:200])
    assert np.median(refined.pos_err) < np.median(result.pos_err) / 100


def test_the_first_candidate_within_close_is_refined_else_the_closest(niryo_model, targets):
    P, R, Q = targets
    solver = Solver.load(niryo_model)
    cands = np.clip(solver.network_seeds(P, R), solver.arm.lower, solver.arm.upper)
    B, heads, n = cands.shape
    p, r = solver.forward(cands.reshape(-1, n))
    score = solver.settings.score(
        np.linalg.norm(p - np.repeat(P, heads, 0), axis=1),
        rotation_angle(r, np.repeat(R, heads, 0)),
    ).reshape(B, heads)
    ws = layout.views(solver._scratch, n, heads, solver.network.width)
    q, kinds = np.empty(n), set()
    for i in range(B):
        if np.any(np.abs(score[i] - candidates.CLOSE) < 1e-9):
            continue  # too near the threshold to say which side the kernel's sums fall on
        quat_to_matrix(Q[i], ws[12])
        candidates.first(
            solver._model,
            solver._netw,
            P[i],
            ws[12],
            True,
            solver._cur,
            False,
            solver._seed,
            False,
            q,
            ws,
        )
        close = np.flatnonzero(score[i] < candidates.CLOSE)
        h = close[0] if len(close) else int(score[i].argmin())
        np.testing.assert_allclose(q, cands[i, h], atol=1e-9)
        assert ws[17][h] == np.inf  # used up
        if len(close):  # the heads after it were not looked at
            assert np.isnan(ws[17][h + 1 :]).all()
        else:  # all were placed: the rest are ranked by where their tools land
            rest = np.delete(np.arange(heads), h)
            np.testing.assert_allclose(ws[17][rest], score[i, rest], atol=1e-9)
        kinds.add(bool(len(close)))
    assert kinds == {True, False}  # both ways were taken on these targets


def test_one_target_and_a_batch_agree_and_batches_do_not_depend_on_threads(niryo_model, targets):
    P, _, Q = targets
    solver = Solver.load(niryo_model)
    batch = solver.solve_batch(P[:300], Q[:300])
    assert batch.solved.mean() >= 0.99
    numba.set_num_threads(1)
    try:
        again = solver.solve_batch(P[:300], Q[:300])
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(batch.q, again.q)
    singles = [solver.solve(P[i], Q[i]) for i in range(300)]
    for i in range(300):
        np.testing.assert_array_equal(singles[i].q, batch.q[i])


def test_a_target_gets_its_answer_alone_or_anywhere_in_a_batch(niryo_model, targets):
    """The restarts' random numbers come from the target itself: the same answer alone, at any
    place in a batch, and every time; different targets draw different numbers."""
    P, _, Q = targets
    solver = Solver.load(niryo_model, IKSettings(iterations=3, restart_iterations=3))
    solver = solver.without_network()  # mid-range, then restarts: random numbers are used
    singles = [solver.solve(P[i], Q[i]) for i in range(200)]
    restarted = [i for i, a in enumerate(singles) if a.iterations > 3]
    assert len(restarted) > 50
    flipped = solver.solve_batch(P[:200][::-1], Q[:200][::-1])
    for i in restarted:
        np.testing.assert_array_equal(singles[i].q, flipped.q[199 - i])
        np.testing.assert_array_equal(singles[i].q, solver.solve(P[i], Q[i]).q)
    cfg = layout.parts(solver._model)[1]
    state = np.zeros(1, np.uint64)
    starts = set()
    for i in range(200):  # and the position alone, for position targets
        for quat, has_quat in ((Q[i], True), (Q[i], False)):
            kernel.start_stream(cfg, P[i], quat, has_quat, state)
            starts.add(int(state[0]))
    assert len(starts) == 400
    kernel.start_stream(cfg, P[0] + 1e-9, Q[0], True, state)  # a nanometre: other numbers
    assert int(state[0]) not in starts


def test_tracking_starts_from_the_last_answer(niryo_model, targets):
    P, _, Q = targets
    solver = Solver.load(niryo_model)
    first = solver.solve(P[0], Q[0])
    q_near = first.q + 0.01
    p, r = solver.forward(q_near)
    answer = solver.solve(p[0], matrix_to_quaternion(r[0]), current=first.q, last=first.q)
    assert answer.solved and answer.iterations <= 4
    assert np.abs(answer.q - q_near).max() < 1e-3  # stays on the branch it was on


def test_the_torch_solver_follows_the_same_settings(niryo_model, targets):
    P, _, Q = targets
    loaded = model_dir.load(niryo_model)
    result = TorchSolver(loaded.arm, loaded.net, IKSettings(restarts=64)).solve(P[:200], Q[:200])
    assert result.solved.mean() >= 0.99
    alone = TorchSolver(loaded.arm, loaded.net, IKSettings(iterations=0)).solve(P[:200], Q[:200])
    compiled = Solver.load(niryo_model, IKSettings(iterations=0)).solve_batch(P[:200], Q[:200])
    np.testing.assert_allclose(alone.q, compiled.q, atol=1e-4)  # torch float32 network vs float64


def test_wide_restart_rounds_give_every_seed_at_once(niryo_model, targets):
    """round_rows, on by default on CUDA, checked here on the CPU: the targets left after the
    first pass get their seeds in one round, not in rounds of 4, 8, 16 ..."""
    P, _, Q = targets
    loaded = model_dir.load(niryo_model)
    settings = IKSettings(restarts=64)
    seen = {}
    for rows in (0, 4096):
        solver = TorchSolver(loaded.arm, loaded.net, settings, round_rows=rows)
        refine, sizes = solver.refine, []
        solver.refine = lambda q, *a, refine=refine, sizes=sizes: sizes.append(len(q)) or refine(
            q, *a
        )
        seen[rows] = solver.solve(P[:300], Q[:300]), sizes
    (narrow, narrow_sizes), (wide, wide_sizes) = seen[0], seen[4096]
    assert len(narrow_sizes) > 2, "these targets should need several narrow rounds"
    assert len(wide_sizes) == 2 and wide_sizes[1] % 64 == 0  # the first pass, then 64 seeds each
    assert wide.solved.mean() >= narrow.solved.mean() >= 0.99
    with pytest.raises(ValueError, match="round_rows -1"):
        TorchSolver(loaded.arm, loaded.net, settings, round_rows=-1)


@pytest.mark.cuda  # skipped without CUDA; make test-gpu fails instead (conftest.py)
def test_the_torch_solver_on_cuda_gives_the_cpu_verdicts(niryo_model, targets):
    P, _, Q = targets
    loaded = model_dir.load(niryo_model)
    bad = np.vstack([P[:300], [[np.nan, 0, 0], [9.0, 9.0, 9.0]]])
    quat = np.vstack([Q[:300], [[0, 0, 0, 1], [0, 0, 0, 1]]])
    cpu = TorchSolver(loaded.arm, loaded.net, IKSettings(restarts=64)).solve(bad, quat)
    gpu = TorchSolver(loaded.arm, loaded.net, IKSettings(restarts=64), device="cuda").solve(
        bad, quat
    )
    assert gpu.solved[:300].mean() >= 0.99 and list(gpu.status[300:]) == ["rejected"] * 2
    assert gpu.reason[300:] == cpu.reason[300:]
    both = cpu.solved & gpu.solved
    assert both.mean() >= 0.98  # answers may differ (float order, restarts); both are exact
    assert np.all(gpu.pos_err[both] <= 1e-3) and np.all(gpu.rot_err[both] <= 0.01)


def test_no_network_and_position_only_targets(slider_arm, niryo):
    solver = Solver(niryo)
    _, P, _ = held_out_targets(niryo, 200, seed=5)
    result = solver.solve_batch(P)
    assert result.solved.mean() >= 0.99 and np.all(result.rot_err == 0)
    assert "no network" not in repr(solver) and solver.backend == "none"


def test_warm_up_resolves_the_compiled_entry_before_the_first_target(niryo_model):
    solver = Solver.load(niryo_model)
    assert solver._solve_one is None  # resolved on the first solve
    for s in (solver, Solver.load(niryo_model).with_settings(iterations=0)):  # the last: no search
        started = time.perf_counter()
        spent = s.warm_up()
        # the seconds it spent: more than nothing (it solved), no more than the call took
        assert 0.0 < spent <= time.perf_counter() - started
    assert solver._solve_one is not None
    # it solved a pose the arm takes: the entries it resolved answer one now
    p, R = solver.forward(solver.arm.mid_range)
    assert solver.solve(p[0], matrix_to_quaternion(R)[0]).solved


def test_answers_repeat_and_bad_joint_or_shape_inputs_are_refused_by_name(niryo_model, targets):
    P, _, Q = targets
    solver = Solver.load(niryo_model)
    first = [solver.solve(P[i], Q[i]) for i in range(200)]
    again = [solver.solve(P[i], Q[i]) for i in range(200)]  # the random state set again per call
    assert all(np.array_equal(a.q, b.q) for a, b in zip(first, again))
    np.testing.assert_array_equal(solver.solve_batch(P[:1], Q[:1]).q[0], first[0].q)
    batch = solver.solve_batch(P[:5], Q[:5])
    assert [batch[i].iterations for i in range(5)] == batch.iterations.tolist()
    with pytest.raises(TypeError, match="one target at a time"):
        batch[0:2]
    n = solver.arm.dof
    for bad, said in [
        (np.full(n, np.nan), "holds joint values that are not finite or beyond 1e6"),
        (np.full(n, 1e20), "holds joint values that are not finite or beyond 1e6"),
        (np.zeros(n - 1), f"must be joint values of shape \\({n}\\); got shape \\({n - 1},\\)"),
        (0.3, f"must be joint values of shape \\({n}\\); got shape \\(\\)"),
    ]:
        with pytest.raises(ValueError, match="last " + said):
            solver.solve(P[0], Q[0], last=bad)
    with pytest.raises(ValueError, match=r"positions must be an array of shape \(B, 3\)"):
        solver.solve_batch(P[:4].T, Q[:4])  # transposed: never quietly reshaped
    with pytest.raises(ValueError, match=r"quaternions must be an array of shape \(4, 4\)"):
        solver.solve_batch(P[:4], Q[:3])
    with pytest.raises(ValueError, match=r"current must be joint values of shape \(4, "):
        solver.solve_batch(P[:4], Q[:4], current=np.zeros(n))
    table = solver.with_obstacles(planes=[((0, 0, 1), 0.1)])
    assert len(table.without_network().collisions.obstacles) == 1  # the table stays
    with pytest.raises(TypeError, match="settings must be an IKSettings"):
        Solver.load(niryo_model, {"pos_tol": 1e-4})
    for bad in (dict(rng_seed=-1), dict(pos_tol=True), dict(collision_check="no")):
        with pytest.raises(ValueError, match=f"IKSettings.{next(iter(bad))} must"):
            IKSettings(**bad)


def test_a_copy_per_thread_answers_as_one_solver_alone(niryo_model, targets):
    """A solver keeps its scratch between calls, so two threads need two solvers (found by a
    review: one solver shared by two tracking threads mixed their answers); ``copy`` gives one
    with buffers of its own."""
    import sys
    import threading

    P, _, Q = targets
    solver = Solver.load(niryo_model).with_obstacles(planes=[((0, 0, 1), -0.5)])
    other = solver.copy()
    assert other._scratch is not solver._scratch and other._warm[2] is not solver._warm[2]
    assert other.collisions.frames is not solver.collisions.frames

    def track(s, order, out):
        last = None
        for i in order:
            last = s.solve(P[i], Q[i], current=last, last=last).q
            out.append(last)

    alone_a, alone_b, got_a, got_b = [], [], [], []
    track(solver, range(200), alone_a)
    track(solver, range(199, -1, -1), alone_b)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads swap as often as they can
    try:
        threads = [
            threading.Thread(target=track, args=(solver, range(200), got_a)),
            threading.Thread(target=track, args=(other, range(199, -1, -1), got_b)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert all(np.array_equal(x, y) for x, y in zip(got_a + got_b, alone_a + alone_b))


def test_forward_and_load_name_a_wrong_input(niryo_model):
    import robot_ik_nn

    solver = Solver.load(niryo_model)
    with pytest.raises(ValueError, match=r"forward takes joints of shape \(6,\) or \(B, 6\)"):
        solver.forward(np.zeros(5))  # was: numpy's "cannot reshape array of size 5"
    assert solver.forward(np.zeros(6))[0].shape == (1, 3)
    assert solver.forward([])[0].shape == (0, 3)
    with pytest.raises(TypeError, match="a model is a folder or a .tar.gz path; got None"):
        robot_ik_nn.load(None)


@pytest.fixture(scope="module")
def tracking_model(tmp_path_factory):
    """A small tracking network (``train --tracking``: it also takes the arm's joints), a few
    hundred steps, with its model.onnx."""
    from robot_ik_nn.learn.training import TrainConfig, Trainer

    out = tmp_path_factory.mktemp("tracking") / "niryo_one"
    config = TrainConfig(
        robot="niryo_one", steps=100, minutes=None, out=str(out), hidden=[32, 32], heads=2,
        tracking=True,
    )  # fmt: skip
    Trainer(config, progress=False).run()
    model_dir.export_onnx(out)
    return out


def test_a_tracking_network_gets_the_torch_networks_joints_from_every_backend(
    tracking_model, targets
):
    """The README's 1e-12 rad for the torch-free backends, with the arm's joints as input."""
    P, R, _ = targets
    P, R = P[:300], R[:300]
    net = model_dir.load(tracking_model).net
    assert net.config.tracking
    arm = Solver.load(tracking_model).arm
    rng = np.random.default_rng(3)
    current = rng.uniform(arm.lower, arm.upper, (300, arm.dof))
    elsewhere = rng.uniform(arm.lower, arm.upper, (300, arm.dof))
    double = copy.deepcopy(net).double()
    with torch.no_grad():
        exact, moved = (
            double.candidates(torch.from_numpy(P), torch.from_numpy(R), torch.from_numpy(c))
            .numpy()
            for c in (current, elsewhere)
        )
    # the joints are an input: a backend that dropped them would be far off
    assert angle_gap(exact, moved) > 1e-2
    compiled = Solver.load(tracking_model)
    _, _, meta, sizes = layout.parts(compiled._model)
    width = compiled.network.width
    out, h1, h2 = np.empty((2, arm.dof)), np.empty(2 * width), np.empty(2 * width)
    gaps = {"compiled": 0.0}
    for i in range(len(P)):
        net_forward(compiled._netw, sizes, meta, P[i], R[i], current[i], True, out, h1, h2)
        gaps["compiled"] = max(gaps["compiled"], angle_gap(out, exact[i]))
    for backend in ("numpy", "onnx"):
        found = Solver.load(tracking_model, backend=backend).network_seeds(P, R, current)
        gaps[backend] = angle_gap(found, exact)
    print("\ntracking network, largest gap to the float64 torch network (rad):", gaps)
    assert max(gaps.values()) <= 1e-12, gaps


def _target_at(solver, factor: float):
    """A position ``factor`` times the arm's reach bound from its first joint."""
    direction = np.array([1.0, 0.3, 0.2]) / np.linalg.norm([1.0, 0.3, 0.2])
    return solver.origin + factor * solver.arm.reach * direction


def test_reach_margin_sets_where_a_target_is_rejected_as_a_slip_of_units(niryo_model, targets):
    """README: farther than reach_margin times the reach bound is rejected; nearer, but outside
    the bound, is a best effort (the closest pose)."""
    _, _, Q = targets
    solver = Solver.load(niryo_model)
    verdicts = {}
    for factor in (1.5, 2.5):
        for margin in (1.2, 2.0, 3.0):
            quick = dict(reach_margin=margin, far_restarts=10, far_polish=10)  # a verdict
            answer = solver.with_settings(**quick).solve(_target_at(solver, factor), Q[0])
            verdicts[factor, margin] = (answer.status, answer.reason.split(":")[0])
    far, closest = ("rejected", "far outside the reach"), ("best_effort", "outside the reach")
    assert verdicts == {
        (1.5, 1.2): far, (1.5, 2.0): closest, (1.5, 3.0): closest,
        (2.5, 1.2): far, (2.5, 2.0): far, (2.5, 3.0): closest,
    }, verdicts  # fmt: skip


def test_quat_tolerance_sets_which_quaternions_are_normalised(niryo_model, targets):
    """README: a quaternion with |norm - 1| within quat_tolerance is normalised, beyond it
    rejected."""
    P, _, Q = targets
    solver = Solver.load(niryo_model)
    unit = solver.solve(P[0], Q[0])
    assert unit.solved
    long = Q[0] * 1.005
    strict = solver.solve(P[0], long)  # the default: 1e-3
    assert strict.status == "rejected" and "not unit length (norm 1.005" in strict.reason
    loose = solver.with_settings(quat_tolerance=0.01)
    taken = loose.solve(P[0], long)
    assert taken.solved and np.array_equal(taken.q, unit.q)  # the same target, normalised
    refused = loose.solve(P[0], Q[0] * 1.02)
    assert refused.status == "rejected" and "within 0.01 of 1 is taken" in refused.reason


def test_warm_radius_sets_when_the_warm_start_goes_first(niryo_model, targets):
    """README: a warm start within warm_radius (weighted error) goes first. A warm start 2 cm
    from a target, beside another answer than the network's: within the default 5 cm it keeps
    that branch; with warm_radius 5 mm the network's answer comes first."""
    P, R, Q = targets
    solver = Solver.load(niryo_model)
    rng = np.random.default_rng(0)
    tried = 0
    for i in range(40):
        network = solver.solve(P[i], Q[i])
        branch = next(
            (b for b in solver.solve(P[i], Q[i], solutions=6)
             if b.solved and np.abs(b.q - network.q).max() > 0.5),
            None,
        )  # fmt: skip
        if not network.solved or branch is None:
            continue
        direction = rng.normal(size=solver.arm.dof)
        direction /= np.linalg.norm(direction)
        for t in np.linspace(0.0, 0.5, 500):  # walked off the answer until 2 cm away
            warm = np.clip(branch.q + t * direction, solver.arm.lower, solver.arm.upper)
            p, r = solver.forward(warm)
            error = solver.settings.score(np.linalg.norm(p[0] - P[i]), rotation_angle(r[0], R[i]))
            if error > 0.02:
                break
        assert 0.02 < error < 0.03
        kept = solver.solve(P[i], Q[i], current=warm, last=warm)
        near = solver.with_settings(warm_radius=0.005).solve(P[i], Q[i], current=warm, last=warm)
        assert kept.solved and near.solved
        assert np.abs(kept.q - branch.q).max() < 0.05, "the warm start did not go first"
        assert np.abs(near.q - network.q).max() < 1e-6, "the warm start went first regardless"
        tried += 1
        if tried == 3:
            break
    assert tried == 3, "too few targets with a second answer"


def test_stop_fraction_sets_how_far_inside_the_tolerance_refinement_goes(niryo_model, targets):
    """README: LM goes on until the error is stop_fraction of the tolerance, or its iterations
    run out. All solved either way; the errors and the iterations follow the setting."""
    P, _, Q = targets
    solver = Solver.load(niryo_model)
    errors, iterations = {}, {}
    for fraction in (1e-6, 0.01, 1.0):
        found = solver.with_settings(stop_fraction=fraction).solve_batch(P[:200], Q[:200])
        assert found.solved.all()
        errors[fraction] = float(np.median(solver.settings.score(found.pos_err, found.rot_err)))
        iterations[fraction] = float(found.iterations.mean())
    print("\nmedian weighted error (m):", errors, "mean iterations:", iterations)
    pos_tol = solver.settings.pos_tol
    assert errors[1e-6] <= 1e-6 * pos_tol  # refined far inside the tolerance
    assert errors[0.01] <= 0.01 * pos_tol < errors[1.0] <= pos_tol  # stopped once inside it
    assert iterations[1e-6] > iterations[0.01] > iterations[1.0]
