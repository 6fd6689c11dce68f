// The network's forward pass for one target: the port of network_forward.net_forward (the yaw
// symmetry, the tracking inputs, the heads squashed into the limits). Weights are float32 as
// trained, every sum float64, as in the Python kernel and its numpy backend.

import { pymod } from './kernel.js';
import { simdLayer } from './wasm.js';

const TWO_PI = 2 * Math.PI;

/** What the forward pass reads, from a parsed model file (model.js). */
export class Net {
  /** useSimd: the layers in WebAssembly SIMD where the engine has it (else plain loops). */
  constructor(spec, useSimd = true) {
    const m = spec.model;
    const M = spec.layout.meta;
    const o = spec.starts[2];
    const dof = spec.dof;
    this.dof = dof;
    this.heads = spec.heads;
    this.pose = m[o + M.NM_POSE] > 0;
    this.track = m[o + M.NM_TRACK] > 0;
    this.yaw = m[o + M.NM_YAW] > 0;
    this.j1R = m.slice(o + M.NM_J1R, o + M.NM_J1R + 9);
    this.j1p = m.slice(o + M.NM_J1P, o + M.NM_J1P + 3);
    this.basis = m.slice(o + M.NM_BASIS, o + M.NM_BASIS + 9);
    this.center = m.slice(o + M.NM_CENTER, o + M.NM_CENTER + 3);
    this.scale = m.slice(o + M.NM_SCALE, o + M.NM_SCALE + 3);
    const lim = o + M.NM_LIMITS;
    this.lo = m.slice(lim, lim + dof);
    this.hi = m.slice(lim + dof, lim + 2 * dof);
    this.cont = new Uint8Array(dof);
    for (let j = 0; j < dof; j++) this.cont[j] = m[lim + 2 * dof + j] > 0 ? 1 : 0;
    const sizes = spec.sizes;
    this.layers = sizes.length - 1;
    this.sizes = Int32Array.from(sizes);
    this.wOff = new Int32Array(Math.max(this.layers, 1));
    this.bOff = new Int32Array(Math.max(this.layers, 1));
    let w = 0;
    for (let l = 0; l < this.layers; l++) w += sizes[l] * sizes[l + 1];
    let b = w;
    w = 0;
    for (let l = 0; l < this.layers; l++) {
      this.wOff[l] = w;
      this.bOff[l] = b;
      w += sizes[l] * sizes[l + 1];
      b += sizes[l + 1];
    }
    this.w = spec.netw; // Float32Array: weights, then biases
    const poly = spec.constants.EXP2_POLY;
    this.exp2 = Array.isArray(poly) && poly.length === 11 ? Float64Array.from(poly) : null;
    const width = spec.width;
    this.psi = new Float64Array(1); // the target's yaw about the first joint (inputs -> heads)
    this.a1 = new Float64Array(width);
    this.a2 = new Float64Array(width);
    this.simd = useSimd ? this._simd(width) : null;
  }

  /** The layers' weights copied into WebAssembly memory as float64 (wasm.js's layout: blocks
   * of four rows by four inputs, the rows padded with zeros to a multiple of four, the inputs
   * to a multiple of four), the activations seen there too; null without WebAssembly SIMD. */
  _simd(width) {
    const sizes = this.sizes;
    const pad = (v) => Math.ceil(v / 4) * 4;
    const act = pad(width + 4) * 8; // bytes per activation buffer (16-byte aligned)
    const wBytes = new Int32Array(this.layers);
    const bBytes = new Int32Array(this.layers);
    let bytes = 2 * act + 96; // the activations, then 2**f's 11 coefficients
    for (let l = 0; l < this.layers; l++) {
      wBytes[l] = bytes;
      bytes += pad(sizes[l + 1]) * pad(sizes[l]) * 8; // rows: a multiple of four
      bBytes[l] = bytes;
      bytes += pad(sizes[l + 1]) * 8; // the biases as float64
    }
    const made = simdLayer(bytes);
    if (made === null) return null;
    const doubles = new Float64Array(made.memory.buffer);
    for (let l = 0; l < this.layers; l++) {
      const nin = sizes[l];
      const n4 = pad(nin) / 4;
      const at = wBytes[l] / 8;
      for (let o = 0; o < sizes[l + 1]; o++) {
        const from = this.wOff[l] + o * nin;
        // row o: group o >> 2, its place o & 3 in each block of 16 values
        const base = at + (o >> 2) * n4 * 16 + (o & 3) * 4;
        for (let i = 0; i < nin; i++) doubles[base + (i >> 2) * 16 + (i & 3)] = this.w[from + i];
        doubles[bBytes[l] / 8 + o] = this.w[this.bOff[l] + o];
      }
    }
    if (this.exp2 !== null) doubles.set(this.exp2, (2 * act) / 8);
    this.a1 = new Float64Array(made.memory.buffer, 0, act / 8);
    this.a2 = new Float64Array(made.memory.buffer, act, act / 8);
    return { layer: made.layer, silu: this.exp2 === null ? null : made.silu, wBytes, bBytes, act };
  }
}

