// The solving policy: the port of robot_ik_nn/ik/policy.py's solve_target, verdicts.check and
// candidates.py (the network's candidates, the CLOSE rule). Left out: the collision check.
// The target is in k.pt (and k.quat with k.hasQuat), warm starts in k.warm, the arm's joints in
// k.cur; solveTarget writes the answer into q and returns the status (0 solved, 1 best effort,
// 2 rejected), with k.why (a verdict code), k.pe, k.re and k.total (LM iterations).

import { quatToMatrix } from './forward.js';
import {
  FAR,
  FAR_TRACKED,
  NEAR,
  TRACK,
  clamp,
  descend,
  pymod,
  refine,
  residual,
  secondary,
  weighted,
} from './kernel.js';
import { nearSeed, restartSeed } from './random.js';
import { netForward } from './network.js';

/** The verdict on the target in k (verdicts.check). */
export function verdict(k) {
  const V = k.V;
  const p = k.pt;
  for (let i = 0; i < 3; i++) if (!Number.isFinite(p[i])) return V.POSITION_NOT_FINITE;
  if (k.hasQuat) {
    const q = k.quat;
    for (let i = 0; i < 4; i++) if (!Number.isFinite(q[i])) return V.ORIENTATION_NOT_FINITE;
    const norm = Math.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2);
    if (!(Math.abs(norm - 1) <= k.qtol)) return V.NOT_UNIT;
  }
  const o = k.origin;
  const d = Math.sqrt((p[0] - o[0]) ** 2 + (p[1] - o[1]) ** 2 + (p[2] - o[2]) ** 2);
  if (d > k.tooFar) return V.TOO_FAR;
  if (d > k.reach) return V.OUT_OF_REACH;
  return V.OK;
}

function midRange(k, q) {
  for (let j = 0; j < k.n; j++) q[j] = k.cont[j] === 1 ? 0 : (k.lo[j] + k.hi[j]) / 2;
}

/** Continuous joints of q turned by whole turns to lie within pi of warm row 0. */
function beside(k, q) {
  for (let j = 0; j < k.n; j++) {
    if (k.cont[j] === 1) {
      const near = k.warm[j];
      q[j] = near + pymod(q[j] - near + Math.PI, 2 * Math.PI) - Math.PI;
    }
  }
}

function copyRow(src, row, n, dst) {
  for (let j = 0; j < n; j++) dst[j] = src[row * n + j];
}

function nextBest(scores) {
  let h = 0;
  for (let i = 1; i < scores.length; i++) if (scores[i] < scores[h]) h = i;
  scores[h] = Infinity;
  return h;
}

/** The network's candidates into k.netq, none of them placed yet (NaN scores). */
function proposals(k, net, hasCur) {
  netForward(net, k.pt, k.Rt, k.cur, hasCur, k.netq);
  k.scores.fill(NaN);
}

/** Every candidate not placed yet (NaN score) placed: scored by where its tool lands. */
function scoreTheRest(k, q) {
  const scores = k.scores;
  for (let h = 0; h < k.heads; h++) {
    if (Number.isNaN(scores[h])) {
      copyRow(k.netq, h, k.n, q);
      clamp(k, q);
      residual(k, q, k.e, k.J, false);
      scores[h] = weighted(k.pe, k.re, k.rotW);
    }
  }
}

/** The first candidate, in head order, whose tool lands within CLOSE, else the closest, into q
 * with its residual and Jacobian in k.e and k.J, its cost and errors in k.cost, k.pe, k.re. */
function firstCandidate(k, q) {
  const n = k.n;
  const scores = k.scores;
  const keepQ = k.keep;
  let closest = -1, bestScore = Infinity, bc = Infinity, bpe = Infinity, bre = Infinity;
  for (let h = 0; h < k.heads; h++) {
    copyRow(k.netq, h, n, q);
    clamp(k, q);
    residual(k, q, k.e, k.J, true);
    scores[h] = weighted(k.pe, k.re, k.rotW);
    if (scores[h] < k.close) {
      scores[h] = Infinity;
      return;
    }
    if (closest < 0 || scores[h] < bestScore) {
      closest = h;
      bestScore = scores[h];
      bc = k.cost;
      bpe = k.pe;
      bre = k.re;
      keepQ.set(q);
      k.eNew.set(k.e);
      k.JNew.set(k.J);
    }
  }
  scores[closest] = Infinity;
  q.set(keepQ);
  k.e.set(k.eNew);
  k.J.set(k.JNew);
  k.cost = bc;
  k.pe = bpe;
  k.re = bre;
}

