"""The collision model (ik/collision.py, ik/convex.py), judged by what it does not share:
PyBullet's contact query and distances on the URDF's own shapes, an SLSQP minimiser for the
distance between two convex hulls, and targets made from joint sets PyBullet finds free."""

import numpy as np
import pytest
from scipy.optimize import minimize

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.bench.collisions import compare, free_joints, pybullet_contacts
from robot_ik_nn.ik import collision, convex, forward, layout
from robot_ik_nn.ik.collision import CollisionModel
from robot_ik_nn.ik.settings import IKSettings
from robot_ik_nn.ik.shapes import SHELL, hull, hull_block, with_bounds
from robot_ik_nn.ik.solver import Solver

ARMS = ["niryo_one", "inmoov_right_arm", "franka_panda", "kuka_iiwa"]


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            arm = ArmModel.load(name)
            cache[name] = arm, CollisionModel.from_arm(arm)
        return cache[name]

    return get


def _uniform(arm, n, seed):
    lo = np.where(np.isfinite(arm.lower), arm.lower, -np.pi)
    hi = np.where(np.isfinite(arm.upper), arm.upper, np.pi)
    return np.random.default_rng(seed).uniform(lo, hi, (n, arm.dof))


@pytest.mark.parametrize("name", ARMS + ["slider"])
def test_link_frames_end_at_the_kernels_tip(name, slider_arm):
    arm = slider_arm if name == "slider" else ArmModel.load(name)
    chain = layout.pack_chain(arm)
    frames = np.zeros((arm.dof + 1, 12))
    p, R = np.empty(3), np.empty((3, 3))
    J, work = np.empty((6, arm.dof)), np.empty((layout.WORK_ROWS, arm.dof))
    for q in _uniform(arm, 50, 3):
        forward.link_frames(chain, q, frames)
        forward.fk(chain, q, p, R, J, work, False)
        last = np.eye(4)
        last[:3, :3], last[:3, 3] = frames[-1, :9].reshape(3, 3), frames[-1, 9:]
        tip = last @ arm.tip_offset
        np.testing.assert_allclose(tip[:3, 3], p, atol=1e-12)
        np.testing.assert_allclose(tip[:3, :3], R, atol=1e-12)
    np.testing.assert_array_equal(frames[0], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0])


# -- distances: GJK against a minimiser, and against PyBullet -------------------------------------
def _hull_row(V, first):
    """A hull's row for corners ``V`` whose block (shapes.hull_block) starts at row ``first``."""
    row = np.zeros(convex.ROW)
    row[convex.KIND], row[convex.PAR], row[convex.PAR + 1] = convex.HULL, first, len(V)
    row[convex.PAR + 2] = first + len(V)
    row[convex.ROT : convex.ROT + 9] = np.eye(3).ravel()
    return with_bounds(row, V)


def _pose(rng, spread):
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    return np.concatenate([R.ravel(), rng.uniform(-spread, spread, 3)])


