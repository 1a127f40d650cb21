/**
 * Issue 14, items 11 and 12: every operator action names its actor in the ledger (host enable
 * and disable, retry, cancel, task add, enqueue, workspace add, token create and revoke, ledger
 * init), with --db as the user at this host and over HTTP as the operator's token, and a `baton
 * up` fenced off says why: a session ended by someone else is not "declared stale (its
 * heartbeats stopped)".
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bothEngines, sqliteDatabase } from '../support/databases.js';
import { cliModes, cliOn, stopServers } from '../support/cli.js';
import { clusterFixture } from './cluster-support.js';

type Obj = Record<string, unknown>;

for (const db of bothEngines()) {
  describe(`operator actions on ${db.name}`, () => {
    test('host enable, host disable and retry name who acted in the ledger', async () => {
      const c = await clusterFixture(db);
      try {
        const s = await c.store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 1, name: 'x' });
        const host = { session: s.id, ramTotalMb: 4096, ramReservedMb: 0, ramFreeMb: 4096, slotsMax: 2 };
        await c.store.hosts.register({ name: 'box-1', ...host });
        const json = async (...args: string[]): Promise<unknown> => {
          const r = await c.baton(...args, '--json');
          assert.equal(r.code, 0, `baton ${args.join(' ')}: ${r.stderr}`);
          return JSON.parse(r.stdout);
        };
        await json('host', 'disable', 'box-1');
        await json('host', 'enable', 'box-1');
        const { job } = (await json('enqueue', 'k1', '--command', 'true')) as { job: Obj };
        await json('cancel', String(job['id']));
        const retried = (await json('retry', String(job['id']))) as { job: Obj };
        const by = async (type: string, ...filter: string[]): Promise<unknown> => {
          const rows = (await json('audit', '--type', type, ...filter)) as Obj[];
          return (rows.at(-1)?.['detail'] as Obj | undefined)?.['by'];
        };
        const actor = /^.+@.+$/;
        assert.match(String(await by('host:disabled')), actor, 'the ledger names who disabled the host');
        assert.match(String(await by('host:enabled')), actor, 'and who enabled it');
        assert.match(
          String(await by('job:enqueued', '--job', String(retried.job['id']))),
          actor,
          'and who retried',
        );
        assert.match(String(await by('job:cancelled', '--job', String(job['id']))), actor);
        // An unknown id says where to look, whichever layer found it missing.
        for (const args of [
          ['retry', '999999'],
          ['job', 'show', '999999'],
        ]) {
          const missing = await c.baton(...args);
          assert.equal(missing.code, 4, missing.stderr);
          assert.match(missing.stderr, /^baton: job 999999 not found — list jobs with `baton queue list`\n$/);
        }
      } finally {
        await c.close();
      }
    });
  });
}

after(stopServers);

for (const db of bothEngines()) {
  for (const mode of cliModes(db.engine)) {
    const how = mode === 'db' ? 'with --db' : 'over HTTP';
    test(`task add, enqueue, workspace add, token create and revoke and ledger init name who acted, on ${db.name} ${how}`, async () => {
      const t = cliOn(await db.fresh(), mode);
      // At a terminal, the user at this host; over HTTP, the operator token the request carried.
      const actor = mode === 'db' ? /^[^@\s]+@[^@\s]+$/ : /^token [0-9a-f]{12}/;
      const dir = mkdtempSync(join(tmpdir(), 'baton-actors-'));
      try {
        await t.json(0, 'task', 'add', 'k1', '--title', 'one');
        await t.json(0, 'enqueue', 'k1', '--command', 'true');
        await t.json(0, 'enqueue', 'k2', '--command', 'true');
        await t.json(0, 'workspace', 'add', 'w', '--path', dir);
        const made = await t.json<Obj>(0, 'token', 'create', '--scope', 'viewer', '--name', 'seen');
        await t.json(0, 'token', 'revoke', String(made['id']));
        if (mode === 'db') await t.json(0, 'ledger', 'init', '--key-file', join(dir, 'ledger.key'));
        const by = async (type: string, ...filter: string[]): Promise<unknown[]> =>
          (await t.json<Obj[]>(0, 'audit', '--type', type, ...filter)).map((r) => (r['detail'] as Obj)['by']);
        const named = async (what: string, type: string, ...filter: string[]): Promise<void> => {
          const rows = await by(type, ...filter);
          assert.ok(rows.length > 0, `${what}: no ${type} row`);
          for (const who of rows) assert.match(String(who), actor, `${what}: ${type} names who acted`);
        };
        await named('task add', 'task:added', '--task', 'k1');
        await named('enqueue', 'job:enqueued', '--task', 'k1');
        await named('enqueue adding its task', 'task:added', '--task', 'k2');
        await named('enqueue adding its task', 'job:enqueued', '--task', 'k2');
        await named('workspace add', 'workspace:added');
        const created = (await t.json<Obj[]>(0, 'audit', '--type', 'token:created')).find(
          (r) => (r['detail'] as Obj)['id'] === made['id'],
        );
        assert.match(String((created?.['detail'] as Obj | undefined)?.['by']), actor, 'token create');
        await named('token revoke', 'token:revoked');
        if (mode === 'db') await named('ledger init', 'ledger:key-added');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
}

describe('why baton up was fenced off', () => {
  test('a session ended by someone else says so, not that its heartbeats stopped', async () => {
    const c = await clusterFixture(sqliteDatabase());
    try {
      const up = c.up('a');
      await up.waitRunning(); // its runner heartbeats: the end below is the one that fences it
      const session = /joined as session (\d+)/.exec(up.log())?.[1] ?? '';
      const ended = await c.baton('session', 'end', session);
      assert.equal(ended.code, 0, ended.stderr);
      await up.waitForLog(/fenced off: .*rejoining as a new session/);
      assert.match(up.log(), new RegExp(`fenced off: its session ${session} was ended by someone else`));
      assert.doesNotMatch(up.log(), /declared stale|heartbeats stopped/);
    } finally {
      await c.close();
    }
  });
});
