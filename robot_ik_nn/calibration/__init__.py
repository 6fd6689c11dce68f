"""Learn the arm you have: measured tool poses in, a calibrated model folder out.

- ``measurements``: a CSV of joints and measured tool poses (or rows from a tracker), checked;
- ``true_arm``: a perturbed URDF (origins, axes, joint zeros) to calibrate against in simulation;
- ``fit``: the arm's geometry fitted to the measurements (robust least squares, each parameter
  with its uncertainty), cross-validated on held-out poses;
- ``folder``: the calibrated model folder (its URDF, the fit, a report), never the nominal one.

No torch, no rclpy, no pybullet: the fit is numpy and scipy.
"""
