// What test/test_web_solver.py drives: one Node process per test module. Reads a JSON file of
// jobs (argv[2]) and prints their answers as one JSON list, a job's answers an object:
//   [{"model": path, "forward": [[q]...], "candidates": {"positions", "quaternions", "current"},
//     "solve": {"positions", "quaternions", "current", "freeAxis", "oneByOne", "start",
//     "carry"}}, ...]
//   ("start": the targets are a stream, each solved from the answer before, from these joints;
//   with "carry", the answer before that given as previous)
// -> [{"forward": {"positions", "rotations"}, "candidates": [[...]...], "solve": {"q", "status",
//     "posErr", "rotErr", "iterations", "reasons"}}, ...]  (NaN written as null; in the jobs,
//     "NaN", "Infinity" and "-Infinity" stand for those numbers)

import { readFile } from 'node:fs/promises';
import { fetchModel } from '../src/ik.js';

const list = (a) => Array.from(a, (x) => (Number.isFinite(x) ? x : null));

async function run(work) {
  const solver = await fetchModel(work.model);
  const out = { dof: solver.dof, jointNames: solver.jointNames };

  if (work.forward) {
    const f = solver.forwardMany(work.forward);
    out.forward = { positions: list(f.positions), rotations: list(f.rotations) };
  }
  if (work.candidates) {
    const c = work.candidates;
    const rows = [];
    for (let i = 0; i < c.positions.length; i++) {
      const quat = c.quaternions ? c.quaternions[i] : null;
      const cur = c.current ? c.current[i] : null;
      rows.push(list(solver.candidates(c.positions[i], quat, cur)));
    }
    out.candidates = rows;
  }
  if (work.solve) {
    const s = work.solve;
    const r = solver.solveMany(s.positions, s.quaternions ?? null, {
      current: s.current ?? null,
      freeAxis: s.freeAxis,
    });
    const reasons = [];
    if (s.start) {
      // a stream: each target solved from the answer before it (current and last)
      let last = Float64Array.from(s.start);
      let previous = null;
      for (let i = 0; i < s.positions.length; i++) {
        const a = solver.solve(s.positions[i], s.quaternions ? s.quaternions[i] : null, {
          current: last,
          last,
          previous: s.carry ? previous : null,
          freeAxis: s.freeAxis,
        });
        if (a.q !== null) {
          previous = last;
          last = a.q;
        }
        r.q.set(a.q ?? new Float64Array(solver.dof).fill(NaN), i * solver.dof);
        r.status[i] = ['solved', 'best_effort', 'rejected'].indexOf(a.status);
        r.iterations[i] = a.iterations;
        r.posErr[i] = a.posErr;
        r.rotErr[i] = a.rotErr;
      }
    }
    if (s.oneByOne) {
      // the same targets through solve(): the same answers, and the reasons' words
      for (let i = 0; i < s.positions.length; i++) {
        const a = solver.solve(s.positions[i], s.quaternions ? s.quaternions[i] : null, {
          current: s.current ? s.current[i] : null,
          freeAxis: s.freeAxis,
        });
        reasons.push(a.reason);
      }
    }
    out.solve = {
      q: list(r.q),
      status: Array.from(r.status),
      posErr: list(r.posErr),
      rotErr: list(r.rotErr),
      iterations: Array.from(r.iterations),
      reasons,
    };
  }
  return out;
}

// `node --test test/` runs every file under test/, this one too, without arguments: nothing to do
if (process.argv.length > 2) {
  const numbers = { NaN, Infinity, '-Infinity': -Infinity }; // JSON has no word for these
  const jobs = JSON.parse(await readFile(process.argv[2], 'utf8'), (key, v) =>
    typeof v === 'string' && v in numbers ? numbers[v] : v,
  );
  const answers = [];
  for (const job of jobs) answers.push(await run(job));
  process.stdout.write(JSON.stringify(answers));
}
