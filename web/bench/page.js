// The web bench in a page (bench.html): fetches the model and the targets named in the address
// (?model=model.web.json&targets=targets.json&budget=5&warmup=50&solvers=a,b&post=result),
// runs bench.js on the page's main thread, shows the figures and, with post=, sends the result
// JSON back to that address (robot-ik-nn bench --web serves the folder and listens there).

import { SOLVERS, runBench } from './bench.js';

const params = new URLSearchParams(location.search);
const statusLine = document.getElementById('status');
const table = document.getElementById('figures');

function say(text) {
  statusLine.textContent = text;
}

async function fetched(url, what) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch the ${what} ${url}: HTTP ${response.status}`);
  return response.text();
}

function show(result) {
  for (const row of Object.values(result.solvers)) {
    const tr = document.createElement('tr');
    const cells = row.skipped
      ? [row.name, row.skipped, '', '', '']
      : [
          row.label,
          row.verdict,
          `${(100 * row.solve_rate).toFixed(1)} %`,
          row.solved_per_s == null ? '' : row.solved_per_s.toFixed(0),
          row.us_per_target.toFixed(1),
        ];
    for (const text of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
}

async function send(post, body) {
  if (!post) return;
  await fetch(post, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
}

async function main() {
  const post = params.get('post');
  try {
    const budgetMs = Number(params.get('budget') ?? 5);
    const warmup = Number(params.get('warmup') ?? 50);
    const solvers = params.get('solvers') ? params.get('solvers').split(',') : SOLVERS;
    say('loading the model and the targets');
    const [model, targets] = await Promise.all([
      fetched(params.get('model') ?? 'model.web.json', 'model file'),
      fetched(params.get('targets') ?? 'targets.json', 'targets file'),
    ]);
    const result = await runBench({
      model,
      targets: JSON.parse(targets),
      budgetMs,
      warmup,
      solvers,
      log: say,
      runtime: {
        kind: 'browser',
        userAgent: navigator.userAgent,
        crossOriginIsolated: self.crossOriginIsolated === true,
      },
    });
    window.benchResult = result;
    show(result);
    say(`done: ${result.targets} targets, ${result.budget_ms} ms budget per target`);
    await send(post, JSON.stringify(result));
  } catch (err) {
    say(`error: ${err.message}`);
    await send(post, JSON.stringify({ error: String(err.message ?? err) }));
  }
}

main();
