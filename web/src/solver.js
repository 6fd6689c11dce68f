// The Solver: what a page or a Node program calls (ik.js loads one from a model file).

import { fk, matrixToQuat, quatToMatrix } from './forward.js';
import { Kernel } from './kernel.js';
import { Net, netForward } from './network.js';
import { solveTarget } from './policy.js';

const STATUS = ['solved', 'best_effort', 'rejected'];
const AXES = { '': -1, x: 0, y: 1, z: 2 };

function fmt(x, digits) {
  return Number(x).toFixed(digits);
}

/** A number as Python's repr writes it (the reasons' words are reasons.py's). */
function py(x) {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  return String(x).replace(/e([+-])(\d)$/, 'e$10$2');
}

/** Python's format(x, '.6g'). */
function g6(x) {
  return py(Number(x.toPrecision(6))).replace(/\.0$/, '');
}

function toFloat64(value, length, what) {
  if (value == null || typeof value.length !== 'number' || value.length !== length) {
    throw new TypeError(`${what} must be ${length} numbers, got ${String(value)}`);
  }
  return value;
}

function flat(values, width, what) {
  if (values == null) return null;
  if (values.length > 0 && typeof values[0] === 'object' && values[0] !== null) {
    const out = new Float64Array(values.length * width);
    for (let i = 0; i < values.length; i++) {
      toFloat64(values[i], width, `${what}[${i}]`);
      for (let c = 0; c < width; c++) out[i * width + c] = values[i][c];
    }
    return out;
  }
  if (values.length % width !== 0) {
    throw new TypeError(`${what}: ${values.length} numbers is not a whole number of ${width}s`);
  }
  return values;
}

export class Solver {
  /** A solver from a parsed model file (model.js parseModel); use loadModel / fetchModel. */
  constructor(spec) {
    this._k = new Kernel(spec);
    this._net = spec.network ? new Net(spec) : null;
    this.robot = spec.robot;
    this.dof = spec.dof;
    this.jointNames = spec.jointNames;
    this.baseLink = spec.baseLink;
    this.tipLink = spec.tipLink;
    this.lower = spec.lower;
    this.upper = spec.upper;
    this.mode = spec.mode;
    this.heads = spec.heads;
    this.settings = spec.settings;
    this.reach = spec.reach;
    this._armReach = spec.reach;
    this._carry = spec.settings.carry_step;
    this._q = new Float64Array(this.dof);
    this._noWarm = { current: null, last: null, previous: null, freeAxis: undefined };
  }

  /** Put one target and its options into the kernel; returns the number of warm starts. */
  _setup(position, pi, quaternion, qi, opts) {
    const k = this._k;
    const n = this.dof;
    k.pt[0] = position[pi];
    k.pt[1] = position[pi + 1];
    k.pt[2] = position[pi + 2];
    k.hasQuat = quaternion != null;
    if (k.hasQuat) {
      for (let c = 0; c < 4; c++) k.quat[c] = quaternion[qi + c];
    }
    const axis = opts.freeAxis;
    if (axis === undefined || axis === null) {
      k.free = k.freeDefault;
    } else {
      if (!(axis in AXES)) throw new TypeError(`freeAxis must be "x", "y", "z" or "", got ${axis}`);
      k.free = AXES[axis];
    }
    const current = opts.current ?? null;
    const last = opts.last ?? null;
    const first = last ?? current;
    let nWarm = 0;
    if (first !== null) {
      toFloat64(first, n, 'a warm start (current / last)');
      for (let j = 0; j < n; j++) k.warm[j] = first[j];
      nWarm = 1;
      if (current !== null && last !== null && current !== last) {
        toFloat64(current, n, 'current');
        for (let j = 0; j < n; j++) k.warm[n + j] = current[j];
        nWarm = 2;
      }
    }
    const previous = opts.previous ?? null;
    if (previous !== null && last !== null && this._carries(k.hasQuat)) {
      // a stream's last step carried on (policy.carried), unless a joint moved more than carry_step
      toFloat64(previous, n, 'previous');
      let ok = true;
      for (let j = 0; j < n && ok; j++) ok = Math.abs(last[j] - previous[j]) <= this._carry;
      if (ok) {
        for (let j = nWarm * n - 1; j >= 0; j--) k.warm[n + j] = k.warm[j];
        for (let j = 0; j < n; j++) k.warm[j] = last[j] + (last[j] - previous[j]);
        nWarm++;
      }
    }
    if (current !== null) {
      toFloat64(current, n, 'current');
      for (let j = 0; j < n; j++) k.cur[j] = current[j];
    }
    return nWarm;
  }

  _carries(hasQuat) {
    if (!(this._carry > 0)) return false;
    const pose = this._k.free >= 0 ? 5 : 6;
    return hasQuat ? this.dof <= pose : this.dof <= 3;
  }

  /** One target: position [x, y, z] (m), quaternion [x, y, z, w] or null; opts: current (the
   * arm's joints), last (the previous answer), previous (the answer before last), freeAxis.
   * Returns {status, q, posErr, rotErr, reason, iterations}. */
  solve(position, quaternion = null, opts = this._noWarm) {
    toFloat64(position, 3, 'position');
    if (quaternion != null) toFloat64(quaternion, 4, 'quaternion');
    const nWarm = this._setup(position, 0, quaternion, 0, opts ?? this._noWarm);
    const k = this._k;
    const q = new Float64Array(this.dof);
    const status = solveTarget(k, this._net, nWarm, opts != null && opts.current != null, q);
    return {
      status: STATUS[status],
      q: status === 2 ? null : q,
      posErr: k.pe,
      rotErr: k.re,
      reason: status === 0 ? '' : this._reason(status, k.why, k.pe, k.re),
      iterations: k.total,
    };
  }

