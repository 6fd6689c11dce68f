"""Ways through layers of answers along a path (the planners of path.py): answers walked on
target by target in one compiled call, the distinct ones of a layer, and the cheapest way
through the layers (dynamic programming: a step over ``max_step`` on any joint is forbidden, a
step costs its squared length). Pairs within a step are found by k-d trees, so a layer of
thousands stays cheap."""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from . import walk


def walk_samples(fast, P, Q, ks, q, max_step, tries=walk.WALK_NEAR_TRIES, before=None):
    """Rows ``q`` (S, dof) tracked through targets ``ks`` (walk.walk, with ``fast``'s arm and
    settings; ``tries`` seeds around the last answer where LM misses from it; ``before``: each
    row's answer to the target before ``ks``, where known): (len(ks), S, dof), NaN from where a
    sample ended."""
    ks = np.asarray(ks, dtype=np.int64)
    out = np.empty((len(ks), len(q), fast.arm.dof))
    if len(ks) and len(q):
        walk.walk(
            fast._model,
            *_targets(P, Q),
            ks,
            np.ascontiguousarray(q, dtype=float),
            float(max_step),
            fast._scratch,
            out,
            int(tries),
            np.ascontiguousarray(q if before is None else before, dtype=float),
        )
    return out


def polished(solver, P, Q, q):
    """``q`` (a row per target of ``P``, ``Q``) refined onto its targets down to ``solver``'s
    stopping error (walk.polish), as a new array."""
    q = np.array(q, dtype=float)
    walk.polish(solver._model, *_targets(P, Q), q, solver._scratch)
    return q


def _targets(P, Q):
    """The targets as the compiled calls take them: positions, quaternions (zeros for a
    position alone) and whether the quaternions count."""
    quats = np.zeros((len(P), 4)) if Q is None else np.ascontiguousarray(Q, dtype=float)
    return np.ascontiguousarray(P, dtype=float), quats, Q is not None


def finite(q):
    """The rows of ``q`` with no NaN (the samples that walked on)."""
    return q[np.all(np.isfinite(q), axis=1)]


def distinct(q, tolerance):
    """``q`` with at most one row in each cell of a grid ``tolerance`` wide (the first): rows
    closer than ``tolerance`` on every joint mostly share a cell."""
    if len(q) < 2:
        return q
    _, first = np.unique(np.floor(q / tolerance), axis=0, return_index=True)
    return q[np.sort(first)]


def begin(layer, start, max_step):
    """The answers of the first layer a way can begin at (within a step of the arm's joints
    ``start``), and each one's cost."""
    gap = np.abs(layer - start)
    reached = gap.max(axis=1) <= max_step
    return layer[reached], (gap[reached] ** 2).sum(axis=1)


def links(layer, prev, cost, max_step):
    """The cheapest way on to each answer of ``layer`` from the layer before (``prev``, its
    ways' costs ``cost``). Returns the answers reached (indices), each one's parent in ``prev``
    and cost."""
    none = np.zeros(0, int)
    if not len(layer) or not len(prev):
        return none, none, np.zeros(0)
    pairs = cKDTree(layer).sparse_distance_matrix(
        cKDTree(prev), max_step, p=np.inf, output_type="ndarray"
    )
    parent, total = np.empty(len(layer), np.int64), np.empty(len(layer))
    _cheapest(  # one compiled signature: contiguous float rows, int64 pairs
        np.ascontiguousarray(layer, dtype=float),
        np.ascontiguousarray(prev, dtype=float),
        np.ascontiguousarray(cost, dtype=float),
        np.ascontiguousarray(pairs["i"], dtype=np.int64),
        np.ascontiguousarray(pairs["j"], dtype=np.int64),
        parent,
        total,
    )
    kept = np.flatnonzero(parent >= 0)
    return kept, parent[kept], total[kept]


@njit(cache=True)
def _cheapest(layer, prev, cost, new, old, parent, total):
    """For each row of ``layer``, the pair (``new``, ``old``: indices into ``layer`` and
    ``prev``, rows within a step) whose way costs least: ``cost`` of the row before plus the
    squared step (the first of equal ones); ``parent`` -1 where no pair reaches a row. In one
    compiled pass: numpy's sort of every pair took most of a plan's linking."""
    parent[:] = -1
    total[:] = np.inf
    for p in range(new.shape[0]):
        i, j = new[p], old[p]
        t = cost[j]
        for k in range(layer.shape[1]):
            d = layer[i, k] - prev[j, k]
            t += d * d
        if t < total[i]:
            total[i], parent[i] = t, j


def way_back(layers, parents, cost) -> np.ndarray | None:
    """The cheapest way, followed back from its last answer through the parents (None when
    no way begins: a path of one target whose answers all lie over a step from the start)."""
    if not len(cost):
        return None
    j = int(np.argmin(cost))
    q = np.empty((len(layers), layers[0].shape[1]))
    for k in range(len(layers) - 1, -1, -1):
        q[k] = layers[k][j]
        if k > 0:
            j = parents[k - 1][j]
    return q
