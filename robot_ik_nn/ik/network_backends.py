"""The network's candidates computed outside the kernel: the ``numpy``, ``onnx`` and ``torch``
backends (the ``compiled`` backend runs the network inside the kernel, seeds.net_forward). The
kernel takes them as ready seeds; a target the network cannot take (non-finite numbers, a
quaternion of norm 0, a position alone to a pose network) gets none, and the kernel's one
validation rejects it or solves it without them, as on every other path.
"""

from __future__ import annotations

import numpy as np

from ..arm.rotations import quaternion_to_matrix
from . import network_forward


def candidates(solver, P, R=None, current=None) -> np.ndarray:
    """The network's candidates for a batch (B, heads, dof), before any refinement."""
    if solver._torch is not None:
        return _torch_candidates(solver._torch, P, R, current)
    x, psi = network_forward.features(solver.network, P, R, current)
    if solver._onnx is not None:
        raw = solver._onnx.run(x)
    else:
        raw = network_forward.mlp_numpy(solver.network, x)
    return network_forward.angles(solver.network, raw, psi)


def one_seed(solver, pt, quat, current) -> bool:
    """One target's candidates into ``solver._seed``; False when the network cannot take it."""
    if quat is None and solver.mode == "pose":
        return False  # the kernel rejects it with the reason
    if not (np.all(np.isfinite(pt)) and (quat is None or np.all(np.isfinite(quat)))):
        return False
    R = None
    if quat is not None:
        if np.linalg.norm(quat) == 0:
            return False
        R = quaternion_to_matrix(quat)[None]
    now = None if current is None else current[None]
    solver._seed[:] = candidates(solver, pt[None], R, now)[0]
    return True


def batch_seeds(solver, P, Q, current) -> tuple[np.ndarray, bool]:
    """A batch's candidates (B, heads, dof) and whether there are any: rows the network cannot
    take get it a harmless stand-in, and the kernel rejects them with the reason."""
    if Q is None and solver.mode == "pose":
        return np.zeros((len(P), solver.heads, solver.arm.dof)), False
    ok = _acceptable_for_network(P, Q)
    R = None
    if Q is not None:
        R = quaternion_to_matrix(np.where(ok[:, None], Q, [0, 0, 0, 1.0]))
    found = candidates(solver, np.where(ok[:, None], P, 0.0), R, current)
    return np.ascontiguousarray(found), True


def _acceptable_for_network(P, Q) -> np.ndarray:
    """Rows whose numbers the network can take (the kernel rejects the others with a reason)."""
    ok = np.all(np.isfinite(P), axis=1)
    if Q is not None:
        ok &= np.all(np.isfinite(Q), axis=1) & (np.linalg.norm(np.nan_to_num(Q), axis=1) > 0)
    return ok


def _torch_candidates(net, P, R, current):
    import torch

    with torch.no_grad():
        t = {"dtype": torch.float32}
        q = net.candidates(
            torch.as_tensor(P, **t),
            None if R is None else torch.as_tensor(R, **t),
            None if current is None else torch.as_tensor(current, **t),
        )
    return q.double().numpy()
