"""Forward kinematics for the tests, independent of the package's own: PyBullet loads the URDF
itself and reads the link frames (getLinkState), and the Jacobian and the manipulability are
finite differences of that. Only the URDF path and the names of the base, the tip and the
joints come from the package's ArmModel."""

import numpy as np
import pybullet as pb


def quat_to_matrix(quat) -> np.ndarray:
    """(x, y, z, w) -> 3x3, written out here (not the package's rotations.py)."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(R) -> np.ndarray:
    """3x3 -> (x, y, z, w), w >= 0, the largest of the four taken first (Shepperd)."""
    R = np.asarray(R, dtype=float)
    t = np.trace(R)
    if t > 0:
        s = 2 * np.sqrt(1 + t)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, s / 4]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2 * np.sqrt(1 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[i], q[j], q[k] = s / 4, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    q = np.asarray(q, dtype=float)
    return q if q[3] >= 0 else -q


def urdf_axes(urdf, joint_names) -> np.ndarray:
    """The joints' unit axes as the URDF writes them (xml.etree, not the package's parser)."""
    import xml.etree.ElementTree as ET

    joints = {j.get("name"): j for j in ET.parse(str(urdf)).getroot().iter("joint")}
    axes = []
    for name in joint_names:
        axis = joints[name].find("axis")
        text = axis.get("xyz") if axis is not None else "1 0 0"  # URDF's default axis
        v = np.array([float(x) for x in text.split()])
        axes.append(v / np.linalg.norm(v))
    return np.array(axes)


def rotation_angle(Ra, Rb) -> np.ndarray:
    """The angle (rad) of the rotation from ``Ra`` to ``Rb``, both (..., 3, 3)."""
    cos = (np.trace(np.swapaxes(Ra, -1, -2) @ Rb, axis1=-2, axis2=-1) - 1) / 2
    return np.arccos(np.clip(cos, -1.0, 1.0))


class BulletFK:
    """``BulletFK(urdf, base, tip, joint_names)``; ``fk(q)`` -> tip position (3,) and rotation
    (3, 3) in the base link's frame."""

    def __init__(self, urdf, base: str, tip: str, joint_names):
        self.client = pb.connect(pb.DIRECT)
        self.body = pb.loadURDF(str(urdf), useFixedBase=True, physicsClientId=self.client)
        links = {pb.getBodyInfo(self.body, physicsClientId=self.client)[0].decode(): -1}
        joints = {}
        for i in range(pb.getNumJoints(self.body, physicsClientId=self.client)):
            info = pb.getJointInfo(self.body, i, physicsClientId=self.client)
            joints[info[1].decode()] = i
            links[info[12].decode()] = i
        self.joints = [joints[name] for name in joint_names]
        self.base, self.tip = links[base], links[tip]

    @classmethod
    def of(cls, arm):
        return cls(arm.source, arm.base, arm.tip, arm.joint_names)

    def close(self):
        pb.disconnect(self.client)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _frame(self, link):
        if link == -1:  # the root link's frame is the world's (loadURDF puts it at the origin;
            return np.zeros(3), np.eye(3)  # getBasePositionAndOrientation: its centre of mass)
        state = pb.getLinkState(
            self.body, link, computeForwardKinematics=True, physicsClientId=self.client
        )
        p, quat = state[4], state[5]  # the URDF link frame, not the centre of mass
        return np.array(p), quat_to_matrix(quat)

    def fk(self, q):
        for index, value in zip(self.joints, np.asarray(q, dtype=float)):
            pb.resetJointState(self.body, index, float(value), physicsClientId=self.client)
        p, R = self._frame(self.tip)
        bp, bR = self._frame(self.base)
        return bR.T @ (p - bp), bR.T @ R

    def fk_batch(self, Q):
        out = [self.fk(q) for q in np.asarray(Q, dtype=float)]
        return np.array([p for p, _ in out]), np.array([R for _, R in out])

    def jacobian(self, q, h=1e-3) -> np.ndarray:
        """(6, dof) by central differences: linear velocity, then angular velocity."""
        q = np.asarray(q, dtype=float)
        J = np.empty((6, len(q)))
        for i in range(len(q)):
            dq = np.zeros(len(q))
            dq[i] = h
            p1, R1 = self.fk(q + dq)
            p0, R0 = self.fk(q - dq)
            W = (R1 - R0) / (2 * h) @ self.fk(q)[1].T  # dR/dq R^T: the skew matrix of omega
            J[:3, i] = (p1 - p0) / (2 * h)
            J[3:, i] = [(W[2, 1] - W[1, 2]) / 2, (W[0, 2] - W[2, 0]) / 2, (W[1, 0] - W[0, 1]) / 2]
        return J

    def manipulability(self, q) -> float:
        """sqrt(det(J J^T)), the position rows alone for an arm of under 6 joints."""
        J = self.jacobian(q)
        J = J if len(q) >= 6 else J[:3]
        return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))
