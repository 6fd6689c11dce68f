// The pieces under the solver: the sines against the engine's Math.sin and Math.cos, the
// network's WebAssembly SIMD layers against its plain loops, the damped step against the
// normal equations solved another way.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SC, sincos } from '../src/forward.js';
import { Kernel, dampedStep } from '../src/kernel.js';
import { parseModel } from '../src/model.js';
import { Net, netForward } from '../src/network.js';
import { moduleBytes } from '../src/wasm.js';

const here = dirname(fileURLToPath(import.meta.url));
const spec = parseModel(readFileSync(join(here, 'fixtures', 'niryo_one.web.json'), 'utf8'));

test('sin and 1 - cos within a rounding of the engine\'s, several turns either way', () => {
  const xs = [0, -0, 1e-300, 1e-12, -3e-8, 2e-4];
  for (let k = -8; k <= 8; k++) xs.push((k * Math.PI) / 2);
  for (let i = 0; i < 100000; i++) xs.push(-20 + (40 * i) / 100000 + 1e-7 * (i % 7));
  let ws = 0;
  let wc = 0;
  for (const x of xs) {
    sincos(x);
    ws = Math.max(ws, Math.abs(SC[0] - Math.sin(x)));
    wc = Math.max(wc, Math.abs(SC[1] - (1 - Math.cos(x))));
    if (x !== 0 && Math.abs(x) < 0.1 && Math.abs(x) > 1e-150) {
      const exact = 2 * Math.sin(x / 2) ** 2; // 1 - cos without the cancellation
      assert.ok(Math.abs(SC[1] - exact) <= 1e-15 * exact, `1 - cos ${x}`);
    }
  }
  assert.ok(ws <= 2.3e-16, `sin off by ${ws}`);
  assert.ok(wc <= 4.5e-16, `1 - cos off by ${wc}`);
});

test('the SIMD layers give the plain loops\' candidates within 1e-12', (t) => {
  const simd = new Net(spec, true);
  if (simd.simd === null) {
    t.skip('this engine has no WebAssembly SIMD');
    return;
  }
  const plain = new Net(spec, false);
  assert.equal(plain.simd, null);
  const a = new Float64Array(spec.heads * spec.dof);
  const b = new Float64Array(spec.heads * spec.dof);
  const cur = new Float64Array(spec.dof);
  let worst = 0;
  for (let i = 0; i < 500; i++) {
    const c = Math.cos(i), s = Math.sin(i);
    const Rt = Float64Array.of(c, -s, 0, s, c, 0, 0, 0, 1);
    const pt = Float64Array.of(0.1 + 0.2 * Math.sin(3 * i), 0.25 * Math.cos(5 * i), 0.15 + 0.2 * Math.sin(i));
    netForward(simd, pt, Rt, cur, false, a);
    netForward(plain, pt, Rt, cur, false, b);
    for (let j = 0; j < a.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]));
  }
  assert.ok(worst <= 1e-12, `${worst}`);
  assert.ok(a.some((v) => v !== 0));
  // compiled synchronously: a browser refuses that on its main thread above 4 KB
  assert.ok(moduleBytes().length < 4096, `${moduleBytes().length} bytes`);
});

test('the damped step solves (J^T J + lam I) x = J^T e, both forms', () => {
  const k = new Kernel(spec);
  const n = k.n;
  for (const m of [6, 3]) {
    const J = new Float64Array(6 * n);
    const e = new Float64Array(6);
    for (let i = 0; i < 6 * n; i++) J[i] = Math.sin(1 + 7 * i + m);
    for (let r = 0; r < 6; r++) e[r] = Math.cos(2 + r);
    k.lam = 1e-3;
    dampedStep(k, J, e, m);
    // residual of the normal equations: (J^T J + lam I) step - J^T e
    for (let a = 0; a < n; a++) {
      let lhs = k.lam * k.step[a];
      let rhs = 0;
      for (let r = 0; r < m; r++) {
        rhs += J[r * n + a] * e[r];
        for (let b = 0; b < n; b++) lhs += J[r * n + a] * J[r * n + b] * k.step[b];
      }
      assert.ok(Math.abs(lhs - rhs) < 1e-9, `m=${m} row ${a}: ${lhs} vs ${rhs}`);
    }
  }
});
