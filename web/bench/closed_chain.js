// Peer: closed-chain-ik (npm, damped least squares), as a web developer would drive it: the arm
// built as its Link / Joint tree from the model file's chain (each joint turned so that it moves
// about its own z, as the package's own URDF helper does), a Goal closed onto the tool link, and
// restarts from random joints until the bench's judge says solved or the time budget per target
// is spent (the first start: mid-range joints). Its answer is judged again by the bench.

import { DOF, Goal, Joint, Link, SOLVE_STATUS, Solver } from 'closed-chain-ik/src/core/index.js';

import { judge, matrixToQuat, midRange, randomJoints, seeded, zChain } from './chain.js';

export class ClosedChainPeer {
  /** chain: readChain's arm; budgetMs per target; now: the clock (ms); iterations per start,
   * run in chunks (the clock read between them). */
  constructor(chain, { budgetMs = 5, now = () => performance.now(), seed = 1, iterations = 100, chunk = 10 } = {}) {
    this.name = 'closed_chain_ik';
    this.label = 'closed-chain-ik (damped least squares)';
    this.verdict = chain.pose ? 'pose' : 'position';
    this.chain = chain;
    this.budgetMs = budgetMs;
    this.now = now;
    this.rng = seeded(seed);
    this.attempts = 0;
    this.errors = 0;
    const { frames, tool } = zChain(chain);
    const root = new Link();
    let parent = root;
    this.joints = frames.map((frame, j) => {
      const joint = new Joint();
      joint.setPosition(...frame.position);
      joint.setQuaternion(...matrixToQuat(frame.rotation));
      const prismatic = chain.joints[j].type === 'prismatic';
      joint.setDoF(prismatic ? DOF.Z : DOF.EZ);
      if (!chain.continuous[j]) {
        joint.setMinLimits(chain.lower[j]);
        joint.setMaxLimits(chain.upper[j]);
      }
      parent.addChild(joint);
      const link = new Link();
      joint.addChild(link);
      parent = link;
      return { joint, dof: prismatic ? DOF.Z : DOF.EZ };
    });
    const fixed = new Joint();
    fixed.setPosition(...tool.position);
    fixed.setQuaternion(...matrixToQuat(tool.rotation));
    parent.addChild(fixed);
    const tip = new Link();
    fixed.addChild(tip);
    this.goal = new Goal();
    if (!chain.pose) this.goal.setGoalDoF(DOF.X, DOF.Y, DOF.Z);
    this.goal.makeClosure(tip);
    this.solver = new Solver([root, this.goal]);
    // converged only well inside the bench's verdict (1 mm / 0.01 rad), so that a converged
    // answer passes it; the rest are the package's defaults
    this.solver.maxIterations = chunk; // the budget is checked between chunks of iterations
    this.iterations = iterations; // per start
    this.solver.translationConvergeThreshold = 1e-4;
    this.solver.rotationConvergeThreshold = 1e-4;
    this.q = new Float64Array(chain.dof);
    this.best = new Float64Array(chain.dof);
  }

  _set(q) {
    for (let j = 0; j < this.joints.length; j++) {
      const { joint } = this.joints[j];
      joint.setDoFValues(q[j]);
    }
  }

  _read(out) {
    const { lower, upper, continuous } = this.chain;
    for (let j = 0; j < this.joints.length; j++) {
      const { joint, dof } = this.joints[j];
      // its values are float32: one at a limit can read a hair outside it
      const v = joint.dofValues[dof];
      out[j] = continuous[j] ? v : Math.min(upper[j], Math.max(lower[j], v));
    }
    return out;
  }

  /** Joints for the target (position [3], quaternion [x,y,z,w] or null, its rotation matrix or
   * null): the first start the bench judges solved, else the closest found in the budget. */
  solve(position, quaternion, rotation) {
    const started = this.now();
    this.goal.setPosition(position[0], position[1], position[2]);
    if (quaternion != null) this.goal.setQuaternion(quaternion[0], quaternion[1], quaternion[2], quaternion[3]);
    let bestErr = Infinity;
    let start = midRange(this.chain);
    for (;;) {
      this.attempts++;
      this._set(start);
      try {
        for (let done = 0; done < this.iterations; done += this.solver.maxIterations) {
          // TIMEOUT: the chunk's iterations ran out while it still converged; go on from there
          if (this.solver.solve()[0] !== SOLVE_STATUS.TIMEOUT) break;
          if (this.now() - started >= this.budgetMs) break;
        }
      } catch {
        // it can throw mid-solve (seen here: its matrix product on a Jacobian with no free
        // columns): that start failed, the next one is tried
        this.errors++;
      }
      const q = this._read(this.q);
      const verdict = judge(this.chain, q, position, rotation, this.chain.pose);
      if (verdict.solved) return Array.from(q);
      const err = verdict.posErr + 0.1 * verdict.rotErr;
      if (err < bestErr) {
        bestErr = err;
        this.best.set(q);
      }
      if (this.now() - started >= this.budgetMs) return Array.from(this.best);
      start = randomJoints(this.chain, this.rng, this.q);
    }
  }
}
