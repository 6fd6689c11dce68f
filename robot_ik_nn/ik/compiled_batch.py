"""``Solver.solve_batch``: a batch of targets in one compiled call over all cores."""

from __future__ import annotations

import time

import numpy as np
from numba import get_num_threads

from . import layout, network_backends, policy
from .inputs import joints, rows
from .reasons import batch_reasons
from .results import BatchResult


def solve_batch(solver, positions, quaternions, current, warm) -> BatchResult:
    """See ``Solver.solve_batch``: the inputs checked, the network's seeds for the backends
    outside the kernel, one compiled call, and each answer's words."""
    started = time.perf_counter()
    n = solver.arm.dof
    P = rows(positions, (3,), "positions")  # (B, 3); one target (3,) is a batch of one
    B = len(P)
    has_quat = quaternions is not None
    Q = rows(quaternions, (4,), "quaternions", B) if has_quat else np.zeros((B, 4))
    has_cur = current is not None
    cur = joints(current, (B, n), "current") if has_cur else np.zeros((B, n))
    W = joints(warm, (B, -1, n), "warm") if warm is not None else np.zeros((B, 0, n))
    seeds_, has_seed = np.zeros((B, solver.heads, n)), False
    if solver._outside and B > 0:  # the layers outside the kernel
        seeds_, has_seed = network_backends.batch_seeds(
            solver, P, Q if has_quat else None, cur if has_cur else None
        )
    q, info = np.empty((B, n)), np.empty((B, 5))
    policy.solve_batch(
        solver._model,
        solver._netw,
        P,
        Q,
        has_quat,
        W,
        cur,
        has_cur,
        seeds_,
        has_seed,
        chunks(B),
        layout.scratch_size(n, solver.heads, solver.network.width if solver.network else 1),
        q,
        info,
    )
    codes = info[:, 0].astype(np.int8)
    collides = np.zeros(B, bool)
    if solver.checking:
        for i in np.flatnonzero(codes == 1):
            collides[i] = solver._collides(q[i])
    context = solver._reason_context()
    reasons = batch_reasons(
        codes, info[:, 1], info[:, 2], info[:, 3], P, Q if has_quat else None, context, collides
    )
    return BatchResult(
        q,
        codes,
        info[:, 2].copy(),
        info[:, 3].copy(),
        reasons,
        time.perf_counter() - started,
        info[:, 4].astype(np.int64),
        collides,
    )


def chunks(batch: int) -> int:
    """Slices of a batch for the kernel's threads: several per thread, so none waits long."""
    return max(1, min(batch, 8 * get_num_threads()))
