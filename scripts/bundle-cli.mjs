#!/usr/bin/env node
// `npm run build`'s second step: the `baton` command (src/cli/main.ts) as one CommonJS file,
// dist/src/cli-bundle/main.cjs, and its agent's commands alone (src/cli/agent-main.ts) as another,
// agent.cjs, which bin/baton.js runs (launch.ts's bundleFor) from a V8 code cache kept beside it
// (src/cli/launch.ts; docs/decisions/0007). CommonJS because Node 20 can cache the compiled code
// of a vm.Script but not of an ES module. Every module a command or an engine imports lazily
// (`await import(…)`) stays lazy: esbuild wraps it in an init function that only that command
// runs. The file sits one folder below dist/src like the modules it merges, so their paths
// relative to import.meta.url (the agent shim, ../os/…) still resolve. meta.json beside it is
// esbuild's import graph of both, which src/cli/lazy-load.test.ts reads. Two bundles, not one:
// a call deserialises its bundle's whole code cache, and a cache holds every function declared in
// the bundle, run or not (docs/decisions/0052).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const outdir = new URL('../dist/src/cli-bundle', import.meta.url).pathname;
// The last build's files, its code cache among them, go first.
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: {
    main: new URL('../src/cli/main.ts', import.meta.url).pathname,
    agent: new URL('../src/cli/agent-main.ts', import.meta.url).pathname,
  },
  outdir,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // Whitespace and syntax only: names stay (stack traces, error names). 1.69 -> 1.24 MB, which a
  // call reads and turns into a string: about 225 fewer pages touched per call (docs/decisions/0007).
  minifyWhitespace: true,
  minifySyntax: true,
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
  // import.meta.url is the bundle's own URL: the same folder as before. The expression is handed
  // through `directRun` first: compiled by launch.ts (a script, where no `module` is in scope) it
  // is the function itself; run by Node as a file (`node dist/src/cli-bundle/main.cjs status`),
  // it runs the launcher on this file, as bin/baton.js does, where it used to do nothing, exit 0.
  banner: {
    js:
      `(${directRun})(` +
      // Strict mode first, as the ES modules were: a directive only counts at the body's start.
      'function (exports, require, module, __filename, __dirname) {"use strict";' +
      'const __batonBundleUrl = require("node:url").pathToFileURL(__filename).href;',
  },
  footer: { js: '})' },
  define: { 'import.meta.url': '__batonBundleUrl' },
  plugins: [
    lazyBuiltin('child_process', ['execFile', 'execFileSync', 'spawn', 'spawnSync']),
    lazyBuiltin('dns', ['lookup']),
    pgSyncCrypto(),
    pgNodeStreams(),
  ],
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(`${outdir}/meta.json`, JSON.stringify(result.metafile));
asciiOnly(`${outdir}/main.cjs`);
asciiOnly(`${outdir}/agent.cjs`);

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

// The code caches, made now on a scratch database: the agent's by `baton claim`, so that the
// commands agents run over and over (claim, heartbeat, next, job next) find their code compiled,
// whichever runs first after a build; the whole CLI's by `baton task add`, an operator's most usual
// call. Made by the first call otherwise, a `baton up` left a cache twice the size, most of it code
// a call never runs, which every later call deserialised.
codeCaches(new URL('../bin/baton.js', import.meta.url).pathname, outdir);

/**
 * The bundle's first call, written into it as text: the bundle's function when compiled by the
 * launcher (a script run in the global scope, which has no `module`), else, when Node runs the
 * file as the main module, a run of it by the launcher beside it (bin/baton.js's, with its code
 * cache), whose answer this call then ignores. Required by another module, it does nothing.
 */
function directRun(bundle) {
  if (typeof module !== 'object' || module === null || require.main !== module) return bundle;
  require('./launch.cjs').launch(__filename, process.argv);
  return undefined;
}

