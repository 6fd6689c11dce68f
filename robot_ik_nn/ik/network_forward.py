"""The network's answer without torch: the seed that the refinement starts from.

The same forward pass as ``network.IKNet`` (its docstring explains the maths), read from the
model folder's safetensors weights, with three interchangeable backends for the layers:

- ``compiled``: numba, inside the solver's own compiled call (one target costs one call);
- ``numpy``: float32 matrix products (BLAS), the fastest for large batches;
- ``onnx``: onnxruntime running ``model.onnx`` (``robot-ik-nn export MODEL --onnx``);
- ``torch``: the torch network itself, in float32 as it was trained (only where torch is
  installed: for comparison, and for a network that lives on a GPU).

Every backend computes in float64 (the weights, trained in float32, are exact in it), so all of
them agree with the torch network evaluated in float64 within 1e-5 rad (tested); torch's own
float32 forward pass strays up to ~1e-3 rad from that where the network is ill-conditioned (at
wrist singularities), which the refinement removes anyway. Pre- and post-processing
(the target turned into the first joint's canonical half-plane, the quaternion head squashed into
the joint limits) are written twice: vectorised numpy here for batches, scalar in
:func:`net_forward` for the compiled path; tests hold both to the torch network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

BACKENDS = (
    "compiled",
    "numpy",
    "onnx",
    "torch",
)  # torch: the training network itself (needs torch)
# meta layout: what the network does around its layers (mode, symmetry, input scaling, limits)
NM_POSE, NM_TRACK, NM_YAW, NM_J1R, NM_J1P, NM_BASIS, NM_CENTER, NM_SCALE, NM_LIMITS = (
    0,
    1,
    2,
    3,
    12,
    15,
    24,
    27,
    30,
)


@dataclass
class NetArrays:
    """The network as flat arrays: what the kernel and the numpy backend read."""

    W: np.ndarray  # float64, every layer's (out, in) weights back to back
    b: np.ndarray  # float64 biases back to back
    sizes: np.ndarray  # int64 [inputs, hidden..., 2 * dof]
    meta: np.ndarray  # float64, kernel.NM_* layout
    layers: list[tuple[np.ndarray, np.ndarray]]  # views (W (out, in), b) per layer
    heads: int = 1  # candidate branches per target

    @property
    def width(self) -> int:
        return int(self.sizes.max())

    @property
    def flat(self) -> np.ndarray:
        """Weights then biases in one buffer: the kernel's view of the layers. float32, as
        trained (no value changes): half the memory a forward pass reads; the sums stay float64."""
        return np.concatenate([self.W, self.b]).astype(np.float32)


def empty_network(dof: int) -> NetArrays:
    """What the kernel is given when there is no network."""
    return NetArrays(
        np.zeros(1), np.zeros(1), np.ones(1, np.int64), np.zeros(NM_LIMITS + 3 * dof), [], heads=1
    )


def pack_network(state: dict, config: dict) -> NetArrays:
    """Arrays from a model folder's tensors (numpy) and its ``network`` config."""
    names = sorted(
        {k.rsplit(".", 1)[0] for k in state if k.startswith("body.")},
        key=lambda k: int(k.split(".")[1]),
    ) + ["head"]
    layers = [
        (
            np.ascontiguousarray(state[f"{k}.weight"], np.float64),
            np.ascontiguousarray(state[f"{k}.bias"], np.float64),
        )
        for k in names
    ]
    sizes = np.array([layers[0][0].shape[1]] + [w.shape[0] for w, _ in layers], np.int64)
    W = np.concatenate([w.ravel() for w, _ in layers])
    b = np.concatenate([bb for _, bb in layers])
    offsets = np.cumsum([0] + [w.size for w, _ in layers])
    boffsets = np.cumsum([0] + [bb.size for _, bb in layers])
    views = [
        (W[offsets[i] : offsets[i + 1]].reshape(w.shape), b[boffsets[i] : boffsets[i + 1]])
        for i, (w, _) in enumerate(layers)
    ]
    dof = int(config["dof"])
    meta = np.zeros(NM_LIMITS + 3 * dof)
    meta[NM_POSE] = config["mode"] == "pose"
    meta[NM_TRACK] = bool(config.get("tracking", False))
    meta[NM_YAW] = bool(config.get("yaw_symmetry", False))
    meta[NM_J1R : NM_J1R + 9] = np.asarray(state["j1_R"], float).ravel()
    meta[NM_J1P : NM_J1P + 3] = np.asarray(state["j1_p"], float)
    meta[NM_BASIS : NM_BASIS + 9] = np.asarray(state["j1_basis"], float).ravel()
    meta[NM_CENTER : NM_CENTER + 3] = np.asarray(state["pos_center"], float)
    meta[NM_SCALE : NM_SCALE + 3] = np.asarray(state["pos_scale"], float)
    meta[NM_LIMITS : NM_LIMITS + dof] = np.asarray(state["lower"], np.float32)
    meta[NM_LIMITS + dof : NM_LIMITS + 2 * dof] = np.asarray(state["upper"], np.float32)
    meta[NM_LIMITS + 2 * dof : NM_LIMITS + 3 * dof] = np.asarray(state["continuous"], bool)
    heads = int(config.get("heads", 1))
    expected = 3 + (6 if meta[NM_POSE] else 0) + (dof if meta[NM_TRACK] else 0)
    if sizes[0] != expected or sizes[-1] != 2 * dof * heads:
        raise ValueError(
            f"network layers {sizes.tolist()} do not fit a {config['mode']} network "
            + ("with the arm's joints as inputs (tracking) " if meta[NM_TRACK] else "")
            + f"for {dof} joints and {heads} heads"
        )
    return NetArrays(W, b, sizes, meta, views, heads)


