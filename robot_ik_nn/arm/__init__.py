"""The arm: a serial chain read from a URDF (model), where the package's files are (resources),
rotation math in numpy and torch (rotations), and batched differentiable kinematics (kinematics,
torch)."""
