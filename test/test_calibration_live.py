"""A live calibration. Its pieces without ROS (the tracker's model, the collector's settle and
skip rules, the move gate judged by PyBullet's contact query); then over DDS, each node in its
own process: sim_node moving a perturbed "true"
arm (sim_urdf), tracker_node measuring its tool from a frame the session is not told, and
calibration_node choosing poses, moving, settling, measuring and fitting; then the inference
node serving the written folder while the tracker measures where the tool goes. Judged by the
true arm itself (PyBullet on the true URDF, test/fk_oracle.py; the tracker's poses put back by
the mount only the test knows), never by the fit."""

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from fk_oracle import BulletFK, matrix_to_quat, quat_to_matrix, rotation_angle
from geometry_msgs.msg import PoseStamped
from ros_helpers import Probe, node_process, publish_until, stop
from sensor_msgs.msg import JointState

from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration.poses import MoveGate, Workspace, plan_poses, visiting_order
from robot_ik_nn.calibration.session import CollectConfig, Collector
from robot_ik_nn.calibration.true_arm import perturb
from robot_ik_nn.hardware.tracker_stream import TrackerConfig, TrackerStream, mount_matrix
from robot_ik_nn.hardware.true_arm_driver import sim_options_known
from robot_ik_nn.ik.solver import Solver
from robot_ik_nn.nodes.common import RELIABLE

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ARM = ArmModel.load("niryo_one")
MOUNT = [0.7, -0.4, 0.45, 0.1, 0.2, 2.6]  # the tracker in the base frame: the session never knows
# soft joints (N m/rad: about 0.3 deg of sag on the loaded joints) where this PyBullet arm has them
STIFFNESS = 400.0 if "stiffness" in sim_options_known() else None
SOFT = {"sim_stiffness": STIFFNESS} if STIFFNESS else {}
FULL = os.environ.get("ROBOT_IK_NN_LIVE_FULL", "") not in ("", "0")


@pytest.fixture(scope="module")
def nominal(request):
    """The nominal model folder: ROBOT_IK_NN_NOMINAL_MODEL (a trained one, never written to),
    else the session's few-second Niryo One model."""
    given = os.environ.get("ROBOT_IK_NN_NOMINAL_MODEL", "")
    return Path(given) if given else request.getfixturevalue("niryo_model")


BOX = Workspace(0.0, (-0.45, -0.45, 0.05), (0.45, 0.45, 0.6))


def test_the_tracker_sees_the_tool_from_its_mount_late_noisy_lost_and_sometimes_wrong():
    from scipy.spatial.transform import Rotation

    mount = (0.7, -0.4, 0.45, 0.1, 0.2, 2.6)
    config = TrackerConfig(mount=mount, latency=0.05, drop=0.1, outliers=0.05, seed=1)
    stream = TrackerStream(config)
    p, quat = np.array([0.2, 0.1, 0.3]), Rotation.from_rotvec([0.3, -0.2, 1.0]).as_quat()
    # where the tool is seen from the mount, composed here by extrinsic x-y-z turns
    turn = Rotation.from_euler("xyz", mount[3:])
    expected = turn.inv().apply(p - np.array(mount[:3]))
    expected_rot = turn.inv() * Rotation.from_quat(quat)
    frames, taken, early = [], 0, 0
    for k in range(3000):
        t = k / 30.0
        stream.observe(t, p, quat)
        taken += stream.take(t) is not None
        ready = stream.due(t + 0.049)  # not yet: every frame is 50 ms late
        early += len(ready)
        frames += stream.due(t + 0.05)
    assert early == 0 and len(frames) == taken
    assert all(abs(f.stamp - f.due + 0.05) < 1e-9 for f in frames)
    assert 0.08 < 1 - taken / 3000 < 0.12  # dropped
    off = np.linalg.norm(np.array([f.position for f in frames]) - expected, axis=1)
    wrong = off > 0.01
    assert 0.035 < wrong.mean() < 0.065 and off[wrong].min() > 0.015 and off.max() < 0.105
    good = np.array([f.position for f in frames])[~wrong] - expected
    assert np.all(np.abs(good.mean(0)) < 2e-5) and np.all(np.abs(good.std(0) - 2e-4) < 2e-5)
    angles = [(Rotation.from_quat(f.quaternion) * expected_rot.inv()).magnitude()
              for f in frames]
    # 0.1 deg per axis: the angle's median is about 1.54 sigma
    assert abs(np.degrees(np.median(angles)) - 0.154) < 0.015
    with pytest.raises(ValueError, match="drop is a share"):
        TrackerConfig(drop=1.5)


