"""Self-collision (and simple obstacle) checks for the compiled kernel: the arm's collision
shapes covered by spheres, checked pair by pair with no allocation.

- Frames: frame 0 is the base (before joint 0's origin), frame k + 1 the frame after joint k's
  motion, i.e. joint k's child link; links hung below a link by fixed joints share its frame.
  Links behind a movable joint that is not in the chain (a gripper's fingers) are left out.
- Spheres: every ``<collision>`` shape is covered by spheres whose union contains it: a box
  (at most ``max_spheres``) is cut into a grid of equal pieces (longest sides first), each with
  its circumscribed sphere; a cylinder (a capsule as its enclosing cylinder) into slabs along its
  axis; a mesh (PyBullet collides its vertices' convex hull; at most ``mesh_spheres``) by
  recursive plane cuts of the hull, each convex part in a small sphere through its farthest
  corner, the part reaching farthest outside the hull cut next (see ``_hull_spheres``).
  ``margin`` (m) inflates every radius: clearance >= 0 then keeps shapes 2 * margin from each
  other and margin from the obstacles.
- Pairs: frames that are equal or adjacent (one joint apart) are never checked, as an SRDF's
  "Adjacent"; of the others, frame pairs never in contact over ``samples`` random
  configurations ("Never") and those in contact in at least ``always_fraction`` of them
  ("Always"/"Default") are left out too.
- Packed arrays: spheres (S, 5) float64: frame, centre x y z in that frame, radius; pairs
  (P, 2) int64 sphere indices; obstacles (O, 7) float64 in the base frame: 0, nx, ny, nz, d, 0, 0
  for the plane n.x = d (free side n.x > d), or 1, cx, cy, cz, hx, hy, hz for an axis-aligned
  box. Obstacles are checked against spheres on frames >= 1 only (the base stands on the table).
  Scratch: frames (dof + 1, 12) (rotation row-major, then translation) and centres (S, 3).
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from numba import njit

from .layout import A_, AK_, B_, C_, P_, PRISMATIC, TYPE, pack_chain

PLANE, BOX = 0.0, 1.0


# -- compiled -------------------------------------------------------------------------------------
@njit(cache=True)
def link_frames(chain, q, frames):
    """Every chain frame for joints ``q`` into ``frames`` (dof + 1, 12): R row-major, then t."""
    frames[0, :] = 0.0
    frames[0, 0] = frames[0, 4] = frames[0, 8] = 1.0
    for j in range(q.shape[0]):
        f, g = frames[j], frames[j + 1]
        s, c1 = 0.0, 0.0
        if chain[j, TYPE] != PRISMATIC:
            s, c1 = math.sin(q[j]), 1.0 - math.cos(q[j])
        for a in range(3):
            g[9 + a] = f[9 + a]
            for b in range(3):
                g[9 + a] += f[3 * a + b] * chain[j, P_ + b]
            if chain[j, TYPE] == PRISMATIC:
                for b in range(3):
                    g[9 + a] += f[3 * a + b] * chain[j, AK_ + b] * q[j]
        for a in range(3):
            for c in range(3):
                acc = 0.0
                for b in range(3):
                    k = 3 * b + c
                    acc += f[3 * a + b] * (
                        chain[j, A_ + k] + s * chain[j, B_ + k] + c1 * chain[j, C_ + k]
                    )
                g[3 * a + c] = acc


@njit(cache=True)
def sphere_centres(spheres, frames, centres):
    """The spheres' centres in the base frame, for frames already computed."""
    for i in range(spheres.shape[0]):
        f = frames[int(spheres[i, 0])]
        for a in range(3):
            centres[i, a] = (
                f[9 + a]
                + f[3 * a] * spheres[i, 1]
                + f[3 * a + 1] * spheres[i, 2]
                + f[3 * a + 2] * spheres[i, 3]
            )


@njit(cache=True)
def clearance(chain, spheres, pairs, obstacles, q, frames, centres):
    """The smallest gap (m) over the enabled sphere pairs and sphere/obstacle pairs at ``q``:
    centre distance less both radii; negative means collision, +inf when nothing is checked."""
    link_frames(chain, q, frames)
    sphere_centres(spheres, frames, centres)
    best = np.inf
    for k in range(pairs.shape[0]):
        a, b = int(pairs[k, 0]), int(pairs[k, 1])
        dx, dy = centres[a, 0] - centres[b, 0], centres[a, 1] - centres[b, 1]
        dz = centres[a, 2] - centres[b, 2]
        gap = math.sqrt(dx * dx + dy * dy + dz * dz) - spheres[a, 4] - spheres[b, 4]
        best = min(best, gap)
    for o in range(obstacles.shape[0]):
        ob = obstacles[o]
        for i in range(spheres.shape[0]):
            if spheres[i, 0] < 1.0:
                continue
            x, y, z = centres[i, 0], centres[i, 1], centres[i, 2]
            if ob[0] == PLANE:
                d = ob[1] * x + ob[2] * y + ob[3] * z - ob[4]
            else:  # box: outside distance, or minus the depth inside
                ex, ey = abs(x - ob[1]) - ob[4], abs(y - ob[2]) - ob[5]
                ez = abs(z - ob[3]) - ob[6]
                mx, my, mz = max(ex, 0.0), max(ey, 0.0), max(ez, 0.0)
                d = math.sqrt(mx * mx + my * my + mz * mz) + min(max(ex, max(ey, ez)), 0.0)
            best = min(best, d - spheres[i, 4])
    return best