def test_gjk_distance_matches_a_minimiser_on_random_hulls():
    """The distance between two convex hulls is min |A a - B b| over the simplex weights a, b:
    SLSQP finds it without any support function; apart pairs agree to 1e-7 m, and a pair SLSQP
    finds overlapping is said to be so."""
    rng = np.random.default_rng(0)
    W = np.zeros((4, 3))
    apart = overlapping = 0
    for case in range(40):
        A, near_a = hull(rng.normal(size=(rng.integers(4, 12), 3)) * rng.uniform(0.01, 0.1, 3))
        B, near_b = hull(rng.normal(size=(rng.integers(4, 12), 3)) * rng.uniform(0.01, 0.1, 3))
        pa, pb = _pose(rng, 0.15 if case % 2 else 0.04), _pose(rng, 0.15 if case % 2 else 0.04)
        WA = A @ pa[:9].reshape(3, 3).T + pa[9:]
        WB = B @ pb[:9].reshape(3, 3).T + pb[9:]
        block = hull_block(A, near_a)
        verts = np.concatenate([block, hull_block(B, near_b)])
        a, b = _hull_row(A, 0), _hull_row(B, len(block))
        ours = convex.distance(a, pa, b, pb, verts, -1.0, W)
        n = len(A)

        def gap2(x, n=n, WA=WA, WB=WB):
            d = x[:n] @ WA - x[n:] @ WB
            return d @ d

        def one(x, lo, hi):
            return x[lo:hi].sum() - 1

        best = min(
            (
                minimize(
                    gap2,
                    np.concatenate([rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(len(B)))]),
                    method="SLSQP",
                    bounds=[(0, 1)] * (n + len(B)),
                    constraints=[
                        {"type": "eq", "fun": one, "args": (0, n)},
                        {"type": "eq", "fun": one, "args": (n, None)},
                    ],
                    options={"ftol": 1e-16, "maxiter": 500},
                ).fun
                for _ in range(2)
            )
        )
        theirs = np.sqrt(max(best, 0.0))
        if theirs > 1e-5:
            apart += 1
            assert abs(ours - theirs) < 1e-7, (ours, theirs)
        else:
            overlapping += 1
            assert ours < 1e-5, (ours, theirs)
        # the early stops: a limit below the distance gives a lower bound above it, a limit at
        # or above it an upper bound at or below it
        if ours > 1e-4:
            assert ours * 0.5 < convex.distance(a, pa, b, pb, verts, ours * 0.5, W) <= ours + 1e-12
            assert convex.distance(a, pa, b, pb, verts, ours * 1.5, W) <= ours * 1.5
    assert apart >= 10 and overlapping >= 5, (apart, overlapping)  # both cases were reached


def test_bounding_capsules_hold_their_shapes():
    """Every corner of every hull, box and cylinder rim lies inside the shape's bounding sphere
    and capsule (the broad and mid phases skip pairs on their word)."""
    rng = np.random.default_rng(4)
    for name in ARMS + ["slider"]:
        if name == "slider":
            continue
        arm = ArmModel.load(name)
        model = CollisionModel.from_arm(arm, samples=10)
        for row in model.shapes:
            kind, par = row[convex.KIND], row[convex.PAR : convex.PAR + 3]
            if kind == convex.HULL:
                P = model.verts[int(par[0]) : int(par[0]) + int(par[1])]
            elif kind == convex.BOX:
                P = rng.uniform(-par, par, (500, 3))
            elif kind == convex.CYLINDER:
                a, z = rng.uniform(0, 2 * np.pi, 500), rng.uniform(-par[1], par[1], 500)
                P = np.stack([par[0] * np.cos(a), par[0] * np.sin(a), z], axis=1)
            else:
                P = np.zeros((1, 3)) + [0, 0, par[0] if kind == convex.SEGMENT else 0.0]
            grow = row[convex.RADIUS]
            mid, half = row[convex.BOUND : convex.BOUND + 3], row[convex.AXIS : convex.AXIS + 3]
            assert np.all(np.linalg.norm(P - mid, axis=1) + grow <= row[convex.BOUND_R] + 1e-12)
            a, e = mid - half, 2 * half
            s = np.clip((P - a) @ e / max(e @ e, 1e-300), 0, 1)
            d = np.linalg.norm(P - a - s[:, None] * e, axis=1)
            assert np.all(d + grow <= row[convex.CAP_R] + 1e-12), (name, kind)
    # the capsule gap never exceeds the true distance between two hulls
    W = np.zeros((4, 3))
    for _ in range(200):
        A, near_a = hull(rng.normal(size=(10, 3)) * [0.2, 0.03, 0.03])
        B, near_b = hull(rng.normal(size=(10, 3)) * [0.03, 0.2, 0.03])
        block = hull_block(A, near_a)
        verts = np.concatenate([block, hull_block(B, near_b)])
        a, b = _hull_row(A, 0), _hull_row(B, len(block))
        pa, pb = _pose(rng, 0.2), _pose(rng, 0.2)
        true = convex.distance(a, pa, b, pb, verts, -1.0, W)
        assert convex.capsule_gap(a, pa, b, pb) <= true + 1e-12
        assert convex.bound_gap(a, pa, b, pb) <= true + 1e-12