def _collector(**config):
    solver = Solver(ARM)
    gate = MoveGate(solver, BOX, speed_scale=1.0)
    poses = visiting_order(gate, np.zeros(ARM.dof), plan_poses(solver, gate, 10, seed=2))
    settings = {"poses": 2, "tracker_timeout": 30.0, "measure_timeout": 0.5, **config}
    c = Collector(CollectConfig(**settings), gate, poses, now=0.0)
    c.joints(0.0, np.zeros(ARM.dof))
    return c


def _arrive(c, now):
    """Move to the collector's next goal: joint readings on the way, then still there for
    0.4 s; the time after the last reading."""
    action, command = c.step(now)
    assert action == "move", command
    start = c.current
    for k in range(1, 11):
        c.joints(now + 0.02 * k, start + (command.positions - start) * k / 10)
    t = now + 0.2
    for k in range(21):
        c.joints(t + 0.02 * k, command.positions + 1e-6 * (-1) ** k)
    return t + 0.4


def test_the_first_pose_stamped_after_the_settle_is_taken_stale_and_missing_are_counted():
    c = _collector()
    t = _arrive(c, 1.0)
    assert c.step(t) == ("wait", "") and c.state == "measuring"
    settled = c.settled_at
    c.measurement("tracker", settled - 0.01, [0.2, 0.0, 0.3], [0, 0, 0, 1])  # before: no
    assert c.progress()["taken"] == 0
    c.step(settled + 0.6)  # the wait runs out with only a stale one
    assert c.skipped["stale"] == 1
    t = _arrive(c, settled + 0.7)
    c.step(t)
    c.step(c.settled_at + 0.6)  # nothing at all
    assert c.skipped["missing"] == 1
    t = _arrive(c, c.settled_at + 0.7)
    c.step(t)
    q_settled = c.settled_q
    c.measurement("tracker", c.settled_at + 0.03, [0.2, 0.0, 0.3], [0, 0, 0, 1])
    c.measurement("tracker", c.settled_at + 0.06, [0.9, 0.0, 0.3], [0, 0, 0, 1])  # not this
    t = _arrive(c, c.settled_at + 0.1)
    c.step(t)
    c.measurement("tracker", c.settled_at + 0.03, [0.1, 0.1, 0.3], [0, 0, 0, 2])  # not unit
    assert c.skipped["implausible"] == 1
    t = _arrive(c, t + 0.1)
    c.step(t)
    c.measurement("tracker", c.settled_at + 0.03, [0.1, 0.1, 0.3], [0, 0, 0, 1])
    assert c.step(t + 0.1) == ("fit", "")
    m = c.measurements()
    assert len(m) == 2 and np.allclose(m.position[0], [0.2, 0.0, 0.3])
    assert np.allclose(m.q[0], q_settled) and c.failures() == "1 missing, 1 stale, 1 implausible"


def test_a_silent_tracker_a_foreign_frame_and_too_many_failures_end_with_the_reason():
    c = _collector(tracker_timeout=5.0, topic="/cam/pose")
    assert c.step(4.0)[0] == "move"
    assert c.step(5.5) == ("fail", "the tracker never published on /cam/pose in 5 s")
    c = _collector(tracker_timeout=5.0, frame_id="tracker")
    c.measurement("camera_optical", 1.0, [0.2, 0.0, 0.3], [0, 0, 0, 1])
    assert c.step(5.5) == (
        "fail", "no measured pose matched the frame tracker (heard camera_optical on "
        "measured_pose)")
    c = _collector(max_failures=1)
    for _ in range(2):
        c.step(_arrive(c, c.readings[-1][0] + 0.1))
        c.step(c.settled_at + 0.6)
    action, why = c.step(c.settled_at + 0.7)
    assert action == "fail" and why.startswith("too many failures: 2 missing")


