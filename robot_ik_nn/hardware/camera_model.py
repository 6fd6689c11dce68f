"""The camera and the marker as things: a camera's intrinsics (as sensor_msgs/CameraInfo carries
them) and an ArUco marker (its dictionary, id and printed size), with the marker's image and a
printable file at its true size. The detector (calibration/camera.py) and the simulated camera
(hardware/sim_camera.py) both take them.

OpenCV (``cv2``) and matplotlib are imported in the functions that need them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


# -- the camera ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CameraIntrinsics:
    """A pinhole camera as ``sensor_msgs/CameraInfo`` describes it: ``K`` (3x3, pixels), the
    distortion ``D`` (OpenCV's order: k1 k2 p1 p2 [k3 ...]; ``plumb_bob`` or
    ``rational_polynomial``), the image size."""

    width: int
    height: int
    K: np.ndarray
    D: np.ndarray = field(default_factory=lambda: np.zeros(5))
    distortion_model: str = "plumb_bob"

    def __post_init__(self):
        K = np.array(self.K, dtype=float).reshape(3, 3)
        D = np.array(self.D, dtype=float).reshape(-1)
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be positive, got {self.width} x {self.height}")
        if not (K[0, 0] > 0 and K[1, 1] > 0) or not np.allclose(K[2], [0, 0, 1]):
            raise ValueError(f"K is no camera matrix (fx, fy > 0, last row 0 0 1): {K.tolist()}")
        if not np.all(np.isfinite(D)):
            raise ValueError(f"distortion must be finite, got {D.tolist()}")
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "D", D)
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))

    @classmethod
    def pinhole(cls, width, height, fx, fy=None, cx=None, cy=None) -> "CameraIntrinsics":
        """No distortion; the principal point at the image's centre unless given (pixel
        centres at integer coordinates, as OpenCV counts them)."""
        fy = fx if fy is None else fy
        cx = (width - 1) / 2.0 if cx is None else cx
        cy = (height - 1) / 2.0 if cy is None else cy
        return cls(width, height, [[fx, 0, cx], [0, fy, cy], [0, 0, 1]])

    @classmethod
    def from_camera_info(
        cls, width, height, k, d=(), distortion_model: str = "plumb_bob"
    ) -> "CameraIntrinsics":
        """From a CameraInfo's fields: ``width``, ``height``, ``k`` (9 values, row-major),
        ``d`` (any length; empty: no distortion), ``distortion_model``."""
        k = np.asarray(k, dtype=float).reshape(-1)
        if k.size != 9:
            raise ValueError(f"k must hold 9 values (3x3 row-major), got {k.size}")
        if distortion_model not in ("plumb_bob", "rational_polynomial", ""):
            raise ValueError(
                f"distortion model {distortion_model!r}: OpenCV's plumb_bob or "
                "rational_polynomial only"
            )
        d = np.asarray(d, dtype=float).reshape(-1)
        return cls(int(width), int(height), k.reshape(3, 3), d if d.size else np.zeros(5),
                   distortion_model or "plumb_bob")  # fmt: skip

    def camera_info_fields(self) -> dict:
        """The CameraInfo fields (plain lists): width, height, distortion_model, d, k, r, p
        (r identity, p = [K | 0]: a monocular camera)."""
        p = np.hstack([self.K, np.zeros((3, 1))])
        return {
            "width": self.width,
            "height": self.height,
            "distortion_model": self.distortion_model,
            "d": self.D.tolist(),
            "k": self.K.reshape(-1).tolist(),
            "r": np.eye(3).reshape(-1).tolist(),
            "p": p.reshape(-1).tolist(),
        }

    def project(self, points) -> np.ndarray:
        """Pixels (N, 2) of points (N, 3) in the camera frame, distortion included."""
        import cv2

        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        uv, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), self.K, self.D)
        return uv.reshape(-1, 2)


# -- the marker ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MarkerSpec:
    """An ArUco marker: its dictionary (OpenCV's name, e.g. ``DICT_4X4_50``), its id, and its
    printed size ``size_m`` (the black square's edge, m)."""

    dictionary: str = "DICT_4X4_50"
    marker_id: int = 0
    size_m: float = 0.040

    def __post_init__(self):
        if not self.dictionary.startswith("DICT_"):
            raise ValueError(f"an ArUco dictionary is named DICT_..., got {self.dictionary!r}")
        if not self.size_m > 0:
            raise ValueError(f"the marker size must be above 0, got {self.size_m}")
        if self.marker_id < 0:
            raise ValueError(f"a marker id is 0 or more, got {self.marker_id}")

    def corners(self) -> np.ndarray:
        """The corners in the marker's frame (4, 3), in the order the detector returns them
        (top left, top right, bottom right, bottom left) and IPPE_SQUARE wants them."""
        h = self.size_m / 2.0
        return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


def _dictionary(name: str):
    import cv2

    code = getattr(cv2.aruco, name, None)
    if not isinstance(code, int):
        raise ValueError(f"OpenCV has no ArUco dictionary {name!r} (e.g. DICT_4X4_50)")
    return cv2.aruco.getPredefinedDictionary(code)


def cells(dictionary: str = "DICT_4X4_50") -> int:
    """The marker's cells along one edge: its bits and the one-cell black border."""
    return int(_dictionary(dictionary).markerSize) + 2


def marker_image(
    marker_id: int, size_px: int, dictionary: str = "DICT_4X4_50", margin_px: int = 0
) -> np.ndarray:
    """The marker as a grayscale image (uint8, 0 black, 255 white): ``size_px`` square, the
    black border to the edges, inside a white margin of ``margin_px`` on each side."""
    import cv2

    d = _dictionary(dictionary)
    if not 0 <= marker_id < len(d.bytesList):
        raise ValueError(f"{dictionary} holds ids 0 to {len(d.bytesList) - 1}, not {marker_id}")
    if size_px < cells(dictionary):
        raise ValueError(f"{size_px} px is fewer than the marker's {cells(dictionary)} cells")
    img = cv2.aruco.generateImageMarker(d, int(marker_id), int(size_px))
    if margin_px:
        img = np.pad(img, int(margin_px), constant_values=255)
    return img


def write_marker_file(
    path,
    marker_id: int,
    size_mm: float,
    dictionary: str = "DICT_4X4_50",
    margin_mm: float = 10.0,
    px_per_mm: float = 12.0,
) -> Path:
    """A printable marker: ``.pdf`` (a page of the marker and its white margin, the marker at
    ``size_mm`` exactly; print at 100 %, no "fit to page") or ``.png`` (the same page as pixels,
    ``px_per_mm`` of them, its DPI written in the file, the marker's edge rounded to a whole
    pixel). A line in the margin says what it is."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    path = Path(path)
    if not size_mm > 0 or margin_mm < 0:
        raise ValueError(f"size {size_mm} mm and margin {margin_mm} mm: size > 0, margin >= 0")
    suffix = path.suffix.lower()
    if suffix not in (".pdf", ".png"):
        raise ValueError(f"{path}: write .pdf or .png")
    path.parent.mkdir(parents=True, exist_ok=True)
    label = f"ArUco {dictionary} id {marker_id}, {size_mm:g} mm (black edge to black edge)"
    n = cells(dictionary)
    if suffix == ".png":
        side = max(n, int(round(size_mm * px_per_mm)))
        margin = int(round(margin_mm * px_per_mm))
        page = marker_image(marker_id, side, dictionary, margin)
        import matplotlib.image

        matplotlib.image.imsave(path, page, cmap="gray", vmin=0, vmax=255, dpi=25.4 * px_per_mm)
        return path
    # the black cells as one vector path (squares of one winding, filled as their union: no
    # seam between neighbours, no image for a viewer to smooth), placed at size_mm on the page
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MplPath

    cell = marker_image(marker_id, n, dictionary) < 128  # one pixel a cell, row 0 on top
    verts, codes = [], []
    for row, col in zip(*np.nonzero(cell)):
        y = n - 1 - row
        verts += [(col, y), (col + 1, y), (col + 1, y + 1), (col, y + 1), (col, y)]
        codes += [MplPath.MOVETO] + [MplPath.LINETO] * 3 + [MplPath.CLOSEPOLY]
    page = size_mm + 2 * margin_mm
    fig = Figure(figsize=(page / 25.4, page / 25.4))
    ax = fig.add_axes((margin_mm / page, margin_mm / page, size_mm / page, size_mm / page))
    ax.set_xlim(0, n)
    ax.set_ylim(0, n)
    ax.add_patch(PathPatch(MplPath(verts, codes), facecolor="black", edgecolor="none", lw=0))
    ax.set_axis_off()
    if margin_mm >= 4:
        fig.text(0.5, margin_mm / page / 2, label, ha="center", va="center", fontsize=6,
                 color="0.4")  # fmt: skip
    fig.savefig(path, format="pdf")
    return path
