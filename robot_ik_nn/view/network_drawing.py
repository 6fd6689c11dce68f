"""The network drawn in 3-D: layers side by side, each neuron a point coloured like an infrared
camera by its incoming weights, the strongest connections as lines. numpy only (no torch, no
ROS): the learner node turns a drawing into RViz markers (nodes/network_markers.py), the page
into viser points and lines.

    drawing = draw([w.numpy() for w in weight_matrices])    # each (n_out, n_in), input first
    drawing.positions (N, 3), drawing.colors (N, 3) in 0..1, drawing.layer (N,)
    drawing.edges (E, 2) neuron indices, drawing.edge_colors (E, 3)

A neuron's heat is the L2 norm of its incoming weights (for the input layer, which has none:
of its outgoing weights), divided by the largest in its layer: the coldest are dark blue, then
red, yellow, and the hottest white.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# the infrared palette: (heat, r, g, b), linear between the stops
STOPS = np.array(
    [
        (0.00, 0.00, 0.00, 0.30),
        (0.35, 0.80, 0.00, 0.15),
        (0.70, 1.00, 0.80, 0.00),
        (1.00, 1.00, 1.00, 1.00),
    ]
)


def infrared(heat) -> np.ndarray:
    """Heat in 0..1 (clipped), any shape -> RGB in 0..1, shape + (3,)."""
    t = np.clip(np.asarray(heat, dtype=float), 0.0, 1.0)
    return np.stack([np.interp(t, STOPS[:, 0], STOPS[:, k]) for k in (1, 2, 3)], axis=-1)


@dataclass
class Drawing:
    positions: np.ndarray  # (N, 3) metres, layers along +x
    colors: np.ndarray  # (N, 3) RGB 0..1
    heat: np.ndarray  # (N,) 0..1
    layer: np.ndarray  # (N,) layer index of each neuron (0: the inputs)
    edges: np.ndarray  # (E, 2) neuron indices (from, to)
    edge_colors: np.ndarray  # (E, 3)
    edge_weights: np.ndarray  # (E,) the signed weights

    @property
    def sizes(self) -> list[int]:
        return np.bincount(self.layer).tolist()


def network_origin(reach: float) -> tuple[float, float, float]:
    """Where the drawing of an arm's network stands, in its base frame: beside the arm, to its
    left, clear of its reach (RViz's markers and the page's points alike)."""
    return (-0.45, -(1.2 * float(reach) + 0.25), 0.35)


def _layer_positions(n: int, x: float, pitch: float) -> np.ndarray:
    """n neurons on a square-ish grid in the y-z plane at ``x``, centred on the x axis."""
    cols = max(1, math.ceil(math.sqrt(n)))
    rows = math.ceil(n / cols)
    k = np.arange(n)
    y = (k % cols - (cols - 1) / 2) * pitch
    z = ((rows - 1) / 2 - k // cols) * pitch
    return np.stack([np.full(n, x), y, z], axis=1)


def draw(
    weights, *, spacing: float = 0.3, pitch: float = 0.025, top: int = 300, origin=(0, 0, 0)
) -> Drawing:
    """The drawing of a fully connected network from its weight matrices, each (n_out, n_in),
    the input layer's first; ``top`` connections (largest |weight|) become lines."""
    mats = [np.asarray(w, dtype=float) for w in weights]
    if not mats:
        raise ValueError("a network drawing needs at least one weight matrix")
    for a, b in zip(mats, mats[1:]):
        if b.shape[1] != a.shape[0]:
            raise ValueError(f"layer shapes do not chain: {a.shape} then {b.shape}")
    sizes = [mats[0].shape[1]] + [w.shape[0] for w in mats]
    strength = [np.linalg.norm(mats[0], axis=0)] + [np.linalg.norm(w, axis=1) for w in mats]
    heat = np.concatenate([s / s.max() if s.max() > 0 else s for s in strength])
    positions = np.concatenate(
        [_layer_positions(n, i * spacing, pitch) for i, n in enumerate(sizes)]
    ) + np.asarray(origin, dtype=float)
    layer = np.repeat(np.arange(len(sizes)), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])

    # the strongest connections over the whole network, coloured by |w| / max |w|
    flat = np.concatenate([np.abs(w).ravel() for w in mats])
    count = min(top, flat.size)
    best = np.argpartition(flat, flat.size - count)[flat.size - count :] if count else []
    offsets = np.concatenate([[0], np.cumsum([w.size for w in mats])])
    li = np.searchsorted(offsets, best, side="right") - 1
    local = best - offsets[li]
    n_in = np.array([w.shape[1] for w in mats])[li]
    frm = starts[li] + local % n_in
    to = starts[li + 1] + local // n_in
    signed = np.concatenate([w.ravel() for w in mats])[best]
    top_w = flat.max() if flat.size else 1.0
    return Drawing(
        positions=positions,
        colors=infrared(heat),
        heat=heat,
        layer=layer,
        edges=np.stack([frm, to], axis=1).astype(int),
        edge_colors=infrared(np.abs(signed) / (top_w or 1.0)),
        edge_weights=signed,
    )