def test_the_gate_refuses_what_pybullet_finds_in_collision_and_paths_through_the_table():
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    gate = MoveGate(Solver(ARM), BOX, margin=0.0)
    rng = np.random.default_rng(4)
    q = rng.uniform(ARM.lower, ARM.upper, (400, ARM.dof))
    with ArmSim(ARM) as sim:
        hits = []
        for row in q:
            sim.set_joints(row)
            hits.append(sim.in_self_collision())
    hits = np.array(hits)
    assert hits.sum() >= 10
    assert all(gate.why_not(row) for row in q[hits])  # none that PyBullet sees colliding passes
    # joints that put the tool below the table (by PyBullet): refused, the box's floor out of
    # the way, and so is a move there
    low = MoveGate(Solver(ARM), Workspace(0.0, (-1, -1, -1), (1, 1, 1)), margin=0.0)
    with BulletFK(ARM.source, ARM.base, ARM.tip, ARM.joint_names) as fk:
        under = q[fk.fk_batch(q)[0][:, 2] < -0.01]
    assert len(under) >= 10 and all("below the table" in low.why_not(row) for row in under)
    assert all(low.move(row, under[0])[0] is None for row in q[~hits][:5])


@pytest.fixture(scope="module")
def true_urdf(tmp_path_factory):
    """Errors at least the issue's: origins 2 mm, axes 0.4 deg, zeros 1.2 deg."""
    path = tmp_path_factory.mktemp("true_arm") / "true_niryo_one.urdf"
    text = perturb(ARM, seed=21, origin_m=0.002, axis_rad=math.radians(0.4),
                   zero_rad=math.radians(1.2))
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def live(true_urdf):
    """sim_node on the true arm, and a probe hearing its joints and the tracker."""
    sim = node_process("sim_node", {"sim_urdf": str(true_urdf), **SOFT})
    probe = Probe("calibration_probe")
    probe.listen(JointState, "/joint_states", RELIABLE)
    probe.listen(PoseStamped, "/measured_pose", 1000)
    probe.listen(DiagnosticArray, "/calibration_node/status", 1000)
    probe.listen(DiagnosticArray, "/inference_node/status", 1000)
    try:
        probe.wait_for(lambda: probe.received["/joint_states"], 60, "the simulated arm")
        yield probe, sim
    finally:
        probe.close()
        print(stop(sim)[-2000:])


def _calibration(params, timeout):
    proc = node_process("calibration_node", {"speed_scale": 1.0, **params})
    try:
        proc.wait(timeout)
    except Exception:  # noqa: BLE001 - the output says where it was
        print(stop(proc)[-5000:])
        raise
    return proc.returncode, proc.stdout.read()


def _tracker(frame_id="tracker", **params):
    mount = ",".join(f"{v:g}" for v in MOUNT)
    return node_process("tracker_node", {"frame_id": frame_id, "mount": f"[{mount}]", **params})


@pytest.mark.ros
@pytest.mark.slow
def test_a_silent_tracker_ends_the_session_with_the_reason_and_nothing_written(
    live, nominal, tmp_path
):
    out = tmp_path / "calibrated"
    code, said = _calibration(
        {"model_dir": str(nominal), "out": str(out), "frame": "base", "tracker_timeout": 4.0},
        120,
    )
    assert code == 1, said[-3000:]
    assert "the tracker never published on /measured_pose in 4 s; nothing written" in said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.ros
@pytest.mark.slow
def test_a_tracker_in_another_frame_is_named_and_nothing_written(live, nominal, tmp_path):
    tracker = _tracker(frame_id="camera_optical")
    out = tmp_path / "calibrated"
    try:
        code, said = _calibration(
            {"model_dir": str(nominal), "out": str(out), "frame": "base",
             "tracker_timeout": 8.0}, 120)
    finally:
        stop(tracker)
    assert code == 1, said[-3000:]
    assert ("no measured pose matched the frame tracker (heard camera_optical on "
            "/measured_pose)") in said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.ros
