/**
 * A CLI call loads the driver of the engine its database names and not the other one's: each
 * engine sits behind openStore's `await import(…)` in the bundled CLI (scripts/bundle-cli.mjs).
 * Each run lists, as it exits, the CommonJS modules it loaded from node_modules: better-sqlite3's
 * native addon is one of them (its JavaScript is bundled, as pg is, which lazy-load.test.ts checks
 * in the build's import graph instead).
 */
import { isIP } from 'node:net';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';
import { freshPostgresUrl, sqliteDatabase } from '../../test/support/databases.js';

const root = repoRoot();
const dir = mkdtempSync(join(tmpdir(), 'baton-engine-load-'));
const preload = join(dir, 'list-modules.cjs');
after(() => rmSync(dir, { recursive: true, force: true }));
const LIST_ON_EXIT = `process.on('exit', () => require('node:fs').writeFileSync(process.env.MODULES_OUT,
  [...Object.keys(require.cache), ...process.moduleLoadList].join('\\n')));
`;
writeFileSync(preload, LIST_ON_EXIT);

/**
 * Runs `baton --db db ...args`; returns the paths of the CommonJS modules the process loaded, then
 * Node's own modules (`NativeModule internal/…`).
 */
function loaded(db: string, ...args: string[]): Promise<string[]> {
  const out = join(dir, `modules-${Math.random().toString(36).slice(2)}.txt`);
  const env = { ...process.env, MODULES_OUT: out };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', preload, 'bin/baton.js', '--db', db, ...args],
      { cwd: root, env },
      (error, _stdout, stderr) => {
        if (error !== null) reject(new Error(`baton ${args.join(' ')}: ${stderr}`));
        else resolve(readFileSync(out, 'utf8').split('\n'));
      },
    );
  });
}

const driver = (modules: readonly string[], name: string): boolean =>
  modules.some((m) => m.includes(`/node_modules/${name}/`));

test('a CLI call on SQLite loads better-sqlite3 and never pg', async () => {
  const modules = await loaded(await sqliteDatabase().fresh(), 'task', 'add', 'k1');
  assert.ok(driver(modules, 'better-sqlite3'), 'the SQLite driver is loaded');
  assert.ok(!driver(modules, 'pg'), 'pg is not loaded');
  assert.ok(!driver(modules, 'bindings'), "the driver's addon is loaded by its path, not searched for");
  const files = modules.filter((m) => m.includes('/node_modules/better-sqlite3/'));
  assert.ok(
    files.every((m) => m.endsWith('.node')),
    `only the addon, the JavaScript is bundled: ${files.join()}`,
  );
});

test("a CLI call on PostgreSQL works without loading better-sqlite3, Node's fetch, perf_hooks or dns", async () => {
  const url = await freshPostgresUrl();
  const modules = await loaded(url, 'task', 'add', 'k1');
  assert.ok(!driver(modules, 'better-sqlite3'), 'better-sqlite3 is not loaded');
  // pg asks whether it runs in a Cloudflare Worker by making a Response: Node's fetch, at load.
  assert.deepEqual(
    modules.filter((m) => m.includes('undici')),
    [],
    'the bundled pg does not load fetch',
  );
  // The global performance does what node:perf_hooks' does, without its ten modules.
  assert.ok(!modules.includes('NativeModule perf_hooks'), 'perf_hooks is not loaded');
  // pg requires node:dns at load for its native driver; node:net looks a name up, not an address.
  if (isIP(new URL(url).hostname) !== 0)
    assert.ok(!modules.includes('NativeModule dns'), 'dns is not loaded');
});
