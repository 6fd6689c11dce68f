"""A tracker that plays the camera, in simulation: the tool pose of a "true" arm (another URDF
than the model's, calibration/true_arm.py) as PyBullet puts it, with a tracker's noise and
occasional gross outliers (a mis-detected marker), as measured rows for calibration."""

from __future__ import annotations

import numpy as np

from ..calibration.measurements import Measurements
from .pybullet_arm import ArmSim


def measure(
    true_arm,
    q,
    noise_mm: float = 0.2,
    noise_deg: float = 0.1,
    outliers: float = 0.0,
    outlier_m=(0.02, 0.10),
    seed: int = 0,
    tracker_pose=None,
    frame: str = "tracker",
    stiffness=None,
) -> Measurements:
    """Measured tool poses of ``true_arm`` (an ArmModel) at joints ``q`` (N, dof): Gaussian
    noise (``noise_mm`` per axis, ``noise_deg`` about a random axis), and a fraction
    ``outliers`` of the rows moved by ``outlier_m`` (m, a random direction).

    ``tracker_pose`` ((x, y, z), (roll, pitch, yaw)): the tracker's pose in the arm's base frame
    (m, rad; a camera mounted somewhere in the room); the poses are then given in its frame,
    named ``frame``. None: in the base frame.

    ``stiffness`` (N·m/rad, one or per joint, ``inf``: rigid): a physics-on true arm whose
    joints are held by that stiffness under gravity (ArmSim.forward_held): each row is
    commanded, the arm settles, sagging by its load, and the tool is read there."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    q = np.atleast_2d(np.asarray(q, float))
    with ArmSim(true_arm, stiffness=stiffness) as sim:
        if stiffness is None:
            position, quaternion = sim.forward(q)
        else:
            position, quaternion, _ = sim.forward_held(q)
    name = ""
    if tracker_pose is not None:  # seen from the tracker: base-to-tracker, inverted
        xyz, rpy = (np.asarray(v, float).reshape(3) for v in tracker_pose)
        seen = Rotation.from_euler("xyz", rpy).inv()
        position = seen.apply(position - xyz)
        quaternion = (seen * Rotation.from_quat(quaternion)).as_quat()
        name = frame
    position = position + rng.normal(0.0, noise_mm / 1000.0, position.shape)
    turn = Rotation.from_rotvec(rng.normal(0.0, np.radians(noise_deg), position.shape))
    quaternion = (turn * Rotation.from_quat(quaternion)).as_quat()
    bad = rng.random(len(q)) < outliers
    u = rng.normal(size=(int(bad.sum()), 3))
    position[bad] += u / np.linalg.norm(u, axis=1)[:, None] * rng.uniform(*outlier_m, (len(u), 1))
    return Measurements(q, position, quaternion, np.zeros(len(q), int), name)


def sag_stiffness(arm, sag_deg: float = 0.3, loaded: float = 0.05, samples: int = 300, seed=0):
    """Per joint stiffness (N·m/rad) under which each loaded joint of ``arm`` sags by
    ``sag_deg`` at the largest gravity load PyBullet finds over ``samples`` random poses within
    the limits; a joint whose largest load is under ``loaded`` times the arm's largest is
    rigid (inf). For true arms in simulation: a soft-servo arm's sag, measured, not modelled."""
    q = np.random.default_rng(seed).uniform(arm.lower, arm.upper, (samples, arm.dof))
    with ArmSim(arm) as sim:
        load = np.abs(sim.gravity_torques(q)).max(0)
    soft = load >= loaded * load.max()
    return np.where(soft, load / np.radians(sag_deg), np.inf)
