// The IK kernel: the port of robot_ik_nn/ik/kernel.py. The Kernel holds one arm, its settings
// and every scratch array a solve needs (allocated once; nothing is allocated per target or per
// iteration); the functions here read and write it. Numbers come back through its fields
// (k.cost, k.pe, k.re: the cost, position and rotation errors), not as return values (V8
// boxes a double returned from a call it does not inline). The random stream: random.js.

import { ANGLE, axisError, fk, rotationError } from './forward.js';

const TWO_PI = 2 * Math.PI;

/** Python's float modulo (the result takes the sign of m), as the kernel computes it. */
export function pymod(a, m) {
  const r = a % m;
  return r !== 0 && r < 0 !== m < 0 ? r + m : r;
}

export class Kernel {
  /** The arm, the settings and the scratch from a parsed model file (model.js). */
  constructor(spec) {
    const n = spec.dof;
    const m = spec.model;
    const L = spec.layout;
    const C = L.chain;
    const F = L.cfg;
    const K = spec.constants;
    this.n = n;
    this.heads = spec.heads;
    this.width = spec.width;
    // the chain, per joint (the tip offset as row n of A and P)
    this.A = new Float64Array(9 * (n + 1));
    this.B = new Float64Array(9 * n);
    this.C = new Float64Array(9 * n);
    this.P = new Float64Array(3 * (n + 1));
    this.AK = new Float64Array(3 * n);
    this.prism = new Uint8Array(n);
    this.cont = new Uint8Array(n);
    this.lo = new Float64Array(n);
    this.hi = new Float64Array(n);
    const c0 = spec.starts[0];
    for (let j = 0; j <= n; j++) {
      const row = c0 + j * C.ROW;
      for (let i = 0; i < 9; i++) this.A[9 * j + i] = m[row + C.A + i];
      for (let i = 0; i < 3; i++) this.P[3 * j + i] = m[row + C.P + i];
      if (j === n) break;
      for (let i = 0; i < 9; i++) {
        this.B[9 * j + i] = m[row + C.B + i];
        this.C[9 * j + i] = m[row + C.C + i];
      }
      for (let i = 0; i < 3; i++) this.AK[3 * j + i] = m[row + C.AK + i];
      this.prism[j] = m[row + C.TYPE] === L.joint_type.prismatic ? 1 : 0;
      this.cont[j] = m[row + C.TYPE] === L.joint_type.continuous ? 1 : 0;
      this.lo[j] = m[row + C.LO];
      this.hi[j] = m[row + C.HI];
    }
    // the settings
    const f = spec.starts[1];
    const cfg = (name) => m[f + F[name]];
    this.posTol = cfg('POS_TOL');
    this.rotTol = cfg('ROT_TOL');
    this.rotW = cfg('ROT_W');
    this.iters = cfg('ITERS');
    this.restarts = cfg('RESTARTS');
    this.restartIters = cfg('RESTART_ITERS');
    this.warmRadius = cfg('WARM');
    this.stop = cfg('STOP');
    this.origin = Float64Array.of(cfg('OX'), cfg('OY'), cfg('OZ'));
    this.reach = cfg('REACH');
    this.qtol = cfg('QTOL');
    this.needsRot = cfg('NEEDS_ROT') > 0;
    this.useNet = cfg('USE_NET') > 0 && spec.sizes.length > 1;
    this.freeDefault = cfg('FREE') - 1; // -1 none, 0 x, 1 y, 2 z
    this.free = this.freeDefault;
    this.farRestarts = cfg('FAR_RESTARTS');
    this.tooFar = cfg('TOO_FAR');
    this.farIters = cfg('FAR_ITERS');
    this.farPolish = cfg('FAR_POLISH');
    this.farPatience = cfg('FAR_PATIENCE');
    this.rngLo = cfg('RNG_LO');
    this.rngHi = cfg('RNG_HI');
    this.trackLimits = cfg('TRACK_LIMITS');
    this.trackSearch = cfg('TRACK_SEARCH');
    // the policy's constants
    this.nearTries = K.NEAR_TRIES;
    this.nearSpread = K.NEAR_SPREAD;
    this.nearRungs = Float64Array.from(K.NEAR_RUNGS);
    this.close = K.CLOSE;
    this.lamNear = K.LAM_NEAR;
    this.lamFar = K.LAM_FAR;
    this.lamTrack = K.LAM_TRACK;
    this.acceptIters = K.ACCEPT_ITERS;
    this.V = K.verdicts;
    // scratch
    const big = Math.max(n, 6);
    this.qNew = new Float64Array(n);
    this.best = new Float64Array(n);
    this.step = new Float64Array(n);
    this.rhs = new Float64Array(big);
    this.keep = new Float64Array(n);
    this.fallback = new Float64Array(n);
    this.e = new Float64Array(6);
    this.eNew = new Float64Array(6);
    this.Jd = new Float64Array(6);
    this.J = new Float64Array(6 * n);
    this.JNew = new Float64Array(6 * n);
    this.H = new Float64Array(big * big);
    this.p = new Float64Array(3);
    this.R = new Float64Array(9);
    this.Rt = new Float64Array(9);
    this.ox = new Float64Array(n);
    this.oy = new Float64Array(n);
    this.oz = new Float64Array(n);
    this.zxs = new Float64Array(n);
    this.zys = new Float64Array(n);
    this.zzs = new Float64Array(n);
    this.netq = new Float64Array(this.heads * n);
    this.scores = new Float64Array(this.heads);
    this.warm = new Float64Array(4 * n);
    this.cur = new Float64Array(n);
    this.pt = new Float64Array(3);
    this.quat = new Float64Array(4);
    this.hasQuat = false;
    this.hasRot = false;
    this.cost = 0.5; // doubles from the start (V8 keeps such fields unboxed)
    this.pe = 0.5;
    this.re = 0.5;
    this.lam = 0.5;
    this.spread = 0.5;
    this.total = 0;
    this.why = 0;
    this.moved = false;
    // the random stream: a 64-bit state in two 32-bit halves, started when first drawn from
    this.sHi = 0.5;
    this.sLo = 0.5;
    this.streamReady = false;
  }
}

