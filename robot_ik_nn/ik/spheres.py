"""A URDF's collision shapes as spheres whose union contains each shape (collision.py checks
them): boxes cut into a grid of equal pieces, cylinders into slabs, meshes (their convex hull,
which is what PyBullet collides) by recursive plane cuts of the hull, each part's sphere holding
its corners. Numpy and scipy only; mesh files are read here (.obj, .stl; else trimesh).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..arm.resources import find_mesh


def _origin(el) -> np.ndarray:
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


def _box_spheres(half, max_spheres: int) -> list[tuple[np.ndarray, float]]:
    """Centred box of half sizes ``half``: cut the longest piece side in two while the count
    allows, each piece covered by its circumscribed sphere."""
    half = np.maximum(np.asarray(half, float), 1e-9)
    n = np.ones(3, int)
    while True:
        i = int(np.argmax(half / n))
        if np.prod(n) // n[i] * (n[i] + 1) > max_spheres:
            break
        n[i] += 1
    piece = half / n
    grid = [-half[a] + piece[a] * (2 * np.arange(n[a]) + 1) for a in range(3)]
    r = float(np.linalg.norm(piece))
    return [(np.array([x, y, z]), r) for x in grid[0] for y in grid[1] for z in grid[2]]


def _corners(P):
    """The corners of conv(P) and its edges as index pairs (every pair for a set qhull cannot
    wrap: fewer than four distinct points)."""
    from scipy.spatial import ConvexHull, QhullError

    for options in ("", "QJ"):  # QJ: joggle a flat set into a thin solid
        try:
            h = ConvexHull(P, qhull_options=options or None)
        except (QhullError, ValueError):
            continue
        index = np.full(len(P), -1)
        index[h.vertices] = np.arange(len(h.vertices))
        s = index[h.simplices]
        return P[h.vertices], np.concatenate([s[:, [0, 1]], s[:, [1, 2]], s[:, [0, 2]]])
    P = np.unique(P, axis=0)
    return P, np.stack(np.triu_indices(len(P), 1), axis=1)


def _cut(V, E, n, d):
    """The corners of the two halves (n.x <= d, n.x >= d) of the convex polytope with corners
    ``V`` and edges ``E``: the corners on each side and where the edges cross the plane."""
    s = V @ n - d
    a, b = s[E[:, 0]], s[E[:, 1]]
    e = E[(a < 0) != (b < 0)]
    t = (s[e[:, 0]] / (s[e[:, 0]] - s[e[:, 1]]))[:, None]
    X = V[e[:, 0]] + t * (V[e[:, 1]] - V[e[:, 0]])
    return np.concatenate([V[s <= 0], X]), np.concatenate([V[s >= 0], X])


def _ball(V, steps=48):
    """A small sphere holding the points ``V``: Badoiu-Clarkson steps towards the farthest point
    from the bounding-box centre, the best centre kept; radius the exact farthest distance."""
    c = (V.min(0) + V.max(0)) / 2
    best = (float(((V - c) ** 2).sum(1).max()), c)
    for i in range(steps):
        d2 = ((V - c) ** 2).sum(1)
        f = int(np.argmax(d2))
        if d2[f] < best[0]:
            best = (float(d2[f]), c)
        c = c + (V[f] - c) / (i + 2)
    return best[1], math.sqrt(best[0])


def _directions(n=256):
    """``n`` unit vectors spread evenly over the sphere (a Fibonacci lattice)."""
    i = np.arange(n) + 0.5
    z, phi = 1 - 2 * i / n, math.pi * (3 - math.sqrt(5)) * i
    rho = np.sqrt(1 - z * z)
    return np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=1)


def _hull_spheres(V, max_spheres: int, tolerance: float = 0.0):
    """Spheres covering conv(V), V (m, 3), by recursive cuts. How far a sphere reaches outside
    the hull: the most, over directions u, that c.u + r exceeds the hull's support max V.u. The
    part whose sphere reaches farthest is cut in two by a plane across one of its principal
    axes (at 35, 50 or 65 % of its extent: the cut whose halves reach least far); a part no cut
    improves is left whole. This stops at ``max_spheres`` parts or when every sphere is within
    ``tolerance`` (m) of the hull. A convex hull cut by planes leaves convex parts, each the
    hull of its corners, so a sphere holding a part's corners holds the part."""
    U = _directions()
    V, E = _corners(np.asarray(V, float))
    support = (V @ U.T).max(0)

    def reach(c, r):
        return float((U @ c + r - support).max())

    def part(P):
        P, Ep = _corners(P)
        c, r = _ball(P)
        return [P, Ep, c, r, reach(c, r)]

    parts, whole = [part(V)], []  # whole: parts no cut improves
    while parts and len(parts) + len(whole) < max_spheres:
        k = max(range(len(parts)), key=lambda i: parts[i][4])
        P, Ep, _, _, worst = parts[k]
        if worst <= tolerance:
            break
        best = (math.inf, None)
        for n in np.linalg.eigh(np.cov(P.T))[1].T if len(P) > 3 else np.eye(3):
            lo, hi = (P @ n).min(), (P @ n).max()
            for f in (0.35, 0.5, 0.65) if hi - lo > 1e-9 else ():
                halves = _cut(P, Ep, n, lo + f * (hi - lo))
                score = max(reach(*_ball(H, steps=0)) for H in halves)  # quick centres
                if score < best[0]:
                    best = (score, halves)
        halves = [part(H) for H in best[1]] if best[1] is not None else []
        if not halves or max(h[4] for h in halves) >= worst:
            whole.append(parts.pop(k))
        else:
            parts[k : k + 1] = halves
    return [(c, r) for _, _, c, r, _ in parts + whole]