@pytest.mark.slow
def test_ctrl_c_mid_session_writes_nothing(live, nominal, tmp_path):
    probe, _ = live
    tracker = _tracker()
    out = tmp_path / "calibrated"
    session = node_process("calibration_node", {"model_dir": str(nominal), "out": str(out),
                                                "speed_scale": 1.0})
    try:
        probe.received["/calibration_node/status"].clear()
        probe.wait_for(lambda: _progress(probe).get("taken", 0) >= 2, 300, "two poses")
        said = stop(session)  # SIGINT, as Ctrl-C
    finally:
        stop(session)
        stop(tracker)
    assert session.returncode is not None and "wrote" not in said
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def calibrated(live, nominal, tmp_path_factory):
    """A whole session: 40 poses (100 with ROBOT_IK_NN_LIVE_FULL=1), 2 % outliers, 2 % drops."""
    probe, _ = live
    out = tmp_path_factory.mktemp("live") / "calibrated"
    tracker = _tracker(outliers=0.02, drop=0.02, seed=3)
    poses = 100 if FULL else 40
    started = time.monotonic()
    session = node_process("calibration_node", {
        "model_dir": str(nominal), "out": str(out), "poses": poses, "speed_scale": 1.0,
        "frame": "unknown"})
    try:
        # ~/stop mid-session holds the arm; ~/resume goes on
        probe.wait_for(lambda: _progress(probe).get("taken", 0) >= 3, 300, "three poses")
        _call(probe, "/calibration_node/stop")
        time.sleep(0.5)
        states = probe.received["/joint_states"]
        before = len(states)
        probe.wait_for(lambda: len(states) > before + 50, 60, "the held arm's readings")
        held = np.array([m.position for m in states[before:]])
        assert np.ptp(held, axis=0).max() < 1e-4
        assert _progress(probe)["state"] == "paused"
        taken = _progress(probe)["taken"]
        _call(probe, "/calibration_node/resume")
        probe.wait_for(lambda: _progress(probe)["taken"] > taken, 60, "a pose after ~/resume")
        session.wait(600)
        said = session.stdout.read()
        seconds = time.monotonic() - started
        print(said[-3000:])
        assert session.returncode == 0, said[-5000:]
        yield out, tracker, seconds, poses
    finally:
        print(stop(session)[-3000:])
        stop(tracker)


def _progress(probe) -> dict:
    got = probe.received["/calibration_node/status"]
    if not got:
        return {}
    values = {kv.key: kv.value for kv in got[-1].status[0].values}
    return {k: int(v) if v.isdecimal() else v for k, v in values.items()}


def _call(probe, service):
    from std_srvs.srv import Trigger

    client = probe.node.create_client(Trigger, service)
    assert client.wait_for_service(60)
    future = client.call_async(Trigger.Request())
    probe.wait_for(future.done, 60, service)
    assert future.result().success


def _reached(true_urdf, q):
    """Where the true arm's tool ends, in the base frame, for commanded joints ``q`` (N, dof):
    PyBullet's kinematics of the true URDF; with soft joints, each joint first bent until its
    spring balances PyBullet's own holding torque there (q_link = q - tau(q_link) / K)."""
    import pybullet as pb

    q = np.atleast_2d(np.asarray(q, float))
    with BulletFK(true_urdf, ARM.base, ARM.tip, ARM.joint_names) as fk:
        link = q.copy()
        if STIFFNESS:
            c = fk.client
            pb.setGravity(0, 0, -9.81, physicsClientId=c)
            movable = [i for i in range(pb.getNumJoints(fk.body, physicsClientId=c))
                       if pb.getJointInfo(fk.body, i, physicsClientId=c)[2] != pb.JOINT_FIXED]
            slot = [movable.index(i) for i in fk.joints]
            for _ in range(6):
                for k, row in enumerate(link):
                    full = [0.0] * len(movable)
                    for s_, v in zip(slot, row):
                        full[s_] = float(v)
                    zero = [0.0] * len(movable)
                    tau = pb.calculateInverseDynamics(fk.body, full, zero, zero,
                                                      physicsClientId=c)
                    link[k] = q[k] - np.array([tau[s_] for s_ in slot]) / STIFFNESS
        return fk.fk_batch(link)