@njit(cache=True)
def free(chain, spheres, pairs, obstacles, q):
    """Whether ``q`` keeps every checked pair and obstacle clear (its own scratch: this runs
    once per candidate answer, not per iteration)."""
    frames, centres = np.empty((chain.shape[0], 12)), np.empty((spheres.shape[0], 3))
    return clearance(chain, spheres, pairs, obstacles, q, frames, centres) >= 0.0


@njit(cache=True)
def clearance_batch(chain, spheres, pairs, obstacles, Q, frames, centres, out):
    for i in range(Q.shape[0]):
        out[i] = clearance(chain, spheres, pairs, obstacles, Q[i], frames, centres)


@njit(cache=True)
def _contact_counts(chain, spheres, pairs, Q, frames, centres, counts, last):
    """counts[fa, fb]: in how many rows of ``Q`` a sphere of frame fa touches one of fb."""
    for s in range(Q.shape[0]):
        link_frames(chain, Q[s], frames)
        sphere_centres(spheres, frames, centres)
        for k in range(pairs.shape[0]):
            a, b = pairs[k, 0], pairs[k, 1]
            fa, fb = int(spheres[a, 0]), int(spheres[b, 0])
            if last[fa, fb] == s:
                continue
            d2 = 0.0
            for c in range(3):
                d2 += (centres[a, c] - centres[b, c]) ** 2
            if d2 < (spheres[a, 4] + spheres[b, 4]) ** 2:
                counts[fa, fb] += 1
                last[fa, fb] = s


# -- geometry -------------------------------------------------------------------------------------
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


def _find_mesh(filename: str, dirs) -> Path | None:
    name = filename.replace("package://", "").replace("file://", "")
    if Path(name).is_absolute():
        return Path(name) if Path(name).is_file() else None
    tails = [Path(name)] + ([Path(*Path(name).parts[1:])] if len(Path(name).parts) > 1 else [])
    for d in dirs:
        for base in (Path(d), Path(d).parent):
            for tail in tails:
                if (base / tail).is_file():
                    return base / tail
    return None


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
        path = _find_mesh(shape.get("filename", ""), dirs)
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


