// The crowd page: N arms (?n=, default 100), each following its own moving target, a new one
// every frame. The targets are reachable: the tool's pose at joints that move smoothly within
// the limits (sines of seeded random frequencies and phases, ?seed=), made here each frame. Each
// arm is solved from its own last answers (a stream); the frame's IK time, all the arms' solves
// between two performance.now() calls, is drawn and kept in window.__crowd = {frames, ikMs}, with
// the frame's LM iterations (all arms) in iterations: a slow frame that did no more work waited.
// ?frames=F&post=/result: after F frames the timings are POSTed there as JSON (robot-ik-nn
// bench --web measures the crowd so); an error is posted as {error}.

import {
  THREE,
  loadArm,
  loadSolver,
  makeMarker,
  makeScene,
  midJoints,
  param,
  quantile,
  reportUncaught,
  setJoints,
  showError,
} from './common.js';

const state = { ready: false, error: null, n: 0, frames: 0, ikMs: [], iterations: [], notSolved: 0 };
window.__crowd = state;
reportUncaught(state);

const $ = (id) => document.getElementById(id);
const DT = 1 / 60; // the targets' time step per frame (s): the same motion at any frame rate
const KEEP = 100000; // frames of timing kept

function seeded(seed) {
  // mulberry32: a small seeded generator, so that ?seed= gives the same motions
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** After ?frames= frames, the timings POSTed to ?post= (once); an error is posted too. */
function postWhenDone(error) {
  const post = param('post', '');
  if (!post || state.posted) return;
  const frames = Number(param('frames', '0'));
  if (!error && state.frames < frames) return;
  state.posted = true;
  const body = error
    ? { error }
    : { n: state.n, frames: state.frames, ikMs: state.ikMs, iterations: state.iterations,
        notSolved: state.notSolved, userAgent: navigator.userAgent };
  fetch(post, { method: 'POST', body: JSON.stringify(body) });
}

function count() {
  const text = param('n', '100');
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 5000) {
    throw new Error(`?n= must be a whole number of arms from 1 to 5000, got "${text}"`);
  }
  return n;
}

function drawChart(canvas, ikMs) {
  const g = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  const shown = ikMs.slice(-w);
  const top = Math.max(10, ...shown) * 1.1;
  g.clearRect(0, 0, w, h);
  g.strokeStyle = '#d33';
  for (const ms of [4, 8]) {
    const y = h - (ms / top) * h;
    g.beginPath();
    g.moveTo(0, y);
    g.lineTo(w, y);
    g.stroke();
  }
  g.fillStyle = '#3465a4';
  shown.forEach((ms, i) => {
    const bar = (ms / top) * h;
    g.fillRect(i, h - bar, 1, bar);
  });
  g.fillStyle = '#333';
  g.fillText(`${top.toFixed(1)} ms`, 4, 12);
}