def _seen(P, R):
    """Base-frame poses as the tracker at MOUNT sees them: (N, 4, 4)."""
    T = np.tile(np.eye(4), (len(P), 1, 1))
    T[:, :3, :3], T[:, :3, 3] = R, P
    return np.linalg.inv(mount_matrix(MOUNT)) @ T


def _true_targets(true_urdf, n, seed):
    """Tool poses of the true arm, seen by the tracker, at joints 1 cm clear of themselves by
    PyBullet's contact query (targets no session went to)."""
    from robot_ik_nn.hardware.pybullet_arm import ArmSim

    rng = np.random.default_rng(seed)
    q = rng.uniform(ARM.lower + 0.05, ARM.upper - 0.05, (3 * n, ARM.dof))
    with ArmSim(true_urdf, base=ARM.base, tip=ARM.tip) as sim:
        free = []
        for row in q:
            sim.set_joints(row)
            free.append(not sim.in_self_collision(margin=0.01))
    q = q[np.array(free)][:n]
    assert len(q) == n
    return _seen(*_reached(true_urdf, q))


def _to_base(folder, seen):
    """Tracker-frame poses (N, 4, 4) in the calibrated base frame, by the frame the folder
    estimated (calibration.json): what a user serving tracker targets does."""
    import json

    from robot_ik_nn.calibration import frame as frames

    F = frames.from_record(json.loads((folder / "calibration.json").read_text())["frame"])
    quats = np.array([matrix_to_quat(T[:3, :3]) for T in seen])
    return frames.to_base(F, seen[:, :3, 3], quats)


def _errors(true_urdf, q, seen):
    """Position (m) and rotation (rad) errors of joints ``q`` against ``seen``, both as the
    tracker sees the true arm."""
    got = _seen(*_reached(true_urdf, np.nan_to_num(q)))
    pe = np.linalg.norm(got[:, :3, 3] - seen[:, :3, 3], axis=1)
    return pe, rotation_angle(got[:, :3, :3], seen[:, :3, :3])


@pytest.mark.ros
@pytest.mark.slow
def test_a_live_session_writes_a_folder_that_serves_the_true_arm(
    live, calibrated, nominal, true_urdf
):
    probe, _ = live
    out, _, seconds, poses = calibrated
    assert (out / "robot.urdf").is_file() and (out / "calibration.json").is_file()
    said = [s.message for m in probe.received["/calibration_node/status"] for s in m.status]
    assert said and said[-1].startswith(f"wrote {out}"), said[-3:]
    last = _progress(probe)
    assert last["taken"] == poses and last["network_poses"] > 0
    seen = _true_targets(true_urdf, 300, 99)
    P, quats = _to_base(out, seen)
    pe, re = _errors(true_urdf, Solver.load(out).solve_batch(P, quats).q, seen)
    # the nominal model given the tracker's true placement: its best case
    base = np.linalg.inv(_seen(np.zeros((1, 3)), np.eye(3)[None])[0]) @ seen
    nominal_q = Solver.load(nominal).solve_batch(
        base[:, :3, 3], np.array([matrix_to_quat(T[:3, :3]) for T in base])).q
    npe, _ = _errors(true_urdf, nominal_q, seen)
    within = np.mean((pe <= 1e-3) & (re <= 0.01))
    print(f"\n{poses} poses in {seconds:.0f} s; on the true arm: calibrated {within:.1%} within "
          f"1 mm / 0.01 rad, median {np.median(pe) * 1e3:.3f} mm; nominal median "
          f"{np.median(npe) * 1e3:.3f} mm")
    assert np.median(npe) > 3e-3  # the true arm is far enough off to matter
    assert within >= 0.95 and np.median(pe) <= 0.5e-3
    assert np.median(pe) * 10 < np.median(npe)