def test_a_hull_support_walk_finds_the_farthest_corner(models):
    """Uphill along the hull's edges, against every corner tried, for each Panda link's hull and
    for flat and tiny sets."""
    _, model = models("franka_panda")
    rng = np.random.default_rng(9)
    rows = [r for r in model.shapes if r[convex.KIND] == convex.HULL]
    flat = rng.uniform(-1, 1, (30, 3)) * [0.1, 0.05, 0.0]
    for V in (flat, rng.normal(size=(3, 3)), rng.normal(size=(200, 3))):
        corners, near = hull(V)
        rows.append(_hull_row(corners, len(model.verts)))
        model = model._with(verts=np.concatenate([model.verts, hull_block(corners, near)]))
    pose = np.concatenate([np.eye(3).ravel(), np.zeros(3)])
    for row in rows:
        first, n = int(row[convex.PAR]), int(row[convex.PAR + 1])
        corners = model.verts[first : first + n]
        for d in rng.normal(size=(200, 3)):
            start = int(rng.integers(n))  # from any corner
            got = np.array(convex.support(row, pose, model.verts, *d, start)[:3])
            assert got @ d == pytest.approx((corners @ d).max(), abs=1e-12)


@pytest.mark.parametrize("name", ARMS)
def test_distances_agree_with_pybullet(name, models):
    """Per checked link pair, on random joint sets: the model never claims more room than
    PyBullet measures, and claims at most the shell (plus PyBullet's own tolerance) less."""
    import pybullet as pb

    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm, model = models(name)
    pairs = {}
    for k, (a, b) in enumerate(model.pairs):
        key = tuple(sorted((model.shape_links[a], model.shape_links[b])))
        pairs.setdefault(key, []).append(k)
    poses = np.zeros((len(model.shapes), 12))
    W, compared = np.zeros((4, 3)), 0
    with ArmSim(arm) as sim:
        index = {pb.getBodyInfo(sim.body, physicsClientId=sim.client)[0].decode(): -1}
        for i in range(pb.getNumJoints(sim.body, physicsClientId=sim.client)):
            info = pb.getJointInfo(sim.body, i, physicsClientId=sim.client)
            index[info[12].decode()] = i
        for q in _uniform(arm, 40, 5):
            sim.set_joints(q)
            forward.link_frames(model.chain, q, model.frames)
            for i, row in enumerate(model.shapes):
                convex.place(row, model.frames[int(row[convex.FRAME])], poses[i])
            for (la, lb), ks in pairs.items():
                ours = min(
                    convex.gap(
                        model.shapes[a], poses[a], model.shapes[b], poses[b], model.verts, -1.0, W
                    )
                    for a, b in model.pairs[ks]
                )
                found = pb.getClosestPoints(
                    sim.body, sim.body, 10.0, index[la], index[lb], physicsClientId=sim.client
                )
                theirs = min(p[8] for p in found)
                if ours < 0:  # overlapping: the depth is not measured, only the fact
                    assert theirs < 1e-6, (la, lb, q)
                    continue
                compared += 1
                assert ours <= theirs + 2e-6, (la, lb, ours, theirs)
                assert ours >= theirs - 2 * SHELL - 1e-4, (la, lb, ours, theirs)
    assert compared >= 40


@pytest.mark.parametrize("name", ARMS)
def test_no_false_negatives_and_few_false_positives_against_pybullet(name, models):
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm, model = models(name)
    with ArmSim(arm) as sim:
        r = compare(sim, model, _uniform(arm, 500, 1))
    print(f"\n{name}: {model.describe()}\n{r}")
    assert r["false_negatives"] == 0, r
    assert r["false_positive_rate_of_free"] <= 0.01, r
    assert r["never_pairs_found_in_contact"] == [], r
    if name != "inmoov_right_arm":  # the InMoov arm cannot reach its torso from the shoulder
        assert r["pybullet_in_collision"] >= 20, r  # the check had contacts to find


def test_a_convex_decomposition_is_a_hull_per_piece():
    """xArm6's collision meshes are V-HACD pieces, an .obj object each: PyBullet collides each
    piece's hull (one hull of the whole file refused 2 % of the free joint sets)."""
    import warnings

    from robot_ik_nn.arm.resources import pybullet_data_path
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the vendor's file: missing inertials
        arm = ArmModel.load(pybullet_data_path() / "xarm/xarm6_robot.urdf")
        model = CollisionModel.from_arm(arm)
        with ArmSim(arm) as sim:
            r = compare(sim, model, _uniform(arm, 400, 8))
    assert r["false_negatives"] == 0 and r["false_positives"] == 0, r
    assert len(model.shapes) == 21  # 5 + 2 + 3 + 3 + 5 + 2 + 1 pieces
    assert r["pybullet_in_collision"] >= 20, r


