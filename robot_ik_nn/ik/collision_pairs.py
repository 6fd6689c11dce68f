"""Which link pairs the collision check looks at, as MoveIt's setup assistant chooses them and as
an SRDF's ``disable_collisions`` lists them.

Two links on one frame (rigidly joined) are never checked; of the others, pairs one joint apart
("Adjacent"), never within the margin over ``samples`` random configurations ("Never") and
within it in at least ``always_fraction`` of them ("Always") are left out. :func:`srdf_text`
writes that list; an SRDF read by :func:`read_srdf` (yours, or MoveIt's own for the arm)
replaces it. Also here: which chain frame carries each link of the URDF (links behind a joint
outside the chain hang there with that joint held as PyBullet loads it).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from numba import njit

from . import convex
from .convex import FRAME
from .forward import link_frames
from .shapes import origin


def left_out(chain, shapes, verts, candidates, owners, frame_of, arm, margin, samples, rng_seed,
             always_fraction) -> dict[tuple[str, str], str]:
    """{(link a, link b): why} for the link pairs not worth checking: one joint apart, or never
    (or nearly always) within ``margin`` over ``samples`` random joint sets of ``arm``.
    ``candidates``: the shape index pairs on different frames; ``owners``: each shape's link."""
    rng = np.random.default_rng(rng_seed)
    Q = rng.uniform(_low(arm), _high(arm), (int(samples), arm.dof))
    keys = sorted({link_key(owners[a], owners[b]) for a, b in candidates})
    index = {key: g for g, key in enumerate(keys)}
    group = np.array([index[link_key(owners[a], owners[b])] for a, b in candidates], np.int64)
    counts = np.zeros(len(keys), np.int64)
    _near_counts(
        chain,
        shapes,
        verts,
        np.array(candidates, float).reshape(-1, 2),
        group,
        Q,
        float(margin),
        np.zeros((chain.shape[0], 12)),
        np.zeros((len(shapes), 12)),
        np.zeros((4, 3)),
        counts,
    )
    disabled = {}
    for key, c in zip(keys, counts.tolist()):
        if abs(frame_of[key[0]] - frame_of[key[1]]) == 1:
            disabled[key] = "Adjacent"
        elif c == 0:
            disabled[key] = "Never"
        elif c >= always_fraction * len(Q):
            disabled[key] = "Always"
    return disabled


@njit(cache=True)
def _near_counts(chain, shapes, verts, pairs, group, Q, within, frames, poses, W, counts):
    """counts[g]: in how many rows of ``Q`` some shape pair of group g (a link pair) comes
    closer than ``within``."""
    last = np.full(counts.shape[0], -1)
    for s in range(Q.shape[0]):
        link_frames(chain, Q[s], frames)
        for i in range(shapes.shape[0]):
            convex.place(shapes[i], frames[int(shapes[i, FRAME])], poses[i])
        for k in range(pairs.shape[0]):
            a, b, g = int(pairs[k, 0]), int(pairs[k, 1]), group[k]
            if (
                last[g] == s
                or convex.bound_gap(shapes[a], poses[a], shapes[b], poses[b]) >= within
            ):
                continue
            if convex.capsule_gap(shapes[a], poses[a], shapes[b], poses[b]) >= within:
                continue
            if convex.gap(shapes[a], poses[a], shapes[b], poses[b], verts, within, W) < within:
                counts[g] += 1
                last[g] = s



def link_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def _low(arm):
    return np.where(np.isfinite(arm.lower), arm.lower, -math.pi)


def _high(arm):
    return np.where(np.isfinite(arm.upper), arm.upper, math.pi)


def frames_of_links(root, arm) -> dict[str, tuple[int, np.ndarray]]:
    """link name -> (chain frame, its pose in that frame), for the base and every link below
    it; a movable joint outside the chain is held at 0, or at its limit nearest 0."""
    chain_index = {name: k for k, name in enumerate(arm.joint_names)}
    below: dict[str, list] = {}
    for j in root.iter("joint"):
        below.setdefault(j.find("parent").get("link"), []).append(j)
    links, stack = {}, [(arm.base, 0, np.eye(4))]
    while stack:
        name, frame, T = stack.pop()
        links[name] = (frame, T)
        for j in below.get(name, []):
            child = j.find("child").get("link")
            if chain_index.get(j.get("name")) == frame and j.get("type") != "fixed":
                stack.append((child, frame + 1, np.eye(4)))
            else:
                stack.append((child, frame, T @ origin(j) @ _held(j)))
    return links


def _held(joint) -> np.ndarray:
    """The motion of a joint outside the chain at the value PyBullet loads it with (0, kept
    within its limits)."""
    M = np.eye(4)
    if joint.get("type") in ("fixed", None, "floating", "planar"):
        return M
    limit = joint.find("limit")
    value = 0.0
    if limit is not None and joint.get("type") != "continuous":
        value = min(max(0.0, float(limit.get("lower", 0))), float(limit.get("upper", 0)))
    axis_el = joint.find("axis")
    axis = np.array((axis_el.get("xyz") if axis_el is not None else "1 0 0").split(), float)
    axis = axis / np.linalg.norm(axis)
    if joint.get("type") == "prismatic":
        M[:3, 3] = axis * value
    else:
        K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        M[:3, :3] = np.eye(3) + math.sin(value) * K + (1 - math.cos(value)) * K @ K
    return M


def read_srdf(srdf, links: set[str]) -> dict[tuple[str, str], str]:
    """An SRDF's ``disable_collisions`` as {(link a, link b): reason}; a path or the text. A
    link the arm does not have is named."""
    text = str(srdf)
    if not text.lstrip().startswith("<"):
        path = Path(text)
        try:
            text = path.read_text()
        except OSError as err:
            raise ValueError(f"cannot read the collision pairs file {path}: {err}") from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise ValueError(f"the collision pairs file is not XML: {err}") from None
    out = {}
    for el in root.iter("disable_collisions"):
        a, b = el.get("link1"), el.get("link2")
        for link in (a, b):
            if link not in links:
                raise ValueError(
                    f"disable_collisions names link {link!r}, which this arm does not have "
                    f"below its base; links: {', '.join(sorted(links))}"
                )
        out[link_key(a, b)] = el.get("reason", "User")
    return out



def srdf_text(disabled: dict, robot: str = "robot") -> str:
    """Pairs left out, as an SRDF's ``disable_collisions`` (MoveIt reads it too)."""
    lines = ['<?xml version="1.0"?>', f'<robot name="{robot}">']
    for (a, b), why in sorted(disabled.items()):
        lines.append(f'  <disable_collisions link1="{a}" link2="{b}" reason="{why}"/>')
    return "\n".join(lines + ["</robot>", ""])
