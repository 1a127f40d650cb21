/**
 * One process of the done-task race: it tries, at random, to claim one of the target tasks
 * (releasing it done at once when granted), to enqueue it, and to place its job, and logs every
 * answer to a JSON-lines file with synchronous writes.
 *
 *   node done-worker.js <db-url> <history-file> <attempts> <worker-index> <workers> <targets>
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { TaskStateError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';

const [url, historyFile, attemptsRaw, indexRaw, workersRaw, targetsRaw] = process.argv.slice(2);
if (url === undefined || historyFile === undefined) throw new Error('usage: done-worker url file n i w');
const log = (line: Record<string, unknown>): void => appendFileSync(historyFile, `${JSON.stringify(line)}\n`);
const refusal = (e: unknown): { kind: string; code: string } => {
  if (e instanceof TaskStateError) return { kind: 'refused', code: e.code };
  throw e;
};

const store = await openStore(url);
const session = await store.sessions.start({
  kind: 'agent',
  host: `done-${indexRaw}`,
  pid: process.pid,
  ttlMs: 600_000,
});
const term = { lease: 'dispatcher', holder: 'race-leader', term: 1 };
log({ kind: 'ready', session: session.id });
while (readFileSync(historyFile, 'utf8').split('"ready"').length - 1 < Number(workersRaw)) {
  await new Promise((r) => setTimeout(r, 10));
}
const jobs = new Map<string, number>();
let seed = Number(indexRaw) * 7919 + 7;
const random = (n: number): number => {
  seed = (seed * 48271) % 2147483647;
  return seed % n;
};
for (let i = 0; i < Number(attemptsRaw); i++) {
  // Claims are rarer than enqueues, so most tasks see enqueues racing their finish.
  const op = ['claim', 'enqueue', 'enqueue', 'place'][random(4)];
  const key = `target-${random(Number(targetsRaw))}`;
  const job = jobs.get(key);
  if (op === 'claim') {
    const r = await store.claims.acquire({ key, session: session.id }).catch(refusal);
    if ('kind' in r) log({ op, key, ...r });
    else if (!r.ok) log({ op, key, kind: 'held' });
    else {
      log({ op, key, kind: 'granted', epoch: r.claim.epoch });
      const epoch = r.claim.epoch;
      const done = await store.claims.release({ key, session: session.id, epoch, outcome: 'done' });
      log({ op: 'release', key, kind: done.ok ? 'done' : 'fenced' });
    }
  } else if (op === 'enqueue') {
    const r = await store.jobs.enqueue({ key }).catch(refusal);
    if (!('kind' in r)) jobs.set(key, r.job.id);
    log('kind' in r ? { op, key, ...r } : { op, key, kind: r.created ? 'created' : 'active', job: r.job.id });
  } else if (job === undefined) {
    log({ op, key, kind: 'no-job' });
  } else {
    const r = await store.dispatch.place({ id: job, host: 'race-host', term });
    log({ op, key, kind: r.ok ? 'placed' : r.reason, job });
  }
}
await store.sessions.end(session.id);
await store.close();
log({ kind: 'exit', session: session.id });
