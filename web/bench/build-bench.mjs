// Bundles the web bench page: node bench/build-bench.mjs [--outdir DIR] (default dist/bench):
// DIR/bench.html and DIR/bench.js (page.js with the solver, closed-chain-ik and three.js, from
// node_modules at build time: nothing is fetched by the page but its model and targets files).

import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--outdir');
const outdir = resolve(at >= 0 && args[at + 1] ? args[at + 1] : join(here, '..', 'dist', 'bench'));

await mkdir(outdir, { recursive: true });
await esbuild.build({
  entryPoints: [join(here, 'page.js')],
  bundle: true,
  format: 'esm',
  target: 'es2020',
  platform: 'browser',
  external: ['node:*'], // ik.js reads a file path with node:fs only when it runs in Node
  outfile: join(outdir, 'bench.js'),
  logLevel: 'warning',
  legalComments: 'linked',
});
await copyFile(join(here, 'bench.html'), join(outdir, 'bench.html'));
process.stdout.write(`${outdir}\n`);
