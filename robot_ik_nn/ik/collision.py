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
  corner, the part reaching farthest outside the hull cut next (spheres.py).
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
import xml.etree.ElementTree as ET

import numpy as np
from numba import njit

from .layout import A_, AK_, B_, C_, P_, PRISMATIC, TYPE, pack_chain
from .spheres import _geometry_spheres, _origin

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

    def copy(self) -> "CollisionModel":
        """The same model with scratch buffers of its own (for a solver in another thread)."""
        return CollisionModel(
            self.chain, self.spheres, self.pairs, self.links, self.disabled, self.obstacles
        )

    def with_obstacles(self, planes=(), boxes=()) -> "CollisionModel":
        """A copy that also keeps clear of planes (normal, offset: free where n.x > offset) and
        axis-aligned boxes (centre, half sizes), all in the base frame."""
        rows = [list(self.obstacles.reshape(-1, 7))]
        for k, plane in enumerate(planes):
            normal, offset = _pair(plane, f"planes[{k}]", "(normal, offset)")
            n = _numbers(normal, 3, f"planes[{k}]'s normal")
            offset = _numbers(offset, 1, f"planes[{k}]'s offset")
            if not np.isfinite(offset[0]) or np.linalg.norm(n) < 1e-9:
                raise ValueError(
                    f"planes[{k}] needs a finite offset and a normal of some length; got "
                    f"{plane!r}"
                )
            rows.append([[PLANE, *(n / np.linalg.norm(n)), offset[0], 0.0, 0.0]])
        for k, box in enumerate(boxes):
            centre, half = _pair(box, f"boxes[{k}]", "(centre, half sizes)")
            centre = _numbers(centre, 3, f"boxes[{k}]'s centre")
            half = _numbers(half, 3, f"boxes[{k}]'s half sizes")
            if not np.all(np.isfinite(centre)) or not np.all((half > 0) & np.isfinite(half)):
                raise ValueError(
                    f"boxes[{k}] needs a finite centre and half sizes above 0; got {box!r}"
                )
            rows.append([[BOX, *centre, *half]])
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


def _pair(value, name: str, form: str):
    try:
        first, second = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair {form}; got {value!r}") from None
    return first, second


def _numbers(value, size: int, name: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (size,):
        raise ValueError(f"{name} must be {size} number{'s' if size > 1 else ''}; got {value!r}")
    return a
