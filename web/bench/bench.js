// The web bench: the same targets through this package's JavaScript solver (src/ik.js),
// closed-chain-ik and three.js's CCDIKSolver, one target at a time on one thread, each peer with
// the same time budget per target. Runs in Node (node.mjs) and in a page (page.js, bench.html).
//
// Each solver's run is timed as a whole (page timers are coarsened to 0.1 ms: single solves are
// not timed), after a warm-up on the first targets (the JIT); this package's solver is timed on
// the same targets a second time too (second_pass), its code compiled by then (a run of 5,000
// targets lasts a few tenths of a second, much of the first spent while the engine is still
// compiling). Every answer is judged here by the bench's own forward kinematics (chain.js), and
// the answers are returned so that Python can judge them again by PyBullet's
// (robot_ik_nn/bench/web.py): solved = within 1 mm / 0.01 rad and inside the joint limits;
// CCDIKSolver, which aims positions only, on the position alone.

import { loadModel } from '../src/ik.js';
import { CcdPeer } from './ccd.js';
import { ClosedChainPeer } from './closed_chain.js';
import { POS_TOL, ROT_TOL, judge, quatToMatrix, readChain } from './chain.js';

export const FORMAT = 'robot_ik_nn.web_bench/1';
export const SOLVERS = ['robot_ik_nn', 'closed_chain_ik', 'three_ccdik'];

class Ours {
  constructor(model, chain) {
    this.name = 'robot_ik_nn';
    this.solver = loadModel(model);
    this.label = model.network
      ? 'robot_ik_nn (JavaScript: network candidates, then LM)'
      : 'robot_ik_nn (JavaScript, no network: mid-range and restarts, LM)';
    this.verdict = chain.pose ? 'pose' : 'position';
    this.claimed = 0;
  }

  solve(position, quaternion) {
    const answer = this.solver.solve(position, quaternion);
    this.last = answer.status === 'solved';
    if (this.last) this.claimed++;
    return answer.q;
  }
}

function make(name, model, chain, budgetMs, now) {
  if (name === 'robot_ik_nn') return new Ours(model, chain);
  if (name === 'closed_chain_ik') return new ClosedChainPeer(chain, { budgetMs, now });
  if (name === 'three_ccdik') return new CcdPeer(chain, { budgetMs, now });
  throw new Error(`no solver named ${name} (${SOLVERS.join(', ')})`);
}

/** The targets of a targets file object: {positions: [[x,y,z]], quaternions: [[x,y,z,w]] or
 * null}, checked. */
export function readTargets(targets, pose) {
  const P = targets.positions;
  const Q = targets.quaternions ?? null;
  if (!Array.isArray(P) || P.length === 0 || P.some((p) => !Array.isArray(p) || p.length !== 3)) {
    throw new Error('the targets file has no positions (an array of [x, y, z])');
  }
  if (pose && (!Array.isArray(Q) || Q.length !== P.length || Q.some((q) => q.length !== 4))) {
    throw new Error(`a pose model needs a quaternion per target: ${P.length} positions, ${Q ? Q.length : 'no'} quaternions`);
  }
  return { P, Q: pose ? Q : null, R: pose ? Q.map(quatToMatrix) : null };
}

/** The clock's smallest step (ms): 0.1 in a page that is not cross-origin isolated. */
function resolution(now) {
  let smallest = Infinity;
  for (let i = 0; i < 20; i++) {
    const a = now();
    let b = now();
    while (b === a) b = now();
    smallest = Math.min(smallest, b - a);
  }
  return smallest;
}

/** Run the bench: model (model.web.json's object or text), targets (the targets file's
 * object); budgetMs per target for the peers; warmup: targets solved once before the timed run.
 * Returns the result object (answers included, per solver). */
export async function runBench({
  model,
  targets,
  budgetMs = 5,
  solvers = SOLVERS,
  warmup = 50,
  now = () => performance.now(),
  log = () => {},
  runtime = {},
}) {
  const modelObj = typeof model === 'string' ? JSON.parse(model) : model;
  const chain = readChain(modelObj);
  const { P, Q, R } = readTargets(targets, chain.pose);
  const n = P.length;
  const result = {
    format: FORMAT,
    robot: chain.robot,
    dof: chain.dof,
    targets: n,
    budget_ms: budgetMs,
    warmup: Math.min(warmup, n),
    pos_tol: POS_TOL,
    rot_tol: ROT_TOL,
    timer_resolution_ms: resolution(now),
    runtime,
    solvers: {},
  };
  for (const name of solvers) {
    let solver;
    try {
      solver = make(name, modelObj, chain, budgetMs, now);
    } catch (err) {
      result.solvers[name] = { name, skipped: `cannot run here: ${err.message}` };
      continue;
    }
    log(`${name}: warm-up on ${result.warmup} targets`);
    for (let i = 0; i < result.warmup; i++) solver.solve(P[i], Q ? Q[i] : null, R ? R[i] : null);
    if (solver.claimed !== undefined) solver.claimed = 0;
    if (solver.attempts !== undefined) solver.attempts = 0;
    if (solver.errors !== undefined) solver.errors = 0;
    await new Promise((resolve) => setTimeout(resolve, 0)); // let a page draw, a log print
    log(`${name}: ${n} targets`);
    const answers = new Array(n);
    const claimed = solver.claimed === undefined ? null : new Array(n);
    const started = now();
    for (let i = 0; i < n; i++) {
      const q = solver.solve(P[i], Q ? Q[i] : null, R ? R[i] : null);
      answers[i] = q == null ? null : Array.from(q);
      if (claimed !== null) claimed[i] = solver.last ? 1 : 0;
    }
    const seconds = (now() - started) / 1000;
    // this package's solver: the same targets again, timed the same way (the engine has by then
    // compiled the solver's code to its top tier; the first pass includes that compiling), and
    // its answers compared with the first pass's (the solver is deterministic)
    let second = null;
    if (name === 'robot_ik_nn') {
      const claimedFirst = solver.claimed ?? null;
      const again = new Array(n);
      const began = now();
      for (let i = 0; i < n; i++) {
        const q = solver.solve(P[i], Q ? Q[i] : null, R ? R[i] : null);
        again[i] = q == null ? null : Array.from(q);
      }
      const secondSeconds = (now() - began) / 1000;
      let same = 0;
      for (let i = 0; i < n; i++) {
        const a = answers[i];
        const b = again[i];
        if (a === null ? b === null : b !== null && a.every((v, j) => Object.is(v, b[j]))) same++;
      }
      second = { seconds: secondSeconds, same_answers: same };
      if (claimedFirst !== null) solver.claimed = claimedFirst; // the count is the first pass's
    }
    const pose = solver.verdict === 'pose';
    const judged = answers.map((q, i) => (judge(chain, q, P[i], pose ? R[i] : null, pose).solved ? 1 : 0));
    const solved = judged.reduce((a, b) => a + b, 0);
    result.solvers[name] = {
      name,
      label: solver.label,
      verdict: solver.verdict,
      seconds,
      solved,
      solve_rate: solved / n,
      solved_per_s: seconds > 0 ? solved / seconds : null,
      us_per_target: (1e6 * seconds) / n,
      second_pass: second, // {seconds, same_answers} for this package's solver, else null
      claimed_solved: solver.claimed ?? null,
      attempts: solver.attempts ?? null,
      errors: solver.errors ?? null,
      answers, // per target: the joints, or null
      judged_solved: judged, // per target: 1 where the bench's judge says solved
      claimed, // per target (this package's solver): 1 where it said solved
    };
    log(`${name}: ${solved} of ${n} solved in ${seconds.toFixed(3)} s`);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return result;
}
