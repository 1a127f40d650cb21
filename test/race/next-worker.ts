/**
 * One process calling `next` in a loop for the next-race test: each task it receives it releases
 * at once, so the backlog stays contended. Every answer goes to a JSON-lines file with
 * synchronous writes.
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
}
await store.sessions.end(session.id);
await store.close();
log({ kind: 'exit', session: session.id });
