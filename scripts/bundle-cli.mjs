#!/usr/bin/env node
// `npm run build`'s second step: the `baton` command (src/cli/main.ts) as one CommonJS file,
// dist/src/cli-bundle/main.cjs, which bin/baton.js runs from a V8 code cache kept beside it
// (src/cli/launch.ts; docs/decisions/0007). CommonJS because Node 20 can cache the compiled code
// of a vm.Script but not of an ES module. Every module a command or an engine imports lazily
// (`await import(…)`) stays lazy: esbuild wraps it in an init function that only that command
// runs. The file sits one folder below dist/src like the modules it merges, so their paths
// relative to import.meta.url (the agent shim, ../os/…) still resolve. meta.json beside it is
// esbuild's import graph, which src/cli/lazy-load.test.ts reads.
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = new URL('../dist/src/cli-bundle', import.meta.url).pathname;
// The last build's files, its code cache among them, go first.
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: [new URL('../src/cli/main.ts', import.meta.url).pathname],
  outfile: `${outdir}/main.cjs`,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // Packages a call needs on its hot path (commander, pg) are bundled, so their code is in the
  // cache too. Kept external, loaded by require() as installed: better-sqlite3 (its native addon
  // is found relative to its own files), pg's optional native binding, and the packages of the
  // long-running commands (serve, up, mcp), which all ship CommonJS builds. The @octokit
  // packages ship ES modules only, which require() cannot load before Node 20.19: bundled.
  external: [
    'better-sqlite3',
    'pg-native',
    'hono',
    'hono/*',
    '@hono/*',
    'zod',
    '@modelcontextprotocol/*',
    'prom-client',
  ],
  // The file is one function expression, Node's CommonJS wrapper around the modules, which
  // launch.ts compiles as it is (no copy of a megabyte string to wrap it). Each merged module's
  // import.meta.url is the bundle's own URL: the same folder as before.
  banner: {
    js:
      // Strict mode first, as the ES modules were: a directive only counts at the body's start.
      '(function (exports, require, module, __filename, __dirname) {"use strict";' +
      'const __batonBundleUrl = require("node:url").pathToFileURL(__filename).href;',
  },
  footer: { js: '})' },
  define: { 'import.meta.url': '__batonBundleUrl' },
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(`${outdir}/meta.json`, JSON.stringify(result.metafile));
