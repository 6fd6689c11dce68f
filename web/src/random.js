// The restarts' random numbers: the port of kernel.py's splitmix64 stream, on two 32-bit halves
// (no BigInt: a restart draws a number per joint), the same numbers as the Python kernel's for
// the same settings and target; the seeds drawn from it (kernel.restart_seed, near_seed).

import { clamp } from './kernel.js';

// the high and low halves of the last 64-bit result (a typed array: a number stored in a module
// variable would be boxed, an allocation per store)
const Z = new Uint32Array(2);

function mulhi(a, b) {
  const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
  const mid1 = a1 * b0 + ((a0 * b0) >>> 16);
  const mid2 = a0 * b1 + (mid1 & 0xffff);
  return a1 * b1 + (mid1 >>> 16) + (mid2 >>> 16);
}

function mul(ah, al, bh, bl) {
  Z[1] = Math.imul(al, bl);
  Z[0] = mulhi(al, bl) + Math.imul(ah, bl) + Math.imul(al, bh);
}

function mix(h, l) {
  // z ^= z >> 30; z *= 0xBF58476D1CE4E5B9
  l = (l ^ ((l >>> 30) | (h << 2))) >>> 0;
  h = (h ^ (h >>> 30)) >>> 0;
  mul(h, l, 0xbf58476d, 0x1ce4e5b9);
  // z ^= z >> 27; z *= 0x94D049BB133111EB
  l = (Z[1] ^ ((Z[1] >>> 27) | (Z[0] << 5))) >>> 0;
  h = (Z[0] ^ (Z[0] >>> 27)) >>> 0;
  mul(h, l, 0x94d049bb, 0x133111eb);
  // z ^= z >> 31
  l = (Z[1] ^ ((Z[1] >>> 31) | (Z[0] << 1))) >>> 0;
  h = (Z[0] ^ (Z[0] >>> 31)) >>> 0;
  Z[0] = h;
  Z[1] = l;
}

function add(ah, al, bh, bl) {
  const lo = al + bl;
  Z[1] = lo;
  Z[0] = ah + bh + (lo >= 4294967296 ? 1 : 0);
}

const GOLD_H = 0x9e3779b9;
const GOLD_L = 0x7f4a7c15;

/** The random state for the current target (kernel.start_stream): from the settings' seed and
 * the target's own numbers, so the same target draws the same numbers anywhere. */
function startStream(k) {
  let h = k.rngHi;
  let l = k.rngLo;
  const count = k.hasQuat ? 7 : 3;
  for (let i = 0; i < count; i++) {
    const v = i < 3 ? k.pt[i] : k.quat[i - 3];
    const x = Math.trunc(v * 1099511627776); // an int64, as two's complement halves
    const xh = Math.floor(x / 4294967296);
    const xl = x - xh * 4294967296;
    add(h, l, GOLD_H, GOLD_L);
    add(Z[0], Z[1], xh >>> 0, xl >>> 0);
    mix(Z[0], Z[1]);
    h = Z[0];
    l = Z[1];
  }
  k.sHi = h;
  k.sLo = l;
  k.streamReady = true;
}

/** A uniform number in [0, 1) from the target's stream. */
export function uniform(k) {
  if (!k.streamReady) startStream(k);
  add(k.sHi, k.sLo, GOLD_H, GOLD_L);
  k.sHi = Z[0];
  k.sLo = Z[1];
  mix(Z[0], Z[1]);
  return (Z[0] * 2097152 + (Z[1] >>> 11)) * (1 / 9007199254740992);
}

/** Uniformly random joints, or (partial) best with its joints stuck at a limit and a random
 * half of the others drawn anew, into out. */
export function restartSeed(k, best, partial, out) {
  for (let j = 0; j < k.n; j++) {
    let lo = k.lo[j];
    let hi = k.hi[j];
    if (k.cont[j] === 1) {
      lo = -Math.PI;
      hi = Math.PI;
    }
    const fresh = lo + uniform(k) * (hi - lo);
    if (!partial) {
      out[j] = fresh;
      continue;
    }
    const stuck = Math.abs(best[j] - lo) < 1e-9 || Math.abs(best[j] - hi) < 1e-9;
    out[j] = stuck || uniform(k) < 0.5 ? fresh : best[j];
  }
}

/** base (row `row` of k.warm) with every joint moved by up to k.spread, into the limits. */
export function nearSeed(k, row, out) {
  const spread = k.spread;
  const warm = k.warm;
  for (let j = 0; j < k.n; j++) out[j] = warm[row * k.n + j] + spread * (2 * uniform(k) - 1);
  clamp(k, out);
}
