/**
 * What a newcomer's first hour with the README found (docs/decisions/0046-a-newcomers-hour.md):
 * `npm start`'s banner, `baton --version`, and `baton hosts --json` without the column placement
 * uses. Real databases, the real `baton` command and the real `npm start` entry.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openStore } from '../store/open.js';
import { localOnly, repoRoot, stopServers, type Run } from '../../test/support/cli.js';
import { describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

/** Runs `node <script> ...args` in `cwd` without Baton's variables: its exit code and output. */
function node(cwd: string, script: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return new Promise((done) => {
    execFile(process.execPath, [script, ...args], { cwd, env, timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

test("npm start's banner names this checkout's bin/ to put on PATH, not npx (an unrelated package)", async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-newcomer-'));
  try {
    // --slots 0 is refused before anything is made: the banner, then one line and exit 2.
    const run = await node(cwd, join(repoRoot(), 'dist', 'src', 'main.js'), '--slots', '0');
    assert.equal(run.code, 2, run.stderr);
    assert.doesNotMatch(run.stdout, /npx/);
    const bin = join(repoRoot(), 'bin');
    assert.match(run.stdout, new RegExp(`^In another shell: export PATH="${bin}:\\$PATH"$`, 'm'));
    assert.ok(existsSync(join(bin, 'baton')), 'the folder it names holds the baton command');
    assert.match(run.stdout, /then: baton enqueue <key> --command '<agent command>' ; baton queue list/);
    assert.deepEqual(readdirSync(cwd), [], 'nothing made');
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("baton --version and -V print the package's version, exit 0; with --json an object", async () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { version: string };
  const bin = join(repoRoot(), 'bin', 'baton.js');
  for (const flag of ['--version', '-V']) {
    const run = await node(tmpdir(), bin, flag);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `${pkg.version}\n`);
    assert.equal(run.stderr, '');
  }
  const json = await node(tmpdir(), bin, '--json', '--version');
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { version: pkg.version });
  const help = await node(tmpdir(), bin, '--help');
  assert.match(help.stdout, /^ {2}-V, --version +print baton's version/m);
});

describeCli("baton hosts --json after a newcomer's hour", ({ setup }) => {
  test('hosts --json carries ramAvailableMb, the AVAILABLE the text shows (what placement uses)', async () => {
    const t = await setup();
    const store = await openStore(t.db, { intent: 'use' });
    try {
      const session = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1, ttlMs: 3_600_000 });
      // Budget 4000 less the 512 reserve leaves 3488, below the 20,000 the machine has free.
      await store.hosts.register({
        name: 'box-1',
        session: session.id,
        enabled: true,
        ramTotalMb: 4_000,
        ramReservedMb: 512,
        ramFreeMb: 20_000,
        slotsMax: 2,
      });
    } finally {
      await store.close();
    }
    const text = await t.run('hosts');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^box-1 +enabled +4000 +512 +20000 +3488 /m);
    const [host] = await t.json<{ name: string; ramAvailableMb: number }[]>(0, 'hosts');
    assert.equal(host?.name, 'box-1');
    assert.equal(host?.ramAvailableMb, 3488);
  });
});

describeCli("baton audit verify --json after a newcomer's hour", ({ setup, mode }) => {
  test(
    'audit verify --json of the database names its engine, as it does for an export',
    { skip: localOnly(mode, 'audit verify reads the ledger itself') },
    async () => {
      const t = await setup();
      const engine = t.db.startsWith('postgres') ? 'postgres' : 'sqlite';
      const report = await t.json(0, 'audit', 'verify');
      assert.deepEqual([report['source'], report['engine']], ['database', engine]);
      const exported = join(mkdtempSync(join(tmpdir(), 'baton-newcomer-')), 'ledger.jsonl');
      assert.equal((await t.run('audit', 'export', '--format', 'jsonl', '--out', exported)).code, 0);
      const fromFile = await t.json(0, 'audit', 'verify', '--file', exported);
      assert.equal(fromFile['engine'], engine, 'the same word from the export');
      rmSync(dirname(exported), { recursive: true, force: true });
    },
  );
});