/** The weighted pose residual into e (and its Jacobian into J with wantJac); the cost, and the
 * position and rotation errors, into k.cost, k.pe and k.re. (Numbers go through the Kernel's
 * fields, not through arguments and return values: V8 boxes a double that crosses a call it
 * does not inline, an allocation per call.) */
export function residual(k, q, e, J, wantJac) {
  fk(k, q, J, wantJac);
  const p = k.p;
  const pt = k.pt;
  e[0] = pt[0] - p[0];
  e[1] = pt[1] - p[1];
  e[2] = pt[2] - p[2];
  const pe = Math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  k.pe = pe;
  if (!k.hasRot) {
    k.re = 0;
    k.cost = pe * pe;
    return;
  }
  const w = k.rotW;
  const free = k.free;
  const n = k.n;
  if (free < 0) {
    rotationError(k.R, k.Rt, e, 3);
  } else {
    axisError(k.R, k.Rt, free, e, 3);
    if (wantJac) {
      const R = k.R;
      const ax = R[free], ay = R[3 + free], az = R[6 + free];
      for (let j = 0; j < n; j++) {
        const along = ax * J[3 * n + j] + ay * J[4 * n + j] + az * J[5 * n + j];
        J[3 * n + j] -= along * ax;
        J[4 * n + j] -= along * ay;
        J[5 * n + j] -= along * az;
      }
    }
  }
  e[3] *= w;
  e[4] *= w;
  e[5] *= w;
  if (wantJac) for (let i = 3 * n; i < 6 * n; i++) J[i] *= w;
  const re = ANGLE[0];
  k.re = re;
  k.cost = pe * pe + w * re * (w * re);
}

export function weighted(pe, re, w) {
  return Math.sqrt(pe * pe + w * re * (w * re));
}

/** Limited joints into their limits, continuous ones wrapped to [-pi, pi). */
export function clamp(k, q) {
  const lo = k.lo;
  const hi = k.hi;
  const cont = k.cont;
  for (let j = 0; j < k.n; j++) {
    if (cont[j] === 1) q[j] = pymod(q[j] + Math.PI, TWO_PI) - Math.PI;
    else q[j] = Math.min(Math.max(q[j], lo[j]), hi[j]);
  }
}

/** Solve A x = b for the SPD s x s top-left block of A (row stride st); A's lower triangle is
 * overwritten by the factor, the reciprocals of its diagonal on the diagonal. */