def _read_vertices(path: Path) -> np.ndarray:
    if path.suffix.lower() == ".obj":
        lines = path.read_text(errors="ignore").splitlines()
        return np.array([ln.split()[1:4] for ln in lines if ln.startswith("v ")], float)
    if path.suffix.lower() == ".stl":
        data = path.read_bytes()
        n = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
        if 84 + 50 * n == len(data):  # binary: 12 float32 and 2 bytes a triangle
            tri = np.frombuffer(data[84:], np.dtype([("f", "<f4", 12), ("a", "<u2")]))
            return tri["f"][:, 3:].reshape(-1, 3).astype(float)
        words = data.decode(errors="ignore").split()
        return np.array(
            [words[i + 1 : i + 4] for i, w in enumerate(words) if w == "vertex"], float
        )
    import trimesh  # other formats (.dae, ...)

    return np.asarray(trimesh.load(path, force="mesh").vertices, float)


def _geometry_spheres(geom, dirs, max_spheres: int, mesh_spheres: int, tolerance: float):
    """(4x4 pose in the collision origin, [(centre, radius)]) covering one <geometry>; None when
    the shape cannot be read."""
    shape = geom[0] if len(geom) else None
    tag = shape.tag if shape is not None else None
    if tag == "sphere":
        return np.eye(4), [(np.zeros(3), float(shape.get("radius")))]
    if tag == "box":
        return np.eye(4), _box_spheres(np.array(shape.get("size").split(), float) / 2, max_spheres)
    if tag in ("cylinder", "capsule"):
        R, h = float(shape.get("radius")), float(shape.get("length")) / 2
        h += R if tag == "capsule" else 0.0
        n = int(min(max_spheres, max(1, math.ceil(h / max(R, 1e-9)))))
        r = math.hypot(R, h / n)
        return np.eye(4), [(np.array([0, 0, -h + h / n * (2 * i + 1)]), r) for i in range(n)]
    if tag == "mesh":
        path = find_mesh(shape.get("filename", ""), dirs)
        if path is None:
            warnings.warn(
                f"collision mesh {shape.get('filename')!r} not found; left out", stacklevel=4
            )
            return None
        try:
            v = _read_vertices(path) * np.array(shape.get("scale", "1 1 1").split(), float)
        except Exception as err:  # noqa: BLE001 - any reader failure means "cannot use it"
            warnings.warn(f"cannot read collision mesh {path}: {err}; left out", stacklevel=4)
            return None
        return np.eye(4), _hull_spheres(v, mesh_spheres, tolerance)
    warnings.warn(f"collision geometry <{tag}> not supported; left out", stacklevel=4)
    return None
