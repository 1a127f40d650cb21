/**
 * One process calling `next` in a loop for the next-race test: each task it receives it releases
 * at once, so the backlog stays contended. After one release in five it pauses 1-3 ms before
 * asking again: two workers in lockstep otherwise settle into a stable split (each re-taking the
 * task it just released) and never contend for one task. Every answer goes to a JSON-lines file
 * with synchronous writes.
 *
 *   node next-worker.js <db-url> <history-file> <calls> <worker-index> <workers>
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { openStore } from '../../src/store/open.js';

const [url, historyFile, callsRaw, indexRaw, workersRaw] = process.argv.slice(2);
if (url === undefined || historyFile === undefined) throw new Error('usage: next-worker url file calls i n');
const log = (line: Record<string, unknown>): void => appendFileSync(historyFile, `${JSON.stringify(line)}\n`);

const store = await openStore(url);
const host = `next-${indexRaw}`;
const session = await store.sessions.start({ kind: 'human', host, pid: process.pid, ttlMs: 3_600_000 });
log({ kind: 'ready', session: session.id });
while (readFileSync(historyFile, 'utf8').split('"ready"').length - 1 < Number(workersRaw)) {
  await new Promise((r) => setTimeout(r, 10));
}
for (let i = 0; i < Number(callsRaw); i++) {
  const got = await store.lifecycle.next({ session: session.id });
  if (got === null) {
    log({ kind: 'none', session: session.id });
    continue;
  }
  const { key, epoch } = { key: got.task.key, epoch: got.claim.epoch };
  log({ kind: 'got', key, epoch, session: session.id });
  const released = await store.claims.release({ key, session: session.id, epoch, outcome: 'released' });
  if (!released.ok) log({ kind: 'release-refused', key, epoch, session: session.id });
  if (Math.random() < 0.2) await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 2));
}
await store.sessions.end(session.id);
await store.close();
log({ kind: 'exit', session: session.id });