def _measured_after(probe, since, count=5, timeout=60.0):
    """The tracker's next ``count`` poses stamped after ``since`` (s), 4x4, its own frame."""
    got = probe.received["/measured_pose"]

    def stamped(m):
        return m.header.stamp.sec + m.header.stamp.nanosec * 1e-9

    probe.wait_for(lambda: sum(stamped(m) > since for m in got) >= count, timeout,
                   "the tracker's poses after the settle")
    out = []
    for m in [m for m in list(got) if stamped(m) > since][:count]:
        T = np.eye(4)
        o, p = m.pose.orientation, m.pose.position
        T[:3, :3], T[:3, 3] = quat_to_matrix([o.x, o.y, o.z, o.w]), [p.x, p.y, p.z]
        out.append(T)
    return out


def _settled(probe, after, still=1e-4, span=0.4, timeout=60.0):
    """The stamp of a joint reading ending ``span`` s of stillness, later than ``after``."""
    states = probe.received["/joint_states"]

    def stamp(m):
        return m.header.stamp.sec + m.header.stamp.nanosec * 1e-9

    def still_since():
        recent = [m for m in list(states)[-60:] if stamp(m) > after]
        if not recent or stamp(recent[-1]) - stamp(recent[0]) < span:
            return None
        tail = np.array([m.position for m in recent if stamp(m) >= stamp(recent[-1]) - span])
        return stamp(recent[-1]) if np.ptp(tail, axis=0).max() <= still else None

    probe.wait_for(lambda: still_since() is not None, timeout, "the arm to settle")
    return still_since()


@pytest.mark.ros
@pytest.mark.slow
def test_the_inference_node_on_the_folder_brings_the_tool_to_targets_as_the_tracker_sees(
    live, calibrated, true_urdf
):
    probe, _ = live
    out = calibrated[0]
    n = 200 if FULL else 12
    seen = _true_targets(true_urdf, n, 123)  # where the tracker should see the tool
    P, quats = _to_base(out, seen)  # asked of the arm in its calibrated base frame
    inference = node_process("inference_node", {"model_dir": str(out)})
    targets = probe.node.create_publisher(PoseStamped, "/inference_node/target_pose", RELIABLE)
    errors, missed = [], []
    try:
        probe.wait_for(lambda: targets.get_subscription_count() >= 1, 60, "the inference node")
        for p, quat, target in zip(P, quats, seen):
            msg = PoseStamped()
            msg.header.frame_id = ARM.base
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p)
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = (float(v) for v in quat)

            def send(msg=msg):
                msg.header.stamp = probe.node.get_clock().now().to_msg()
                targets.publish(msg)

            # a loaded machine can take a target too late, or start the node long before DDS
            # brings it the arm's first /joint_states: sent again until it is judged on its own
            deadline = time.monotonic() + 180
            while True:
                publish_until(probe, send, "/inference_node/status", 30, 2.0)
                verdict = probe.received["/inference_node/status"][-1].status[0].message
                waiting = "stale" in verdict or "no joint state" in verdict
                if not waiting or time.monotonic() > deadline:
                    break
            sent = probe.node.get_clock().now().nanoseconds * 1e-9
            if not verdict.startswith("solved"):
                errors.append((math.inf, math.inf))
                missed.append(verdict)
                continue
            measured = _measured_after(probe, _settled(probe, sent + 0.1))
            position = np.median([T[:3, 3] for T in measured], axis=0)
            turn = np.median([rotation_angle(T[:3, :3], target[:3, :3]) for T in measured])
            errors.append((np.linalg.norm(position - target[:3, 3]), turn))
            if errors[-1][0] > 1e-3 or turn > 0.01:
                missed.append(f"{errors[-1][0] * 1e3:.3f} mm, {np.degrees(turn):.3f} deg off")
    finally:
        print(stop(inference)[-2000:])
    pe, re = np.array(errors).T
    within = np.mean((pe <= 1e-3) & (re <= 0.01))
    print(f"\nserved the calibrated folder: {within:.1%} of {n} targets within 1 mm / 0.01 rad "
          f"as the tracker measures them; median {np.median(pe) * 1e3:.3f} mm, "
          f"{np.degrees(np.median(re)):.3f} deg; missed: {missed}")
    assert within >= (0.99 if FULL else 11 / 12)


