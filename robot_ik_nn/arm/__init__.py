"""The arm: one serial chain read from a URDF, and the math on it. No rclpy, no pybullet.

model.py       ArmModel: the chain, its limits, reach and fingerprint (the one source of joints)
vendor.py      vendors' URDFs as they come: what the chain does not need is left out
resources.py   where the package's files are; the named arms and those in pybullet_data
rotations.py   the one home of rotation math (numpy and torch)
kinematics.py  batched, differentiable forward kinematics and Jacobian (torch)
"""
