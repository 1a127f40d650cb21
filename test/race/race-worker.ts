/**
 * One racing process: claims random tasks from a shared set (and releases them), then drains
 * the job queue, appending every outcome to a JSON-lines file with synchronous writes.
 *
 *   node race-worker.js <db-url> <history-file> <task-count> <attempts> <worker-index> <workers>
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { openStore } from '../../src/store/open.js';

const [url, historyFile, taskCountRaw, attemptsRaw, indexRaw, workersRaw] = process.argv.slice(2);
if (url === undefined || historyFile === undefined)
  throw new Error('usage: race-worker url file n attempts i');
const taskCount = Number(taskCountRaw);
const attempts = Number(attemptsRaw);
const host = `race-${indexRaw}`;

const log = (line: Record<string, unknown>): void => appendFileSync(historyFile, `${JSON.stringify(line)}\n`);

const store = await openStore(url);
// These workers never heartbeat: a TTL longer than the race keeps other claims from taking
// their tasks over as expired.
const session = await store.sessions.start({ kind: 'agent', host, pid: process.pid, ttlMs: 600_000 });
// Start together: every worker waits until all have written their ready line.
log({ kind: 'ready', session: session.id });
while (readFileSync(historyFile, 'utf8').split('"ready"').length - 1 < Number(workersRaw)) {
  await new Promise((r) => setTimeout(r, 10));
}
let seed = Number(indexRaw) * 7919 + 1;
const random = (n: number): number => {
  seed = (seed * 48271) % 2147483647;
  return seed % n;
};

for (let i = 0; i < attempts; i++) {
  const key = `race-${random(taskCount)}`;
  const r = await store.claims.acquire({ key, session: session.id });
  if (r.ok) {
    log({ kind: 'granted', key, session: session.id, epoch: r.claim.epoch, fresh: r.granted });
    const rel = await store.claims.release({
      key,
      session: session.id,
      epoch: r.claim.epoch,
      // Not done: a done task is never claimed again, and this race is about the mutex.
      outcome: 'released',
    });
    log({ kind: rel.ok ? 'released' : 'release-refused', key, session: session.id, epoch: r.claim.epoch });
  } else {
    log({ kind: 'held', key, session: session.id, holder: r.holder });
  }
}

for (;;) {
  const job = await store.jobs.claimNext({ session: session.id });
  if (job === null) break;
  log({ kind: 'job', id: job.id, session: session.id, epoch: job.epoch });
  const started = await store.jobs.start({ id: job.id, session: session.id, epoch: job.epoch });
  const done = await store.jobs.finish({ id: job.id, session: session.id, epoch: job.epoch, status: 'done' });
  if (!started.ok || !done.ok) log({ kind: 'job-lost', id: job.id, session: session.id });
}
await store.sessions.end(session.id);
await store.close();
log({ kind: 'exit', session: session.id });