/** y = W x over one layer, four rows at a time (plain loops: engines without WebAssembly SIMD). */
function layer(w, wo, nin, nout, x, y) {
  let o = 0;
  for (; o + 4 <= nout; o += 4) {
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const r0 = wo + o * nin;
    const r1 = r0 + nin;
    const r2 = r1 + nin;
    const r3 = r2 + nin;
    for (let i = 0; i < nin; i++) {
      const xi = x[i];
      s0 += w[r0 + i] * xi;
      s1 += w[r1 + i] * xi;
      s2 += w[r2 + i] * xi;
      s3 += w[r3 + i] * xi;
    }
    y[o] = s0;
    y[o + 1] = s1;
    y[o + 2] = s2;
    y[o + 3] = s3;
  }
  for (; o < nout; o++) {
    let s = 0;
    const r = wo + o * nin;
    for (let i = 0; i < nin; i++) s += w[r + i] * x[i];
    y[o] = s;
  }
}

const LOG2E = 1 / Math.log(2);
const ROUND = 1.5 * 2 ** 52; // t + ROUND - ROUND: t rounded to a whole number
const POW2 = new Float64Array(2041); // 2**k for k in [-1020, 1020]
for (let k = -1020; k <= 1020; k++) POW2[k + 1020] = 2 ** k;

/** The biases added to y, then (act) SiLU, y / (1 + exp(-y)), with exp(-y) = 2**k 2**f as the
 * compiled kernel computes it (the model file's polynomial for 2**f on [-1/2, 1/2]; Math.exp
 * for a file without one). */
function biasAndSilu(net, y, bo, nout, act) {
  const w = net.w;
  if (!act) {
    for (let o = 0; o < nout; o++) y[o] += w[bo + o];
    return;
  }
  const P = net.exp2;
  if (P === null) {
    for (let o = 0; o < nout; o++) {
      const v = y[o] + w[bo + o];
      y[o] = v / (1 + Math.exp(-v));
    }
    return;
  }
  const p10 = P[0], p9 = P[1], p8 = P[2], p7 = P[3], p6 = P[4], p5 = P[5];
  const p4 = P[6], p3 = P[7], p2 = P[8], p1 = P[9], p0 = P[10];
  for (let o = 0; o < nout; o++) {
    const v = y[o] + w[bo + o];
    let t = -v * LOG2E;
    t = t < -1020 ? -1020 : t > 1020 ? 1020 : t;
    const k = t + ROUND - ROUND;
    const f = t - k;
    const p = (((((((((p10 * f + p9) * f + p8) * f + p7) * f + p6) * f + p5) * f + p4) * f +
      p3) * f + p2) * f + p1) * f + p0;
    y[o] = v / (1 + p * POW2[(k + 1020) | 0]);
  }
}

/** The network's candidates for target (pt, Rt) into out (heads * dof); cur: the arm's joints
 * (a tracking network's input) when hasCur. Three functions, each compiled by the engine on its
 * own (a small function reaches the engine's top tier sooner: policy.js). */
export function netForward(net, pt, Rt, cur, hasCur, out) {
  inputs(net, pt, Rt, cur, hasCur);
  runLayers(net);
  heads(net, out);
}

/** The network's inputs for the target into net.a2, its yaw about the first joint into
 * net.psi[0]. */
