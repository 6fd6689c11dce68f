// robot_ik_nn's IK solver in JavaScript: the network's candidates, then the same
// Levenberg-Marquardt refinement, restarts and verdict as the Python package's compiled solver,
// from a model file written by robot_ik_nn.web.model.write_web_model (model.web.json). An ES
// module with no dependencies, for a page and for Node:
//
//   import { fetchModel } from './ik.js';
//   const solver = await fetchModel('model.web.json');     // a URL, or in Node a file path
//   const a = solver.solve([0.25, 0, 0.3], [0, 0.7071068, 0, 0.7071068], { current });
//   a.status, a.q, a.posErr, a.rotErr, a.reason
//
// Left out: the collision check (answers may collide; the Python solver's collision_check is
// not applied here), and a calibrated arm's compliance. The tracking's self-motion away from the
// limits (kernel.secondary) is included. Modules: model.js (the file read and checked),
// sha256.js, kernel.js (the arm, the scratch, LM), random.js (the restarts' random stream),
// forward.js (kinematics), network.js (the network's forward pass) and wasm.js (its SIMD
// layers), policy.js (the solving policy), solver.js (the API).

import { FORMAT, ModelError, parseModel } from './model.js';
import { Solver } from './solver.js';

export { FORMAT, ModelError, Solver };

/** A Solver from a model file's JSON text or its parsed object; throws ModelError. */
export function loadModel(objOrJsonString) {
  return new Solver(parseModel(objOrJsonString));
}

const IN_NODE = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

async function readText(where) {
  const text = String(where);
  const isUrl = /^[a-z][a-z0-9+.-]*:/i.test(text) && !/^[a-z]:[\\/]/i.test(text);
  if (IN_NODE && (!isUrl || text.startsWith('file:'))) {
    const fs = await import('node:fs/promises');
    const path = text.startsWith('file:') ? new URL(text) : text;
    try {
      return await fs.readFile(path, 'utf8');
    } catch (err) {
      throw new ModelError(`cannot read the model file ${text}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    }
  }
  let response;
  try {
    response = await fetch(where);
  } catch (err) {
    throw new ModelError(`cannot fetch the model file ${text}: ${err.message}`);
  }
  if (!response.ok) {
    throw new ModelError(`cannot fetch the model file ${text}: HTTP ${response.status} ${response.statusText}`.trim());
  }
  try {
    return await response.text();
  } catch (err) {
    throw new ModelError(`the model file ${text} was cut off while loading: ${err.message}`);
  }
}

/** A Solver from a model file's URL (fetch), or in Node also a file path; throws ModelError. */
export async function fetchModel(url) {
  return loadModel(await readText(url));
}
