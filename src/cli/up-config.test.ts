/**
 * `baton up --config FILE`: the flags from a JSON file, the command line winning, and a file with
 * anything wrong in it refused in one line with exit 2 before anything starts. Real databases,
 * the real `baton up`.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoRoot, stopServers, type Run } from '../../test/support/cli.js';
import { assertOneErrorLine, describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

const BIN = join(repoRoot(), 'bin', 'baton.js');

function envFor(db: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  for (const name of ['BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return env;
}

/** A file of `content` (JSON when not a string) in a folder of its own. */
function configFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'baton-up-config-')), 'up.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

/** `baton up ...args` on `db`, stopped after 20 s: one that starts instead of refusing runs until then. */
function up(db: string, ...args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, 'up', ...args],
      { env: envFor(db), timeout: 20_000 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

/** `baton up ...args` until its log says it joined; then SIGTERM, and its whole log once it exits. */
function upUntilJoined(db: string, ...args: string[]): Promise<string> {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-up-config-cwd-'));
  const child = spawn(process.execPath, [BIN, 'up', ...args], { env: envFor(db), cwd });
  let out = '';
  const seen = (data: Buffer): void => {
    out += data.toString();
    if (/joined as session/.test(out)) child.kill('SIGTERM');
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  const stop = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((done) =>
    child.on('close', () => {
      clearTimeout(stop);
      done(out);
    }),
  );
}

describeCli('baton up --config', ({ mode, setup }) => {
  const local = mode === 'api' ? 'baton up runs on the database' : false;

  test(
    'takes the flags from the file, and a flag on the command line wins over it',
    { skip: local },
    async () => {
      const t = await setup();
      const file = configFile({
        host: 'from-file',
        slots: 3,
        'ram-mb': '6000',
        'agent-env': ['FOO_TOKEN', 'BAR_*'],
        http: false,
        standby: true,
        'github-comments': true,
      });
      const log = await upUntilJoined(t.db, '--config', file, '--slots', '2');
      assert.match(log, /joined as session \d+/, log);
      assert.doesNotMatch(log, /serving/, 'http: false is --no-http');
      type Host = { name: string; slotsMax: number; ramTotalMb: number; enabled: boolean };
      const hosts = await t.json<Host[]>(0, 'hosts');
      assert.deepEqual(
        hosts.map((h) => [h.name, h.slotsMax, h.ramTotalMb, h.enabled]),
        [['from-file', 2, 6000, false]],
        'the file names the host, its RAM and standby; --slots 2 on the command line wins over its 3',
      );
    },
  );

  test(
    'a file with anything wrong in it is one line, exit 2, and nothing started',
    { skip: local },
    async () => {
      const t = await setup();
      const sqlite = !t.db.startsWith('postgres');
      const never = sqlite ? join(dirname(t.db), 'never.db') : t.db;
      for (const [content, message] of [
        [
          { slotz: 3 },
          /^baton: --config \S+: "slotz" is not a flag of baton up \(its keys are the flags without --/,
        ],
        [{ slots: true }, /^baton: --config \S+: "slots" takes a string or a number, got true/],
        [{ standby: 'yes' }, /^baton: --config \S+: "standby" is a switch: give true or false, got "yes"/],
        [{ host: ['a', 'b'] }, /^baton: --config \S+: "host" takes one value, not a list/],
        [{ db: 'x.db' }, /"db" is not a flag of baton up/],
        [{ slots: 0 }, /^baton: --slots 0 leaves the host no slot/],
        ['{"slots": 3,}', /^baton: --config \S+ is not JSON: /],
        ['[1]', /^baton: --config \S+ must hold a JSON object/],
      ] as const) {
        const run = await up(never, '--no-http', '--config', configFile(content));
        assert.match(assertOneErrorLine(run, 2, JSON.stringify(content)), message);
        if (sqlite)
          assert.equal(existsSync(never), false, `no database file made for ${JSON.stringify(content)}`);
      }
      const missing = await up(never, '--config', join(tmpdir(), 'no-such-dir-baton', 'up.json'));
      assert.match(
        assertOneErrorLine(missing, 2, 'missing'),
        /^baton: --config \S+ cannot be read \(ENOENT\)/,
      );
    },
  );
});
