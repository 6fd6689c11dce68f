"""A URDF's ``<collision>`` geometry as convex shapes (convex.py's rows), as PyBullet collides
them: spheres, boxes and capsules as they are; a mesh as the convex hull of its vertices, grown
by ``SHELL``; a cylinder grown by ``SHELL``. Numpy and scipy only; mesh files are read here
(.obj, .stl; other formats through trimesh when it is installed).

Why the shell: PyBullet's URDF importer gives every shape a 1 mm collision margin. Boxes keep
their size (the margin rounds their edges inwards), but a mesh's hull grows by it (two meshes
touch in PyBullet 2 mm before their hulls do, measured), and a cylinder becomes a polygonal prism
with its corners on the circle, grown by it (1 mm more than the cylinder across a corner). Grown
the same way, an answer free here is free in the simulator too, and costs at most 1 mm of room.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..arm.resources import find_mesh
from .convex import (
    BOUND,
    BOUND_R,
    BOX,
    CYLINDER,
    HULL,
    KIND,
    PAR,
    POINT,
    RADIUS,
    ROT,
    ROW,
    SEGMENT,
)

SHELL = 0.001  # m: PyBullet's URDF collision margin (gUrdfDefaultCollisionMargin)


def origin(el) -> np.ndarray:
    """The 4x4 transform of an element's ``<origin>`` (identity when it has none)."""
    T = np.eye(4)
    o = el.find("origin") if el is not None else None
    if o is None:
        return T
    r, p, y = (float(v) for v in o.get("rpy", "0 0 0").split())
    cr, sr, cp, sp = math.cos(r), math.sin(r), math.cos(p), math.sin(p)
    cy, sy = math.cos(y), math.sin(y)
    T[:3, :3] = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    T[:3, 3] = [float(v) for v in o.get("xyz", "0 0 0").split()]
    return T


def hull_vertices(P) -> np.ndarray:
    """The corners of conv(P): the only vertices a support function needs."""
    from scipy.spatial import ConvexHull, QhullError

    P = np.unique(np.asarray(P, float).reshape(-1, 3), axis=0)
    for options in (None, "QJ"):  # QJ: joggle a flat set into a thin solid
        try:
            return P[ConvexHull(P, qhull_options=options).vertices]
        except (QhullError, ValueError):
            continue
    return P  # fewer than four distinct points: every one is a corner


def bounding_ball(V, steps: int = 64) -> tuple[np.ndarray, float]:
    """A small sphere holding the points ``V``: Badoiu-Clarkson steps towards the farthest point,
    the best centre kept; its radius is the exact farthest distance from that centre."""
    V = np.asarray(V, float)
    c = (V.min(0) + V.max(0)) / 2
    best = (float(((V - c) ** 2).sum(1).max()), c)
    for i in range(steps):
        d2 = ((V - c) ** 2).sum(1)
        f = int(np.argmax(d2))
        if d2[f] < best[0]:
            best = (float(d2[f]), c)
        c = c + (V[f] - c) / (i + 2)
    return best[1], math.sqrt(best[0])


def read_parts(path: Path) -> list[np.ndarray]:
    """A mesh file's vertices, one array per part PyBullet makes a hull of: each object or
    group of an .obj (a convex decomposition, V-HACD's output, is one object per piece), the
    whole of any other file."""
    if path.suffix.lower() == ".obj":
        return _obj_parts(path.read_text(errors="ignore").splitlines())
    if path.suffix.lower() == ".stl":
        data = path.read_bytes()
        n = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
        if 84 + 50 * n == len(data):  # binary: 12 float32 and 2 bytes a triangle
            tri = np.frombuffer(data[84:], np.dtype([("f", "<f4", 12), ("a", "<u2")]))
            return [tri["f"][:, 3:].reshape(-1, 3).astype(float)]
        words = data.decode(errors="ignore").split()
        return [
            np.array([words[i + 1 : i + 4] for i, w in enumerate(words) if w == "vertex"], float)
        ]
    import trimesh  # other formats (.dae, ...)

    return [np.asarray(trimesh.load(path, force="mesh").vertices, float)]


def _obj_parts(lines) -> list[np.ndarray]:
    """The vertices each object (``o``) or group (``g``) of an .obj's faces uses; all the
    vertices as one part when the file has no faces."""
    V, parts, current = [], [], set()
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0] == "v":
            V.append([float(x) for x in words[1:4]])
        elif words[0] in ("o", "g"):
            if current:
                parts.append(current)
            current = set()
        elif words[0] == "f":
            for w in words[1:]:
                k = int(w.split("/")[0])
                current.add(k - 1 if k > 0 else len(V) + k)
    if current:
        parts.append(current)
    V = np.array(V, float).reshape(-1, 3)
    if not parts:
        return [V]
    return [V[sorted(part)] for part in parts]


def _row(kind: float, par=(0.0, 0.0, 0.0), radius: float = 0.0, bound=(np.zeros(3), 0.0)):
    row = np.zeros(ROW)
    row[KIND], row[PAR : PAR + 3], row[RADIUS] = kind, par, radius
    row[ROT : ROT + 9] = np.eye(3).ravel()
    row[BOUND : BOUND + 3], row[BOUND_R] = bound
    return row


def geometry_shapes(geom, dirs) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """[(a shape row in the ``<collision>``'s own frame, a hull's vertices or None)] for one
    ``<geometry>`` (a mesh of several parts gives a hull each); [] with a warning for a shape
    that cannot be read."""
    shape = geom[0] if geom is not None and len(geom) else None
    tag = shape.tag if shape is not None else None
    if tag == "sphere":
        r = float(shape.get("radius"))
        return [(_row(POINT, radius=r, bound=(np.zeros(3), r)), None)]
    if tag == "box":
        half = np.array(shape.get("size").split(), float) / 2
        return [(_row(BOX, half, bound=(np.zeros(3), float(np.linalg.norm(half)))), None)]
    if tag == "cylinder":
        r, h = float(shape.get("radius")), float(shape.get("length")) / 2
        bound = (np.zeros(3), math.hypot(r, h) + SHELL)
        return [(_row(CYLINDER, (r, h, 0.0), SHELL, bound), None)]
    if tag == "capsule":  # PyBullet's: a segment of ``length`` grown by ``radius``
        r, h = float(shape.get("radius")), float(shape.get("length")) / 2
        return [(_row(SEGMENT, (h, 0.0, 0.0), r, bound=(np.zeros(3), h + r)), None)]
    if tag == "mesh":
        path = find_mesh(shape.get("filename", ""), dirs)
        if path is None:
            warnings.warn(
                f"collision mesh {shape.get('filename')!r} not found; left out", stacklevel=4
            )
            return []
        scale = np.array(shape.get("scale", "1 1 1").split(), float)
        try:
            parts = [hull_vertices(v * scale) for v in read_parts(path) if len(v)]
        except Exception as err:  # noqa: BLE001 - any reader failure means "cannot use it"
            warnings.warn(f"cannot read collision mesh {path}: {err}; left out", stacklevel=4)
            return []
        if not parts:
            warnings.warn(f"collision mesh {path} has no vertices; left out", stacklevel=4)
        out = []
        for v in parts:
            centre, radius = bounding_ball(v)
            out.append((_row(HULL, (0.0, len(v), 0.0), SHELL, (centre, radius + SHELL)), v))
        return out
    warnings.warn(f"collision geometry <{tag}> not supported; left out", stacklevel=4)
    return []
