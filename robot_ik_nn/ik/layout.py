"""How the compiled kernel sees an arm, its settings and its network: a few flat float64 arrays
built once per solver (one argument each across the Python/compiled boundary), and one scratch
buffer per thread seen through views.

- the chain (dof + 1, ROW): a row per movable joint (origin rotation A, then A K and A K^2 for
  the Rodrigues form of the joint's motion, origin translation, axis, A axis, type, limits less
  the margin) and a last row for the tip offset;
- cfg: the settings (settings.py) and the reach bound;
- the model buffer: a header, the chain, cfg, the network's meta layout (network_forward.py)
  and sizes, and the collision model (collision.py), if any.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .network_forward import NM_POSE

# chain row layout
A_, B_, C_, P_, K_, AK_, TYPE, LO, HI, ROW = 0, 9, 18, 27, 30, 33, 36, 37, 38, 40
REVOLUTE, CONTINUOUS, PRISMATIC = 0.0, 1.0, 2.0
# cfg layout
(
    POS_TOL,
    ROT_TOL,
    ROT_W,
    ITERS,
    RESTARTS,
    RESTART_ITERS,
    WARM,
    STOP,
    OX,
    OY,
    OZ,
    REACH,
    QTOL,
    NEEDS_ROT,
    USE_NET,
    FREE,
    FAR_RESTARTS,
    TOO_FAR,
    FAR_ITERS,
    FAR_POLISH,
    FAR_PATIENCE,
    RNG_LO,
    RNG_HI,
    TRACK_LIMITS,
    TRACK_SEARCH,
    CFG,
) = range(26)
TWO_PI = 2.0 * math.pi


def _skew(k):
    return np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]], dtype=float)


def pack_chain(arm, margin: float = 0.0) -> np.ndarray:
    """The arm as the kernel reads it; limited joints keep ``margin`` from their limits."""
    chain = np.zeros((arm.dof + 1, ROW))
    for i, j in enumerate(arm.joints):
        R, K = j.origin[:3, :3], _skew(j.axis)
        moving = j.type != "prismatic"
        chain[i, A_ : A_ + 9] = R.ravel()
        chain[i, B_ : B_ + 9] = (R @ K).ravel() if moving else 0.0
        chain[i, C_ : C_ + 9] = (R @ K @ K).ravel() if moving else 0.0
        chain[i, P_ : P_ + 3] = j.origin[:3, 3]
        chain[i, K_ : K_ + 3] = j.axis
        chain[i, AK_ : AK_ + 3] = R @ j.axis
        chain[i, TYPE] = {"revolute": REVOLUTE, "continuous": CONTINUOUS, "prismatic": PRISMATIC}[
            j.type
        ]
        keep = 0.0 if j.type == "continuous" else margin
        chain[i, LO], chain[i, HI] = j.lower + keep, j.upper - keep
        if chain[i, LO] > chain[i, HI]:
            raise ValueError(f"margin {margin} leaves joint '{j.name}' no room inside its limits")
    chain[-1, A_ : A_ + 9] = arm.tip_offset[:3, :3].ravel()
    chain[-1, P_ : P_ + 3] = arm.tip_offset[:3, 3]
    return chain


def pack_cfg(settings, arm, needs_orientation: bool, use_network: bool) -> np.ndarray:
    cfg = np.zeros(CFG)
    s = settings
    cfg[[POS_TOL, ROT_TOL, ROT_W, ITERS, RESTARTS, RESTART_ITERS, WARM]] = (
        s.pos_tol,
        s.rot_tol,
        s.rot_weight,
        s.iterations,
        s.restarts,
        s.restart_iterations,
        s.warm_radius,
    )
    cfg[STOP] = (s.stop_fraction * s.pos_tol) ** 2
    cfg[OX : OZ + 1] = arm.joints[0].origin[:3, 3]
    cfg[REACH] = arm.reach + s.pos_tol  # beyond it nothing is within tolerance
    cfg[TOO_FAR] = s.reach_margin * arm.reach
    cfg[QTOL] = s.quat_tolerance
    cfg[NEEDS_ROT] = needs_orientation
    cfg[USE_NET] = use_network
    cfg[FREE] = "xyz".find(s.free_axis) + 1 if s.free_axis else 0  # 0 none, 1 x, 2 y, 3 z
    cfg[FAR_RESTARTS], cfg[FAR_ITERS] = s.far_restarts, s.far_iterations
    cfg[FAR_POLISH], cfg[FAR_PATIENCE] = s.far_polish, s.far_patience
    cfg[RNG_LO], cfg[RNG_HI] = s.rng_seed % 2**32, s.rng_seed // 2**32  # exact in float64
    cfg[TRACK_LIMITS] = s.track_limits
    cfg[TRACK_SEARCH] = s.track_search
    return cfg


HEADER = 9  # n, layers, width, the offsets of chain, cfg, meta, sizes; heads; collisions' offset


def pack_collisions(collisions) -> np.ndarray:
    """A collision model as the kernel reads it (collision.CollisionModel.pack); empty without
    one."""
    return np.zeros(0) if collisions is None else collisions.pack()


def pack_model(arm, settings, network=None, collisions=None) -> np.ndarray:
    """Everything constant about a solver in one float64 buffer (one argument to the kernel):
    the chain, the settings, the network's meta layout and its layer sizes, the collision
    model."""
    from .network_forward import empty_network

    net = network if network is not None else empty_network(arm.dof)
    parts = [
        pack_chain(arm, settings.margin).ravel(),
        pack_cfg(
            settings,
            arm,
            needs_orientation=network is not None and net.meta[NM_POSE] > 0,
            use_network=network is not None,
        ),
        net.meta,
        net.sizes.astype(float),
        pack_collisions(collisions),
    ]
    offsets = np.cumsum([HEADER] + [len(p) for p in parts])
    header = [arm.dof, len(net.sizes) - 1, net.width, *offsets[:4], net.heads, offsets[4]]
    return np.concatenate([np.array(header, float)] + parts)


@njit(cache=True)
def parts(model):
    """(chain, cfg, meta, sizes) views of a model buffer."""
    n, o = int(model[0]), model[3:7]
    chain = model[int(o[0]) : int(o[1])].reshape((n + 1, ROW))
    sizes = model[int(o[3]) : int(model[8])]
    return chain, model[int(o[1]) : int(o[2])], model[int(o[2]) : int(o[3])], sizes


@njit(cache=True)
def collision_parts(model):
    """The collision model's part of a model buffer (collision.unpack reads it); empty without
    one."""
    return model[int(model[8]) :]


# -- scratch: one buffer per thread, seen through views -------------------------------------------
WORK_ROWS = 9  # forward.fk's scratch: (WORK_ROWS, dof)


def scratch_size(n: int, heads: int = 1, width: int = 1) -> int:
    return 4 * n + 12 + 12 * n + n * n + 12 + WORK_ROWS * n + 9 + heads * n + heads + 4 * width + 1


@njit(cache=True)
def views(scratch, n, heads, width):
    """Views of the scratch buffers for one solve: q_new, best, step, rhs (n); e, e_new (6);
    J, J_new (6, n); H (n, n); p (3); R (3, 3); work (WORK_ROWS, n); Rt (3, 3); h1, h2 (the
    network's, 2 width each); the random state (1, uint64); the network's candidates (heads, n)
    and their scores (heads)."""
    o = 0
    q_new, best, step, rhs = (
        scratch[o : o + n],
        scratch[o + n : o + 2 * n],
        scratch[o + 2 * n : o + 3 * n],
        scratch[o + 3 * n : o + 4 * n],
    )
    o += 4 * n
    e, e_new = scratch[o : o + 6], scratch[o + 6 : o + 12]
    o += 12
    J, J_new = (
        scratch[o : o + 6 * n].reshape((6, n)),
        scratch[o + 6 * n : o + 12 * n].reshape((6, n)),
    )
    o += 12 * n
    H = scratch[o : o + n * n].reshape((n, n))
    o += n * n
    p, R = scratch[o : o + 3], scratch[o + 3 : o + 12].reshape((3, 3))
    o += 12
    work = scratch[o : o + WORK_ROWS * n].reshape((WORK_ROWS, n))
    o += WORK_ROWS * n
    Rt = scratch[o : o + 9].reshape((3, 3))
    o += 9
    netq = scratch[o : o + heads * n].reshape((heads, n))
    o += heads * n
    scores = scratch[o : o + heads]
    o += heads
    h1, h2 = scratch[o : o + 2 * width], scratch[o + 2 * width : o + 4 * width]
    o += 4 * width
    state = scratch[o : o + 1].view(np.uint64)
    return (
        q_new,
        best,
        step,
        rhs,
        e,
        e_new,
        J,
        J_new,
        H,
        p,
        R,
        work,
        Rt,
        h1,
        h2,
        state,
        netq,
        scores,
    )