  /** Many targets, one after another: positions (N*3 flat, or N arrays of 3), quaternions (N*4,
   * N arrays of 4, or null); opts.current: the arm's joints for every target (dof numbers) or
   * per target (N*dof, or N arrays); opts.freeAxis. Returns typed arrays: q (N*dof, NaN where
   * rejected), status (0 solved, 1 best effort, 2 rejected), posErr, rotErr, iterations. */
  solveMany(positions, quaternions = null, opts = {}) {
    const P = flat(positions, 3, 'positions');
    const Q = flat(quaternions, 4, 'quaternions');
    const N = P.length / 3;
    if (Q !== null && Q.length !== 4 * N) {
      throw new TypeError(`${N} positions and ${Q.length / 4} quaternions`);
    }
    const n = this.dof;
    const cur = flat(opts.current ?? null, n, 'current');
    const perTarget = cur !== null && cur.length === N * n && N > 1;
    const curRow = cur === null ? null : new Float64Array(n);
    if (cur !== null && !perTarget) curRow.set(cur.subarray ? cur.subarray(0, n) : cur.slice(0, n));
    const one = { current: curRow, last: null, previous: null, freeAxis: opts.freeAxis };
    const out = {
      q: new Float64Array(N * n),
      status: new Uint8Array(N),
      posErr: new Float64Array(N),
      rotErr: new Float64Array(N),
      iterations: new Int32Array(N),
    };
    const k = this._k;
    const q = this._q;
    for (let i = 0; i < N; i++) {
      if (perTarget) for (let j = 0; j < n; j++) curRow[j] = cur[i * n + j];
      const nWarm = this._setup(P, 3 * i, Q, 4 * i, one);
      const status = solveTarget(k, this._net, nWarm, curRow !== null, q);
      out.q.set(q, i * n);
      out.status[i] = status;
      out.posErr[i] = k.pe;
      out.rotErr[i] = k.re;
      out.iterations[i] = k.total;
    }
    return out;
  }

  /** The tool's pose for joints q: {position [3], rotation (row-major 9), quaternion [x,y,z,w]}. */
  forward(q) {
    toFloat64(q, this.dof, 'joints');
    const k = this._k;
    fk(k, q, k.J, false);
    const R = Array.from(k.R);
    return { position: Array.from(k.p), rotation: R, quaternion: matrixToQuat(R) };
  }

  /** Poses for many joint sets (N*dof flat): {positions (N*3), rotations (N*9, row-major)}. */
  forwardMany(Q) {
    const n = this.dof;
    const flatQ = flat(Q, n, 'joints');
    const N = flatQ.length / n;
    const positions = new Float64Array(3 * N);
    const rotations = new Float64Array(9 * N);
    const k = this._k;
    const q = this._q;
    for (let i = 0; i < N; i++) {
      for (let j = 0; j < n; j++) q[j] = flatQ[i * n + j];
      fk(k, q, k.J, false);
      positions.set(k.p, 3 * i);
      rotations.set(k.R, 9 * i);
    }
    return { positions, rotations };
  }

  /** The network's candidates (heads * dof), before any refinement. */
  candidates(position, quaternion = null, current = null) {
    if (this._net === null) throw new Error('this solver has no network');
    if (this.mode === 'pose' && quaternion == null) {
      throw new TypeError('a pose network needs the target orientation (a quaternion)');
    }
    const k = this._k;
    this._setup(toFloat64(position, 3, 'position'), 0, quaternion, 0, this._noWarm);
    if (quaternion != null) quatToMatrix(toFloat64(quaternion, 4, 'quaternion'), k.Rt);
    if (current != null) k.cur.set(toFloat64(current, this.dof, 'current'));
    const out = new Float64Array(this.heads * this.dof);
    netForward(this._net, k.pt, k.Rt, k.cur, current != null, out);
    return out;
  }

  /** The words for a status (reasons.py's). */
  _reason(status, code, pe, re) {
    const V = this._k.V;
    const p = this._k.pt;
    const o = this._k.origin;
    let text;
    if (code === V.POSITION_NOT_FINITE) text = `position is not finite: [${Array.from(p, py).join(', ')}]`;
    else if (code === V.ORIENTATION_NOT_FINITE) {
      text = `orientation is not finite: [${Array.from(this._k.quat, py).join(', ')}]`;
    } else if (code === V.NOT_UNIT) {
      const qn = Math.hypot(...this._k.quat);
      text =
        `orientation quaternion is not unit length (norm ${g6(qn)}; within ` +
        `${g6(this._k.qtol)} of 1 is taken; x y z w)`;
    } else if (code === V.OUT_OF_REACH || code === V.TOO_FAR) {
      const d = Math.hypot(p[0] - o[0], p[1] - o[1], p[2] - o[2]);
      text =
        `${code === V.OUT_OF_REACH ? 'outside the reach' : 'far outside the reach'}: the position ` +
        `is ${d < 1e6 ? fmt(d, 3) : d.toPrecision(3)} m from the arm's first joint; ` +
        `${this.robot || 'the arm'} reaches at most ${fmt(this._armReach, 3)} m` +
        (code === V.OUT_OF_REACH ? '' : ' (positions are in metres)');
    } else if (code === V.NOT_FOUND) {
      text = 'not found: no answer within tolerance (the target is inside the reach bound)';
    } else text = `unknown verdict ${code}`;
    if (status === 2) return text;
    return `${text}; closest reached: ${fmt(pe * 1000, 2)} mm, ${fmt((re * 180) / Math.PI, 2)} deg`;
  }
}
