// The main page: the arm in 3-D, a target to drag (three's TransformControls: t moves it, r turns
// it), the solver's answer put on the arm, with its status, errors and solve time, live.
// window.__ik = {ready, error, solver, arm, lastAnswer, solveAt(position, quaternion)} for tests:
// solveAt takes a pose in the arm's base frame and answers as the page does when dragged.

import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { TransformControls } from 'three/examples/jsm/controls/TransformControls.js';
import {
  THREE,
  loadArm,
  loadSolver,
  makeMarker,
  makeScene,
  midJoints,
  placeInBase,
  poseInBase,
  quantile,
  reportUncaught,
  setJoints,
  showError,
} from './common.js';

const state = { ready: false, error: null, solver: null, arm: null, lastAnswer: null, solveAt: null };
window.__ik = state;
reportUncaught(state);

const $ = (id) => document.getElementById(id);

function fmt(x, digits) {
  return Number.isFinite(x) ? x.toFixed(digits) : String(x);
}

async function main() {
  const solver = await loadSolver();
  const robot = await loadArm(solver);
  const reach = solver.reach > 0 ? solver.reach : 1;
  const { renderer, scene, world, camera } = makeScene($('view'), reach);
  world.add(robot);
  scene.add(new THREE.GridHelper(reach * 4, 20, 0xb0b6c0, 0xd5d9e0));

  let q = midJoints(solver); // the arm's joints now (the last answer put on it)
  setJoints(robot, solver.jointNames, q);
  const target = makeMarker(reach * 0.12);
  world.add(target);
  const start = solver.forward(q);
  placeInBase(robot, solver.baseLink, target, start.position, start.quaternion);

  camera.position.set(reach * 1.15, reach * 0.85, reach * 1.3);
  const orbit = new OrbitControls(camera, renderer.domElement);
  orbit.target.set(-reach * 0.15, reach * 0.3, 0);
  orbit.update();
  const drag = new TransformControls(camera, renderer.domElement);
  drag.setSize(0.8);
  drag.attach(target);
  scene.add(drag.getHelper());
  drag.addEventListener('dragging-changed', (e) => {
    orbit.enabled = !e.value;
  });

  $('robot').textContent = `${solver.robot || 'arm'}: ${solver.dof} joints, ${
    solver.mode ? `a ${solver.mode} network` : 'no network'
  }, reach ${fmt(reach, 3)} m`;
  const times = [];
  const positionOnly = $('position-only');
  if (solver.mode === 'position') positionOnly.checked = true;

  function show(answer, ms) {
    const st = $('status');
    st.textContent = answer.status;
    st.className = answer.status;
    $('pos-err').textContent = `${fmt(answer.posErr * 1000, 3)} mm`;
    $('rot-err').textContent = `${fmt((answer.rotErr * 180) / Math.PI, 3)} deg`;
    $('time').textContent = `${fmt(ms, 3)} ms (median of the last ${times.length}: ${fmt(
      quantile(times, 0.5),
      3,
    )} ms)`;
    $('iterations').textContent = String(answer.iterations);
    $('reason').textContent = answer.reason || '';
    $('joints').textContent = solver.jointNames
      .map((name, j) => `${name} ${fmt(q[j], 4)}`)
      .join('\n');
  }

  /** Solves for a pose in the base frame, from the arm's joints; puts the answer on the arm. */
  function solvePose(position, quaternion) {
    const t0 = performance.now();
    const answer = solver.solve(position, quaternion, { current: q });
    const ms = performance.now() - t0;
    times.push(ms);
    if (times.length > 100) times.shift();
    if (answer.q !== null) {
      q = Float64Array.from(answer.q);
      setJoints(robot, solver.jointNames, q);
    }
    const out = {
      status: answer.status,
      q: answer.q === null ? null : Array.from(answer.q),
      posErr: answer.posErr,
      rotErr: answer.rotErr,
      reason: answer.reason,
      iterations: answer.iterations,
      ms,
    };
    state.lastAnswer = out;
    show(answer, ms);
    return out;
  }

  let dirty = true;
  drag.addEventListener('objectChange', () => {
    dirty = true;
  });
  positionOnly.addEventListener('change', () => {
    dirty = true;
  });
  window.addEventListener('keydown', (e) => {
    if (e.key === 't') drag.setMode('translate');
    if (e.key === 'r') drag.setMode('rotate');
  });

  state.solver = solver;
  state.arm = robot; // the drawn arm (three's Object3D)
  state.solveAt = (position, quaternion = null) => {
    placeInBase(robot, solver.baseLink, target, position, quaternion);
    dirty = false;
    return solvePose(position, quaternion);
  };

  function frame() {
    if (dirty) {
      dirty = false;
      const pose = poseInBase(robot, solver.baseLink, target);
      solvePose(pose.position, positionOnly.checked ? null : pose.quaternion);
    }
    renderer.render(scene, camera);
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  state.ready = true;
}

main().catch((err) => {
  state.error = err.message;
  showError(err.message);
});