// solveTarget's rarer parts are functions of their own: the engine compiles a function to its
// top tier after it has run its own code about as often as a threshold times its size, and a
// large function that runs only a part of itself per target gets there late (in chromium the
// whole policy ran at its middle tier for the first ~15,000 targets). The same operations in the
// same order as in one function.

/** iterations 0: the network's best candidate (or the warm start, or mid-range) as it lands. */
function withoutRefining(k, net, nWarm, hasCur, haveNet, missed, q) {
  const n = k.n;
  if (haveNet) {
    proposals(k, net, hasCur);
    scoreTheRest(k, q);
    copyRow(k.netq, nextBest(k.scores), n, q);
  } else if (nWarm > 0) {
    copyRow(k.warm, 0, n, q);
  } else {
    midRange(k, q);
  }
  clamp(k, q);
  residual(k, q, k.e, k.J, false);
  const ok = k.pe <= k.posTol && k.re <= k.rotTol;
  k.why = ok ? k.V.OK : missed;
  return ok ? 0 : 1;
}

/** Attempt 1, tracking, from warm row 0 into q: LM from it, then seeds around it, then the
 * self-motion away from the limits; the LM iterations (-1: the warm start is not close to the
 * target, nothing tried), the errors reached in k.pe and k.re. */
function track(k, q, iters, restarts, restartIters) {
  const posTol = k.posTol, rotTol = k.rotTol;
  copyRow(k.warm, 0, k.n, q);
  clamp(k, q);
  residual(k, q, k.e, k.J, true);
  if (weighted(k.pe, k.re, k.rotW) >= k.warmRadius) return -1;
  const wide = restarts > 0 ? k.trackSearch : 0;
  let used = descend(k, q, iters, TRACK);
  if (k.pe > posTol || k.re > rotTol) used += refine(k, q, restartIters, FAR_TRACKED);
  const rungs = k.nearRungs;
  for (let t = 0; t < k.nearTries * rungs.length; t++) {
    if (k.pe <= posTol && k.re <= rotTol) break;
    const spread = rungs[Math.floor(t / k.nearTries)] * wide;
    if (spread <= k.nearSpread) continue; // none without restarts (wide 0)
    k.spread = spread;
    nearSeed(k, 0, q);
    used += refine(k, q, restartIters, FAR_TRACKED);
  }
  const pe = k.pe;
  const re = k.re;
  if (k.trackLimits > 0 && pe <= posTol && re <= rotTol) {
    used += secondary(k, q);
    if (!k.moved) {
      k.pe = pe; // the errors before the self-motion, which did not move q
      k.re = re;
    }
  }
  return used;
}

/** Outside the reach, after the attempts: from k.best (score bestScore, errors in k.pe and
 * k.re), each joint at one limit tries the other, then LM refines on (far from the target it
 * creeps); k.best and its errors (k.pe, k.re) updated where better; the LM iterations. */
function closestFar(k, q, bestScore, restartIters) {
  const n = k.n;
  const w = k.rotW;
  const best = k.best;
  let bpe = k.pe, bre = k.re, total = 0;
  // a closest pose often leans on limits: each joint at one limit tries the other one
  let better = true;
  while (better) {
    better = false;
    for (let j = 0; j < n; j++) {
      const atLo = best[j] - k.lo[j] < 1e-9;
      const atHi = k.hi[j] - best[j] < 1e-9;
      if (k.cont[j] === 1 || !(atLo || atHi)) continue;
      q.set(best);
      q[j] = atLo ? k.hi[j] : k.lo[j];
      total += refine(k, q, restartIters, FAR);
      const s = weighted(k.pe, k.re, w);
      if (s < bestScore - 1e-6) {
        bestScore = s;
        bpe = k.pe;
        bre = k.re;
        better = true;
        best.set(q);
      }
    }
  }
  q.set(best); // far from the target LM creeps: refine on
  total += refine(k, q, k.farPolish, FAR);
  const s = weighted(k.pe, k.re, w);
  if (s < bestScore) {
    bpe = k.pe;
    bre = k.re;
    best.set(q);
  }
  k.pe = bpe;
  k.re = bre;
  return total;
}