def _wrap(x):
    return (x + math.pi) % (2 * math.pi) - math.pi


# -- numpy: batches ------------------------------------------------------------------------------
def features(net: NetArrays, pos, R=None, current=None):
    """Network inputs (B, in) float64 and psi (B,), the first joint's turn to each target."""
    m = net.meta
    dof = (len(m) - NM_LIMITS) // 3
    j1R, j1p = m[NM_J1R : NM_J1R + 9].reshape(3, 3), m[NM_J1P : NM_J1P + 3]
    local = (np.asarray(pos, float) - j1p) @ j1R
    local_rot = None if R is None else j1R.T @ np.asarray(R, float)
    psi = np.zeros(len(local))
    canon, canon_rot = local, local_rot
    if m[NM_YAW]:
        basis = m[NM_BASIS : NM_BASIS + 9].reshape(3, 3)
        coords = local @ basis.T
        psi = np.arctan2(coords[:, 1], coords[:, 0])
        c, s = np.cos(psi), np.sin(psi)
        turn = np.zeros((len(psi), 3, 3))
        turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1], turn[:, 2, 2] = (
            c,
            s,
            -s,
            c,
            1.0,
        )
        M = basis.T @ turn @ basis
        canon = np.einsum("bij,bj->bi", M, local)
        canon_rot = None if local_rot is None else M @ local_rot
    parts = [(canon - m[NM_CENTER : NM_CENTER + 3]) / m[NM_SCALE : NM_SCALE + 3]]
    if m[NM_POSE]:
        if canon_rot is None:
            raise ValueError("a pose-mode network needs the target orientation")
        parts.append(np.concatenate([canon_rot[:, :, 0], canon_rot[:, :, 1]], axis=1))
    if m[NM_TRACK]:
        lo, hi = m[NM_LIMITS : NM_LIMITS + dof], m[NM_LIMITS + dof : NM_LIMITS + 2 * dof]
        cur = np.broadcast_to(
            (lo + hi) / 2 if current is None else np.asarray(current, float), (len(psi), dof)
        )
        rel = (cur - (lo + hi) / 2) / ((hi - lo) / 2)
        if m[NM_YAW]:
            rel = np.concatenate([_wrap(cur[:, :1] - psi[:, None]) / math.pi, rel[:, 1:]], axis=1)
        parts.append(rel)
    return np.concatenate(parts, axis=1), psi


def mlp_numpy(net: NetArrays, x: np.ndarray) -> np.ndarray:
    """The layers: matrix products with SiLU between them (in place, for large batches)."""
    h = x
    for i, (w, b) in enumerate(net.layers):
        h = h @ w.T
        h += b
        if i < len(net.layers) - 1:
            t = np.negative(h)
            with np.errstate(over="ignore"):
                np.exp(t, out=t)
            t += 1.0
            h /= t
    return h


