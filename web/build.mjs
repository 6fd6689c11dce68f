// The pages' build: web/pages/*.js bundled with three, urdf-loader and the solver (src/ik.js)
// by esbuild into web/dist/, beside the pages' HTML and CSS. Nothing is left to fetch from
// elsewhere at run time: the build fails if a bundle names a URL other than the XML namespaces
// three uses as names (never fetched). `npm run build` (or `make web` from the repository).

import { build } from 'esbuild';
import { copyFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pages = join(here, 'pages');
const out = join(here, 'dist');
const ENTRIES = ['app', 'crowd'];
// identifiers that look like URLs but name XML namespaces (document.createElementNS and the
// like): a browser never requests them
const NAMESPACES = new Set([
  'http://www.w3.org/1999/xhtml',
  'http://www.w3.org/2000/svg',
  'http://www.w3.org/1999/xlink',
  'http://www.w3.org/XML/1998/namespace',
  'http://www.w3.org/2000/xmlns/',
  'http://www.collada.org/2005/11/COLLADASchema',
]);

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await build({
  absWorkingDir: here,
  entryPoints: Object.fromEntries(ENTRIES.map((name) => [name, join(pages, `${name}.js`)])),
  outdir: out,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  splitting: true, // three and the solver once, in a chunk both pages import
  legalComments: 'eof',
  // ik.js reads a file path with node:fs only when it runs in Node: never in a page
  external: ['node:*'],
  logLevel: 'warning',
});
for (const name of await readdir(pages)) {
  if (name.endsWith('.html') || name.endsWith('.css')) await copyFile(join(pages, name), join(out, name));
}

const foreign = [];
for (const name of await readdir(out)) {
  const text = await readFile(join(out, name), 'utf8');
  for (const url of text.match(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)<>]*/gi) ?? []) {
    if (!url.startsWith('http')) continue;
    if (!NAMESPACES.has(url)) foreign.push(`${name}: ${url}`);
  }
}
if (foreign.length > 0) {
  console.error(`the build names URLs a page might fetch:\n  ${foreign.join('\n  ')}`);
  await rm(out, { recursive: true, force: true }); // no pages to export that would fetch them
  process.exit(1);
}
console.log(`built ${ENTRIES.map((e) => `dist/${e}.js`).join(', ')} and the pages in ${out}`);
