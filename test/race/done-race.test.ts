/**
 * Finished means finished, under a race: eight processes try to claim, enqueue and place one task
 * at once while one of them finishes it (a claim released done). Before the finish a job may be
 * queued (and placed); the finish cancels it. After the finish no claim is granted, no job created
 * and none placed: the database holds one claim, no active job, every job queued before the
 * finish, one `task:state` row, and every later attempt was refused as task_done.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';

const WORKERS = 8;
const ATTEMPTS = 250;
const TARGETS = 24;
const worker = fileURLToPath(new URL('./done-worker.js', import.meta.url));

function run(url: string, history: string, index: number): Promise<number> {
  const args = [worker, url, history, String(ATTEMPTS), String(index), String(WORKERS), String(TARGETS)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

interface Line {
  op?: string;
  key?: string;
  kind: string;
  code?: string;
}

for (const db of bothEngines()) {
  describe(`${db.name}: ${WORKERS} processes racing a task to done`, () => {
    test('claim, enqueue nor place ever succeed once the task is done', async () => {
      const url = await db.fresh();
      const setup = await openStore(url);
      for (let i = 0; i < TARGETS; i++) await setup.tasks.add({ key: `target-${i}` });
      const runner = await setup.sessions.start({
        kind: 'daemon',
        host: 'race-host',
        pid: 1,
        ttlMs: 600_000,
      });
      await setup.hosts.register({
        ...{ name: 'race-host', session: runner.id, enabled: true },
        ...{ ramTotalMb: 1000, ramReservedMb: 0, ramFreeMb: 1000, slotsMax: 100 },
      });
      const lease = await setup.leases.acquire({ name: 'dispatcher', holder: 'race-leader', ttlMs: 600_000 });
      assert.ok(lease.ok && lease.lease.term === 1);
      const history = join(mkdtempSync(join(tmpdir(), 'baton-done-race-')), 'history.jsonl');
      const codes = await Promise.all(Array.from({ length: WORKERS }, (_, i) => run(url, history, i)));
      assert.deepEqual(codes, Array(WORKERS).fill(0));

      const lines = readFileSync(history, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Line);
      const ops = lines.filter((l) => l.op !== undefined && l.op !== 'release');
      assert.equal(ops.length, WORKERS * ATTEMPTS, 'every attempt has an outcome');
      const refused = lines.filter((l) => l.kind === 'refused');
      assert.ok(refused.length > WORKERS, 'attempts after a finish were refused');
      assert.ok(refused.every((l) => l.code === 'task_done'));
      const placed = await setup.audit.list({ type: 'job:placed', limit: 1000 });
      let finished = 0;
      for (let i = 0; i < TARGETS; i++) {
        const key = `target-${i}`;
        const mine = lines.filter((l) => l.key === key);
        const grants = mine.filter((l) => l.kind === 'granted').length;
        assert.ok(grants <= 1, `${key}: one claim at most, the one that finished it`);
        const task = await setup.tasks.get(key);
        assert.equal(task?.state, grants === 1 ? 'done' : 'open', key);
        assert.equal((await setup.claims.history(key)).length, grants, key);
        const jobs = await setup.jobs.list({ key });
        assert.equal(jobs.length, mine.filter((l) => l.kind === 'created').length, `${key}: jobs as created`);
        if (task?.state !== 'done') continue;
        finished++;
        const at = task.stateAt;
        assert.ok(jobs.length <= 1, `${key}: one job at most, active until the finish`);
        assert.ok(
          jobs.every((j) => j.status === 'cancelled' && j.queuedAt <= at),
          `${key}: no job outlived the finish or was queued after it: ${JSON.stringify(jobs)}`,
        );
        assert.ok(
          placed.every((e) => e.key !== key || e.at <= at),
          `${key}: nothing placed after the finish`,
        );
        assert.equal((await setup.audit.list({ key, type: 'task:state' })).length, 1, key);
      }
      assert.ok(finished > TARGETS / 2, `most targets were finished (${finished})`);
      await setup.close();
    });
  });
}
