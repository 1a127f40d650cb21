/**
 * The multi-process race ("tower defence" after Graphile Worker): eight OS processes claim the
 * same tasks and drain the same queue at once. Judged on the database's own claim history and on
 * what every process was told.
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
const TASKS = 12;
const ATTEMPTS = 300;
const JOBS = 800;
const worker = fileURLToPath(new URL('./race-worker.js', import.meta.url));

function run(url: string, history: string, index: number): Promise<number> {
  const child = spawn(
    process.execPath,
    [worker, url, history, String(TASKS), String(ATTEMPTS), String(index), String(WORKERS)],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

interface Line {
  kind: string;
  key?: string;
  id?: number;
  session: number;
  epoch?: number;
  holder?: { session: number; host: string; since: number; epoch: number };
}

for (const db of bothEngines()) {
  describe(`${db.name}: ${WORKERS} processes racing`, () => {
    test('grant no task twice, hand no job out twice, and tell every loser who holds it', async () => {
      const url = await db.fresh();
      const setup = await openStore(url);
      for (let i = 0; i < TASKS; i++) await setup.tasks.add({ key: `race-${i}` });
      for (let i = 0; i < JOBS; i++) await setup.jobs.enqueue({ key: `job-${i}` });
      const history = join(mkdtempSync(join(tmpdir(), 'baton-race-')), 'history.jsonl');
      const codes = await Promise.all(Array.from({ length: WORKERS }, (_, i) => run(url, history, i)));
      assert.deepEqual(codes, Array(WORKERS).fill(0));

      const lines = readFileSync(history, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Line);
      const grants = lines.filter((l) => l.kind === 'granted');
      const held = lines.filter((l) => l.kind === 'held');
      assert.equal(grants.length + held.length, WORKERS * ATTEMPTS, 'every attempt has an outcome');
      assert.ok(held.length > 0, 'the race produced contention');
      assert.equal(lines.filter((l) => l.kind === 'release-refused').length, 0);

      // Zero double grants: one session per (task, epoch), matching the database's history.
      const seen = new Map<string, number>();
      for (const g of grants) {
        const id = `${g.key}#${g.epoch}`;
        assert.equal(seen.get(id), undefined, `epoch ${id} granted twice`);
        seen.set(id, g.session);
      }
      for (let i = 0; i < TASKS; i++) {
        const claims = await setup.claims.history(`race-${i}`);
        claims.forEach((c, n) => {
          assert.equal(c.epoch, n + 1, 'epochs grow by one per grant');
          assert.equal(seen.get(`race-${i}#${c.epoch}`), c.session, 'the database agrees with the winner');
          const previous = claims[n - 1];
          if (previous !== undefined) {
            assert.ok(previous.releasedAt !== null && previous.releasedAt <= c.claimedAt, 'no overlap');
          }
        });
      }
      // Every loser was told who held it, and it was somebody else.
      for (const l of held) {
        assert.ok(
          l.holder !== undefined && l.holder.session !== l.session && l.holder.host.startsWith('race-'),
        );
      }

      const jobs = lines.filter((l) => l.kind === 'job');
      assert.equal(jobs.length, JOBS, 'every job handed out');
      assert.equal(new Set(jobs.map((j) => j.id)).size, JOBS, 'no job handed out twice');
      assert.equal(lines.filter((l) => l.kind === 'job-lost').length, 0);
      assert.equal((await setup.jobs.list({ status: ['done'], limit: JOBS + 1 })).length, JOBS);
      await setup.close();
    });
  });
}