def test_the_calibrate_session_plan_its_params_file_and_its_launch_file(monkeypatch, capsys):
    import ast
    import importlib.util

    from test_session import _stand_in_launch

    from robot_ik_nn.nodes.session import plan
    from robot_ik_nn.nodes.session_arguments import ARGUMENTS, SessionError, load_params

    root = Path(__file__).resolve().parent.parent
    given = {"model_dir": "nowhere", "sim_urdf": "/t.urdf", "sim_stiffness": "200", "poses": "30",
             "measured_pose": "/aruco_single/pose", "frame_id": "marker_cam"}
    nodes = {n.name: n for n in plan("calibrate", given)}
    assert list(nodes) == ["sim_node", "tracker_node", "calibration_node",
                           "robot_state_publisher"]
    assert nodes["sim_node"].parameters["sim_urdf"] == "/t.urdf"
    assert nodes["sim_node"].parameters["sim_stiffness"] == 200.0
    calibration = nodes["calibration_node"]
    assert calibration.ends_session and calibration.parameters["poses"] == 30
    assert calibration.parameters["frame_id"] == nodes["tracker_node"].parameters["frame_id"]
    assert ("measured_pose", "/aruco_single/pose") in calibration.remappings
    assert nodes["tracker_node"].remappings == calibration.remappings
    real = [n.name for n in plan("calibrate", {"use_sim": "false"})]
    assert real == ["calibration_node", "robot_state_publisher"]
    for bad, said in (({"poses": "500"}, "poses:=500"), ({"sim_stiffness": "-1"}, "-1")):
        with pytest.raises(SessionError, match=said):
            plan("calibrate", bad)
    from robot_ik_nn.cli import main

    assert main(["launch", "calibrate", "poses:=500"]) == 2  # robot-ik-nn launch calibrate
    assert "poses:=500 is not a number of poses from 1 to 100" in capsys.readouterr().out
    # the params file names parameters the nodes declare (declare(...) or the node's p(...))
    for node, params in load_params(root / "config" / "calibrate.yaml").items():
        source = {"sim_node": "arm_node"}.get(node, node)
        tree = ast.parse((root / "robot_ik_nn" / "nodes" / f"{source}.py").read_text())
        declared = {
            c.args[k].value
            for c in ast.walk(tree)
            if isinstance(c, ast.Call) and getattr(c.func, "id", "") in ("declare", "p")
            for k in (0, 1)
            if len(c.args) > k and isinstance(c.args[k], ast.Constant)
            and isinstance(c.args[k].value, str)
        }
        assert set(params) <= declared, (node, set(params) - declared)
    # the launch file: the session's arguments, and the plan's nodes as launch_ros actions
    _stand_in_launch(monkeypatch)
    spec = importlib.util.spec_from_file_location("calibrate_launch",
                                                  root / "launch" / "calibrate.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entities = module.generate_launch_description().args[0]
    declared = {a.args[0]: a.kwargs["default_value"] for a in entities
                if type(a).__name__ == "DeclareLaunchArgument"}
    assert declared == {name: arg.default for name, arg in ARGUMENTS["calibrate"].items()}
    (opaque,) = [a for a in entities if type(a).__name__ == "OpaqueFunction"]
    actions = opaque.kwargs["function"]({**declared, **given}, *opaque.kwargs["args"])
    made = [a.kwargs for a in actions if type(a).__name__ == "Node"]
    expected = plan("calibrate", {**declared, **given})
    assert [(k["executable"], k["parameters"], k["remappings"]) for k in made] == [
        (n.executable, [n.parameters] if n.parameters else [], n.remappings) for n in expected]
    console = (root / "setup.py").read_text()
    for name in ("tracker_node", "calibration_node"):
        assert f'"{name} = robot_ik_nn.nodes.{name}:main"' in console
    ends = [a.args[0].kwargs["target_action"].kwargs["name"] for a in actions
            if type(a).__name__ == "RegisterEventHandler"]
    assert ends == ["calibration_node"]
