"""robot_ik_nn: a neural network learns a robot arm's inverse kinematics by reward, and a compiled
solver turns its proposals into exact joint angles::

    import robot_ik_nn

    solver = robot_ik_nn.load("models/niryo_one")         # a model folder or its .tar.gz
    answer = solver.solve([0.25, 0.0, 0.30], [0.0, 0.7071068, 0.0, 0.7071068])  # x y z, x y z w
    answer.status        # "solved", "best_effort" or "rejected"
    answer.q             # joint angles (rad; m for prismatic joints), None when rejected
    answer.pos_err, answer.rot_err, answer.reason
    batch = solver.solve_batch(positions, quaternions)    # (B, 3), (B, 4): all cores
    batch.q, batch.status, batch.pos_err, batch.rot_err, batch.reason

    solver = robot_ik_nn.for_arm("niryo_one")             # an arm without a network
    solver = robot_ik_nn.load(path, robot_ik_nn.IKSettings(pos_tol=1e-4, margin=0.02))

Nothing here imports torch, rclpy or pybullet: ``import robot_ik_nn`` is light, and serving
needs only the base install. Training (``robot_ik_nn.learn.training``) needs torch; the ROS 2 nodes
(``robot_ik_nn.nodes``) need rclpy.
"""

__version__ = "0.3.0"  # as package.xml and setup.py (test_package checks)

__all__ = [
    "load",
    "for_arm",
    "Solver",
    "IKSettings",
    "Answer",
    "BatchResult",
    "ArmModel",
    "SOLVED",
    "BEST_EFFORT",
    "REJECTED",
]


def load(path, settings=None, *, backend: str = "compiled", arm=None):
    """A solver for a model folder (or an exported ``.tar.gz``): its arm, its network, the
    compiled core. ``backend``: the network's forward pass, "compiled", "numpy" or "onnx"
    (needs ``robot-ik-nn export MODEL --onnx``). With ``arm``, refuses a model trained for
    another arm."""
    from .ik.solver import Solver

    return Solver.load(path, settings, backend=backend, arm=arm)


def for_arm(robot, *, base: str | None = None, tip: str | None = None, settings=None):
    """A solver for an arm without a network (mid-range seed, then restarts): a named arm
    (niryo_one, inmoov_right_arm, franka_panda, kuka_iiwa) or a URDF path."""
    from .arm.model import ArmModel
    from .ik.solver import Solver

    return Solver(ArmModel.load(robot, base=base, tip=tip), settings=settings)


def __getattr__(name: str):
    if name in ("Solver",):
        from .ik.solver import Solver

        return Solver
    if name == "IKSettings":
        from .ik.settings import IKSettings

        return IKSettings
    if name in ("Answer", "BatchResult", "SOLVED", "BEST_EFFORT", "REJECTED"):
        from .ik import results

        return getattr(results, name)
    if name == "ArmModel":
        from .arm.model import ArmModel

        return ArmModel
    raise AttributeError(f"module 'robot_ik_nn' has no attribute {name!r}")
