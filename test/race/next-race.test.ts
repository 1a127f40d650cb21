/**
 * `baton next` from two processes at once, 1,000 calls each, against one backlog: no task is
 * handed to both while it is claimed (judged on what each was told and on the database's claim
 * history), and done, closed, escalated, gated, held and queued tasks are never handed out.
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

const WORKERS = 2;
const CALLS = 1000;
const OPEN = 6;
const worker = fileURLToPath(new URL('./next-worker.js', import.meta.url));
const SKIPPED = ['done', 'closed', 'escalated', 'gated', 'held', 'queued'];
const BY = { name: 'race' };

function run(url: string, history: string, index: number): Promise<number> {
  const args = [worker, url, history, String(CALLS), String(index), String(WORKERS)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

interface Line {
  kind: string;
  key?: string;
  epoch?: number;
  session: number;
}

for (const db of bothEngines()) {
  describe(`${db.name}: ${WORKERS} processes calling next ${CALLS} times each`, () => {
    test('never hand one task to both while it is claimed, and never hand out a task that is not eligible', async () => {
      const url = await db.fresh();
      const setup = await openStore(url);
      for (let i = 0; i < OPEN; i++) await setup.tasks.add({ key: `open-${i}`, priority: i % 3 });
      for (const key of SKIPPED) await setup.tasks.add({ key, priority: 0 });
      await setup.lifecycle.transition({ key: 'done', action: 'complete', by: BY });
      await setup.lifecycle.transition({ key: 'closed', action: 'close', by: BY });
      await setup.lifecycle.escalate({ key: 'escalated', reason: 'stuck', by: BY });
      await setup.lifecycle.gate({ key: 'gated', gate: 'design', by: BY });
      const holder = await setup.sessions.start({ kind: 'human', host: 'h', pid: 1, ttlMs: 3_600_000 });
      await setup.claims.acquire({ key: 'held', session: holder.id });
      await setup.jobs.enqueue({ key: 'queued' });
      const history = join(mkdtempSync(join(tmpdir(), 'baton-next-race-')), 'history.jsonl');
      const codes = await Promise.all(Array.from({ length: WORKERS }, (_, i) => run(url, history, i)));
      assert.deepEqual(codes, Array(WORKERS).fill(0));

      const lines = readFileSync(history, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Line);
      const got = lines.filter((l) => l.kind === 'got');
      assert.equal(got.length + lines.filter((l) => l.kind === 'none').length, WORKERS * CALLS);
      assert.equal(lines.filter((l) => l.kind === 'release-refused').length, 0);
      assert.deepEqual(
        got.filter((g) => !String(g.key).startsWith('open-')),
        [],
        'nothing but open, free tasks was handed out',
      );
      const winner = new Map<string, number>();
      for (const g of got) {
        const id = `${g.key}#${g.epoch}`;
        assert.equal(winner.get(id), undefined, `${id} handed out twice`);
        winner.set(id, g.session);
      }
      const sessions = new Set(got.map((g) => g.session));
      assert.equal(sessions.size, WORKERS, 'both processes received tasks');
      let switches = 0;
      for (let i = 0; i < OPEN; i++) {
        const claims = await setup.claims.history(`open-${i}`);
        claims.forEach((c, n) => {
          assert.equal(c.epoch, n + 1, 'epochs grow by one per grant');
          assert.equal(
            winner.get(`open-${i}#${c.epoch}`),
            c.session,
            'the database agrees with who was told',
          );
          const previous = claims[n - 1];
          if (previous === undefined) return;
          assert.ok(
            previous.releasedAt !== null && previous.releasedAt <= c.claimedAt,
            'never held twice at once',
          );
          if (previous.session !== c.session) switches++;
        });
      }
      assert.ok(switches > 0, 'the two processes contended for the same tasks');
      for (const key of SKIPPED) {
        const claims = await setup.claims.history(key);
        assert.ok(
          claims.every((c) => c.session === holder.id),
          `${key} was never handed out`,
        );
      }
      await setup.close();
    });
  });
}
