// The JavaScript solver on model files the Python side wrote (fixtures/, made by
// fixtures/make_fixtures.py): loading and its errors, answers judged by the solver's own
// forward kinematics (test/test_web_solver.py judges them by PyBullet's), the statuses of
// targets that cannot be solved, and the random stream against a BigInt splitmix64.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { fetchModel, loadModel, ModelError } from '../src/ik.js';
import { uniform } from '../src/random.js';

const here = dirname(fileURLToPath(import.meta.url));
const NIRYO = join(here, 'fixtures', 'niryo_one.web.json');
const INMOOV = join(here, 'fixtures', 'inmoov_right_arm.nonet.web.json');
const niryoText = readFileSync(NIRYO, 'utf8');

/** A reproducible stream of numbers in [0, 1) for the tests' own joint sets (not the solver's). */
function lcg(seed) {
  let s = seed;
  return () => {
    s = (s * 48271) % 2147483647;
    return s / 2147483647;
  };
}

function randomJoints(solver, rnd, inset = 0.01) {
  const q = new Float64Array(solver.dof);
  for (let j = 0; j < solver.dof; j++) {
    const lo = Math.max(solver.lower[j], -Math.PI) + inset;
    const hi = Math.min(solver.upper[j], Math.PI) - inset;
    q[j] = lo + rnd() * (hi - lo);
  }
  return q;
}

function angleBetween(Ra, Rb) {
  let trace = 0;
  for (let a = 0; a < 3; a++) for (let b = 0; b < 3; b++) trace += Ra[3 * a + b] * Rb[3 * a + b];
  return Math.acos(Math.min(1, Math.max(-1, (trace - 1) / 2)));
}

function judge(solver, answer, target, tol) {
  const got = solver.forward(answer.q);
  const d = Math.hypot(...got.position.map((x, i) => x - target.position[i]));
  assert.ok(d <= tol.pos, `position off by ${d} m`);
  assert.ok(angleBetween(got.rotation, target.rotation) <= tol.rot, 'rotation off');
  for (let j = 0; j < solver.dof; j++) {
    assert.ok(answer.q[j] >= solver.lower[j] - 1e-12 && answer.q[j] <= solver.upper[j] + 1e-12);
  }
}

test('a model file loads: the arm, its joints and settings', async () => {
  const solver = await fetchModel(NIRYO);
  assert.equal(solver.dof, 6);
  assert.deepEqual(solver.jointNames, ['joint_1', 'joint_2', 'joint_3', 'joint_4', 'joint_5', 'joint_6']);
  assert.equal(solver.mode, 'pose');
  assert.equal(solver.settings.pos_tol, 0.001);
  assert.equal(solver.lower.length, 6);
  const same = loadModel(JSON.parse(niryoText));
  const q = [0.1, -0.2, 0.3, -0.4, 0.5, -0.6];
  assert.deepEqual(same.forward(q), solver.forward(q));
});

