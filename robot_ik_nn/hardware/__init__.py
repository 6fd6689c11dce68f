"""Arms behind one read/write contract, simulated or real; the only home of pybullet and of the
vendors' clients.

arms.py             the table of real arms: driver, emulator, link, defaults
driver.py           the driver contract every arm implements
drivers.py          a driver picked by its kind (the one place that knows them all)
bridge.py           joint goals to a driver: what keeps a real arm safe
pybullet_arm.py     the PyBullet arm: load, teleport, read the tool, position control
soft_joints.py      its joints held by a finite stiffness under gravity (physics on)
pybullet_driver.py  that arm behind the driver contract
niryo.py            Niryo One (TCP text server), Ned and Ned2 (pyniryo)
inmoov.py           the InMoov arm: hobby servos over a serial link
calibration.py      InMoov servo calibration (a YAML file per build)
true_arm_driver.py  the simulated arm when it is not the model's (calibration in simulation)
tracker.py          a tracker that plays the camera, in simulation
tracker_stream.py   the same, live
camera_model.py     a camera's intrinsics and an ArUco marker: its image, a file to print
sim_camera.py       a camera rendering the arm with a marker on its tool (PyBullet), eye-to-hand
emulators/          the real arms' protocols served over a PyBullet arm (dry runs, tests)
cli.py              the ``servo-template`` and ``emulate`` sub-commands
"""