function inputs(net, pt, Rt, cur, hasCur) {
  const dof = net.dof;
  const j1R = net.j1R;
  const o = net.j1p;
  const bs = net.basis;
  const x = net.a2;
  const dx = pt[0] - o[0], dy = pt[1] - o[1], dz = pt[2] - o[2];
  const lx = j1R[0] * dx + j1R[3] * dy + j1R[6] * dz;
  const ly = j1R[1] * dx + j1R[4] * dy + j1R[7] * dz;
  const lz = j1R[2] * dx + j1R[5] * dy + j1R[8] * dz;
  let psi = 0;
  let c = 1;
  let s = 0;
  const yaw = net.yaw;
  if (yaw) {
    psi = Math.atan2(bs[3] * lx + bs[4] * ly + bs[5] * lz, bs[0] * lx + bs[1] * ly + bs[2] * lz);
    c = Math.cos(psi);
    s = Math.sin(psi);
  }
  let k = 3;
  const cols = net.pose ? 3 : 1;
  for (let col = 0; col < cols; col++) {
    let vx, vy, vz;
    if (col === 0) {
      vx = lx; vy = ly; vz = lz;
    } else {
      const a = col - 1;
      vx = j1R[0] * Rt[a] + j1R[3] * Rt[3 + a] + j1R[6] * Rt[6 + a];
      vy = j1R[1] * Rt[a] + j1R[4] * Rt[3 + a] + j1R[7] * Rt[6 + a];
      vz = j1R[2] * Rt[a] + j1R[5] * Rt[3 + a] + j1R[8] * Rt[6 + a];
    }
    if (yaw) {
      let u = bs[0] * vx + bs[1] * vy + bs[2] * vz;
      let v = bs[3] * vx + bs[4] * vy + bs[5] * vz;
      const w = bs[6] * vx + bs[7] * vy + bs[8] * vz;
      const u2 = c * u + s * v;
      v = -s * u + c * v;
      u = u2;
      vx = bs[0] * u + bs[3] * v + bs[6] * w;
      vy = bs[1] * u + bs[4] * v + bs[7] * w;
      vz = bs[2] * u + bs[5] * v + bs[8] * w;
    }
    if (col === 0) {
      x[0] = (vx - net.center[0]) / net.scale[0];
      x[1] = (vy - net.center[1]) / net.scale[1];
      x[2] = (vz - net.center[2]) / net.scale[2];
    } else {
      x[k] = vx; x[k + 1] = vy; x[k + 2] = vz;
      k += 3;
    }
  }
  if (net.track) {
    for (let j = 0; j < dof; j++) {
      const lo = net.lo[j], hi = net.hi[j];
      const cj = hasCur ? cur[j] : (lo + hi) / 2;
      if (j === 0 && yaw) x[k] = (pymod(cj - psi + Math.PI, TWO_PI) - Math.PI) / Math.PI;
      else x[k] = (cj - (lo + hi) / 2) / ((hi - lo) / 2);
      k++;
    }
  }
  net.psi[0] = psi;
}

/** The layers, from net.a2, the last one's outputs in net.a1 or net.a2 (as their count). */
function runLayers(net) {
  const layers = net.layers;
  const sizes = net.sizes;
  const simd = net.simd;
  for (let l = 0; l < layers; l++) {
    const even = l % 2 === 0;
    const xs = even ? net.a2 : net.a1;
    const ys = even ? net.a1 : net.a2;
    const nin = sizes[l];
    const nout = sizes[l + 1];
    if (simd === null) {
      layer(net.w, net.wOff[l], nin, nout, xs, ys);
      biasAndSilu(net, ys, net.bOff[l], nout, l < layers - 1);
      continue;
    }
    const n4 = (nin + 3) >> 2;
    for (let i = nin; i < 4 * n4; i++) xs[i] = 0; // the padding's inputs
    const yb = even ? 0 : simd.act;
    simd.layer(simd.wBytes[l], even ? simd.act : 0, yb, n4, (nout + 3) >> 2);
    if (simd.silu === null) biasAndSilu(net, ys, net.bOff[l], nout, l < layers - 1);
    else simd.silu(yb, simd.bBytes[l], (nout + 3) >> 2, l < layers - 1 ? 1 : 0, 2 * simd.act);
  }
}

/** The heads' joints from the last layer's outputs into out: each joint's (sin, cos) pair
 * squashed into its limits, or an angle (a continuous joint, the first joint turned by yaw). */
function heads(net, out) {
  const dof = net.dof;
  const yaw = net.yaw;
  const psi = net.psi[0];
  const raw = (net.layers - 1) % 2 === 0 ? net.a1 : net.a2;
  for (let hj = 0; hj < net.heads * dof; hj++) {
    const j = hj % dof;
    let sn = raw[2 * hj];
    let cs = raw[2 * hj + 1];
    const norm = Math.max(Math.sqrt(sn * sn + cs * cs), 1e-6);
    sn /= norm;
    cs /= norm;
    const lo = net.lo[j], hi = net.hi[j];
    const continuous = net.cont[j] === 1;
    const turning = j === 0 && yaw;
    if (!(continuous || turning)) {
      out[hj] = (hi + lo) / 2 + ((hi - lo) / 2) * sn;
      continue;
    }
    const phi = pymod(2 * Math.atan2(sn, cs) + Math.PI, TWO_PI) - Math.PI;
    let theta = phi;
    if (turning) {
      const a = psi + phi;
      if (continuous) {
        theta = pymod(a + Math.PI, TWO_PI) - Math.PI;
      } else {
        const rep = lo + pymod(a - lo, TWO_PI);
        theta = rep <= hi ? rep : rep - hi < lo + TWO_PI - rep ? hi : lo;
      }
    }
    out[hj] = theta;
  }
}
