// What the two pages share: the error line, the model and the arm loaded (model.web.json and
// robot.urdf beside the page), a scene with the arm's z axis up, and poses between the scene and
// the solver's base frame. Bundled by build.mjs with three, urdf-loader and the solver.

import * as THREE from 'three';
import URDFLoader from 'urdf-loader';
import { fetchModel, ModelError } from '../src/ik.js';

export { THREE };

/** The page's error line (the element with id "error"), shown with `message`. */
export function showError(message) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = message;
    el.hidden = false;
  }
  console.error(message);
}

/** Errors nobody caught (a frame's script, a promise) shown in the page, not only the console. */
export function reportUncaught(state) {
  window.addEventListener('error', (e) => {
    state.error = `the page failed: ${e.message}`;
    showError(state.error);
  });
  window.addEventListener('unhandledrejection', (e) => {
    state.error = `the page failed: ${e.reason && e.reason.message ? e.reason.message : e.reason}`;
    showError(state.error);
  });
}

/** The page's query parameter `name`, or `fallback`. */
export function param(name, fallback) {
  const v = new URLSearchParams(window.location.search).get(name);
  return v === null || v === '' ? fallback : v;
}

/** The solver from the model file (?model= names another): a ModelError's message, worded. */
export async function loadSolver() {
  const url = param('model', 'model.web.json');
  try {
    return await fetchModel(url);
  } catch (err) {
    if (err instanceof ModelError) throw new Error(`the model file ${url} cannot be used: ${err.message}`);
    throw err;
  }
}

/** The arm drawn from robot.urdf (?urdf= names another), checked against the solver's joints. */
export async function loadArm(solver) {
  const url = param('urdf', 'robot.urdf');
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`cannot fetch the arm's URDF ${url}: ${err.message}`);
  }
  if (!response.ok) throw new Error(`cannot fetch the arm's URDF ${url}: HTTP ${response.status}`);
  const text = await response.text();
  let robot;
  try {
    robot = new URDFLoader().parse(text);
  } catch (err) {
    throw new Error(`the arm's URDF ${url} cannot be read: ${err.message}`);
  }
  const missing = solver.jointNames.filter((name) => !(name in robot.joints));
  if (missing.length > 0) {
    throw new Error(
      `the URDF ${url} is not the arm of the model file: it has no joint ${missing.join(', ')}`,
    );
  }
  return robot;
}

/** Joints q (the solver's order) put on a drawn arm. */
export function setJoints(robot, names, q) {
  for (let j = 0; j < names.length; j++) robot.joints[names[j]].setJointValue(q[j]);
}

/** Mid-range joints (limits beyond +-pi taken as +-pi). */
export function midJoints(solver) {
  const q = new Float64Array(solver.dof);
  for (let j = 0; j < solver.dof; j++) {
    q[j] = (Math.max(solver.lower[j], -Math.PI) + Math.min(solver.upper[j], Math.PI)) / 2;
  }
  return q;
}

/** A renderer, a scene and a camera in `host`; `world`: a group whose z axis points up (URDF's
 * convention), where the arms go. */
export function makeScene(host, reach) {
  const renderer = new THREE.WebGLRenderer({ antialias: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  renderer.setSize(host.clientWidth, host.clientHeight);
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf2f4f7);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x8d8d8d, 2.2));
  const sun = new THREE.DirectionalLight(0xffffff, 2.0);
  sun.position.set(3, 6, 4);
  scene.add(sun);
  const world = new THREE.Group();
  world.rotation.x = -Math.PI / 2; // URDF z up -> three's y up
  scene.add(world);
  const camera = new THREE.PerspectiveCamera(45, host.clientWidth / host.clientHeight, reach / 50, reach * 200);
  window.addEventListener('resize', () => {
    camera.aspect = host.clientWidth / host.clientHeight;
    camera.updateProjectionMatrix();
    renderer.setSize(host.clientWidth, host.clientHeight);
  });
  return { renderer, scene, world, camera };
}

const _m = new THREE.Matrix4();
const _p = new THREE.Vector3();
const _q = new THREE.Quaternion();
const _s = new THREE.Vector3();

/** `object`'s pose in the frame of the arm's base link: [x, y, z] and [x, y, z, w]. */
export function poseInBase(robot, baseLink, object) {
  const base = robot.links[baseLink] ?? robot;
  robot.updateWorldMatrix(true, true);
  object.updateWorldMatrix(true, false);
  _m.copy(base.matrixWorld).invert().multiply(object.matrixWorld).decompose(_p, _q, _s);
  return { position: [_p.x, _p.y, _p.z], quaternion: [_q.x, _q.y, _q.z, _q.w] };
}

/** Puts `object` at a pose given in the frame of the arm's base link. */
export function placeInBase(robot, baseLink, object, position, quaternion) {
  const base = robot.links[baseLink] ?? robot;
  robot.updateWorldMatrix(true, true);
  _p.set(position[0], position[1], position[2]);
  if (quaternion) _q.set(quaternion[0], quaternion[1], quaternion[2], quaternion[3]).normalize();
  else _q.identity();
  _m.compose(_p, _q, _s.set(1, 1, 1)).premultiply(base.matrixWorld);
  object.parent.updateWorldMatrix(true, false);
  _m.premultiply(new THREE.Matrix4().copy(object.parent.matrixWorld).invert());
  _m.decompose(object.position, object.quaternion, object.scale);
  object.updateWorldMatrix(true, false);
}

/** A target marker: a small sphere with the tool's axes (red x, green y, blue z). */
export function makeMarker(size, color = 0xe4572e) {
  const marker = new THREE.Group();
  const ball = new THREE.Mesh(
    new THREE.SphereGeometry(size * 0.25, 16, 12),
    new THREE.MeshStandardMaterial({ color, transparent: true, opacity: 0.85 }),
  );
  marker.add(ball);
  marker.add(new THREE.AxesHelper(size));
  return marker;
}

/** The `p`-quantile (0..1) of numbers. */
export function quantile(values, p) {
  if (values.length === 0) return NaN;
  const s = Float64Array.from(values).sort();
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}
