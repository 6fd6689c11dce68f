"""Learn the arm you have: measured tool poses in, a calibrated model folder out.

- measurements.py: a CSV of joints and measured tool poses (or rows from a tracker), checked;
- true_arm.py: a perturbed URDF (origins, axes, joint zeros) to calibrate against in simulation;
- chain.py: the arm's chain as the fit moves it, read from the URDF;
- fit.py: the arm's geometry fitted to the measurements (robust least squares, each parameter
  with its uncertainty), cross-validated on held-out poses;
- compliance.py: joint compliance, the joints sagging under load (what a URDF cannot say);
- frame.py: the tracker's frame (eye-to-hand), estimated with the arm's geometry;
- urdf.py: the fitted chain written back into the arm's URDF text;
- folder.py: the calibrated model folder (its URDF, the fit, a report), never the nominal one;
- served.py: a calibrated arm with compliant joints served exactly (joints to command);
- poses.py: where a live calibration moves the arm, and the gate every move passes;
- session.py: a live calibration session without ROS (move, settle, measure, fit);
- camera.py: a camera as a tracker: the ArUco marker on the tool found in an image, its pose
  and a verdict (OpenCV, imported where needed).

No torch, no rclpy, no pybullet: the fit is numpy and scipy.
"""