def test_the_panda_hand_and_fingers_are_checked(models):
    arm, model = models("franka_panda")
    assert {"panda_leftfinger", "panda_rightfinger", "panda_hand"} <= set(model.shape_links)
    assert model.links["panda_leftfinger"] == arm.dof  # held at 0 on the hand's frame
    checked = {link for pair in model.enabled_link_pairs for link in pair}
    assert "panda_leftfinger" in checked and "panda_hand" in checked


def test_pairs_left_out_as_an_srdf_round_trip_and_edit(models, tmp_path):
    arm, model = models("niryo_one")
    info = model.describe()
    assert info["disabled"]["Adjacent"] >= arm.dof - 1
    frames = model.links
    for (a, b), why in model.disabled.items():
        assert why in ("Adjacent", "Never", "Always") and frames[a] != frames[b]
        assert (why == "Adjacent") == (abs(frames[a] - frames[b]) == 1)
    srdf = tmp_path / "niryo_one.srdf"
    srdf.write_text(model.to_srdf("niryo_one"))
    again = CollisionModel.from_arm(arm, srdf=str(srdf))
    assert again.disabled == model.disabled
    assert again.enabled_link_pairs == model.enabled_link_pairs
    # edited: one "Never" pair taken out of the list is checked from then on
    pair = next(k for k, v in model.disabled.items() if v == "Never")
    text = srdf.read_text().replace(f'link1="{pair[0]}" link2="{pair[1]}"', 'link1="x" link2="x"')
    with pytest.raises(ValueError, match="names link 'x', which this arm does not have"):
        CollisionModel.from_arm(arm, srdf=text)
    kept = "\n".join(
        ln
        for ln in srdf.read_text().splitlines()
        if f'"{pair[1]}" reason' not in ln or f'"{pair[0]}"' not in ln
    )
    edited = CollisionModel.from_arm(arm, srdf=kept)
    assert edited.enabled_link_pairs == model.enabled_link_pairs | {pair}
    with pytest.raises(ValueError, match="cannot read the collision pairs file"):
        CollisionModel.from_arm(arm, srdf=str(tmp_path / "missing.srdf"))
    # the solver reads the same file by its settings
    solver = Solver(arm, settings=IKSettings(collision_check=True, collision_pairs=str(srdf)))
    assert solver.collisions.enabled_link_pairs == model.enabled_link_pairs
    with pytest.raises(ValueError, match="IKSettings.collision_pairs must be the path"):
        IKSettings(collision_pairs=3)


def test_the_margin_is_a_distance_between_surfaces(models):
    """With margin m, a joint set is refused exactly when PyBullet finds two checked links
    closer than m."""
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm, model = models("niryo_one")
    wide = CollisionModel.from_arm(arm, margin=0.02)
    assert wide.margin == 0.02 and len(wide.enabled_link_pairs) >= len(model.enabled_link_pairs)
    Q = _uniform(arm, 300, 7)
    gaps = wide.clearance_batch(Q)
    refused = wide.in_collision_batch(Q)
    np.testing.assert_array_equal(refused, gaps < 0.02)
    assert np.any(refused & (gaps > 0))  # refused while not touching: the margin did it
    with ArmSim(arm) as sim:
        r = compare(sim, wide, Q)
    assert r["false_negatives"] == 0 and r["false_positive_rate_of_free"] <= 0.02, r


