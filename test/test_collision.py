"""The sphere collision model (ik/collision.py) against the kernel's forward kinematics and
against PyBullet's own collision shapes: wherever the model says "free", PyBullet must find no
contact between the link pairs the model checks."""

import numpy as np
import pytest

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.arm.rotations import matrix_to_quaternion
from robot_ik_nn.ik import collision, forward, layout
from robot_ik_nn.ik import spheres as cover
from robot_ik_nn.ik.collision import CollisionModel

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


@pytest.mark.parametrize("name", ARMS + ["slider"])
def test_link_frames_end_at_the_kernels_tip(name, slider_arm):
    arm = slider_arm if name == "slider" else ArmModel.load(name)
    chain = layout.pack_chain(arm)
    frames = np.zeros((arm.dof + 1, 12))
    p, R = np.empty(3), np.empty((3, 3))
    J, work = np.empty((6, arm.dof)), np.empty((layout.WORK_ROWS, arm.dof))
    rng = np.random.default_rng(3)
    for q in rng.uniform(arm.lower, arm.upper, (50, arm.dof)):
        collision.link_frames(chain, q, frames)
        forward.fk(chain, q, p, R, J, work, False)
        last = np.eye(4)
        last[:3, :3], last[:3, 3] = frames[-1, :9].reshape(3, 3), frames[-1, 9:]
        tip = last @ arm.tip_offset
        np.testing.assert_allclose(tip[:3, 3], p, atol=1e-12)
        np.testing.assert_allclose(tip[:3, :3], R, atol=1e-12)
    np.testing.assert_array_equal(frames[0], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0])


@pytest.mark.parametrize("name", ARMS)
def test_model_free_means_pybullet_free(name, models):
    """No false negatives on the enabled pairs; the false-positive rate is printed."""
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    arm, model = models(name)
    enabled = model.enabled_frame_pairs
    Q = np.random.default_rng(1).uniform(arm.lower, arm.upper, (500, arm.dof))
    gap = model.clearance_batch(Q)
    missed, false_alarms, hits = [], 0, 0
    with ArmSim(arm) as sim:
        for q, g in zip(Q, gap):
            sim.set_joints(q)
            pairs = {
                tuple(sorted((model.links[a], model.links[b])))
                for a, b in sim.self_collisions(margin=0.0)
                if a in model.links and b in model.links
            }
            touching = pairs & enabled
            hits += bool(touching)
            if g >= 0 and touching:
                missed.append((q.tolist(), float(g), sorted(touching)))
            false_alarms += g < 0 and not touching
    free = len(Q) - hits
    print(
        f"\n{name}: {model.describe()}; pybullet {hits}/{len(Q)} in collision, model "
        f"{int((gap < 0).sum())}; false positives {false_alarms}/{free} "
        f"({false_alarms / max(free, 1):.0%} of the free ones), false negatives {len(missed)}"
    )
    assert not missed, missed[:3]


def test_packing_and_describe(models):
    arm, model = models("franka_panda")
    assert model.spheres.dtype == np.float64 and model.spheres.shape[1] == 5
    assert model.pairs.dtype == np.int64 and model.pairs.shape[1] == 2
    assert model.obstacles.shape == (0, 7)
    fr = model.spheres[:, 0].astype(int)
    assert np.all(np.abs(fr[model.pairs[:, 0]] - fr[model.pairs[:, 1]]) > 1)  # never adjacent
    assert fr.min() == 0 and fr.max() == arm.dof
    assert "panda_leftfinger" not in model.links  # behind a joint outside the chain
    assert model.links["panda_hand"] == arm.dof
    info = model.describe()
    assert info["spheres"] == len(model.spheres) and info["sphere_pairs"] == len(model.pairs)
    assert info["disabled"]["adjacent"] == arm.dof
    Q = np.random.default_rng(2).uniform(arm.lower, arm.upper, (20, arm.dof))
    batch = model.clearance_batch(Q)
    np.testing.assert_allclose(batch, [model.clearance(q) for q in Q])
    np.testing.assert_array_equal(model.in_collision_batch(Q), batch < 0)


def test_margin_inflates_every_sphere(models):
    arm, model = models("niryo_one")
    wide = CollisionModel.from_arm(arm, margin=0.01)
    np.testing.assert_allclose(wide.spheres[:, 4], model.spheres[:, 4] + 0.01)
    np.testing.assert_allclose(wide.spheres[:, :4], model.spheres[:, :4])


