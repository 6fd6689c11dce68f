// How fast the JavaScript solver is in Node, one target at a time on one thread:
//
//   node web/bench/speed.mjs MODEL.web.json [targets=10000] [seed=1]
//
// Targets are poses of random joint sets (inside the limits, by the solver's own forward
// kinematics). Prints one JSON line: targets/s and solved/s by the wall clock and by this
// process's CPU time (on a loaded machine the CPU time is the fairer figure), microseconds per
// target (median, p99), the network's forward pass alone, the solve rate, and a tracked stream's
// median (each target 0.005 rad per joint from the last, solved from its answer). A figure, not a
// test: the package's benchmarks (robot-ik-nn bench) are where claims are made.

import { fetchModel } from '../src/ik.js';

const [file, countArg, seedArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node web/bench/speed.mjs MODEL.web.json [targets] [seed]');
  process.exit(2);
}
const count = Number(countArg ?? 10000);
let state = Number(seedArg ?? 1);
const rnd = () => {
  state = (state * 48271) % 2147483647;
  return state / 2147483647;
};

const solver = await fetchModel(file);
const n = solver.dof;
const P = new Float64Array(3 * count);
const Q = new Float64Array(4 * count);
for (let i = 0; i < count; i++) {
  const q = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    const lo = Math.max(solver.lower[j], -Math.PI);
    const hi = Math.min(solver.upper[j], Math.PI);
    q[j] = lo + rnd() * (hi - lo);
  }
  const t = solver.forward(q);
  P.set(t.position, 3 * i);
  Q.set(t.quaternion, 4 * i);
}
const pose = solver.mode !== 'position';
const position = new Float64Array(3);
const quaternion = new Float64Array(4);

function pass(times) {
  let solved = 0;
  for (let i = 0; i < count; i++) {
    for (let c = 0; c < 3; c++) position[c] = P[3 * i + c];
    for (let c = 0; c < 4; c++) quaternion[c] = Q[4 * i + c];
    const t0 = times ? performance.now() : 0;
    const a = solver.solve(position, pose ? quaternion : null);
    if (times) times[i] = performance.now() - t0;
    if (a.status === 'solved') solved++;
  }
  return solved;
}

pass(null); // warm up: V8 optimises the hot functions
const times = new Float64Array(count);
const cpu0 = process.cpuUsage();
const wall0 = performance.now();
const solved = pass(null);
const wall = (performance.now() - wall0) / 1000;
const cpu = process.cpuUsage(cpu0);
const cpuS = (cpu.user + cpu.system) / 1e6;
pass(times);
const sorted = Array.from(times).sort((a, b) => a - b);
// tracking: a stream of targets from joints moving 0.005 rad per joint a step, each solved from
// the answer before it (current and last), as a page follows a dragged target
const steps = 2000;
const walk = new Float64Array(n);
for (let j = 0; j < n; j++) walk[j] = (solver.lower[j] + solver.upper[j]) / 2;
const TP = [];
const TQ = [];
for (let i = 0; i < steps; i++) {
  for (let j = 0; j < n; j++) {
    walk[j] = Math.min(Math.max(walk[j] + 0.005 * (rnd() < 0.5 ? -1 : 1), solver.lower[j]), solver.upper[j]);
  }
  const t = solver.forward(walk);
  TP.push(t.position);
  TQ.push(t.quaternion);
}
let last = solver.solve(TP[0], pose ? TQ[0] : null).q;
const tracked = new Float64Array(steps);
let trackedSolved = 0;
for (let round = 0; round < 2; round++) {
  for (let i = 1; i < steps; i++) {
    const t0 = performance.now();
    const a = solver.solve(TP[i], pose ? TQ[i] : null, { current: last, last });
    tracked[i] = performance.now() - t0;
    if (a.status === 'solved') {
      last = a.q;
      if (round === 1) trackedSolved++;
    }
  }
}
const trackedSorted = Array.from(tracked.subarray(1)).sort((a, b) => a - b);
let net = null;
if (solver.heads > 0 && solver.mode) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    solver.candidates(P.subarray(3 * i, 3 * i + 3), pose ? Q.subarray(4 * i, 4 * i + 4) : null);
  }
  const c = process.cpuUsage(c0);
  net = ((c.user + c.system) / count).toFixed(2);
}
console.log(
  JSON.stringify({
    model: file,
    robot: solver.robot,
    targets: count,
    solved,
    solve_rate: solved / count,
    targets_per_s_wall: Math.round(count / wall),
    solved_per_s_wall: Math.round(solved / wall),
    targets_per_s_cpu: Math.round(count / cpuS),
    solved_per_s_cpu: Math.round(solved / cpuS),
    us_median: +(sorted[count >> 1] * 1000).toFixed(2),
    us_p99: +(sorted[Math.floor(count * 0.99)] * 1000).toFixed(2),
    network_us_cpu: net === null ? null : +net,
    tracking_us_median: +(trackedSorted[trackedSorted.length >> 1] * 1000).toFixed(2),
    tracking_solved: trackedSolved / (steps - 1),
    node: process.version,
  }),
);