MESH_URDF = """<?xml version="1.0"?>
<robot name="meshy">
  <link name="a"><collision><geometry><mesh filename="nowhere/{missing}"/></geometry>
    </collision></link>
  <link name="b"><collision><origin xyz="0 0 0.5"/><geometry><mesh filename="stick.obj"
    scale="1 1 2"/></geometry></collision></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_missing_mesh_warns_and_found_mesh_is_scaled(tmp_path):
    (tmp_path / "stick.obj").write_text(
        "".join(f"v {x} {y} {z}\n" for x in (-0.01, 0.01) for y in (-0.01, 0.01) for z in (0, 0.1))
    )
    path = tmp_path / "meshy.urdf"
    path.write_text(MESH_URDF.format(missing="gone.stl"))
    with pytest.warns(UserWarning, match="gone.stl"):
        model = CollisionModel.from_arm(ArmModel.load(path), samples=10)
    assert model.shape_links == ["b"] and model.shapes[0, convex.FRAME] == 1
    assert model.shapes[0, convex.PAR + 1] == 8  # the hull's corners
    np.testing.assert_allclose(model.verts[:8, 2].max(), 0.2)  # scaled by 2 along z
    # its lowest point over a plane through the joint, at q = 0: 0.5 m up, less the shell
    floor = model.with_obstacles(planes=[((0, 0, 1), 0.1)])
    assert floor.clearance([0.0]) == pytest.approx(0.5 - SHELL, abs=1e-12)


def test_obstacles(models):
    arm, model = models("niryo_one")
    table = model.with_obstacles(planes=[((0, 0, 2), 0.0)])  # z = 0, the base stands on it
    assert table.describe()["obstacles"] == 1 and len(model.obstacles) == 0
    home = np.zeros(arm.dof)  # upright
    assert table.clearance(home) == model.clearance(home)
    frames = np.zeros((arm.dof + 1, 12))
    down = None
    for q in _uniform(arm, 2000, 4):
        forward.link_frames(model.chain, q, frames)
        if frames[1:, 11].min() < -0.03:
            down = q
            break
    assert down is not None
    assert table.in_collision(down) and table.clearance(down) < -0.03
    # a box around the wrist at home, and one far away
    forward.link_frames(model.chain, home, frames)
    wrist = frames[5, 9:]
    assert model.with_obstacles(boxes=[(wrist, (0.01, 0.01, 0.01))]).in_collision(home)
    far = model.with_obstacles(boxes=[(wrist + [0, 0, 5], (0.1, 0.1, 0.1))])
    assert far.clearance(home) == model.clearance(home)
    # a box beside the forearm at home: its gap is measured, and the margin refuses it
    beside = model.with_obstacles(boxes=[(wrist + [0.1, 0, 0], (0.02, 0.02, 0.02))])
    gap = beside.clearance(home)
    assert 0 < gap < 0.1
    assert not beside.in_collision(home)
    for bad, said in [
        (dict(planes=[((0, 0, 0), 1.0)]), r"planes\[0\] needs a finite offset and a normal"),
        (dict(planes=[((0, 0, 1), np.nan)]), r"planes\[0\] needs a finite offset"),
        (dict(planes=[(0, 0, 1)]), r"planes\[0\] must be a pair \(normal, offset\)"),
        (dict(boxes=[((np.nan, 0, 0), (0.1,) * 3)]), r"boxes\[0\] needs a finite centre"),
        (dict(boxes=[(wrist, (-0.1, 0.1, 0.1))]), "half sizes above 0"),
        (dict(boxes=[(1, 2)]), r"boxes\[0\]'s centre must be 3 numbers"),
    ]:
        with pytest.raises(ValueError, match=said):
            model.with_obstacles(**bad)


def test_packing_round_trip(models):
    arm, model = models("franka_panda")
    shapes, verts, pairs, obstacles, margin = collision.unpack(model.pack())
    np.testing.assert_array_equal(shapes, model.shapes)
    np.testing.assert_array_equal(verts, model.verts)
    np.testing.assert_array_equal(pairs, model.pairs)
    assert obstacles.shape == (0, convex.ROW) and margin == 0.0
    Q = _uniform(arm, 20, 2)
    batch = model.clearance_batch(Q)
    np.testing.assert_allclose(batch, [model.clearance(q) for q in Q])
    np.testing.assert_array_equal(model.in_collision_batch(Q), batch < 0)


# -- the solver with checking on ------------------------------------------------------------------
def test_the_ordinary_pick_pose_is_solved():
    """The Niryo One's tool pointing down, 20 cm ahead, 30 cm up (refused by the sphere model)."""
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    solver = Solver(ArmModel.load("niryo_one"), settings=IKSettings(collision_check=True))
    a = solver.solve([0.20, 0.05, 0.30], [0, 0.7071068, 0, 0.7071068])
    assert a.solved, a
    with ArmSim(solver.arm) as sim:
        assert not pybullet_contacts(sim, solver.collisions)(a.q)[0]


