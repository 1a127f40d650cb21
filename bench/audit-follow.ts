/**
 * A follower beside a drain (decision 0027): `baton audit --follow --json`, the real CLI in its own
 * process, reads the ledger while PG_BATCH_LOOPS loops drain `items` seeded jobs on PostgreSQL.
 * It must print exactly the rows the drain wrote. Reported per run: rows written and printed, the
 * follower's CPU (utime + stime from /proc), how long after the drain's end its last row came,
 * and the drain's rate with and without a follower, run alternately in one run (their ratio).
 *
 *   npm run build && BATON_BENCH_PG_URL=postgres://… node dist/bench/audit-follow.js [--items N] [--reps N]
 *     [--type T]   (follow only rows of type T; job:stalled prints nothing in a drain: the polls alone)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DRAIN_BATCH } from './drain-loop.js';
import { dropDatabase, freshDatabase, startBenchServer, withClient } from './pg-server.js';
import { seedBatonPg } from './seed.js';
import { PG_BATCH_LOOPS, drainSeededPg } from './throughput.js';

const BATON = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));
/** Clock ticks a second, as /proc counts CPU time (USER_HZ: 100 on Linux). */
const TICKS = 100;

/** CPU seconds a live process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

const maxId = (url: string): Promise<number> =>
  withClient(url, async (client) => {
    const { rows } = await client.query<{ id: string | null }>('SELECT max(id) AS id FROM audit_events');
    return Number(rows[0]?.id ?? 0);
  });

interface Run {
  readonly rate: number;
  readonly written?: number;
  readonly printed?: number;
  readonly followerCpuS?: number;
  readonly lastRowAfterDrainMs?: number | null;
  readonly exit?: number | null;
}

async function once(serverUrl: string, items: number, follow: boolean, type?: string): Promise<Run> {
  const url = await freshDatabase(serverUrl, 'follow');
  try {
    await seedBatonPg(url, items);
    const start = await maxId(url);
    if (!follow) return { rate: await drainSeededPg(url, items, PG_BATCH_LOOPS, DRAIN_BATCH) };
    const args = ['audit', '--follow', '--json', '--after', String(start), ...(type ? ['--type', type] : [])];
    const child = spawn(process.execPath, [BATON, ...args], {
      env: { ...process.env, BATON_DB: url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let printed = 0;
    let lastAt = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (const byte of chunk) if (byte === 10) printed += 1;
      lastAt = performance.now();
    });
    const ended = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const rate = await drainSeededPg(url, items, PG_BATCH_LOOPS, DRAIN_BATCH);
    const drainEnd = performance.now();
    // With --type, the rows of that type: a follower that filters reads them all, prints those.
    const written = await withClient(url, async (client) => {
      const { rows } = await client.query<{ n: string }>(
        'SELECT count(*) AS n FROM audit_events WHERE id > $1 AND ($2::text IS NULL OR type = $2::text)',
        [start, type ?? null],
      );
      return Number(rows[0]?.n ?? 0);
    });
    const deadline = drainEnd + 60_000;
    while (printed < written && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const followerCpuS = cpuSeconds(child.pid ?? 0);
    child.kill('SIGINT');
    const exit = await ended;
    return {
      rate,
      written,
      printed,
      followerCpuS,
      lastRowAfterDrainMs: printed === 0 ? null : Math.round(lastAt - drainEnd),
      exit,
    };
  } finally {
    await dropDatabase(serverUrl, url);
  }
}

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '20000' },
    reps: { type: 'string', default: '2' },
    // Follow only rows of this type (job:stalled: none in a drain, so the polls alone are measured).
    type: { type: 'string' },
  },
});
const items = Number(values.items);
const server = await startBenchServer();
try {
  const runs: { follow: boolean; run: Run }[] = [];
  for (let rep = 0; rep < Number(values.reps); rep++) {
    for (const follow of rep % 2 === 0 ? [false, true] : [true, false]) {
      const run = await once(server.url, items, follow, values.type);
      runs.push({ follow, run });
      process.stdout.write(`${JSON.stringify({ rep, follow, items, ...run })}\n`);
    }
  }
  const mean = (follow: boolean): number => {
    const rates = runs.filter((r) => r.follow === follow).map((r) => r.run.rate);
    return rates.reduce((sum, rate) => sum + rate, 0) / rates.length;
  };
  const ratio = mean(true) / mean(false);
  process.stdout.write(`${JSON.stringify({ items, server: server.origin, rateRatioWithFollower: ratio })}\n`);
} finally {
  await server.stop();
}