function choleskySolve(A, st, b, s, x) {
  for (let a = 0; a < s; a++) {
    for (let c = 0; c <= a; c++) {
      let acc = A[a * st + c];
      for (let j = 0; j < c; j++) acc -= A[a * st + j] * A[c * st + j];
      A[a * st + c] = a === c ? 1 / Math.sqrt(Math.max(acc, 1e-300)) : acc * A[c * st + c];
    }
  }
  for (let a = 0; a < s; a++) {
    let acc = b[a];
    for (let j = 0; j < a; j++) acc -= A[a * st + j] * x[j];
    x[a] = acc * A[a * st + a];
  }
  for (let a = s - 1; a >= 0; a--) {
    let acc = x[a];
    for (let j = a + 1; j < s; j++) acc -= A[j * st + a] * x[j];
    x[a] = acc * A[a * st + a];
  }
}

/** The Levenberg step (J^T J + lam I)^-1 J^T e into k.step (lam: k.lam), in the smaller of the
 * two equivalent forms. */
export function dampedStep(k, J, e, m) {
  const lam = k.lam;
  const n = k.n;
  const H = k.H;
  const rhs = k.rhs;
  const step = k.step;
  if (m < n) {
    for (let a = 0; a < m; a++) {
      for (let b = 0; b <= a; b++) {
        let acc = 0;
        for (let j = 0; j < n; j++) acc += J[a * n + j] * J[b * n + j];
        H[a * n + b] = acc;
      }
      H[a * n + a] += lam;
    }
    choleskySolve(H, n, e, m, rhs);
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let r = 0; r < m; r++) acc += J[r * n + j] * rhs[r];
      step[j] = acc;
    }
    return;
  }
  // J^T J and J^T e, the rows of J written out (m is 6, or 3 for a position alone)
  const e0 = e[0], e1 = e[1], e2 = e[2];
  if (m === 6) {
    const e3 = e[3], e4 = e[4], e5 = e[5];
    for (let a = 0; a < n; a++) {
      const j0 = J[a], j1 = J[n + a], j2 = J[2 * n + a];
      const j3 = J[3 * n + a], j4 = J[4 * n + a], j5 = J[5 * n + a];
      rhs[a] = j0 * e0 + j1 * e1 + j2 * e2 + j3 * e3 + j4 * e4 + j5 * e5;
      for (let b = 0; b <= a; b++) {
        H[a * n + b] =
          j0 * J[b] + j1 * J[n + b] + j2 * J[2 * n + b] +
          j3 * J[3 * n + b] + j4 * J[4 * n + b] + j5 * J[5 * n + b];
      }
      H[a * n + a] += lam;
    }
  } else {
    for (let a = 0; a < n; a++) {
      const j0 = J[a], j1 = J[n + a], j2 = J[2 * n + a];
      rhs[a] = j0 * e0 + j1 * e1 + j2 * e2;
      for (let b = 0; b <= a; b++) H[a * n + b] = j0 * J[b] + j1 * J[n + b] + j2 * J[2 * n + b];
      H[a * n + a] += lam;
    }
  }
  choleskySolve(H, n, rhs, n, step);
}

// LM's damping, by kind of seed (kernel.py: LAM_FAR, LAM_NEAR, LAM_TRACK): the first damping
// and the least it falls to. A small integer picks them (a double argument would be boxed).
export const FAR = 0; // a random or mid-range seed: LAM_FAR, floor 1e-9
export const NEAR = 1; // a network candidate or another warm start: LAM_NEAR, floor 1e-9
export const TRACK = 2; // tracking from a warm start: LAM_TRACK, never below it
export const FAR_TRACKED = 3; // a seed around a warm start: LAM_FAR, floor LAM_TRACK

/** Levenberg-Marquardt from q (changed in place), projected onto the limits; returns the
 * iterations used, the errors at the final q in k.pe and k.re; damping: FAR, NEAR, TRACK or
 * FAR_TRACKED. */
export function refine(k, q, iterations, damping) {
  clamp(k, q);
  residual(k, q, k.e, k.J, true);
  return descend(k, q, iterations, damping);
}

/** refine from a q inside the limits whose residual (k.cost, k.pe, k.re) and Jacobian are in
 * k.e and k.J. */