/**
 * esbuild escapes non-ASCII characters in strings, but keeps them in comments and in tagged
 * templates. One such character makes the launcher decode the bundle as UTF-8 into a two-byte
 * string (4 ms against 1 ms for a one-byte string, and twice the memory, on every call). Whole-line
 * comments (ours and the packages') are given ASCII here; anything else fails the build: write an
 * escape (`\u2014`, or `&mdash;` in HTML).
 */
function asciiOnly(file) {
  const plain = {
    '\u2014': '--',
    '\u2013': '-',
    '\u00d7': 'x',
    '\u2026': '...',
    '\u00b7': '-',
    '\u2192': '->',
  };
  const lines = readFileSync(file, 'utf8').split('\n');
  const fixed = lines.map((line) =>
    /^\s*(\/\/|\/\*|\*)/.test(line) ? line.replace(/[^\x00-\x7f]/g, (char) => plain[char] ?? '?') : line,
  );
  const left = fixed.findIndex((line) => /[^\x00-\x7f]/.test(line));
  if (left !== -1) throw new Error(`${file}:${left + 1} is not ASCII: ${fixed[left].trim().slice(0, 100)}`);
  writeFileSync(file, fixed.join('\n'));
}

/**
 * Runs `baton task add` and `baton claim` once each on a scratch database with no cache beside
 * their bundles, which writes them. A machine where the built CLI cannot run here (no native addon
 * yet, no writable temporary folder) gets a warning and no cache: the first call makes one.
 */
function codeCaches(bin, outdir) {
  const caches = [`${outdir}/main.cjs.cache`, `${outdir}/agent.cjs.cache`];
  let dir = null;
  try {
    dir = mkdtempSync(join(tmpdir(), 'baton-build-'));
    const db = join(dir, 'baton.db');
    const baton = (...args) =>
      execFileSync(process.execPath, [bin, '--db', db, ...args], {
        cwd: dir,
        encoding: 'utf8',
        stdio: 'pipe',
      }).trim();
    baton('init');
    const session = baton('session', 'start');
    for (const cache of caches) rmSync(cache, { force: true });
    for (const cache of caches) settle(cache.replace(/\.cache$/, ''));
    baton('task', 'add', 'cache');
    baton('claim', 'cache', '--session', session);
  } catch (error) {
    const why = (error.stderr || error.message || String(error)).trim().split('\n')[0];
    console.warn(`bundle-cli: no code cache made at build (${why}); the first call makes it`);
    for (const cache of caches) rmSync(cache, { force: true });
  } finally {
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until the bundle has been left unchanged for the 2 s the launcher asks before it writes a
 * cache of it (SETTLE_MS in src/cli/launch.ts): a build takes that wait so that no call has to.
 */
function settle(bundle) {
  const left = statSync(bundle).ctimeMs + 2_100 - Date.now();
  if (left > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, left);
}

/**
 * Node modules that a bundled module requires when it loads but a call such as `baton claim` never
 * uses get a stand-in whose functions load the real module on first use:
 * - node:child_process (with net, dgram and their streams): commander, for executable subcommands
 *   Baton never declares, and os/git.ts, which the Coordinator's ledger imports;
 * - node:dns (with its c-ares binding): pg's connection parameters, for the native driver's host
 *   look-up; a PostgreSQL call through pg's JavaScript client resolves its host through node:net.
 * The build fails if Baton imports a name a stand-in lacks.
 */
function lazyBuiltin(module, names) {
  const namespace = `lazy-${module}`;
  const contents = [
    `const load = () => require('node:${module}');`,
    ...names.map((name) => `export const ${name} = (...args) => load().${name}(...args);`),
  ].join('\n');
  return {
    name: namespace,
    setup(plugin) {
      plugin.onResolve({ filter: new RegExp(`^(node:)?${module}$`) }, (args) =>
        args.namespace === namespace
          ? { path: `node:${module}`, external: true }
          : { path: module, namespace },
      );
      plugin.onLoad({ filter: /.*/, namespace }, () => ({ contents, loader: 'js', resolveDir: '.' }));
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