/** Solve the target in k into q (policy.solve_target without the collision check). */
export function solveTarget(k, net, nWarm, hasCur, q) {
  const V = k.V;
  const n = k.n;
  const code = verdict(k);
  k.total = 0;
  if (code > 0 && code < V.REJECTS) {
    q.fill(NaN);
    k.why = code;
    k.pe = NaN;
    k.re = NaN;
    return 2;
  }
  const missed = code === V.OK ? V.NOT_FOUND : code;
  k.streamReady = false; // started from this target's numbers when first drawn from
  const hasQuat = k.hasQuat;
  k.hasRot = hasQuat;
  if (hasQuat) quatToMatrix(k.quat, k.Rt);
  const w = k.rotW, posTol = k.posTol, rotTol = k.rotTol;
  let iters = k.iters;
  const best = k.best;
  const scores = k.scores;
  const haveNet = net !== null && k.useNet && (hasQuat || !k.needsRot);
  if (iters === 0) return withoutRefining(k, net, nWarm, hasCur, haveNet, missed, q);
  let bestScore = Infinity, bpe = NaN, bre = NaN, total = 0;
  let firstWarm = 0;
  let restarts = k.restarts;
  let restartIters = k.restartIters;
  const far = code === V.OUT_OF_REACH;
  let stale = 0;
  const patience = k.farPatience;
  if (far) {
    restarts = k.farRestarts;
    iters = Math.max(iters, k.farIters);
    restartIters = iters;
  }
  const netEnd = 1 + (haveNet ? k.heads : 0);
  const attempts = netEnd + 1 + nWarm + restarts;
  for (let attempt = 0; attempt < attempts; attempt++) {
    let used = 0;
    let pe, re;
    if (attempt === 0) {
      // 1. tracking: a warm start already close to the target
      if (nWarm === 0) continue;
      used = track(k, q, iters, restarts, restartIters);
      if (used < 0) continue;
      firstWarm = 1;
      pe = k.pe;
      re = k.re;
    } else if (attempt < netEnd) {
      // 2. the network's candidates, the first close one (or the closest), then closest first
      if (attempt === 1) {
        proposals(k, net, hasCur);
        firstCandidate(k, q);
        used = descend(k, q, iters, NEAR);
      } else {
        scoreTheRest(k, q);
        copyRow(k.netq, nextBest(scores), n, q);
        used = refine(k, q, iters, NEAR);
      }
      pe = k.pe;
      re = k.re;
    } else if (attempt === netEnd) {
      // 3. without network or warm start: mid-range
      if (haveNet || nWarm > 0) continue;
      midRange(k, q);
      used = refine(k, q, iters, FAR);
      pe = k.pe;
      re = k.re;
    } else if (attempt <= netEnd + nWarm) {
      // 3. the other warm starts
      const row = attempt - netEnd - 1;
      if (row < firstWarm) continue;
      copyRow(k.warm, row, n, q);
      used = refine(k, q, iters, NEAR);
      pe = k.pe;
      re = k.re;
    } else {
      // 4. restarts: alternately partial (from the best so far) and uniformly random
      if (far && stale >= patience) break;
      stale++;
      const r = attempt - netEnd - 1 - nWarm;
      restartSeed(k, best, r % 2 === 0 && code === V.OK, q);
      used = refine(k, q, restartIters, FAR);
      pe = k.pe;
      re = k.re;
    }
    total += used;
    const exact = pe <= posTol && re <= rotTol;
    const score = weighted(pe, re, w);
    if (!(exact || score < bestScore)) continue;
    if (exact) {
      if (nWarm > 0) beside(k, q);
      k.why = V.OK;
      k.pe = pe;
      k.re = re;
      k.total = total;
      return 0;
    }
    if (score < bestScore - 1e-7) stale = 0;
    bestScore = score;
    bpe = pe;
    bre = re;
    best.set(q);
  }
  if (far && bestScore < Infinity) {
    k.pe = bpe;
    k.re = bre;
    total += closestFar(k, q, bestScore, restartIters);
    bpe = k.pe;
    bre = k.re;
  }
  q.set(best);
  if (nWarm > 0) beside(k, q);
  k.why = missed;
  k.pe = bpe;
  k.re = bre;
  k.total = total;
  return 1;
}
