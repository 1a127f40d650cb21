#!/usr/bin/env node
// `npm run build`'s second step: the `baton` command (src/cli/main.ts) as one CommonJS file,
// dist/src/cli-bundle/main.cjs, which bin/baton.js runs from a V8 code cache kept beside it
// (src/cli/launch.ts; docs/decisions/0007). CommonJS because Node 20 can cache the compiled code
// of a vm.Script but not of an ES module. Every module a command or an engine imports lazily
// (`await import(…)`) stays lazy: esbuild wraps it in an init function that only that command
// runs. The file sits one folder below dist/src like the modules it merges, so their paths
// relative to import.meta.url (the agent shim, ../os/…) still resolve. meta.json beside it is
// esbuild's import graph, which src/cli/lazy-load.test.ts reads.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
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
  // Packages a call needs on its hot path (commander, pg, better-sqlite3's JavaScript) are
  // bundled, so their code is in the cache too; the SQLite engine hands better-sqlite3 its native
  // addon by path. Kept external, loaded by require() as installed: `bindings` (better-sqlite3's
  // search for its addon when that path is missing, which finds it relative to the caller's
  // file), pg's optional native binding, and the packages of the long-running commands (serve,
  // up, mcp), which all ship CommonJS builds. The @octokit packages ship ES modules only, which
  // require() cannot load before Node 20.19: bundled.
  external: [
    'bindings',
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
  plugins: [lazyChildProcess(), pgSyncCrypto(), pgNodeStreams()],
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(`${outdir}/meta.json`, JSON.stringify(result.metafile));

// The launcher (src/cli/launch.ts) as CommonJS too, for bin/baton.js, which is CommonJS (bin/ has
// a package.json of its own saying so): a call then never starts Node's ES module loader, whose
// resolution and start cost about as much as the rest of the launcher (docs/decisions/0007).
await build({
  entryPoints: [new URL('../src/cli/launch.ts', import.meta.url).pathname],
  outfile: `${outdir}/launch.cjs`,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
});

/**
 * node:child_process (with net, dgram and their streams) is required when the modules importing it
 * load: commander, for executable subcommands Baton never declares, and os/git.ts, which the
 * Coordinator's ledger imports. A call such as `baton claim` spawns nothing, so the bundle gets
 * a stand-in whose functions load the real module on first use. The build fails if Baton imports
 * a name the stand-in lacks.
 */
function lazyChildProcess() {
  const names = ['execFile', 'execFileSync', 'spawn', 'spawnSync'];
  const contents = [
    "const load = () => require('node:child_process');",
    ...names.map((name) => `export const ${name} = (...args) => load().${name}(...args);`),
  ].join('\n');
  return {
    name: 'lazy-child-process',
    setup(plugin) {
      plugin.onResolve({ filter: /^(node:)?child_process$/ }, ({ namespace }) =>
        namespace === 'lazy-child-process'
          ? { path: 'node:child_process', external: true }
          : { path: 'child_process', namespace: 'lazy-child-process' },
      );
      plugin.onLoad({ filter: /.*/, namespace: 'lazy-child-process' }, () => ({
        contents,
        loader: 'js',
        resolveDir: '.',
      }));
    },
  };
}

/**
 * pg computes SCRAM-SHA-256's client proof with Web Crypto; scripts/pg-sync-crypto.cjs does the
 * same with node:crypto's synchronous functions, 6-12 ms less per PostgreSQL call. The build fails
 * if pg's file comes to export other names than the stand-in.
 */
function pgSyncCrypto() {
  const standIn = new URL('./pg-sync-crypto.cjs', import.meta.url).pathname;
  const names = (source, pattern) =>
    [...source.matchAll(pattern)]
      .map((match) => match[1])
      .sort()
      .join();
  return {
    name: 'pg-sync-crypto',
    setup(plugin) {
      plugin.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]crypto[\\/]utils\.js$/ }, ({ path }) => {
        const theirs = /module\.exports = \{([^}]*)\}/.exec(readFileSync(path, 'utf8'))?.[1] ?? '';
        const contents = readFileSync(standIn, 'utf8');
        if (names(theirs, /(\w+)/g) !== names(contents, /^exports\.(\w+) =/gm)) {
          throw new Error(`${path} no longer exports what ${standIn} does`);
        }
        return { contents, loader: 'js', resolveDir: dirname(standIn) };
      });
    },
  };
}

/**
 * pg's lib/stream.js asks at load whether it runs in a Cloudflare Worker: on Node 20, which has
 * no `navigator`, by making a `Response`, the first touch of which loads Node's fetch (undici,
 * http2 and their streams), 10 ms and more of every PostgreSQL call. The CLI runs on Node: the
 * bundle takes pg's Node.js streams straight away. The build fails if the file no longer reads so.
 */
function pgNodeStreams() {
  const asked = 'const { getStream, getSecureStream } = getStreamFuncs()';
  const node = 'const { getStream, getSecureStream } = getNodejsStreamFuncs()';
  return {
    name: 'pg-node-streams',
    setup(plugin) {
      plugin.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]stream\.js$/ }, ({ path }) => {
        const source = readFileSync(path, 'utf8');
        if (!source.includes(asked)) throw new Error(`${path} no longer starts with ${asked}`);
        return { contents: source.replace(asked, node), loader: 'js' };
      });
    },
  };
}
