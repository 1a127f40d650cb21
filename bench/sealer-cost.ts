/**
 * The ledger sealer's CPU per 1,000 rows it seals beside a PostgreSQL drain (issue 22's
 * `ledgerOverhead`; docs/decisions/0011, "Sealer cost"). The bench's ratio scatters by ±0.5 on a
 * shared machine; this figure moves far less, since it is CPU, not a rate:
 *   node dist/bench/sealer-cost.js [jobs, default 20000] [runs, default 3]
 * Each run drains a fresh database as the bench's "on" drain does (throughput.ts drainSeededPg, the
 * sealer forked and warmed by ledger-on.ts withSealer) and reads from /proc, at the drain's start and
 * end, the CPU of the sealer's process and of its PostgreSQL backends (those connected when it is
 * ready, before the drain opens its own). The server must run on this machine:
 * BATON_BENCH_PG_URL (default postgres://postgres:postgres@127.0.0.1:5432/postgres).
 */
import { readFileSync } from 'node:fs';
import { DRAIN_BATCH } from './drain-loop.js';
import { withSealer } from './ledger-on.js';
import { dropDatabase, freshDatabase, withClient } from './pg-server.js';
import { seedBatonPg } from './seed.js';
import { median } from './stats.js';
import { PG_BATCH_LOOPS, drainSeededPg } from './throughput.js';

/** /proc/<pid>/stat counts CPU in clock ticks of 10 ms (USER_HZ = 100 on Linux). */
const MS_PER_TICK = 10;

/** User and system CPU of a process so far, ms; 0 when it has gone (a pooled connection closed). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return 0;
  }
}

interface Run {
  readonly jobsPerSecond: number;
  readonly rowsSealedDuring: number;
  readonly catchUpMs: number;
  readonly sealerNodeMs: number;
  readonly sealerBackendMs: number;
}

async function oneRun(server: string, jobs: number): Promise<Run> {
  const url = await freshDatabase(server, 'sealer_cost');
  try {
    await seedBatonPg(url, jobs);
    let node = 0;
    let backend = 0;
    const { result, sealing } = await withSealer(
      url,
      () => drainSeededPg(url, jobs, PG_BATCH_LOOPS, DRAIN_BATCH),
      async (sealerPid) => {
        const backends = await withClient(url, async (client) =>
          (
            await client.query<{ pid: number }>(
              'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
            )
          ).rows.map((row) => row.pid),
        );
        const backendCpu = (): number => backends.reduce((sum, pid) => sum + cpuMs(pid), 0);
        const [node0, backend0] = [cpuMs(sealerPid), backendCpu()];
        return () => {
          [node, backend] = [cpuMs(sealerPid) - node0, backendCpu() - backend0];
          return Promise.resolve();
        };
      },
    );
    return {
      jobsPerSecond: Math.round(result),
      rowsSealedDuring: sealing.rowsSealedDuring,
      catchUpMs: Math.round(sealing.catchUpMs),
      sealerNodeMs: node,
      sealerBackendMs: backend,
    };
  } finally {
    await dropDatabase(server, url);
  }
}

const [jobsArg, runsArg] = process.argv.slice(2);
const server = process.env['BATON_BENCH_PG_URL'] ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const runs: Run[] = [];
for (let run = 0; run < Number(runsArg ?? 3); run++)
  runs.push(await oneRun(server, Number(jobsArg ?? 20_000)));
const per1k = (run: Run, ms: number): number => Math.round((1000 * ms * 1000) / run.rowsSealedDuring) / 1000;
const node = runs.map((run) => per1k(run, run.sealerNodeMs));
const backend = runs.map((run) => per1k(run, run.sealerBackendMs));
process.stdout.write(
  `${JSON.stringify({
    runs,
    sealerMsPer1000Rows: { node, backend, medianNode: median(node), medianBackend: median(backend) },
  })}\n`,
);