test('a missing file, an HTTP error, truncated, altered and foreign files: ModelError', async () => {
  await assert.rejects(fetchModel(join(here, 'fixtures', 'nothing.web.json')), (err) => {
    assert.ok(err instanceof ModelError);
    assert.match(err.message, /no such file/);
    return true;
  });
  assert.throws(() => loadModel(niryoText.slice(0, niryoText.length / 2)), /not JSON, or it is truncated/);
  assert.throws(() => loadModel('{"format": "something else"}'), /format is "something else"/);
  assert.throws(() => loadModel('[1, 2]'), ModelError);
  const obj = JSON.parse(niryoText);
  const b64 = obj.netw.base64;
  const flip = b64[100] === 'A' ? 'B' : 'A';
  const altered = { ...obj, netw: { ...obj.netw, base64: b64.slice(0, 100) + flip + b64.slice(101) } };
  assert.throws(() => loadModel(altered), /checksum mismatch: the file is truncated or altered/);
  const cut = { ...obj, model: { ...obj.model, base64: obj.model.base64.slice(0, 400) } };
  assert.throws(() => loadModel(cut), /checksum mismatch|cut short/);
  const wrongDof = { ...obj, dof: 5 };
  assert.throws(() => loadModel(wrongDof), /sizes that don't fit/);
  const noLayout = { ...obj };
  delete noLayout.layout;
  assert.throws(() => loadModel(noLayout), /no layout/);
  const server = createServer((req, res) => {
    res.writeHead(req.url === '/model.web.json' ? 200 : 404);
    res.end(req.url === '/model.web.json' ? niryoText : 'not here');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const solver = await fetchModel(`${base}/model.web.json`);
    assert.equal(solver.dof, 6);
    await assert.rejects(fetchModel(`${base}/missing.web.json`), /HTTP 404/);
  } finally {
    server.close();
  }
});

for (const [name, file, count] of [
  ['Niryo One with its network', NIRYO, 300],
  ['InMoov arm without network (restarts)', INMOOV, 100],
]) {
  test(`${name}: targets from random joints are solved, within the limits`, async () => {
    const solver = await fetchModel(file);
    const rnd = lcg(7);
    let solved = 0;
    for (let i = 0; i < count; i++) {
      const target = solver.forward(randomJoints(solver, rnd));
      const answer = solver.solve(target.position, target.quaternion);
      if (answer.status !== 'solved') continue;
      solved++;
      judge(solver, answer, target, { pos: 1e-3 + 1e-9, rot: 0.01 + 1e-9 });
    }
    assert.ok(solved >= count - 1, `${solved} of ${count} solved`);
  });
}

test('solveMany gives the answers solve gives, target by target', async () => {
  const solver = await fetchModel(NIRYO);
  const rnd = lcg(3);
  const P = [];
  const Q = [];
  for (let i = 0; i < 40; i++) {
    const t = solver.forward(randomJoints(solver, rnd));
    P.push(t.position);
    Q.push(t.quaternion);
  }
  P.push([NaN, 0, 0]);
  Q.push([0, 0, 0, 1]);
  const many = solver.solveMany(P.flat(), Q.flat());
  for (let i = 0; i < P.length; i++) {
    const one = solver.solve(P[i], Q[i]);
    assert.equal(many.status[i], ['solved', 'best_effort', 'rejected'].indexOf(one.status));
    if (one.q === null) {
      assert.ok(Number.isNaN(many.q[6 * i]));
      continue;
    }
    assert.deepEqual(Array.from(many.q.subarray(6 * i, 6 * i + 6)), Array.from(one.q));
  }
});

test('rejected and out-of-reach targets say so', async () => {
  const solver = await fetchModel(NIRYO);
  const quat = [0, 0, 0, 1];
  for (const [p, q, why] of [
    [[NaN, 0, 0.2], quat, /position is not finite/],
    [[0.2, 0, 0.2], [0, 0, Infinity, 1], /orientation is not finite/],
    [[0.2, 0, 0.2], [0, 0, 0.3, 1], /not unit length \(norm 1\.04403/],
    [[3.0, 0, 0.2], quat, /far outside the reach: the position is 3\.0\d\d m/],
  ]) {
    const answer = solver.solve(p, q);
    assert.equal(answer.status, 'rejected');
    assert.equal(answer.q, null);
    assert.match(answer.reason, why);
  }
  const beyond = solver.solve([0.5, 0.3, 0.4], null);
  assert.equal(beyond.status, 'best_effort');
  assert.match(beyond.reason, /^outside the reach: .* closest reached: \d+\.\d\d mm/);
  // the closest pose: nearer the target than the arm at its mid-range, within the limits
  const mid = solver.forward(solver.lower.map((lo, j) => (lo + solver.upper[j]) / 2)).position;
  const got = solver.forward(beyond.q).position;
  const dist = (a) => Math.hypot(a[0] - 0.5, a[1] - 0.3, a[2] - 0.4);
  assert.ok(dist(got) < dist(mid));
  assert.ok(Math.abs(dist(got) - beyond.posErr) < 1e-9);
});

test('tracking: from the last answer, a small move is one or two LM steps away', async () => {
  const solver = await fetchModel(NIRYO);
  const q0 = Float64Array.of(0.3, -0.4, 0.5, 0.2, -0.7, 0.4);
  const q1 = q0.map((x, j) => x + 0.01 * (j % 2 ? 1 : -1));
  const target = solver.forward(q1);
  const answer = solver.solve(target.position, target.quaternion, { current: q0, last: q0 });
  assert.equal(answer.status, 'solved');
  assert.ok(answer.iterations <= 3, `${answer.iterations} iterations`);
  for (let j = 0; j < 6; j++) assert.ok(Math.abs(answer.q[j] - q1[j]) < 0.01);
});

test('the same target gets the same answer: the restarts draw from a stream per target', async () => {
  const solver = await fetchModel(INMOOV);
  const rnd = lcg(11);
  const target = solver.forward(randomJoints(solver, rnd));
  const a = solver.solve(target.position, target.quaternion);
  solver.solve([0.1, -0.2, 0.3], null); // something else between
  const b = solver.solve(target.position, target.quaternion);
  assert.deepEqual(Array.from(a.q), Array.from(b.q));
  assert.equal(a.iterations, b.iterations);
});

test('the random stream is splitmix64 (a BigInt twin written here)', () => {
  const M = (1n << 64n) - 1n;
  const mix = (z) => {
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
    return z ^ (z >> 31n);
  };
  for (const start of [0n, 1n, 0xdeadbeefcafef00dn, M]) {
    const k = { streamReady: true, sHi: Number(start >> 32n), sLo: Number(start & 0xffffffffn) };
    let state = start;
    for (let i = 0; i < 200; i++) {
      state = (state + 0x9e3779b97f4a7c15n) & M;
      const want = Number(mix(state) >> 11n) / 2 ** 53;
      assert.equal(uniform(k), want);
    }
  }
});

test('the network candidates lie within the limits; forward gives a unit quaternion', async () => {
  const solver = await fetchModel(NIRYO);
  const t = solver.forward([0.2, -0.3, 0.4, 0.5, -0.6, 0.7]);
  const c = solver.candidates(t.position, t.quaternion);
  assert.equal(c.length, solver.heads * 6);
  for (let i = 0; i < c.length; i++) {
    assert.ok(c[i] >= solver.lower[i % 6] - 1e-12 && c[i] <= solver.upper[i % 6] + 1e-12);
  }
  assert.ok(Math.abs(Math.hypot(...t.quaternion) - 1) < 1e-12);
  assert.throws(() => solver.candidates(t.position, null), /needs the target orientation/);
  assert.throws(() => solver.solve([0, 0], null), /position must be 3 numbers/);
});
