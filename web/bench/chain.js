// The bench's own reading of an arm from model.web.json, and its own forward kinematics: the
// judge of every solver in the bench (ours included) and the chain the peers are built from.
//
// It decodes the file's model buffer by the named indices the file carries (layout.header,
// layout.chain) and keeps, per movable joint, only the origin (translation P, rotation A), the
// axis K and the type; the tool frame is the last row. The forward pass below composes plain
// 4x4 transforms with an axis-angle rotation per joint: it shares no code with the solver's
// forward.js (which uses the precomputed Rodrigues rows). The final judge is PyBullet's FK, in
// Python (robot_ik_nn/bench/web.py).

/** Little-endian float64 values of a base64 string (Node 20 and pages both have atob). */
function float64s(base64) {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  if (bytes.length % 8 !== 0) throw new Error(`the model buffer has ${bytes.length} bytes: not float64s`);
  const view = new DataView(bytes.buffer);
  const out = new Float64Array(bytes.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(8 * i, true);
  return out;
}

/** The arm of a model file (its parsed object, or its JSON text): {dof, names, joints: [{P, A,
 * K, type}], tool: {P, A}, lower, upper, continuous, pose}. */
export function readChain(modelFile) {
  const obj = typeof modelFile === 'string' ? JSON.parse(modelFile) : modelFile;
  if (!obj || typeof obj !== 'object' || !obj.layout || !obj.model) {
    throw new Error('not a model.web.json object (no layout or model buffer)');
  }
  const buffer = float64s(obj.model.base64);
  const H = obj.layout.header;
  const C = obj.layout.chain;
  const kinds = {};
  for (const [name, code] of Object.entries(obj.layout.joint_type)) kinds[code] = name;
  const dof = buffer[H.dof];
  if (dof !== obj.dof) throw new Error(`the buffer is for ${dof} joints, the file says ${obj.dof}`);
  const start = buffer[H.chain];
  const row = (i, at, n) => Array.from(buffer.subarray(start + i * C.ROW + at, start + i * C.ROW + at + n));
  const joints = [];
  for (let i = 0; i < dof; i++) {
    const type = kinds[buffer[start + i * C.ROW + C.TYPE]];
    if (type === undefined) throw new Error(`joint ${i} has an unknown type code`);
    joints.push({ P: row(i, C.P, 3), A: row(i, C.A, 9), K: row(i, C.K, 3), type });
  }
  const continuous = obj.continuous ?? joints.map((j) => j.type === 'continuous');
  const lower = obj.lower.map((v, i) => (continuous[i] || !Number.isFinite(v) ? -Math.PI : v));
  const upper = obj.upper.map((v, i) => (continuous[i] || !Number.isFinite(v) ? Math.PI : v));
  return {
    robot: obj.robot,
    dof,
    names: obj.joint_names.slice(),
    joints,
    tool: { P: row(dof, C.P, 3), A: row(dof, C.A, 9) },
    lower: obj.lower.slice(),
    upper: obj.upper.slice(),
    seedLower: lower,
    seedUpper: upper,
    continuous,
    pose: obj.mode !== 'position',
  };
}

/** Row-major 3x3 rotation of angle t about the unit axis k. */
export function axisAngle(k, t) {
  const [x, y, z] = k;
  const c = Math.cos(t);
  const s = Math.sin(t);
  const v = 1 - c;
  return [
    c + x * x * v, x * y * v - z * s, x * z * v + y * s,
    y * x * v + z * s, c + y * y * v, y * z * v - x * s,
    z * x * v - y * s, z * y * v + x * s, c + z * z * v,
  ];
}

function mul3(a, b) {
  const out = new Array(9);
  for (let r = 0; r < 3; r++) {
    for (let c = 0; c < 3; c++) {
      out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
    }
  }
  return out;
}

function apply3(a, v) {
  return [
    a[0] * v[0] + a[1] * v[1] + a[2] * v[2],
    a[3] * v[0] + a[4] * v[1] + a[5] * v[2],
    a[6] * v[0] + a[7] * v[1] + a[8] * v[2],
  ];
}

/** The tool's pose for joints q: {position [3], rotation (row-major 9)}. */
export function forward(chain, q) {
  let R = [1, 0, 0, 0, 1, 0, 0, 0, 1];
  let p = [0, 0, 0];
  const step = (P, A) => {
    const d = apply3(R, P);
    p = [p[0] + d[0], p[1] + d[1], p[2] + d[2]];
    R = mul3(R, A);
  };
  for (let j = 0; j < chain.dof; j++) {
    const joint = chain.joints[j];
    step(joint.P, joint.A);
    if (joint.type === 'prismatic') {
      step(joint.K.map((v) => v * q[j]), [1, 0, 0, 0, 1, 0, 0, 0, 1]);
    } else {
      R = mul3(R, axisAngle(joint.K, q[j]));
    }
  }
  step(chain.tool.P, chain.tool.A);
  return { position: p, rotation: R };
}

/** Row-major rotation matrix of a quaternion [x, y, z, w] (normalised here). */
export function quatToMatrix(quat) {
  const n = Math.hypot(quat[0], quat[1], quat[2], quat[3]);
  const [x, y, z, w] = quat.map((v) => v / n);
  return [
    1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
    2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
    2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
  ];
}

/** The angle (rad) of the rotation between two row-major rotation matrices. */
export function rotationAngle(Ra, Rb) {
  let trace = 0;
  for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) trace += Ra[3 * r + c] * Rb[3 * r + c];
  // the sine from the skew part keeps small angles exact (acos of the trace loses them)
  const M = mul3(Ra.slice(0, 9), transpose(Rb));
  const sx = M[7] - M[5];
  const sy = M[2] - M[6];
  const sz = M[3] - M[1];
  return Math.atan2(0.5 * Math.hypot(sx, sy, sz), 0.5 * (trace - 1));
}