def test_spheres_contain_the_shapes():
    """Points spread through a box, a cylinder and a mesh each fall inside some sphere."""
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(0)

    def covered(points, spheres):
        d = np.linalg.norm(points[:, None] - np.array([c for c, _ in spheres])[None], axis=2)
        return np.all((d <= np.array([r for _, r in spheres]) + 1e-12).any(axis=1))

    half = np.array([0.3, 0.05, 0.02])
    box = cover._box_spheres(half, 6)
    assert 1 < len(box) <= 6
    assert covered(rng.uniform(-half, half, (5000, 3)), box)
    V = rng.normal(size=(200, 3)) * [0.2, 0.05, 0.03]  # a mesh's vertices: cover their hull
    w = rng.dirichlet(np.ones(200) * 0.05, 5000)
    hull = cover._hull_spheres(V, 6)
    assert covered(np.concatenate([V, w @ V]), hull)
    # recursive cuts: tilted, flat and cube-like sets; the hull's faces and edges hardest to cover
    tilt = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.05
    flat = rng.uniform(-1, 1, (100, 3)) * [0.2, 0.1, 0.0]
    for W in (V @ tilt.T, cube, flat, rng.uniform(-0.1, 0.1, (300, 3))):
        w = rng.dirichlet(np.ones(len(W)) * 0.05, 5000)
        points = [W, w @ W]
        if np.ptp(W[:, 2]) > 0:  # on the faces: mixes of each triangle's corners
            tri = W[ConvexHull(W).simplices]
            points.append(np.einsum("fk,fkc->fc", rng.dirichlet(np.ones(3), len(tri)), tri))
        for n in (1, 4, 12):
            spheres = cover._hull_spheres(W, n)
            assert 1 <= len(spheres) <= n
            assert covered(np.concatenate(points), spheres)
    many = cover._hull_spheres(V, 12)
    assert max(r for _, r in many) < max(r for _, r in hull)  # the cuts do tighten


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
    assert set(model.spheres[:, 0]) == {1.0}  # only the stick, on the joint's side
    top = model.spheres[:, 3] + model.spheres[:, 4]
    assert top.max() >= 0.5 + 0.2 and (model.spheres[:, 3] - model.spheres[:, 4]).min() <= 0.5


def test_obstacles(models):
    arm, model = models("niryo_one")
    table = model.with_obstacles(planes=[((0, 0, 2), 0.0)])  # z = 0, the base stands on it
    assert table.describe()["obstacles"] == 1 and len(model.obstacles) == 0
    home = np.zeros(arm.dof)  # upright
    assert table.clearance(home) == model.clearance(home)
    frames = np.zeros((arm.dof + 1, 12))
    down = None
    for q in np.random.default_rng(4).uniform(arm.lower, arm.upper, (2000, arm.dof)):
        collision.link_frames(model.chain, q, frames)
        if frames[1:, 11].min() < -0.03:
            down = q
            break
    assert down is not None
    assert table.in_collision(down) and table.clearance(down) < -0.03
    # a box around the wrist at home, and one far away
    collision.link_frames(model.chain, home, frames)
    wrist = frames[5, 9:]
    assert model.with_obstacles(boxes=[(wrist, (0.01, 0.01, 0.01))]).in_collision(home)
    far = model.with_obstacles(boxes=[(wrist + [0, 0, 5], (0.1, 0.1, 0.1))])
    assert far.clearance(home) == model.clearance(home)
    # meaningless obstacles were taken and ignored: answers inside them came back solved
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


# -- the solver with checking on ------------------------------------------------------------------
@pytest.fixture(scope="module")
def checked(niryo_model):
    from robot_ik_nn.ik.solver import Solver

    return Solver.load(niryo_model).with_settings(collision_check=True)


def _targets(solver, n, seed, free):
    from robot_ik_nn.evaluate import held_out_targets

    q, P, R = held_out_targets(solver.arm, 4 * n, seed=seed)
    keep = solver.collisions.in_collision_batch(q) != free
    return P[keep][:n], matrix_to_quaternion(R[keep][:n])


def test_answers_reported_solved_are_free_by_pybullet(checked):
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    P, Q = _targets(checked, 300, 51, free=True)  # made by free joints: a free answer exists
    result = checked.solve_batch(P, Q)
    assert result.solved.all()
    unchecked = checked.with_settings(collision_check=False).solve_batch(P, Q)
    assert checked.collisions.in_collision_batch(unchecked.q).any()  # it did have work to do
    covered = set(checked.collisions.links)
    with ArmSim(checked.arm) as sim:
        for q in result.q:
            sim.set_joints(q)
            assert not [p for p in sim.self_collisions(0.0) if set(p) <= covered], q
    for q in [checked.solve(p, quat).q for p, quat in zip(P[:20], Q[:20])]:  # one at a time
        assert not checked.collisions.in_collision(q)
    for a in checked.solve(P[0], Q[0], solutions=4):  # several answers: every one free
        assert a.solved and not checked.collisions.in_collision(a.q)


def test_a_target_reached_only_in_collision_is_not_solved(checked):
    P, Q = _targets(checked.with_settings(restarts=100), 40, 52, free=False)
    solver = checked.with_settings(restarts=100)
    for p, quat in zip(P, Q):
        a = solver.solve(p, quat)
        if a.solved:
            assert not solver.collisions.in_collision(a.q)
        else:  # never a colliding answer called solved; the reason says what happened
            assert a.reason.startswith(("collides", "not found")), a.reason


def test_a_table_is_an_obstacle(checked):
    from robot_ik_nn.evaluate import held_out_targets

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