export function descend(k, q, iterations, damping) {
  let lam = damping === NEAR ? k.lamNear : damping === TRACK ? k.lamTrack : k.lamFar;
  const floor = damping === TRACK || damping === FAR_TRACKED ? k.lamTrack : 1e-9;
  let cost = k.cost;
  let pe = k.pe;
  let re = k.re;
  const n = k.n;
  const lo = k.lo;
  const hi = k.hi;
  const cont = k.cont;
  const qNew = k.qNew;
  const step = k.step;
  let e = k.e;
  let eNew = k.eNew;
  let J = k.J;
  let JNew = k.JNew;
  const m = k.hasRot ? 6 : 3;
  let used = 0;
  for (let it = 0; it < iterations; it++) {
    if (cost <= k.stop || lam >= 1e3) break;
    used++;
    for (let j = 0; j < n; j++) {
      const atLo = q[j] <= lo[j];
      const atHi = q[j] >= hi[j];
      if (cont[j] === 1 || !(atLo || atHi)) continue;
      let g = 0;
      for (let r = 0; r < m; r++) g += J[r * n + j] * e[r];
      if ((atLo && g < 0) || (atHi && g > 0)) for (let r = 0; r < m; r++) J[r * n + j] = 0;
    }
    k.lam = lam;
    dampedStep(k, J, e, m);
    for (let a = 0; a < n; a++) qNew[a] = q[a] + step[a];
    clamp(k, qNew);
    residual(k, qNew, eNew, JNew, true);
    if (k.cost < cost) {
      cost = k.cost;
      pe = k.pe;
      re = k.re;
      for (let a = 0; a < n; a++) q[a] = qNew[a];
      let t = e; e = eNew; eNew = t; // the accepted residual and Jacobian become the current
      t = J; J = JNew; JNew = t;
      lam = Math.max(lam / 3, floor);
    } else {
      lam = Math.min(lam * 10, 1e4);
    }
  }
  k.e = e;
  k.eNew = eNew;
  k.J = J;
  k.JNew = JNew;
  k.cost = cost;
  k.pe = pe;
  k.re = re;
  return used;
}

/** The self-motion spent on keeping away from the limits without leaving the target
 * (kernel.secondary, weight k.trackLimits); returns the LM iterations, k.moved whether q
 * changed, errors in k.pe/re. */
export function secondary(k, q) {
  const weight = k.trackLimits;
  const n = k.n;
  const m = k.hasRot ? 6 : 3;
  k.moved = false;
  if (n <= m - (k.hasRot && k.free >= 0 ? 1 : 0)) {
    k.pe = 0;
    k.re = 0;
    return 0;
  }
  residual(k, q, k.e, k.J, true);
  const pe = k.pe;
  const re = k.re;
  const J = k.J;
  const d = k.qNew;
  let pull = 0;
  for (let j = 0; j < n; j++) {
    d[j] = 0;
    if (k.cont[j] === 1) continue;
    const half = 0.5 * (k.hi[j] - k.lo[j]);
    if (half <= 1e-9) continue;
    d[j] = -(q[j] - 0.5 * (k.hi[j] + k.lo[j])) / half;
    pull = Math.max(pull, Math.abs(d[j]));
  }
  if (pull < 1e-6) return 0;
  const keep = k.keep;
  for (let j = 0; j < n; j++) keep[j] = q[j];
  const Jd = k.Jd;
  for (let r = 0; r < m; r++) {
    let acc = 0;
    for (let j = 0; j < n; j++) acc += J[r * n + j] * d[j];
    Jd[r] = acc;
  }
  k.lam = 1e-9;
  dampedStep(k, J, Jd, m);
  let biggest = 0;
  for (let j = 0; j < n; j++) {
    d[j] -= k.step[j];
    biggest = Math.max(biggest, Math.abs(d[j]));
  }
  if (biggest < 1e-4 * pull) return 0;
  const scale = (weight * pull) / biggest;
  for (let j = 0; j < n; j++) q[j] += scale * d[j];
  const used = refine(k, q, k.acceptIters, TRACK);
  if (k.pe <= k.posTol && k.re <= k.rotTol) {
    k.moved = true;
    return used;
  }
  for (let j = 0; j < n; j++) q[j] = keep[j];
  k.pe = pe;
  k.re = re;
  return used;
}