@pytest.mark.parametrize("name", ["niryo_one", "franka_panda"])
def test_targets_from_pybullet_free_joints_are_solved_free(name, models):
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm, model = models(name)
    solver = Solver(arm, settings=IKSettings(collision_check=True))
    with ArmSim(arm) as sim:
        q = free_joints(sim, model, 150, seed=51)
        P, R = solver.forward(q)
        result = solver.solve_batch(P, matrix_to_quaternion(R))
        contacts = pybullet_contacts(sim, model)
        p, r = solver.forward(np.nan_to_num(result.q))
        ok = result.solved & (np.linalg.norm(p - P, axis=1) <= 1e-3)
        assert all(not contacts(x)[0] for x in result.q[ok])
    assert ok.sum() >= 148, [result.reason[i] for i in np.flatnonzero(~ok)]
    unchecked = solver.with_settings(collision_check=False).solve_batch(P, matrix_to_quaternion(R))
    assert model.in_collision_batch(unchecked.q[unchecked.solved]).any()  # it had work to do


def test_a_target_reached_only_in_collision_is_never_called_solved():
    """Targets made from joint sets PyBullet finds in contact: any answer called solved is free
    by PyBullet; the others say why."""
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm = ArmModel.load("niryo_one")
    solver = Solver(arm, settings=IKSettings(collision_check=True, restarts=100))
    with ArmSim(arm) as sim:
        contacts = pybullet_contacts(sim, solver.collisions)
        hit = [q for q in _uniform(arm, 400, 52) if contacts(q)[0]][:40]
        assert len(hit) == 40
        P, R = solver.forward(np.array(hit))
        refused = 0
        for p, quat in zip(P, matrix_to_quaternion(R)):
            a = solver.solve(p, quat)
            if a.solved:
                assert not contacts(a.q)[0]
            else:
                refused += 1
                assert a.reason.startswith(("collides", "not found")), a.reason
    assert refused >= 1  # some of them have no free answer at all


def test_a_table_is_an_obstacle(niryo_model):
    from robot_ik_nn.evaluate import held_out_targets

    checked = Solver.load(niryo_model).with_settings(collision_check=True)
    q, P, R = held_out_targets(checked.arm, 400, seed=53)
    free = ~checked.collisions.in_collision_batch(q)
    low = np.flatnonzero(free & (P[:, 2] < -0.02))[0]  # the tool below the base, arm free
    table = checked.with_obstacles(planes=[((0, 0, 1), 0.0)])  # the table the base stands on
    assert table.collisions.describe()["obstacles"] == 1 and table.checking
    assert checked.solve(P[low], matrix_to_quaternion(R[low])).solved
    a = table.with_settings(restarts=50).solve(P[low], matrix_to_quaternion(R[low]))
    assert a.status == "best_effort" and a.reason.startswith("collides"), a
    listed = table.with_settings(solution_attempts=50).solve(
        P[low], matrix_to_quaternion(R[low]), solutions=4
    )  # several answers asked for: the same verdict (every answer found goes through the table)
    assert len(listed) == 1 and listed[0].status == "best_effort", listed
    assert listed[0].reason.startswith("collides"), listed[0].reason
    high = np.flatnonzero(free & (P[:, 2] > 0.2))[0]
    above = table.solve(P[high], matrix_to_quaternion(R[high]))
    assert above.solved and table.collisions.clearance(above.q) >= 0
    assert not checked.with_settings(collision_check=False).checking


def test_a_search_time_cuts_the_restarts_and_the_refusal_still_says_why():
    solver = Solver(ArmModel.load("niryo_one"), settings=IKSettings(collision_check=True))
    short, long = solver.with_search_time(0.001), solver.with_search_time(10.0)
    assert long.settings.restarts == solver.settings.restarts  # never more than asked for
    assert 1 <= short.settings.restarts < long.settings.restarts
    buried = short.with_obstacles(planes=[((0, 0, 1), 1.0)])  # every pose collides
    a = buried.solve(solver.forward(solver.arm.mid_range)[0][0])
    assert a.status == "best_effort" and a.collides and a.reason.startswith("collides")
    with pytest.raises(ValueError, match="a search time must be above 0 s"):
        solver.with_search_time(0)