async function main() {
  const n = count();
  const solver = await loadSolver();
  const robot = await loadArm(solver);
  const dof = solver.dof;
  const reach = solver.reach > 0 ? solver.reach : 1;
  const cols = Math.ceil(Math.sqrt(n));
  const spacing = reach * 2.2;
  const { renderer, scene, world, camera } = makeScene($('view'), reach * cols);
  const random = seeded(Number(param('seed', '1')) || 1);

  // the motions: per arm and joint a centre, an amplitude, a frequency and a phase
  const mid = midJoints(solver);
  const centre = new Float64Array(n * dof);
  const amp = new Float64Array(n * dof);
  const freq = new Float64Array(n * dof);
  const phase = new Float64Array(n * dof);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < dof; j++) {
      const lo = Math.max(solver.lower[j], -Math.PI);
      const hi = Math.min(solver.upper[j], Math.PI);
      const a = Math.min(0.4 * (hi - lo), 1.2) * (0.5 + 0.5 * random());
      centre[i * dof + j] = mid[j] + (random() - 0.5) * (hi - lo - 2 * a) * 0.8;
      amp[i * dof + j] = a;
      freq[i * dof + j] = 2 * Math.PI * (0.05 + 0.2 * random());
      phase[i * dof + j] = 2 * Math.PI * random();
    }
  }

  const arms = [];
  const markers = [];
  for (let i = 0; i < n; i++) {
    const arm = i === 0 ? robot : robot.clone();
    const x = (i % cols) * spacing - ((cols - 1) * spacing) / 2;
    const y = Math.floor(i / cols) * spacing - ((Math.ceil(n / cols) - 1) * spacing) / 2;
    arm.position.set(x, y, 0);
    world.add(arm);
    const marker = makeMarker(reach * 0.08);
    arm.add(marker); // in the arm's root frame: the targets are in its base link's frame
    arms.push({
      arm,
      q: Float64Array.from(mid),
      last: null,
      previous: null,
      base: arm.links[solver.baseLink] ?? arm,
    });
    markers.push(marker);
    setJoints(arm, solver.jointNames, mid);
  }
  const base0 = robot.links[solver.baseLink] ?? robot;
  robot.updateWorldMatrix(true, true);
  const baseInRoot = new THREE.Matrix4().copy(robot.matrixWorld).invert().multiply(base0.matrixWorld);

  const size = spacing * cols;
  camera.position.set(-size * 0.05, size * 0.75, size * 0.9);
  camera.lookAt(-size * 0.12, 0, 0);
  $('robot').textContent = `${n} arms: ${solver.robot || 'arm'}, ${dof} joints`;

  const positions = new Float64Array(3 * n);
  const quats = new Float64Array(4 * n);
  const usesRotation = solver.mode !== 'position';
  const qt = new Float64Array(dof);
  const m = new THREE.Matrix4();
  const p = new THREE.Vector3();
  const r = new THREE.Quaternion();
  const one = new THREE.Vector3(1, 1, 1);
  const chart = $('chart');
  let notSolvedNow = 0;
  let iterationsNow = 0;

  function makeTargets(t) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < dof; j++) {
        const k = i * dof + j;
        qt[j] = centre[k] + amp[k] * Math.sin(freq[k] * t + phase[k]);
      }
      const pose = solver.forward(qt);
      positions.set(pose.position, 3 * i);
      quats.set(pose.quaternion, 4 * i);
    }
  }

  function solveAll() {
    notSolvedNow = 0;
    iterationsNow = 0;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const a = arms[i];
      const answer = solver.solve(
        positions.subarray(3 * i, 3 * i + 3),
        usesRotation ? quats.subarray(4 * i, 4 * i + 4) : null,
        { current: a.q, last: a.last, previous: a.previous },
      );
      if (answer.status !== 'solved') notSolvedNow++;
      iterationsNow += answer.iterations;
      if (answer.q !== null) {
        a.previous = a.last;
        a.last = answer.q;
        a.q = answer.q;
      }
    }
    return performance.now() - t0;
  }

  function frame() {
    try {
      makeTargets(state.frames * DT);
      const ms = solveAll();
      state.ikMs.push(ms);
      state.iterations.push(iterationsNow);
      if (state.ikMs.length > KEEP) {
        state.ikMs.shift();
        state.iterations.shift();
      }
      state.frames++;
      state.notSolved += notSolvedNow;
      for (let i = 0; i < n; i++) {
        setJoints(arms[i].arm, solver.jointNames, arms[i].q);
        p.fromArray(positions, 3 * i);
        r.fromArray(quats, 4 * i);
        m.compose(p, r, one).premultiply(baseInRoot);
        m.decompose(markers[i].position, markers[i].quaternion, markers[i].scale);
      }
      if (state.frames % 10 === 0) {
        drawChart(chart, state.ikMs);
        const recent = state.ikMs.slice(-600);
        $('summary').textContent =
          `frame ${state.frames}: IK ${ms.toFixed(2)} ms for ${n} arms; over the last ` +
          `${recent.length} frames median ${quantile(recent, 0.5).toFixed(2)} ms, p99 ` +
          `${quantile(recent, 0.99).toFixed(2)} ms; not solved this frame: ${notSolvedNow}`;
      }
      renderer.render(scene, camera);
      postWhenDone();
    } catch (err) {
      state.error = `the crowd stopped: ${err.message}`;
      showError(state.error);
      postWhenDone(state.error);
      return;
    }
    requestAnimationFrame(frame);
  }
  state.n = n;
  state.ready = true;
  requestAnimationFrame(frame);
}

main().catch((err) => {
  state.error = err.message;
  showError(err.message);
  postWhenDone(err.message);
});
