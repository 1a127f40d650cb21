/**
 * What `baton status`'s count of jobs waiting for an agent command costs at scale
 * (docs/decisions/0047, "Loose ends (session 20)"): `queued` queued jobs without a command,
 * seeded straight in SQL (fleet-seed.ts; setup only, never timed), and one live host without an
 * agent command. store.observe.stats() is timed `reps` times (median after the first call) with
 * no live host able to run them (the count walks the queue) and again once a host with an agent
 * command is live (the count is skipped by its one-time filter); each state checks the count.
 *
 * Run alone: `node dist/bench/agent-command-wait.js <sqlite path | postgres url> [queued] [reps]`.
 */
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { seedHistory } from './fleet-seed.js';
import { median, nowMs } from './stats.js';

async function host(store: Store, name: string, agentCommand: boolean): Promise<void> {
  const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
  const capacity = { ramTotalMb: 16_000, ramReservedMb: 0, ramFreeMb: 16_000, slotsMax: 4 };
  await store.hosts.register({ name, session: session.id, agentCommand, ...capacity });
}

/** The median stats() time in ms over `reps` calls, each checked to count `expected` waiting jobs. */
async function timed(store: Store, reps: number, expected: number): Promise<number> {
  const runs: number[] = [];
  for (let rep = 0; rep <= reps; rep += 1) {
    const start = nowMs();
    const stats = await store.observe.stats();
    runs.push(nowMs() - start);
    if (stats.agentCommandWait.jobs !== expected)
      throw new Error(`bench: counted ${stats.agentCommandWait.jobs} waiting jobs, not ${expected}`);
  }
  return median(runs.slice(1));
}

const isMain = process.argv[1]?.endsWith('agent-command-wait.js') === true;
if (isMain) {
  const [url, queuedArg, repsArg] = process.argv.slice(2);
  if (url === undefined)
    throw new Error('usage: agent-command-wait.js <sqlite path | postgres url> [queued] [reps]');
  const queued = Number(queuedArg ?? 100_000);
  const reps = Number(repsArg ?? 21);
  await seedHistory(url, { queued, finished: 0 });
  const store = await openStore(url);
  try {
    await host(store, 'plain', false);
    const waitingMs = await timed(store, reps, queued);
    await host(store, 'able', true);
    const ableMs = await timed(store, reps, 0);
    process.stdout.write(
      `${JSON.stringify({ queued, reps, statsWaitingMs: waitingMs, statsAbleLiveMs: ableMs })}\n`,
    );
  } finally {
    await store.close();
  }
}
