"""A camera as a tracker: an ArUco marker on the tool found in an image, its pose in the camera
frame, and a verdict that refuses a detection the fit should not see.

    camera = CameraIntrinsics.from_camera_info(msg.width, msg.height, msg.k, msg.d)
    marker = MarkerSpec("DICT_4X4_50", marker_id=7, size_m=0.040)
    found = detect_marker(image, camera, marker)           # image: H x W x 3 uint8 (RGB)
    found.verdict             # "accepted" or why not: "not_seen", "other_id", "grazing",
                              # "reprojection", "ambiguous"
    found.position, found.quaternion                       # the marker in the camera frame
    found.reprojection_error_px, found.view_angle_deg

    marker_image(7, 600)                                   # the marker, 600 x 600 px
    write_marker_file("marker.pdf", 7, 40.0)               # printable, at 40 mm exactly

Frames as OpenCV has them: the camera looks along +z, x right, y down in the image; the marker's
frame has its origin at the marker's centre, x to the right of the printed marker, y up, z out of
its face (towards a camera that sees it). The size is the black square's edge, border bits
included, not the white margin around it.

The corners: OpenCV's (subpix), then each side's edge measured across it and the four lines
crossed (``corner_refinement="edges"``, the default): OpenCV's subpix corners of an L corner
sit ~0.2 px inside the true ones (seen on ideal, area-averaged images of the marker), which
puts a 40 mm marker 1 m away ~5 mm too far; the lines' corners are within 0.01 px there.

OpenCV (``cv2``, pip ``opencv-python``, setup.py's ``hardware`` extra) is imported in
the functions that need it: this module imports without it, and without rclpy (the node converts
its messages to the plain fields these functions take).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# the detector's inputs, importable from here too
from ..hardware.camera_model import (  # noqa: F401
    CameraIntrinsics,
    MarkerSpec,
    _dictionary,
    cells,
    marker_image,
    write_marker_file,
)

# verdicts
ACCEPTED = "accepted"
NOT_SEEN = "not_seen"  # no marker of the dictionary in the image (lost, out of view, turned away)
OTHER_ID = "other_id"  # markers seen, none with the wanted id
GRAZING = "grazing"  # the marker's normal too far from the line of sight
REPROJECTION = "reprojection"  # the pose does not reproject onto the corners found
AMBIGUOUS = "ambiguous"  # IPPE's two poses (the flip) explain the corners about as well
VERDICTS = (ACCEPTED, NOT_SEEN, OTHER_ID, GRAZING, REPROJECTION, AMBIGUOUS)


# -- detection ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DetectorSettings:
    """When a detection is refused. ``max_view_angle_deg``: the angle between the marker's
    normal and the line of sight beyond which it is grazing (its pose poorly measured);
    ``max_reprojection_px``: the RMS distance between the corners found and the pose's corners;
    ``min_flip_ratio``: the flip (IPPE's second pose) must reproject at least this many times
    worse than the pose kept, unless the two poses' normals lie within ``flip_same_deg`` (then
    they are one pose, whichever is kept); ``error_floor_px``: the best error is taken as at
    least this in that ratio (a perfect fit's 0 would make any flip look far worse)."""

    max_view_angle_deg: float = 60.0
    max_reprojection_px: float = 1.0
    min_flip_ratio: float = 2.0
    flip_same_deg: float = 4.0
    error_floor_px: float = 0.05
    corner_refinement: str = "edges"  # or OpenCV's own: "none", "subpix", "contour", "apriltag"


@dataclass(frozen=True)
class Detection:
    """One image's answer. ``position`` (m) and ``quaternion`` (x y z w): the marker in the
    camera frame (None when not seen); ``flip_position``/``flip_quaternion``: IPPE's other
    pose; errors in pixels (RMS over the 4 corners), the view angle in degrees."""

    verdict: str
    reason: str
    marker_id: int
    ids_seen: tuple = ()
    position: np.ndarray | None = None
    quaternion: np.ndarray | None = None
    reprojection_error_px: float = math.nan
    flip_error_px: float = math.nan
    view_angle_deg: float = math.nan
    flip_angle_deg: float = math.nan  # between the two poses' normals
    corners: np.ndarray | None = None  # (4, 2) pixels as found
    flip_position: np.ndarray | None = None
    flip_quaternion: np.ndarray | None = None

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPTED

    def matrix(self) -> np.ndarray:
        """The marker's pose in the camera frame as a 4x4 transform."""
        if self.position is None:
            raise ValueError(f"no pose: {self.reason}")
        from scipy.spatial.transform import Rotation

        T = np.eye(4)
        T[:3, :3] = Rotation.from_quat(self.quaternion).as_matrix()
        T[:3, 3] = self.position
        return T


def _gray(image) -> np.ndarray:
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ValueError(f"the image must be uint8, got {img.dtype}")
    if img.ndim == 2:
        return np.ascontiguousarray(img)
    if img.ndim == 3 and img.shape[2] in (3, 4):
        rgb = img[:, :, :3].astype(np.float32)
        return np.clip(rgb @ np.float32([0.299, 0.587, 0.114]) + 0.5, 0, 255).astype(np.uint8)
    raise ValueError(f"an image is H x W or H x W x 3 (or 4), got shape {img.shape}")


def _refinement(name: str):
    import cv2

    table = {
        "none": cv2.aruco.CORNER_REFINE_NONE,
        "subpix": cv2.aruco.CORNER_REFINE_SUBPIX,
        "contour": cv2.aruco.CORNER_REFINE_CONTOUR,
        "apriltag": cv2.aruco.CORNER_REFINE_APRILTAG,
    }
    if name == "edges":  # OpenCV's subpix first, then the edges' lines (_edge_corners)
        return cv2.aruco.CORNER_REFINE_SUBPIX
    if name not in table:
        raise ValueError(f"corner refinement {name!r}: one of {sorted(table) + ['edges']}")
    return table[name]


def _bilinear(gray: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """The image's values at points (..., 2) (x, y; pixel centres at integers), bilinear."""
    h, w = gray.shape
    x = np.clip(pts[..., 0], 0, w - 1.001)
    y = np.clip(pts[..., 1], 0, h - 1.001)
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0
    g = gray.astype(float)
    top = g[y0, x0] * (1 - fx) + g[y0, x0 + 1] * fx
    bottom = g[y0 + 1, x0] * (1 - fx) + g[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def _edge_corners(
    gray: np.ndarray, corners: np.ndarray, n_cells: int, camera: CameraIntrinsics | None = None
) -> np.ndarray | None:
    """The corners again, as the crossings of the four sides' lines, each line fitted to its
    side's edge points (the middle 60 % of the side, away from the corners). An edge point is
    where the dark-to-light step lies along the side's normal, found by the step's area (the
    light length of a profile of +-r px, its ends the dark and light levels), which a
    symmetric blur or a pixel's area averaging leaves in place. OpenCV's subpix corners sit
    ~0.2 px inside the true ones on such images (an L corner, not a saddle), a pose ~0.5 %
    too far; these do not. None when a side has too little contrast to measure. With a
    ``camera`` whose distortion is not zero, the edge points are undistorted before the lines
    are fitted (a side is straight only there) and the corners distorted back."""
    import cv2

    distorted = camera is not None and np.any(camera.D != 0)
    c = np.asarray(corners, float)
    centre = c.mean(axis=0)
    side = np.mean(np.linalg.norm(np.roll(c, -1, axis=0) - c, axis=1))
    r = float(np.clip(0.4 * side / n_cells, 1.0, 3.0))  # within the black border cell
    m = int(np.ceil(8 * r)) + 1
    s, ds = np.linspace(-r, r, m), 2 * r / (m - 1)  # ends at -r and r exactly
    lines = []
    for k in range(4):
        a, b = c[k], c[(k + 1) % 4]
        d = (b - a) / np.linalg.norm(b - a)
        normal = np.array([d[1], -d[0]])
        if normal @ ((a + b) / 2 - centre) < 0:
            normal = -normal  # outwards, towards the white margin
        t = np.linspace(0.2, 0.8, max(8, int(0.6 * np.linalg.norm(b - a))))
        base = a + t[:, None] * (b - a)
        profile = _bilinear(gray, base[:, None, :] + s[None, :, None] * normal)
        dark, light = profile[:, :2].mean(axis=1), profile[:, -2:].mean(axis=1)
        contrast = light - dark
        keep = contrast > 20
        if keep.sum() < 4:
            return None
        level = np.clip((profile[keep] - dark[keep, None]) / contrast[keep, None], 0, 1)
        light_length = (level[:, 1:] + level[:, :-1]).sum(axis=1) * ds / 2  # trapezoids
        edge = base[keep] + (r - light_length)[:, None] * normal
        if distorted:
            edge = cv2.undistortPoints(edge[:, None, :], camera.K, camera.D, P=camera.K)
            edge = edge.reshape(-1, 2)
        mid = edge.mean(axis=0)
        direction = np.linalg.svd(edge - mid)[2][0]
        lines.append((mid, direction))
    out = np.empty((4, 2))
    for k in range(4):  # corner k: where side k - 1 (into it) meets side k (out of it)
        (p, u), (q, v) = lines[k - 1], lines[k]
        A = np.column_stack([u, -v])
        if abs(np.linalg.det(A)) < 1e-6:
            return None
        a, _ = np.linalg.solve(A, q - p)
        out[k] = p + a * u
    if distorted:  # back to the image's own pixels
        rays = np.c_[out, np.ones(4)] @ np.linalg.inv(camera.K).T
        out = camera.project(rays)
    return out


def _view_angle(R, t) -> float:
    """Degrees between the marker's normal (its z) and the line from it to the camera."""
    to_camera = -np.asarray(t, float) / max(np.linalg.norm(t), 1e-12)
    return float(np.degrees(np.arccos(np.clip(R[:, 2] @ to_camera, -1.0, 1.0))))


def detect_marker(
    image, camera: CameraIntrinsics, marker: MarkerSpec, settings: DetectorSettings | None = None
) -> Detection:
    """Find ``marker`` in ``image`` (H x W x 3 RGB or H x W gray, uint8) seen by ``camera``;
    its pose by IPPE_SQUARE, the better-reprojecting of IPPE's two poses kept, and a verdict
    (see :class:`DetectorSettings`; the checks in the order: not seen, other id, reprojection,
    grazing, ambiguous)."""
    import cv2
    from scipy.spatial.transform import Rotation

    s = settings or DetectorSettings()
    gray = _gray(image)
    if gray.shape != (camera.height, camera.width):
        raise ValueError(
            f"the image is {gray.shape[1]} x {gray.shape[0]}, the camera "
            f"{camera.width} x {camera.height}"
        )
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = _refinement(s.corner_refinement)
    detector = cv2.aruco.ArucoDetector(_dictionary(marker.dictionary), params)
    corners, ids, _ = detector.detectMarkers(gray)
    seen = tuple(int(i) for i in (ids.reshape(-1) if ids is not None else []))
    base = {"marker_id": marker.marker_id, "ids_seen": seen}
    if not seen:
        return Detection(NOT_SEEN, f"no {marker.dictionary} marker in the image", **base)
    if marker.marker_id not in seen:
        return Detection(
            OTHER_ID, f"markers {sorted(set(seen))} seen, not id {marker.marker_id}", **base
        )
    if seen.count(marker.marker_id) > 1:
        return Detection(
            AMBIGUOUS, f"id {marker.marker_id} seen {seen.count(marker.marker_id)} times", **base
        )
    found = np.asarray(corners[seen.index(marker.marker_id)], float).reshape(4, 2)
    if s.corner_refinement == "edges":
        refined = _edge_corners(gray, found, cells(marker.dictionary), camera)
        if refined is not None and np.abs(refined - found).max() < 2.0:
            found = refined
    n, rvecs, tvecs, errors = cv2.solvePnPGeneric(
        marker.corners(), found, camera.K, camera.D, flags=cv2.SOLVEPNP_IPPE_SQUARE
    )
    errors = np.asarray(errors, float).reshape(-1)
    order = np.argsort(errors)
    poses = []
    for k in order:
        R = Rotation.from_rotvec(np.asarray(rvecs[k], float).reshape(3))
        poses.append((R, np.asarray(tvecs[k], float).reshape(3), float(errors[k])))
    (R, t, err), flip = poses[0], (poses[1] if len(poses) > 1 else None)
    angle = _view_angle(R.as_matrix(), t)
    out = dict(
        base,
        position=t,
        quaternion=R.as_quat(),
        reprojection_error_px=err,
        view_angle_deg=angle,
        corners=found,
    )
    if flip is not None:
        Rf, tf, errf = flip
        cos = np.clip(R.as_matrix()[:, 2] @ Rf.as_matrix()[:, 2], -1.0, 1.0)
        out.update(
            flip_position=tf,
            flip_quaternion=Rf.as_quat(),
            flip_error_px=errf,
            flip_angle_deg=float(np.degrees(np.arccos(cos))),
        )
    if err > s.max_reprojection_px:
        why = f"reprojection error {err:.2f} px > {s.max_reprojection_px:g}"
        return Detection(REPROJECTION, why, **out)
    if angle > s.max_view_angle_deg:
        why = f"seen at {angle:.1f} deg from its normal > {s.max_view_angle_deg:g}"
        return Detection(GRAZING, why, **out)
    if flip is not None and out["flip_angle_deg"] > s.flip_same_deg:
        ratio = out["flip_error_px"] / max(err, s.error_floor_px)
        if ratio < s.min_flip_ratio:
            why = (
                f"the flip ({out['flip_angle_deg']:.1f} deg away) reprojects at "
                f"{out['flip_error_px']:.2f} px against {err:.2f}: ratio {ratio:.2f} < "
                f"{s.min_flip_ratio:g}"
            )
            return Detection(AMBIGUOUS, why, **out)
    return Detection(ACCEPTED, f"id {marker.marker_id} at {angle:.1f} deg, {err:.2f} px", **out)
