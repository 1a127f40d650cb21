/**
 * A CLI call loads only what its command needs (issue 22, item 4). The bundled CLI
 * (scripts/bundle-cli.mjs) is two files, the whole CLI and the agent's commands, but esbuild runs a
 * module's code at the start only when the entry reaches it by static imports; whatever sits behind
 * an `await import(…)` runs only when that import does. So what a start runs is the static import
 * graph from src/cli/main.ts (or src/cli/agent-main.ts) in the build's own meta.json: it holds the
 * command tree, and neither any command nor the daemon of `baton up`, nor either engine, nor pg;
 * `baton claim` adds its command and not the daemon. And what a `baton claim` process loads of
 * Node itself: neither its ES module loader (bin/baton.js and the launcher are CommonJS) nor
 * node:child_process (a stand-in loads it on first use). And what the build ships for the
 * launcher: ASCII bundles and code caches a call accepts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { isAscii } from 'node:buffer';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { openStore } from '../store/open.js';

interface Metafile {
  readonly inputs: Record<string, { readonly imports: readonly { path: string; kind: string }[] }>;
}

const meta = JSON.parse(
  readFileSync(join(repoRoot(), 'dist', 'src', 'cli-bundle', 'meta.json'), 'utf8'),
) as Metafile;

/** The inputs whose path ends with `suffix` (esbuild names them relative to the working folder). */
function input(suffix: string): string {
  const found = Object.keys(meta.inputs).filter((path) => path.endsWith(suffix));
  assert.equal(found.length, 1, `one input ends with ${suffix}: ${found.join(', ')}`);
  return found[0] ?? '';
}

/** What runs when `from` runs: its static imports, transitively, packages included. */
function staticallyFrom(from: string, seen = new Set<string>()): Set<string> {
  seen.add(from);
  for (const i of meta.inputs[from]?.imports ?? []) {
    if (i.kind === 'import-statement' || i.kind === 'require-call') {
      if (!seen.has(i.path)) staticallyFrom(i.path, seen);
    }
  }
  return seen;
}

const holds = (files: Set<string>, part: string): string[] => [...files].filter((f) => f.includes(part));

test("each bundle's start runs no command, no engine and no part of the daemon", () => {
  for (const entry of ['src/cli/main.ts', 'src/cli/agent-main.ts']) {
    const start = staticallyFrom(input(entry));
    assert.ok(holds(start, 'src/cli/program.ts').length === 1, `${entry} runs the command tree`);
    for (const part of ['src/cli/commands/', 'src/daemon/', 'src/store/sqlite/', 'src/store/postgres/']) {
      assert.deepEqual(holds(start, part), [], `${entry} runs ${part}`);
    }
    assert.deepEqual(holds(start, 'node_modules/pg'), [], `${entry} runs pg`);
    assert.deepEqual(holds(start, 'node_modules/better-sqlite3'), [], `${entry} runs better-sqlite3`);
  }
  const sqlite = staticallyFrom(input('src/store/sqlite/sqlite-store.ts'));
  assert.deepEqual(holds(sqlite, 'node_modules/pg'), [], 'the SQLite engine runs pg');
  assert.deepEqual(holds(sqlite, 'src/store/postgres/'), [], 'the SQLite engine runs the other one');
});

test('`baton claim` runs its command and the coordinator, not the daemon nor the HTTP client', () => {
  const claim = staticallyFrom(input('src/cli/commands/claim.ts'));
  assert.ok(holds(claim, 'src/coordinator/coordinator.ts').length === 1);
  for (const part of ['src/daemon/', 'src/cli/commands/up.ts', 'src/agents/api-connection.ts']) {
    assert.deepEqual(holds(claim, part), [], `baton claim runs ${part}`);
  }
  const program = meta.inputs[input('src/cli/command-table.ts')]?.imports ?? [];
  const up = program.find((i) => i.path.endsWith('src/cli/commands/up.ts'));
  assert.equal(up?.kind, 'dynamic-import', 'the command tree imports `baton up` when it runs');
});

test('the build ships one-byte bundles, and code caches that a call accepts as they are', () => {
  const bundleDir = join(repoRoot(), 'dist', 'src', 'cli-bundle');
  const calls: [bundle: string, args: string[], prints: RegExp][] = [
    ['main.cjs', ['--help'], /^Usage: baton \[options\] \[command\]/],
    ['agent.cjs', ['claim', '--help'], /^Usage: baton claim/],
  ];
  for (const [bundle, args, prints] of calls) {
    // Any non-ASCII byte would make the launcher decode the megabyte as UTF-8, into a two-byte string.
    assert.ok(isAscii(readFileSync(join(bundleDir, bundle))), `${bundle} is ASCII`);
    const cache = join(bundleDir, `${bundle}.cache`);
    const before = statSync(cache);
    const help = execFileSync(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), ...args], {
      encoding: 'utf8',
    });
    assert.match(help, prints);
    // A cache the launcher refused (another bundle, another Node) would have been written anew.
    const after = statSync(cache);
    const same = [after.ino, after.mtimeMs, after.size];
    assert.deepEqual(same, [before.ino, before.mtimeMs, before.size], bundle);
  }
});

test("the agent's bundle holds its commands and the engines, not the daemon, the server nor GitHub", () => {
  const outputs = (meta as unknown as { outputs: Record<string, { inputs: Record<string, unknown> }> })
    .outputs;
  const agent = Object.entries(outputs).find(([path]) => path.endsWith('cli-bundle/agent.cjs'))?.[1];
  assert.ok(agent !== undefined, 'the build wrote agent.cjs');
  const files = new Set(Object.keys(agent.inputs));
  for (const part of [
    'src/cli/commands/claim.ts',
    'src/store/sqlite/',
    'src/store/postgres/',
    'node_modules/pg/',
  ]) {
    assert.ok(holds(files, part).length > 0, `the agent's bundle lacks ${part}`);
  }
  const absent = [
    'src/daemon/',
    'src/http/',
    'src/dashboard/',
    'src/github/',
    '@octokit',
    'src/cli/commands/up.ts',
  ];
  for (const part of absent) assert.deepEqual(holds(files, part), [], `the agent's bundle holds ${part}`);
});

test('a `baton claim` to a pipe starts neither the ES module loader, child_process, crypto nor net', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-lazy-load-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  let session: number;
  try {
    await store.tasks.add({ key: 'k1' });
    session = (await store.sessions.start({ kind: 'agent', host: hostname(), pid: process.pid })).id;
  } finally {
    await store.close();
  }
  const preload = join(dir, 'list.cjs');
  const out = join(dir, 'modules.txt');
  const list = "process.moduleLoadList.join('\\n')";
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, ${list}));`,
  );
  const bin = join(repoRoot(), 'bin', 'baton.js');
  const args = ['--require', preload, bin, 'claim', 'k1', '--session', String(session), '--db', db];
  assert.match(execFileSync(process.execPath, args, { encoding: 'utf8' }), /^claimed k1 epoch 1 /);
  const modules = readFileSync(out, 'utf8').split('\n');
  assert.ok(modules.includes('NativeModule vm'), 'the list is of this process');
  // `node -e ''` loads esm/loader and its helpers as it starts; an ES module entry adds these.
  const esm = ['esm/resolve', 'esm/module_job', 'esm/translators'];
  const started = (m: string): boolean =>
    esm.some((part) => m.endsWith(part)) ||
    [' child_process', ' crypto', ' net'].some((name) => m.endsWith(name));
  assert.deepEqual(modules.filter(started), []);
});