function transpose(a) {
  return [a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]];
}

export const POS_TOL = 1e-3;
export const ROT_TOL = 0.01;

/** The bench's verdict on joints q for a target (position, rotation matrix or null):
 * {solved, posErr, rotErr}; pose false judges the position alone. Joints outside their limits
 * (continuous joints excepted) are never solved. */
export function judge(chain, q, position, rotation, pose = rotation != null) {
  if (q == null) return { solved: false, posErr: Infinity, rotErr: Infinity };
  for (let j = 0; j < chain.dof; j++) {
    if (!Number.isFinite(q[j])) return { solved: false, posErr: Infinity, rotErr: Infinity };
    if (!chain.continuous[j] && (q[j] < chain.lower[j] - 1e-9 || q[j] > chain.upper[j] + 1e-9)) {
      return { solved: false, posErr: Infinity, rotErr: Infinity };
    }
  }
  const fk = forward(chain, q);
  const posErr = Math.hypot(
    fk.position[0] - position[0],
    fk.position[1] - position[1],
    fk.position[2] - position[2],
  );
  const rotErr = pose && rotation != null ? rotationAngle(fk.rotation, rotation) : 0;
  return { solved: posErr <= POS_TOL && rotErr <= ROT_TOL, posErr, rotErr };
}

/** A small seeded generator of uniform numbers in [0, 1): a Weyl sequence through a 32-bit
 * integer mix (the peers' random restarts, the same every run). */
export function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** Mid-range joints of the chain (the peers' first start). */
export function midRange(chain) {
  return chain.seedLower.map((lo, j) => 0.5 * (lo + chain.seedUpper[j]));
}

/** Uniform random joints inside the limits (continuous joints: -pi..pi) into ``out``. */
export function randomJoints(chain, rng, out) {
  for (let j = 0; j < chain.dof; j++) {
    out[j] = chain.seedLower[j] + rng() * (chain.seedUpper[j] - chain.seedLower[j]);
  }
  return out;
}

/** A quaternion [x, y, z, w] of a row-major rotation matrix. */
export function matrixToQuat(m) {
  const trace = m[0] + m[4] + m[8];
  let x, y, z, w;
  if (trace > 0) {
    const s = 2 * Math.sqrt(trace + 1);
    w = 0.25 * s;
    x = (m[7] - m[5]) / s;
    y = (m[2] - m[6]) / s;
    z = (m[3] - m[1]) / s;
  } else if (m[0] > m[4] && m[0] > m[8]) {
    const s = 2 * Math.sqrt(1 + m[0] - m[4] - m[8]);
    w = (m[7] - m[5]) / s;
    x = 0.25 * s;
    y = (m[1] + m[3]) / s;
    z = (m[2] + m[6]) / s;
  } else if (m[4] > m[8]) {
    const s = 2 * Math.sqrt(1 + m[4] - m[0] - m[8]);
    w = (m[2] - m[6]) / s;
    x = (m[1] + m[3]) / s;
    y = 0.25 * s;
    z = (m[5] + m[7]) / s;
  } else {
    const s = 2 * Math.sqrt(1 + m[8] - m[0] - m[4]);
    w = (m[3] - m[1]) / s;
    x = (m[2] + m[6]) / s;
    y = (m[5] + m[7]) / s;
    z = 0.25 * s;
  }
  return [x, y, z, w];
}

/** A rotation taking +z onto the unit axis k (the peers turn their joints about their own z). */
export function zOnto(k) {
  const n = Math.hypot(k[0], k[1], k[2]);
  const [x, y, z] = [k[0] / n, k[1] / n, k[2] / n];
  if (z < -1 + 1e-12) return [1, 0, 0, 0, -1, 0, 0, 0, -1]; // half a turn about x
  const cross = Math.hypot(x, y); // |z x k|
  if (cross < 1e-15) return [1, 0, 0, 0, 1, 0, 0, 0, 1];
  return axisAngle([-y / cross, x / cross, 0], Math.atan2(cross, z));
}

/** The chain's frames for a solver that turns each joint about its own z: per joint the origin
 * (translation, rotation) in the frame of the joint before, as the peers build their trees, and
 * the tool's; each joint's motion is then a turn (or slide) along local z. */
export function zChain(chain) {
  let before = [1, 0, 0, 0, 1, 0, 0, 0, 1]; // the previous joint's frame in its URDF frame, inverted
  const frames = chain.joints.map((joint) => {
    const align = zOnto(joint.K);
    const frame = { position: apply3(before, joint.P), rotation: mul3(mul3(before, joint.A), align) };
    before = transpose(align);
    return frame;
  });
  const tool = { position: apply3(before, chain.tool.P), rotation: mul3(before, chain.tool.A) };
  return { frames, tool };
}
