// The web bench in Node: node bench/node.mjs --model model.web.json --targets targets.json
// [--budget-ms 5] [--warmup 50] [--solvers robot_ik_nn closed_chain_ik three_ccdik] [--out F]
// Writes the result JSON (bench.js) to --out, or to stdout; progress on stderr.

import { readFile, rename, writeFile } from 'node:fs/promises';

import { SOLVERS, runBench } from './bench.js';

function parse(argv) {
  const args = { budgetMs: 5, warmup: 50, solvers: SOLVERS, out: null };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${key} needs a value`);
      return argv[++i];
    };
    if (key === '--model') args.model = value();
    else if (key === '--targets') args.targets = value();
    else if (key === '--budget-ms') args.budgetMs = Number(value());
    else if (key === '--warmup') args.warmup = Number(value());
    else if (key === '--out') args.out = value();
    else if (key === '--solvers') {
      args.solvers = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith('--')) args.solvers.push(argv[++i]);
    } else throw new Error(`unknown argument ${key}`);
  }
  if (!args.model || !args.targets) throw new Error('--model and --targets are needed');
  if (!(args.budgetMs > 0)) throw new Error('--budget-ms must be a positive number');
  if (!(args.warmup >= 0)) throw new Error('--warmup must be a number >= 0');
  return args;
}

async function main() {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench/node.mjs: ${err.message}\n`);
    return 2;
  }
  const result = await runBench({
    model: await readFile(args.model, 'utf8'),
    targets: JSON.parse(await readFile(args.targets, 'utf8')),
    budgetMs: args.budgetMs,
    warmup: args.warmup,
    solvers: args.solvers,
    log: (text) => process.stderr.write(`web bench (node): ${text}\n`),
    runtime: { kind: 'node', version: process.version, platform: `${process.platform} ${process.arch}` },
  });
  const text = JSON.stringify(result);
  if (args.out) {
    await writeFile(`${args.out}.part`, text); // atomic: the reader never sees half a file
    await rename(`${args.out}.part`, args.out);
  } else {
    process.stdout.write(`${text}\n`);
  }
  return 0;
}

process.exitCode = await main();
