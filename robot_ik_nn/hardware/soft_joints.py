"""Joints held by a finite stiffness under gravity, in PyBullet: where a soft arm's tool settles.

``ArmSim(arm, stiffness=...)`` opts in; each soft joint is then held by a PD torque loop of that
stiffness, critically damped, so a loaded joint sags by its load over its stiffness as a hobby
servo does (calibration fits that sag: calibration/compliance.py). The rigid joints stay under
position control. The kinematic arm itself is pybullet_arm.py's.
"""

from __future__ import annotations

import numpy as np
import pybullet as pb


def _movable(sim) -> list[int]:
    return [
        i
        for i in range(pb.getNumJoints(sim.body, **sim._pb_kwargs))
        if pb.getJointInfo(sim.body, i, **sim._pb_kwargs)[2] != pb.JOINT_FIXED
    ]


def gravity_torques(sim, q) -> np.ndarray:
    """PyBullet's own holding torques (inverse dynamics at rest) at joints ``q`` (N, dof):
    what each joint's motor must give to hold the arm still against gravity."""
    movable = _movable(sim)
    slot = [movable.index(i) for i in sim.joint_indices]
    q = np.atleast_2d(np.asarray(q, float))
    out = np.empty_like(q)
    for b, row in enumerate(q):
        full = [0.0] * len(movable)
        for s_, v in zip(slot, row):
            full[s_] = float(v)
        zero = [0.0] * len(movable)
        tau = pb.calculateInverseDynamics(sim.body, full, zero, zero, **sim._pb_kwargs)
        out[b] = [tau[s_] for s_ in slot]
    return out


def forward_held(
    sim, q, seconds: float = 5.0, from_statics: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the tool settles when each row of ``q`` (N, dof) is commanded and the joints
    are held by their stiffness under gravity (physics stepped until the arm is still).
    Returns positions (N, 3), quaternions (N, 4) and the joints the arm took (N, dof).

    ``from_statics``: each settle starts where PyBullet's own inverse dynamics put the
    balance ``k (q_cmd - q) = load(q)`` (a few fixed-point steps) rather than at ``q_cmd``:
    the same rest (the physics must still come to rest there, |velocity| < 1e-8 rad/s),
    reached in tens of steps instead of thousands."""
    if sim.stiffness is None:
        raise ValueError(
            "forward_held needs the soft-joint physics: ArmSim(arm, stiffness=...)"
        )
    q = np.atleast_2d(np.asarray(q, float))
    soft = np.isfinite(sim.stiffness)
    idx = [i for i, s_ in zip(sim.joint_indices, soft) if s_]
    K = sim.stiffness[soft]
    movable = _movable(sim)
    slot = [movable.index(i) for i in idx]
    pos, quat, took = np.empty((len(q), 3)), np.empty((len(q), 4)), np.empty_like(q)
    kw = sim._pb_kwargs
    rows = np.array([sim._check(r) for r in q])  # every row checked before any moves
    try:
        for b, row in enumerate(rows):
            start = row.copy()
            for _ in range(6 if from_statics and idx else 0):
                start[soft] = row[soft] - gravity_torques(sim, start)[0][soft] / K
            for index, value in zip(sim.joint_indices, start):
                pb.resetJointState(sim.body, index, float(value), 0.0, **kw)
            sim.command(row)  # the rigid joints: held by position control
            target = row[soft]
            if idx:
                pb.setJointMotorControlArray(
                    sim.body, idx, pb.VELOCITY_CONTROL, forces=[0.0] * len(idx), **kw
                )
                full = [s[0] for s in pb.getJointStates(sim.body, movable, **kw)]
                M = np.array(pb.calculateMassMatrix(sim.body, full, **kw))
                inertia = np.diag(M)[slot]
                omega = np.sqrt(K / inertia)
                dt = min(sim.time_step, 0.02 / omega.max())  # 0.2: unstable (measured)
                D = 2.0 * np.sqrt(K * inertia)  # each joint critically damped on its own
                pb.setTimeStep(dt, **kw)
                for step in range(int(seconds / dt)):
                    states = pb.getJointStates(sim.body, idx, **kw)
                    qs = np.array([s[0] for s in states])
                    vs = np.array([s[1] for s in states])
                    if step > 10 and np.abs(vs).max() < 1e-8:
                        break
                    tau = K * (target - qs) - D * vs
                    pb.setJointMotorControlArray(
                        sim.body, idx, pb.TORQUE_CONTROL, forces=tau.tolist(), **kw
                    )
                    pb.stepSimulation(**kw)
            took[b] = sim.get_joints()
            pos[b], quat[b] = sim.end_effector_pose()
    finally:
        pb.setTimeStep(sim.time_step, **kw)
        sim.command(sim.get_joints())  # back to position control where the arm is
    return pos, quat, took