# -- the model ------------------------------------------------------------------------------------
class CollisionModel:
    """Spheres per chain frame, the enabled sphere pairs and obstacles, packed for the kernel."""

    def __init__(self, chain, spheres, pairs, links, disabled, obstacles=None):
        self.chain, self.spheres, self.pairs = chain, spheres, pairs
        self.links = links  # link name -> frame
        self.disabled = disabled  # (fa, fb) -> "adjacent" | "never" | "always"
        self.obstacles = np.zeros((0, 7)) if obstacles is None else obstacles
        self.frames = np.zeros((chain.shape[0], 12))
        self.centres = np.zeros((len(spheres), 3))

    @classmethod
    def from_arm(
        cls,
        arm,
        margin=0.0,
        samples=10000,
        rng_seed=0,
        max_spheres=6,
        always_fraction=0.95,
        mesh_spheres=8,
        tolerance=0.0,
    ):
        """The arm's collision shapes as spheres (inflated by ``margin``) and the frame pairs
        worth checking: not adjacent, in contact in some of ``samples`` random configurations
        and in fewer than ``always_fraction`` of them (MoveIt's setup assistant's rule). A mesh
        gets up to ``mesh_spheres`` spheres, fewer once each is within ``tolerance`` (m) of the
        hull or no cut brings them closer."""
        root = ET.fromstring(arm.urdf_text)
        dirs = list(getattr(arm, "mesh_dirs", []))
        chain_index = {name: k for k, name in enumerate(arm.joint_names)}
        below: dict[str, list] = {}
        for j in root.iter("joint"):
            below.setdefault(j.find("parent").get("link"), []).append(j)
        links, stack = {}, [(arm.base, 0, np.eye(4))]  # link -> (frame, pose in the frame)
        while stack:
            name, frame, T = stack.pop()
            links[name] = (frame, T)
            for j in below.get(name, []):
                child = j.find("child").get("link")
                if j.get("type") == "fixed":
                    stack.append((child, frame, T @ _origin(j)))
                elif chain_index.get(j.get("name")) == frame:
                    stack.append((child, frame + 1, np.eye(4)))
        rows = []
        for link in root.iter("link"):
            if link.get("name") not in links:
                continue
            frame, T = links[link.get("name")]
            for col in link.iter("collision"):
                got = _geometry_spheres(
                    col.find("geometry"), dirs, max_spheres, mesh_spheres, tolerance
                )
                if got is not None:
                    M = T @ _origin(col) @ got[0]
                    rows += [[frame, *(M[:3, :3] @ c + M[:3, 3]), r + margin] for c, r in got[1]]
        spheres = np.array(rows, float).reshape(-1, 5)
        spheres = spheres[np.argsort(spheres[:, 0], kind="stable")]  # by frame: a < b, fa <= fb
        fr = spheres[:, 0].astype(int)
        pairs = np.array(
            [
                (a, b)
                for a in range(len(fr))
                for b in range(a + 1, len(fr))
                if abs(fr[a] - fr[b]) > 1
            ],
            np.int64,
        ).reshape(-1, 2)
        # "Never" / "always": contact statistics of frame pairs over random configurations
        chain, F = pack_chain(arm), arm.dof + 1
        rng = np.random.default_rng(rng_seed)
        Q = rng.uniform(arm.lower, arm.upper, (int(samples), arm.dof))
        counts, last = np.zeros((F, F), np.int64), np.full((F, F), -1, np.int64)
        _contact_counts(
            chain, spheres, pairs, Q, np.zeros((F, 12)), np.zeros((len(fr), 3)), counts, last
        )
        disabled = {}
        used = sorted(set(fr.tolist()))
        for i, a in enumerate(used):
            for b in used[i + 1 :]:
                if b - a <= 1:
                    disabled[a, b] = "adjacent"
                elif counts[a, b] == 0:
                    disabled[a, b] = "never"
                elif counts[a, b] >= always_fraction * len(Q):
                    disabled[a, b] = "always"
        keep = [k for k, (a, b) in enumerate(pairs) if (fr[a], fr[b]) not in disabled]
        names = {name: frame for name, (frame, _) in links.items()}
        return cls(chain, spheres, pairs[keep].reshape(-1, 2), names, disabled)

    def with_obstacles(self, planes=(), boxes=()) -> "CollisionModel":
        """A copy that also keeps clear of planes (normal, offset: free where n.x > offset) and
        axis-aligned boxes (centre, half sizes), all in the base frame."""
        rows = [list(self.obstacles.reshape(-1, 7))]
        for normal, offset in planes:
            n = np.asarray(normal, float) / np.linalg.norm(normal)
            rows.append([[PLANE, *n, float(offset), 0.0, 0.0]])
        for centre, half in boxes:
            rows.append([[BOX, *np.asarray(centre, float), *np.asarray(half, float)]])
        obstacles = np.array([r for group in rows for r in group], float).reshape(-1, 7)
        return CollisionModel(
            self.chain, self.spheres, self.pairs, self.links, self.disabled, obstacles
        )

    @property
    def enabled_frame_pairs(self) -> set[tuple[int, int]]:
        fr = self.spheres[:, 0].astype(int)
        return {(int(fr[a]), int(fr[b])) for a, b in self.pairs}

    def clearance(self, q) -> float:
        q = np.ascontiguousarray(q, dtype=float)
        return clearance(
            self.chain, self.spheres, self.pairs, self.obstacles, q, self.frames, self.centres
        )

    def in_collision(self, q) -> bool:
        return self.clearance(q) < 0.0

    def clearance_batch(self, Q) -> np.ndarray:
        Q = np.ascontiguousarray(np.atleast_2d(Q), dtype=float)
        out = np.empty(len(Q))
        clearance_batch(
            self.chain, self.spheres, self.pairs, self.obstacles, Q, self.frames, self.centres, out
        )
        return out

    def in_collision_batch(self, Q) -> np.ndarray:
        return self.clearance_batch(Q) < 0.0

    def describe(self) -> dict:
        kinds = list(self.disabled.values())
        return {
            "spheres": len(self.spheres),
            "sphere_pairs": len(self.pairs),
            "frame_pairs_enabled": len(self.enabled_frame_pairs),
            "disabled": {k: kinds.count(k) for k in ("adjacent", "never", "always")},
            "obstacles": len(self.obstacles),
        }
