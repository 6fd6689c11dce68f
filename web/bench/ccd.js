// Peer: three.js's CCDIKSolver (cyclic coordinate descent, three/examples/jsm), which aims the
// tool's position only, so it is judged on the position alone. It needs a SkinnedMesh with
// bones: per joint a fixed bone (the joint's origin, turned so that the joint moves about local
// z) and a moving bone under it, kept a hinge about z within the joint's limits by the solver's
// own rotationMin / rotationMax; then the tool bone (the effector) and a target bone. Restarts
// from random joints until the bench's judge says solved or the time budget per target is spent.

import {
  Bone,
  BufferGeometry,
  MeshBasicMaterial,
  Quaternion,
  Skeleton,
  SkinnedMesh,
  Vector3,
} from 'three';
import { CCDIKSolver } from 'three/examples/jsm/animation/CCDIKSolver.js';

import { judge, matrixToQuat, midRange, randomJoints, seeded, zChain } from './chain.js';

function bone(name, position, rotation) {
  const b = new Bone();
  b.name = name;
  b.position.set(position[0], position[1], position[2]);
  const [x, y, z, w] = matrixToQuat(rotation);
  b.quaternion.set(x, y, z, w);
  return b;
}

export class CcdPeer {
  /** chain: readChain's arm; budgetMs per target; now: the clock (ms); iterations per start,
   * run in chunks (the answer judged and the clock read between them). */
  constructor(chain, { budgetMs = 5, now = () => performance.now(), seed = 2, iterations = 50, chunk = 10 } = {}) {
    if (chain.joints.some((j) => j.type === 'prismatic')) {
      throw new Error('CCDIKSolver turns bones: this arm has a prismatic joint');
    }
    this.name = 'three_ccdik';
    this.label = "three.js CCDIKSolver (position only)";
    this.verdict = 'position';
    this.chain = chain;
    this.budgetMs = budgetMs;
    this.now = now;
    this.rng = seeded(seed);
    this.attempts = 0;
    const { frames, tool } = zChain(chain);
    const identity = [1, 0, 0, 0, 1, 0, 0, 0, 1];
    const root = bone('base', [0, 0, 0], identity);
    const bones = [root];
    let parent = root;
    this.moving = frames.map((frame, j) => {
      const origin = bone(`origin_${j}`, frame.position, frame.rotation);
      const turning = bone(`joint_${j}`, [0, 0, 0], identity);
      parent.add(origin);
      origin.add(turning);
      bones.push(origin, turning);
      parent = turning;
      return turning;
    });
    const tip = bone('tool', tool.position, tool.rotation);
    parent.add(tip);
    this.target = bone('target', [0, 0, 0], identity);
    root.add(this.target);
    bones.push(tip, this.target);
    const mesh = new SkinnedMesh(new BufferGeometry(), new MeshBasicMaterial());
    mesh.add(root);
    mesh.bind(new Skeleton(bones));
    this.root = root;
    const links = [];
    for (let j = chain.dof - 1; j >= 0; j--) {
      const hi = chain.continuous[j] ? Math.PI : chain.upper[j];
      const lo = chain.continuous[j] ? -Math.PI : chain.lower[j];
      links.push({
        index: bones.indexOf(this.moving[j]),
        rotationMin: new Vector3(0, 0, lo),
        rotationMax: new Vector3(0, 0, hi),
      });
    }
    const ik = {
      target: bones.indexOf(this.target),
      effector: bones.indexOf(tip),
      links,
      iteration: chunk,
    };
    this.chunks = Math.max(1, Math.round(iterations / chunk));
    // its check that each link is the parent of the one before warns here: the fixed origin
    // bones sit between the moving ones (they carry no motion, so the solver needs none of them)
    const warn = console.warn;
    console.warn = () => {};
    try {
      this.solver = new CCDIKSolver(mesh, [ik]);
    } finally {
      console.warn = warn;
    }
    this.q = new Float64Array(chain.dof);
    this.best = new Float64Array(chain.dof);
    this._quat = new Quaternion();
    this._z = new Vector3(0, 0, 1);
  }

  _set(q) {
    for (let j = 0; j < this.moving.length; j++) this.moving[j].quaternion.setFromAxisAngle(this._z, q[j]);
    this.root.updateMatrixWorld(true);
  }

  _read(out) {
    const { lower, upper, continuous } = this.chain;
    for (let j = 0; j < this.moving.length; j++) {
      const { z, w } = this.moving[j].quaternion;
      let v = 2 * Math.atan2(z, w);
      if (v > Math.PI) v -= 2 * Math.PI;
      if (v < -Math.PI) v += 2 * Math.PI;
      out[j] = continuous[j] ? v : Math.min(upper[j], Math.max(lower[j], v));
    }
    return out;
  }

  /** Joints for the target position (the orientation is not aimed): the first start the bench
   * judges solved on its position, else the closest found in the budget. */
  solve(position) {
    const started = this.now();
    this.target.position.set(position[0], position[1], position[2]);
    let bestErr = Infinity;
    let start = midRange(this.chain);
    for (;;) {
      this.attempts++;
      this._set(start);
      for (let c = 0; c < this.chunks; c++) {
        this.solver.update();
        const q = this._read(this.q);
        const verdict = judge(this.chain, q, position, null, false);
        if (verdict.solved) return Array.from(q);
        if (verdict.posErr < bestErr) {
          bestErr = verdict.posErr;
          this.best.set(q);
        }
        if (this.now() - started >= this.budgetMs) return Array.from(this.best);
      }
      start = randomJoints(this.chain, this.rng, this.q);
    }
  }
}