def angles(net: NetArrays, raw: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """The heads' output (B, 2 dof heads) -> joint angles (B, heads, dof) inside the limits."""
    m = net.meta
    dof = raw.shape[1] // (2 * net.heads)
    lo, hi = m[NM_LIMITS : NM_LIMITS + dof], m[NM_LIMITS + dof : NM_LIMITS + 2 * dof]
    continuous = m[NM_LIMITS + 2 * dof : NM_LIMITS + 3 * dof] > 0
    sc = raw.reshape(len(raw), net.heads, dof, 2).astype(float)
    sc = sc / np.maximum(np.linalg.norm(sc, axis=-1, keepdims=True), 1e-6)
    s, c = sc[..., 0], sc[..., 1]
    phi = _wrap(2.0 * np.arctan2(s, c))
    theta = np.where(continuous, phi, (hi + lo) / 2 + (hi - lo) / 2 * s)
    if m[NM_YAW]:
        theta[..., 0] = _into_limits(psi[:, None] + phi[..., 0], lo[0], hi[0], continuous[0])
    return theta


def _into_limits(angle, lo, hi, continuous):
    if continuous:
        return _wrap(angle)
    rep = lo + np.remainder(angle - lo, 2 * math.pi)
    nearer_hi = (rep - hi) < (lo + 2 * math.pi - rep)
    return np.where(rep > hi, np.where(nearer_hi, hi, lo), rep)


# -- compiled: one target inside the solver's call ------------------------------------------------
# 2**f on [-1/2, 1/2] as a degree-10 polynomial, fitted by least squares at Chebyshev nodes
# (relative error about 1e-15, float64's own): exp without a call into libm, so that the SiLU
# loop below vectorises
_NODES = 0.5 * np.cos(np.pi * (np.arange(4000) + 0.5) / 4000)
_E10, _E9, _E8, _E7, _E6, _E5, _E4, _E3, _E2, _E1, _E0 = (
    float(c) for c in np.polyfit(_NODES, 2.0**_NODES, 10)
)
_LOG2E = 1.0 / math.log(2.0)


_ROUND = 1.5 * 2.0**52  # x + _ROUND - _ROUND: x rounded to a whole number, kept in the low bits


# fastmath without reassociation: that would fold (t + _ROUND) - _ROUND into t
@njit(cache=True, fastmath={"nnan", "ninf", "nsz", "contract", "arcp"})
def _silu(y, poly, bits):
    """y * sigmoid(y) in place; exp(-y) = 2**k 2**f with k whole, |f| <= 1/2. ``poly`` and
    ``bits`` (int64) are scratch of y's length: 2**f, and 2**k built in float64's bits. k comes
    from the rounding constant's low bits, not from a float-to-integer conversion, which AVX2
    cannot do four at a time: every loop here vectorises."""
    scale = bits.view(np.float64)
    for o in range(y.shape[0]):
        t = min(max(-y[o] * _LOG2E, -1020.0), 1020.0)  # 2**t stays a normal float64
        r = t + _ROUND
        f = t - (r - _ROUND)
        poly[o] = (
            (((((((((_E10 * f + _E9) * f + _E8) * f + _E7) * f + _E6) * f + _E5) * f + _E4) * f
            + _E3) * f + _E2) * f + _E1) * f + _E0
        )
        scale[o] = r
    for o in range(y.shape[0]):  # the low bits hold k (two's complement): the exponent field
        bits[o] = (bits[o] + 1023) << 52
    for o in range(y.shape[0]):
        y[o] = y[o] / (1.0 + poly[o] * scale[o])


@njit(cache=True, fastmath=True)
def _layer(W, b, x, y, act, spare, bits):
    """y = W x + b (then SiLU, with ``spare`` and ``bits`` as its scratch), four rows at a time:
    each x[i] loaded once serves four sums."""
    nout, nin = W.shape
    o = 0
    while o + 4 <= nout:
        a0, a1, a2, a3 = 0.0, 0.0, 0.0, 0.0
        for i in range(nin):
            xi = x[i]
            a0 += W[o, i] * xi
            a1 += W[o + 1, i] * xi
            a2 += W[o + 2, i] * xi
            a3 += W[o + 3, i] * xi
        y[o], y[o + 1], y[o + 2], y[o + 3] = a0 + b[o], a1 + b[o + 1], a2 + b[o + 2], a3 + b[o + 3]
        o += 4
    while o < nout:
        acc = 0.0
        for i in range(nin):
            acc += W[o, i] * x[i]
        y[o] = acc + b[o]
        o += 1
    if act:
        _silu(y[:nout], spare[:nout], bits[:nout])


@njit(cache=True)
def net_forward(netw, sizes, meta, pt, Rt, cur, has_cur, q_out, h1, h2):
    """The network's candidates for one target (position ``pt``, rotation ``Rt``) into ``q_out``
    (heads, dof); ``netw`` holds the weights then the biases, ``sizes`` the layer widths;
    ``h1`` and ``h2`` (2 width each) hold the activations and the SiLU's scratch."""
    heads, dof = q_out.shape
    width = h1.shape[0] // 2
    a1, a2, spare, bits = h1[:width], h2[:width], h1[width:], h2[width:].view(np.int64)
    j1R, o = meta[NM_J1R : NM_J1R + 9], meta[NM_J1P : NM_J1P + 3]
    # the target in the first joint's frame: R^T (p - o), R^T Rt (no allocation: per target)
    dx, dy, dz = pt[0] - o[0], pt[1] - o[1], pt[2] - o[2]
    lx = j1R[0] * dx + j1R[3] * dy + j1R[6] * dz
    ly = j1R[1] * dx + j1R[4] * dy + j1R[7] * dz
    lz = j1R[2] * dx + j1R[5] * dy + j1R[8] * dz
    x = a2
    k = 3
    psi = 0.0
    c, s = 1.0, 0.0
    yaw = meta[NM_YAW] > 0
    bs = meta[NM_BASIS : NM_BASIS + 9]
    if yaw:  # psi: the target's angle about the first axis, in the (u, v, k) basis
        psi = math.atan2(
            bs[3] * lx + bs[4] * ly + bs[5] * lz, bs[0] * lx + bs[1] * ly + bs[2] * lz
        )
        c, s = math.cos(psi), math.sin(psi)
    # canonical = M local with M = basis^T turn(-psi) basis, applied as basis^T (turn (basis v))
    for col in range(3 if meta[NM_POSE] > 0 else 1):  # the position, then two rotation columns
        if col == 0:
            vx, vy, vz = lx, ly, lz
        else:
            a = col - 1
            vx = j1R[0] * Rt[0, a] + j1R[3] * Rt[1, a] + j1R[6] * Rt[2, a]
            vy = j1R[1] * Rt[0, a] + j1R[4] * Rt[1, a] + j1R[7] * Rt[2, a]
            vz = j1R[2] * Rt[0, a] + j1R[5] * Rt[1, a] + j1R[8] * Rt[2, a]
        if yaw:
            u = bs[0] * vx + bs[1] * vy + bs[2] * vz
            v = bs[3] * vx + bs[4] * vy + bs[5] * vz
            w = bs[6] * vx + bs[7] * vy + bs[8] * vz
            u, v = c * u + s * v, -s * u + c * v
            vx = bs[0] * u + bs[3] * v + bs[6] * w
            vy = bs[1] * u + bs[4] * v + bs[7] * w
            vz = bs[2] * u + bs[5] * v + bs[8] * w
        if col == 0:
            x[0] = (vx - meta[NM_CENTER]) / meta[NM_SCALE]
            x[1] = (vy - meta[NM_CENTER + 1]) / meta[NM_SCALE + 1]
            x[2] = (vz - meta[NM_CENTER + 2]) / meta[NM_SCALE + 2]
        else:
            x[k], x[k + 1], x[k + 2] = vx, vy, vz
            k += 3
    if meta[NM_TRACK] > 0:
        for j in range(dof):
            lo, hi = meta[NM_LIMITS + j], meta[NM_LIMITS + dof + j]
            cj = cur[j] if has_cur else (lo + hi) / 2
            if j == 0 and yaw:
                x[k] = ((cj - psi + math.pi) % (2 * math.pi) - math.pi) / math.pi
            else:
                x[k] = (cj - (lo + hi) / 2) / ((hi - lo) / 2)
            k += 1
    layers = sizes.shape[0] - 1
    wo, bo = 0, 0
    for layer in range(layers):
        bo += int(sizes[layer]) * int(sizes[layer + 1])
    for layer in range(layers):
        nin, nout = int(sizes[layer]), int(sizes[layer + 1])
        Wl = netw[wo : wo + nin * nout].reshape((nout, nin))
        out = a1 if layer % 2 == 0 else a2
        inp = a2 if layer % 2 == 0 else a1
        _layer(Wl, netw[bo : bo + nout], inp, out, layer < layers - 1, spare, bits)
        wo += nin * nout
        bo += nout
    raw = a1 if (layers - 1) % 2 == 0 else a2
    for hj in range(heads * dof):
        head, j = hj // dof, hj % dof
        s, c = raw[2 * hj], raw[2 * hj + 1]
        norm = max(math.sqrt(s * s + c * c), 1e-6)
        s, c = s / norm, c / norm
        lo, hi = meta[NM_LIMITS + j], meta[NM_LIMITS + dof + j]
        continuous = meta[NM_LIMITS + 2 * dof + j] > 0
        turning = j == 0 and meta[NM_YAW] > 0
        if not (continuous or turning):  # a limited joint needs no angle: the squash of s
            q_out[head, j] = (hi + lo) / 2 + (hi - lo) / 2 * s
            continue
        phi = (2.0 * math.atan2(s, c) + math.pi) % (2 * math.pi) - math.pi
        theta = phi
        if turning:
            a = psi + phi
            if continuous:
                theta = (a + math.pi) % (2 * math.pi) - math.pi
            else:
                rep = lo + (a - lo) % (2 * math.pi)
                theta = rep if rep <= hi else (hi if rep - hi < lo + 2 * math.pi - rep else lo)
        q_out[head, j] = theta
