"""Self-collision and obstacle checks for the compiled kernel: the URDF's own collision shapes,
exact distances between them (convex.py), no allocation per pair.

- Frames: frame 0 is the base (before joint 0's origin), frame k + 1 the frame after joint k's
  motion, i.e. joint k's child link; links hung below a link by fixed joints share its frame.
  Links behind a movable joint that is not in the chain (a gripper's fingers) hang there with
  that joint held at 0 (or at its nearest limit), as PyBullet loads them.
- Shapes: every ``<collision>`` as it is (sphere, box, cylinder, capsule), a mesh as the convex
  hull of its vertices (what PyBullet collides); shapes.py reads them.
- Pairs, as MoveIt's setup assistant writes an SRDF's ``disable_collisions``: collision_pairs.py
  picks them (or reads them from an SRDF given to ``from_arm``); ``to_srdf()`` writes them.
- ``margin`` (m) is the distance kept between surfaces, self and obstacles alike: an answer is
  refused when two checked shapes come closer than it.
- Packed for the kernel (``pack``): counts (shapes, vertices, pairs, obstacles), the margin,
  then shapes (S, ROW), hull vertices (V, 3), pairs (P, 2) shape indices, obstacles (O, ROW)
  (convex.py's rows: boxes, planes). Obstacles are checked against shapes on frames >= 1 only
  (the base stands on the table).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from numba import njit

from . import convex
from .collision_pairs import frames_of_links, left_out, link_key, read_srdf, srdf_text
from .convex import BOX, FRAME, KIND, PAR, PLANE, POS, RADIUS, ROT, ROW
from .forward import link_frames
from .layout import pack_chain
from .shapes import box_corners, geometry_shapes, origin, with_bounds

HEAD = 5  # the packed model's counts and margin


# -- compiled -------------------------------------------------------------------------------------
@njit(cache=True)
def unpack(col):
    """(shapes, vertices, pairs, obstacles, margin) views of a packed model (``pack``)."""
    if col.shape[0] == 0:
        e = col[:0]
        return e.reshape((0, ROW)), e.reshape((0, 3)), e.reshape((0, 2)), e.reshape((0, ROW)), 0.0
    s, v, p, o = int(col[0]), int(col[1]), int(col[2]), int(col[3])
    a = HEAD + ROW * s
    b = a + 3 * v
    c = b + 2 * p
    return (
        col[HEAD:a].reshape((s, ROW)),
        col[a:b].reshape((v, 3)),
        col[b:c].reshape((p, 2)),
        col[c : c + ROW * o].reshape((o, ROW)),
        col[4],
    )


@njit(cache=True)
def checks(col):
    """Whether a packed model checks anything (pairs or obstacles)."""
    return col.shape[0] > 0 and (col[2] > 0 or col[3] > 0)


@njit(cache=True)
def clearance(chain, shapes, verts, pairs, obstacles, q, frames, poses, W, stop):
    """The smallest gap (m) between checked shapes, and between obstacles and shapes, at ``q``
    (negative: they overlap; +inf when nothing is checked). With ``stop`` >= 0 it returns as
    soon as a gap below ``stop`` is found, and a value >= ``stop`` only when there is none."""
    link_frames(chain, q, frames)
    for i in range(shapes.shape[0]):
        convex.place(shapes[i], frames[int(shapes[i, FRAME])], poses[i])
    best, limit = np.inf, stop
    for k in range(pairs.shape[0]):
        a, b = int(pairs[k, 0]), int(pairs[k, 1])
        bound = convex.bound_gap(shapes[a], poses[a], shapes[b], poses[b])
        if bound >= best or (stop >= 0.0 and bound >= stop):
            continue
        bound = convex.capsule_gap(shapes[a], poses[a], shapes[b], poses[b])
        if bound >= best or (stop >= 0.0 and bound >= stop):
            continue
        g = convex.gap(shapes[a], poses[a], shapes[b], poses[b], verts, limit, W)
        best = min(best, g)
        if stop >= 0.0 and best < stop:
            return best
    for o in range(obstacles.shape[0]):
        ob = obstacles[o]
        pose = ob[ROT : ROT + 12]  # rotation then position: the obstacle's pose in the base
        for i in range(shapes.shape[0]):
            if shapes[i, FRAME] < 1.0:
                continue
            if ob[KIND] == PLANE:
                bound = convex.plane_bound(ob, shapes[i], poses[i])
            else:
                bound = convex.capsule_gap(ob, pose, shapes[i], poses[i])
            if bound >= best or (stop >= 0.0 and bound >= stop):
                continue
            if ob[KIND] == PLANE:
                g = convex.plane_gap(ob, shapes[i], poses[i], verts)
            else:
                g = convex.gap(ob, pose, shapes[i], poses[i], verts, limit, W)
            best = min(best, g)
            if stop >= 0.0 and best < stop:
                return best
    return best


@njit(cache=True)
def free(chain, col, q):
    """Whether ``q`` keeps every checked pair and obstacle at least the margin apart (its own
    scratch: this runs once per candidate answer, not per iteration)."""
    shapes, verts, pairs, obstacles, margin = unpack(col)
    frames, poses = np.empty((chain.shape[0], 12)), np.empty((shapes.shape[0], 12))
    W = np.empty((4, 3))
    g = clearance(chain, shapes, verts, pairs, obstacles, q, frames, poses, W, margin)
    return g >= margin


@njit(cache=True)
def clearance_batch(chain, shapes, verts, pairs, obstacles, Q, frames, poses, W, stop, out):
    for i in range(Q.shape[0]):
        out[i] = clearance(chain, shapes, verts, pairs, obstacles, Q[i], frames, poses, W, stop)


# -- the model ------------------------------------------------------------------------------------
_MODELS: dict = {}


def for_arm(arm, margin: float = 0.0, pairs_file: str = "") -> "CollisionModel":
    """``CollisionModel.from_arm``, built once per arm, margin and pairs file (the random
    sampling of pairs takes a second or so on a 7-joint arm), with scratch of its own."""
    stamp = Path(pairs_file).stat().st_mtime_ns if pairs_file else 0
    key = (arm.fingerprint, hash(arm.urdf_text), tuple(getattr(arm, "mesh_dirs", [])), margin)
    key += (pairs_file, stamp)
    if key not in _MODELS:
        _MODELS[key] = CollisionModel.from_arm(arm, margin, srdf=pairs_file or None)
        _MODELS[key].pairs_file = pairs_file
    return _MODELS[key].copy()


class CollisionModel:
    """The arm's collision shapes per chain frame, the pairs checked, obstacles and the margin,
    packed for the kernel."""

    def __init__(
        self, chain, shapes, verts, pairs, links, shape_links, disabled, margin=0.0, obstacles=None
    ):
        self.chain, self.shapes, self.verts, self.pairs = chain, shapes, verts, pairs
        self.links = links  # link name -> frame
        self.shape_links = shape_links  # the link of each shape
        self.disabled = disabled  # (link a, link b), sorted -> "Adjacent" | "Never" | "Always" ...
        self.margin = float(margin)
        self.pairs_file = ""  # the SRDF the pairs came from ("" when sampled)
        self.obstacles = np.zeros((0, ROW)) if obstacles is None else obstacles
        self.frames = np.zeros((chain.shape[0], 12))
        self._poses = np.zeros((len(shapes), 12))
        self._W = np.zeros((4, 3))
        self._pairs = pairs.astype(float)
        self._packed = self.pack()

    @classmethod
    def from_arm(cls, arm, margin=0.0, samples=10000, rng_seed=0, always_fraction=0.95, srdf=None):
        """The arm's collision shapes and the link pairs worth checking: not on one frame, not
        one joint apart, within ``margin`` in some of ``samples`` random configurations and in
        fewer than ``always_fraction`` of them. ``srdf`` (a path or the text of an SRDF):
        its ``disable_collisions`` are the pairs left out instead."""
        root = ET.fromstring(arm.urdf_text)
        links = frames_of_links(root, arm)
        rows, hulls, owners, start = [], [], [], 0
        dirs = list(getattr(arm, "mesh_dirs", []))
        for link in root.iter("link"):
            if link.get("name") not in links:
                continue
            frame, T = links[link.get("name")]
            for col in link.iter("collision"):
                M = T @ origin(col)
                for row, v in geometry_shapes(col.find("geometry"), dirs):
                    row[FRAME], row[ROT : ROT + 9] = frame, M[:3, :3].ravel()
                    row[POS : POS + 3] = M[:3, 3]
                    if v is not None:  # the hull's rows: corners, then their adjacency
                        row[PAR] += start
                        row[PAR + 2] += start
                        start += len(v)
                        hulls.append(v)
                    rows.append(row)
                    owners.append(link.get("name"))
        shapes = np.array(rows, float).reshape(-1, ROW)
        verts = np.concatenate(hulls) if hulls else np.zeros((0, 3))
        chain = pack_chain(arm)
        frame_of = {name: f for name, (f, _) in links.items()}
        candidates = [
            (a, b)
            for a in range(len(owners))
            for b in range(a + 1, len(owners))
            if frame_of[owners[a]] != frame_of[owners[b]]
        ]
        pairs_all = np.array(candidates, np.int64).reshape(-1, 2)
        if srdf is not None:
            disabled = read_srdf(srdf, set(frame_of))
        else:
            disabled = left_out(chain, shapes, verts, candidates, owners, frame_of, arm, margin,
                                samples, rng_seed, always_fraction)
        keep = [
            k
            for k, (a, b) in enumerate(candidates)
            if link_key(owners[a], owners[b]) not in disabled
        ]
        pairs = pairs_all[keep].reshape(-1, 2)
        return cls(chain, shapes, verts, pairs, frame_of, owners, disabled, margin)

    def _with(self, **changes) -> "CollisionModel":
        kw = dict(
            chain=self.chain,
            shapes=self.shapes,
            verts=self.verts,
            pairs=self.pairs,
            links=self.links,
            shape_links=self.shape_links,
            disabled=self.disabled,
            margin=self.margin,
            obstacles=self.obstacles,
        )
        kw.update(changes)
        model = CollisionModel(**kw)
        model.pairs_file = self.pairs_file
        return model

    def copy(self) -> "CollisionModel":
        """The same model with scratch buffers of its own (for a solver in another thread)."""
        return self._with()

    def with_obstacles_of(self, other: "CollisionModel") -> "CollisionModel":
        """This model with ``other``'s obstacles instead of its own."""
        return self._with(obstacles=other.obstacles)

    def with_obstacles(self, planes=(), boxes=()) -> "CollisionModel":
        """A copy that also keeps clear of planes (normal, offset: free where n.x > offset) and
        axis-aligned boxes (centre, half sizes), all in the base frame."""
        rows = [self.obstacles]
        for k, plane in enumerate(planes):
            normal, offset = _pair(plane, f"planes[{k}]", "(normal, offset)")
            n = _numbers(normal, 3, f"planes[{k}]'s normal")
            offset = _numbers(offset, 1, f"planes[{k}]'s offset")
            if (
                not np.isfinite(offset[0])
                or not np.all(np.isfinite(n))
                or np.linalg.norm(n) < 1e-9
            ):
                raise ValueError(
                    f"planes[{k}] needs a finite offset and a normal of some length; got {plane!r}"
                )
            row = np.zeros((1, ROW))
            row[0, FRAME], row[0, KIND] = -1, PLANE
            row[0, PAR : PAR + 3], row[0, RADIUS] = n / np.linalg.norm(n), offset[0]
            rows.append(row)
        for k, box in enumerate(boxes):
            centre, half = _pair(box, f"boxes[{k}]", "(centre, half sizes)")
            centre = _numbers(centre, 3, f"boxes[{k}]'s centre")
            half = _numbers(half, 3, f"boxes[{k}]'s half sizes")
            if not np.all(np.isfinite(centre)) or not np.all((half > 0) & np.isfinite(half)):
                raise ValueError(
                    f"boxes[{k}] needs a finite centre and half sizes above 0; got {box!r}"
                )
            row = np.zeros((1, ROW))
            row[0, FRAME], row[0, KIND] = -1, BOX
            row[0, ROT : ROT + 9], row[0, POS : POS + 3] = np.eye(3).ravel(), centre
            row[0, PAR : PAR + 3] = half
            row[0] = with_bounds(row[0], box_corners(half))
            rows.append(row)
        return self._with(obstacles=np.concatenate(rows).reshape(-1, ROW))

    def pack(self) -> np.ndarray:
        """The model as the kernel reads it (``unpack``)."""
        head = [len(self.shapes), len(self.verts), len(self.pairs), len(self.obstacles)]
        return np.concatenate(
            [
                np.array(head + [self.margin], float),
                self.shapes.ravel(),
                self.verts.ravel(),
                self.pairs.astype(float).ravel(),
                self.obstacles.ravel(),
            ]
        )

    @property
    def enabled_link_pairs(self) -> set[tuple[str, str]]:
        return {link_key(self.shape_links[a], self.shape_links[b]) for a, b in self.pairs}

    def clearance(self, q) -> float:
        """The smallest gap (m) between checked shapes at ``q``; negative when two overlap."""
        return float(self.clearance_batch(np.asarray(q, dtype=float)[None])[0])

    def in_collision(self, q) -> bool:
        """Whether two checked shapes come closer than the margin at ``q``."""
        q = np.ascontiguousarray(q, dtype=float)
        return not free(self.chain, self._packed, q)

    def clearance_batch(self, Q, stop: float = -1.0) -> np.ndarray:
        Q = np.ascontiguousarray(np.atleast_2d(Q), dtype=float)
        out = np.empty(len(Q))
        clearance_batch(
            self.chain,
            self.shapes,
            self.verts,
            self._pairs,
            self.obstacles,
            Q,
            self.frames,
            self._poses,
            self._W,
            stop,
            out,
        )
        return out

    def in_collision_batch(self, Q) -> np.ndarray:
        return self.clearance_batch(Q, stop=self.margin) < self.margin

    def to_srdf(self, robot: str = "robot") -> str:
        """The pairs left out, as an SRDF's ``disable_collisions`` (MoveIt reads it too)."""
        return srdf_text(self.disabled, robot)

    def describe(self) -> dict:
        kinds = list(self.disabled.values())
        return {
            "shapes": len(self.shapes),
            "hull_vertices": len(self.verts),
            "shape_pairs": len(self.pairs),
            "link_pairs_checked": len(self.enabled_link_pairs),
            "disabled": {k: kinds.count(k) for k in sorted(set(kinds))},
            "obstacles": len(self.obstacles),
            "margin_m": self.margin,
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
