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
    AXIS,
    BOUND,
    BOUND_R,
    BOX,
    CAP_R,
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
    return hull(P)[0]


def hull(P) -> tuple[np.ndarray, list[set[int]]]:
    """(the corners of conv(P), each corner's neighbours along the hull's triangulated faces):
    walking uphill along them finds the corner farthest in any direction."""
    from scipy.spatial import ConvexHull, QhullError

    P = np.unique(np.asarray(P, float).reshape(-1, 3), axis=0)
    for options in (None, "QJ"):  # QJ: joggle a flat set into a thin solid
        try:
            h = ConvexHull(P, qhull_options=options)
        except (QhullError, ValueError):
            continue
        order = _extremes_first(P, h.vertices)
        index = {int(v): k for k, v in enumerate(order)}
        near: list[set[int]] = [set() for _ in h.vertices]
        for tri in h.simplices:
            a, b, c = (index[int(v)] for v in tri)
            near[a] |= {b, c}
            near[b] |= {a, c}
            near[c] |= {a, b}
        return P[order], near
    # fewer than four distinct points: every one a corner, each beside every other
    return P, [set(range(len(P))) - {k} for k in range(len(P))]


def _extremes_first(P, corners) -> list[int]:
    """The hull's corners with the farthest along -x, +x, -y, +y, -z, +z first (a support walk
    starts from the best of those six)."""
    first = []
    for axis in range(3):
        for pick in (np.argmin, np.argmax):
            k = int(corners[pick(P[corners, axis])])
            if k not in first:
                first.append(k)
    return first + [int(k) for k in corners if int(k) not in first]


def hull_block(V, near) -> np.ndarray:
    """A hull as rows of 3 numbers for the packed vertex array: its corners, then its adjacency
    (n + 1 offsets and the neighbour lists, local indices) padded to whole rows."""
    offsets = np.cumsum([0] + [len(n) for n in near])
    flat = np.concatenate([offsets, [j for n in near for j in sorted(n)]]).astype(float)
    flat = np.concatenate([flat, np.zeros(-len(flat) % 3)])
    return np.concatenate([np.asarray(V, float), flat.reshape(-1, 3)])


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


def _row(kind: float, par=(0.0, 0.0, 0.0), radius: float = 0.0) -> np.ndarray:
    row = np.zeros(ROW)
    row[KIND], row[PAR : PAR + 3], row[RADIUS] = kind, par, radius
    row[ROT : ROT + 9] = np.eye(3).ravel()
    return row


def box_corners(half) -> np.ndarray:
    h = np.asarray(half, float)
    return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h


def bounding_capsule(V) -> tuple[np.ndarray, np.ndarray, float]:
    """(midpoint, half segment, radius) of a capsule holding the points ``V``: the segment along
    their principal axis, its ends pulled in as far as the radius allows; the radius is the
    exact farthest distance from the segment."""
    V = np.asarray(V, float).reshape(-1, 3)
    c = V.mean(0)
    u = np.linalg.eigh(np.cov((V - c).T) + 1e-30 * np.eye(3))[1][:, -1] if len(V) > 1 else None
    if u is None:
        return V[0], np.zeros(3), 0.0
    t = (V - c) @ u
    rho = np.linalg.norm(V - c - t[:, None] * u, axis=1)
    r = rho.max()
    room = np.sqrt(np.maximum(r * r - rho * rho, 0.0))
    lo, hi = (t + room).min(), (t - room).max()
    if lo > hi:
        lo = hi = (lo + hi) / 2
    a, b = c + lo * u, c + hi * u
    e = b - a
    s = np.clip((V - a) @ e / max(e @ e, 1e-300), 0.0, 1.0)
    r = float(np.linalg.norm(V - a - s[:, None] * e, axis=1).max())
    return (a + b) / 2, e / 2, r


def with_bounds(row, corners=None, grow: float = 0.0, capsule=None) -> np.ndarray:
    """``row`` with a bounding capsule (midpoint, half segment, radius: ``capsule``, else one
    around the points ``corners``, the shape's extreme points in its frame) and the sphere
    about that midpoint through the farthest of them, both grown by ``grow`` (its radius)."""
    row = row.copy()
    mid, half, r = capsule if capsule is not None else bounding_capsule(corners)
    if capsule is not None:
        reach = np.linalg.norm(half) + r
    else:
        reach = float(np.linalg.norm(np.asarray(corners) - mid, axis=1).max())
    row[BOUND : BOUND + 3], row[BOUND_R] = mid, reach + grow
    row[AXIS : AXIS + 3], row[CAP_R] = half, r + grow
    return row


def geometry_shapes(geom, dirs) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """[(a shape row in the ``<collision>``'s own frame, a hull's rows or None)] for one
    ``<geometry>`` (a mesh of several parts gives a hull each); [] with a warning for a shape
    that cannot be read."""
    shape = geom[0] if geom is not None and len(geom) else None
    tag = shape.tag if shape is not None else None
    if tag == "sphere":
        r = float(shape.get("radius"))
        return [(with_bounds(_row(POINT, radius=r), capsule=(np.zeros(3), np.zeros(3), r)), None)]
    if tag == "box":
        half = np.array(shape.get("size").split(), float) / 2
        return [(with_bounds(_row(BOX, half), box_corners(half)), None)]
    if tag in ("cylinder", "capsule"):  # a capsule is PyBullet's: a segment grown by a radius
        r, h = float(shape.get("radius")), float(shape.get("length")) / 2
        if tag == "capsule":
            row = _row(SEGMENT, (h, 0.0, 0.0), r)
            return [(with_bounds(row, capsule=(np.zeros(3), np.array([0, 0, h]), r)), None)]
        row = _row(CYLINDER, (r, h, 0.0), SHELL)
        return [
            (with_bounds(row, grow=SHELL, capsule=(np.zeros(3), np.array([0, 0, h]), r)), None)
        ]
    if tag == "mesh":
        path = find_mesh(shape.get("filename", ""), dirs)
        if path is None:
            warnings.warn(
                f"collision mesh {shape.get('filename')!r} not found; left out", stacklevel=4
            )
            return []
        scale = np.array(shape.get("scale", "1 1 1").split(), float)
        try:
            parts = [hull(v * scale) for v in read_parts(path) if len(v)]
        except Exception as err:  # noqa: BLE001 - any reader failure means "cannot use it"
            warnings.warn(f"cannot read collision mesh {path}: {err}; left out", stacklevel=4)
            return []
        if not parts:
            warnings.warn(f"collision mesh {path} has no vertices; left out", stacklevel=4)
        out = []
        for v, near in parts:  # PAR: first corner row, corners, first adjacency row (relative)
            row = with_bounds(_row(HULL, (0.0, len(v), len(v)), SHELL), v, grow=SHELL)
            out.append((row, hull_block(v, near)))
        return out
    warnings.warn(f"collision geometry <{tag}> not supported; left out", stacklevel=4)
    return []
