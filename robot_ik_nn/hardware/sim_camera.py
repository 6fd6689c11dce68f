"""A simulated camera for the camera tracker: PyBullet's CPU renderer (TinyRenderer, no display)
draws the arm with an ArUco marker on its tool, from a camera placed eye-to-hand, at the
camera's own intrinsics, so the detector (calibration/camera.py) meets rendered images.

    camera = CameraIntrinsics.pinhole(1280, 720, fx=900.0)
    with ArmSim("niryo_one") as sim:
        cam = SimCamera(sim, camera, look_at([1.0, 0.3, 0.5], [0.2, 0.0, 0.3]),
                        MarkerSpec("DICT_4X4_50", 7, 0.040))
        frame = cam.render(q)             # frame.image (H x W x 3 uint8, RGB)
        frame.marker_pose                 # the TRUE marker pose in the camera frame (4x4)

The marker is a thin plate (2 mm) fixed to the tool link: its printed face (the marker and a
white margin of one cell) at ``marker_offset`` (a 4x4 transform, the marker's frame in the tool
link's), by default 1 cm beyond the tool along its x, facing along x. Its true pose is the tool
link's state in PyBullet composed with that offset, never read back from the picture.

Conventions: ``camera_pose`` is the camera in the world (PyBullet's world, the arm's base at its
origin) as OpenCV has cameras (z forward, x right, y down). PyBullet takes OpenGL's matrices
(z backward, y up, column-major); the projection is built from K so that a point OpenCV
projects to pixel (u, v) is drawn in the pixel whose centre is (u, v).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pybullet as pb

from .camera_model import CameraIntrinsics, MarkerSpec, cells, marker_image
from .pybullet_arm import ArmSim

CV_TO_GL = np.diag([1.0, -1.0, -1.0, 1.0])  # an OpenCV camera frame to OpenGL's (and back)
PLATE_THICKNESS = 0.002


def default_marker_offset(distance: float = 0.01) -> np.ndarray:
    """The marker's frame in the tool link's: ``distance`` beyond the tool along its x, the
    marker's normal (z) along the tool's x, its x along the tool's y, its y along the tool's z."""
    T = np.eye(4)
    T[:3, :3] = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    T[:3, 3] = [distance, 0.0, 0.0]
    return T


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """The camera's pose in the world (4x4, OpenCV's axes: z towards ``target``, y down as
    close to ``-up`` as the view allows)."""
    eye, target, up = (np.asarray(v, float) for v in (eye, target, up))
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("the camera looks along `up`: give another up")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, y, z])
    T[:3, 3] = eye
    return T


def _pose_matrix(pos, quat) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = np.array(pb.getMatrixFromQuaternion(list(quat))).reshape(3, 3)
    T[:3, 3] = pos
    return T


def _quat(R) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(R).as_quat()


def view_matrix(camera_pose) -> list:
    """PyBullet's view matrix (OpenGL, column-major, 16 values) of a camera at ``camera_pose``
    (OpenCV axes, in the world)."""
    world_to_gl = CV_TO_GL @ np.linalg.inv(np.asarray(camera_pose, float))
    return world_to_gl.flatten(order="F").tolist()


def projection_matrix(camera: CameraIntrinsics, near: float = 0.05, far: float = 5.0) -> list:
    """PyBullet's projection matrix (OpenGL, column-major) for ``camera``'s K, no distortion.
    TinyRenderer samples column i at window x = i and row j (from the top) at window
    y = H - 1 - j (OpenGL's y up), where OpenCV has their centres at u = i, v = j: found by
    rendering a marker and comparing its corners with their projections (sim_camera's test)."""
    K, W, H = camera.K, camera.width, camera.height
    P = np.zeros((4, 4))
    P[0, 0] = 2.0 * K[0, 0] / W
    P[0, 1] = -2.0 * K[0, 1] / W
    P[0, 2] = 1.0 - 2.0 * K[0, 2] / W
    P[1, 1] = 2.0 * K[1, 1] / H
    P[1, 2] = 2.0 * (K[1, 2] + 1.0) / H - 1.0
    P[2, 2] = -(far + near) / (far - near)
    P[2, 3] = -2.0 * far * near / (far - near)
    P[3, 2] = -1.0
    return P.flatten(order="F").tolist()


@dataclass(frozen=True)
class CameraFrame:
    """One rendered image and the truth behind it: ``marker_pose`` (4x4), ``position`` (m) and
    ``quaternion`` (x y z w) of the marker in the camera frame; the joints ``q``;
    ``view_angle_deg`` between the marker's normal and the line of sight; ``in_view``: all four
    corners inside the image, in front of the camera."""

    image: np.ndarray
    marker_pose: np.ndarray
    q: np.ndarray
    view_angle_deg: float
    in_view: bool

    @property
    def position(self) -> np.ndarray:
        return self.marker_pose[:3, 3].copy()

    @property
    def quaternion(self) -> np.ndarray:
        return _quat(self.marker_pose[:3, :3])


class SimCamera:
    def __init__(
        self,
        sim: ArmSim,
        camera: CameraIntrinsics,
        camera_pose,
        marker: MarkerSpec | None = None,
        marker_offset=None,
        *,
        near: float = 0.05,
        far: float = 5.0,
        supersample: int = 1,
        texture_px_per_cell: int = 32,
    ):
        """``sim``: the arm to draw (its client gets the marker plate); ``camera_pose``: the
        camera in the world (4x4, OpenCV's axes; see :func:`look_at`); ``supersample``: the
        marker's neighbourhood drawn again at that many times the resolution and each pixel
        the mean of its s x s (a real sensor's pixel integrates light over its area; 1:
        TinyRenderer's aliased edges, where a corner is found to +-0.5 px). The rest of the
        image stays at 1x: the cost is one frame and a small window."""
        if np.any(camera.D != 0):
            raise ValueError("the simulated camera renders without distortion: give D = 0")
        self.sim = sim
        self.camera = camera
        self.camera_pose = np.asarray(camera_pose, float).reshape(4, 4)
        self.marker = marker or MarkerSpec()
        self.marker_offset = (
            default_marker_offset() if marker_offset is None else np.asarray(marker_offset, float)
        )
        self.near, self.far = float(near), float(far)
        self.supersample = int(supersample)
        if self.supersample < 1:
            raise ValueError(f"supersample must be 1 or more, got {supersample}")
        self._kw = {"physicsClientId": sim.client}
        self._plate = self._make_plate(texture_px_per_cell)

    # -- the marker plate -----------------------------------------------------------------------
    def _make_plate(self, px_per_cell: int) -> int:
        n = cells(self.marker.dictionary)
        texture = marker_image(
            self.marker.marker_id, n * px_per_cell, self.marker.dictionary, px_per_cell
        )
        with tempfile.TemporaryDirectory(prefix="robot_ik_nn_marker_") as tmp:
            png = Path(tmp) / "marker.png"
            import matplotlib.image

            matplotlib.image.imsave(png, np.stack([texture] * 3, -1))
            tex = pb.loadTexture(str(png), **self._kw)
        h = self.marker.size_m / 2.0 * (n + 2) / n  # the white margin's edge
        d = PLATE_THICKNESS
        white = [0.5 / (n + 2), 0.5 / (n + 2)]  # a texel of the margin for the other faces
        vertices, uvs, normals, indices = [], [], [], []

        def face(corners, normal, uv):
            base = len(vertices)
            vertices.extend(corners)
            uvs.extend(uv)
            normals.extend([normal] * 4)
            indices.extend([base, base + 1, base + 2, base, base + 2, base + 3])

        # the printed face at z = 0, counter-clockwise seen from +z; v = 0 at -y: PyBullet
        # maps the texture's first row to v = 0, so the marker reads upright, not mirrored
        face(
            [[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]],
            [0, 0, 1],
            [[0, 0], [1, 0], [1, 1], [0, 1]],
        )
        box = [[-h, -h, -d], [h, -h, -d], [h, h, -d], [-h, h, -d]]
        face([box[0], box[3], box[2], box[1]], [0, 0, -1], [white] * 4)
        top = [[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]]
        for i in range(4):
            j = (i + 1) % 4
            side = [box[i], box[j], top[j], top[i]]
            mid = np.mean(side, axis=0)
            normal = (mid * [1, 1, 0] / h).tolist()
            face(side, normal, [white] * 4)
        shape = pb.createVisualShape(
            pb.GEOM_MESH,
            vertices=vertices,
            indices=indices,
            uvs=uvs,
            normals=normals,
            rgbaColor=[1, 1, 1, 1],
            **self._kw,
        )
        body = pb.createMultiBody(
            baseMass=0, baseCollisionShapeIndex=-1, baseVisualShapeIndex=shape, **self._kw
        )
        pb.changeVisualShape(body, -1, textureUniqueId=tex, rgbaColor=[1, 1, 1, 1], **self._kw)
        return body

    # -- the truth ------------------------------------------------------------------------------
    def tool_in_world(self) -> np.ndarray:
        """The tool link's pose in the world, from PyBullet's link state (4x4)."""
        state = pb.getLinkState(
            self.sim.body, self.sim.tip_index, computeForwardKinematics=True, **self._kw
        )
        return _pose_matrix(state[4], state[5])

    def marker_in_world(self) -> np.ndarray:
        return self.tool_in_world() @ self.marker_offset

    def marker_in_camera(self, q=None) -> np.ndarray:
        """The true marker pose in the camera frame (4x4) at joints ``q`` (None: as the arm
        is)."""
        if q is not None:
            self.sim.set_joints(q)
        return np.linalg.inv(self.camera_pose) @ self.marker_in_world()

    def sees(self, q=None, margin_px: float = 10.0) -> tuple[float, bool]:
        """(view angle in degrees, in view) of the marker at joints ``q``, without rendering:
        in view when its four corners lie inside the image by ``margin_px``, in front of the
        camera, and no part of the arm lies between them and the camera (a ray each, against
        the arm's collision shapes)."""
        T = self.marker_in_camera(q)
        R, t = T[:3, :3], T[:3, 3]
        to_camera = -t / np.linalg.norm(t)
        angle = float(np.degrees(np.arccos(np.clip(R[:, 2] @ to_camera, -1.0, 1.0))))
        pts = (T @ np.c_[self.marker.corners(), np.ones(4)].T)[:3].T
        if np.any(pts[:, 2] <= self.near):
            return angle, False
        uv = (self.camera.K @ (pts / pts[:, 2:]).T)[:2].T
        inside = (uv >= margin_px).all() and (uv[:, 0] <= self.camera.width - 1 - margin_px).all()
        inside = inside and (uv[:, 1] <= self.camera.height - 1 - margin_px).all()
        return angle, bool(inside) and not self._hidden(pts)

    def _hidden(self, corners_in_camera: np.ndarray) -> bool:
        eye = self.camera_pose[:3, 3]
        world = (self.camera_pose @ np.c_[corners_in_camera, np.ones(4)].T)[:3].T
        ends = world + 0.003 * (eye - world) / np.linalg.norm(eye - world, axis=1)[:, None]
        hits = pb.rayTestBatch([eye.tolist()] * 4, ends.tolist(), **self._kw)
        return any(hit[0] == self.sim.body for hit in hits)

    # -- the picture ----------------------------------------------------------------------------
    def render(self, q=None) -> CameraFrame:
        """Set the joints (None: as they are), fix the plate to the tool and draw."""
        if q is not None:
            self.sim.set_joints(q)
        T_marker = self.marker_in_world()
        pb.resetBasePositionAndOrientation(
            self._plate, T_marker[:3, 3].tolist(), _quat(T_marker[:3, :3]).tolist(), **self._kw
        )
        img = self._draw(self.camera)
        if self.supersample > 1:  # the marker's neighbourhood again, finer, averaged
            box = self._marker_box()
            if box is not None:
                u0, v0, u1, v1 = box
                img[v0:v1, u0:u1] = self._draw_fine(u0, v0, u1 - u0, v1 - v0)
        angle, inside = self.sees()
        return CameraFrame(
            image=np.ascontiguousarray(img),
            marker_pose=self.marker_in_camera(),
            q=self.sim.get_joints(),
            view_angle_deg=angle,
            in_view=inside,
        )

    def _marker_box(self):
        """The pixels (u0, v0, u1, v1) holding the plate and a margin of 8 px, clipped to the
        image; None when it is behind the camera or outside the image."""
        T = self.marker_in_camera()
        h = self.marker.size_m * 0.75
        corners = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (0.0, -0.01)])
        pts = (T @ np.c_[corners, np.ones(len(corners))].T)[:3].T
        if np.any(pts[:, 2] <= self.near):
            return None
        uv = (self.camera.K @ (pts / pts[:, 2:]).T)[:2].T
        u0, v0 = np.floor(uv.min(axis=0)).astype(int) - 8
        u1, v1 = np.ceil(uv.max(axis=0)).astype(int) + 9
        u0, v0 = max(u0, 0), max(v0, 0)
        u1, v1 = min(u1, self.camera.width), min(v1, self.camera.height)
        return (u0, v0, u1, v1) if u1 > u0 and v1 > v0 else None

    def _draw_fine(self, u0: int, v0: int, w: int, h: int) -> np.ndarray:
        """Pixels [v0, v0 + h) x [u0, u0 + w) drawn at ``supersample`` times the resolution,
        each the mean of its s x s fine pixels (pixel u spans [u - 0.5, u + 0.5] in OpenCV's
        count; its fine pixels' centres lie at u - 0.5 + (i + 0.5) / s)."""
        s = self.supersample
        K = self.camera.K.copy()
        K[:2, :2] *= s  # the skew too
        K[0, 2] = (K[0, 2] - u0 + 0.5) * s - 0.5
        K[1, 2] = (K[1, 2] - v0 + 0.5) * s - 0.5
        fine = self._draw(CameraIntrinsics(w * s, h * s, K)).astype(np.float32)
        fine = fine.reshape(h, s, w, s, 3).mean(axis=(1, 3))
        return np.clip(fine + 0.5, 0, 255).astype(np.uint8)

    def _draw(self, camera: CameraIntrinsics) -> np.ndarray:
        _, _, rgba, _, _ = pb.getCameraImage(
            camera.width,
            camera.height,
            view_matrix(self.camera_pose),
            projection_matrix(camera, self.near, self.far),
            lightDirection=self.camera_pose[:3, 3].tolist(),
            shadow=0,
            renderer=pb.ER_TINY_RENDERER,
            **self._kw,
        )
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(camera.height, camera.width, 4)
        return np.array(rgba[:, :, :3])

    def close(self) -> None:
        if self._plate is not None and self.sim.client is not None:
            try:
                pb.removeBody(self._plate, **self._kw)
            except pb.error:
                pass
        self._plate = None
