/**
 * The throughput ladder (docs/decisions/0017, "A ladder of prototypes"): what part of Baton's
 * schema and batch statement costs what, against Graphile Worker at its best configuration, all
 * on one PostgreSQL server, interleaved per repetition.
 *
 *   npm run build && node dist/bench/ladder.js [--reps N (3)] [--items N (20000)]
 *
 * Rungs: Graphile's best configuration (peers.ts GRAPHILE_BEST); the prototypes A, B, T, J, K of
 * ladder-protos.ts, from the barest fenced and audited batch up to Baton's schema; Baton's own
 * drain (two loops of 500, as the bench's, no sealer); and Baton with one part removed from its
 * database after seeding (its ledger's secondary indexes, the jobs → sessions key), which shows
 * what that part costs. Removing them is a measurement, never a configuration. Prints every
 * rung's jobs/s per repetition, the median, and the median of its per-repetition ratio to
 * Graphile's best. BATON_BENCH_PG_URL names a server; otherwise a
 * throwaway embedded one with the bench's durable settings.
 */
import { parseArgs } from 'node:util';
import { GRAPHILE_BEST, drainPeer } from './peers.js';
import { PROTOS, drainProto, seedProto } from './ladder-protos.js';
import { dropDatabase, freshDatabase, startBenchServer, withClient } from './pg-server.js';
import { seedBatonPg } from './seed.js';
import { DRAIN_BATCH } from './drain-loop.js';
import { PG_BATCH_LOOPS, drainSeededPg, ratiosOfRuns } from './throughput.js';
import { median, progress } from './stats.js';

interface Rung {
  readonly name: string;
  readonly what: string;
  /** Jobs per second on a fresh database `url`. */
  readonly run: (url: string, items: number) => Promise<number>;
}

/** Baton's drain, with `remove` run on its database after seeding (an ablation), or as it is. */
function baton(name: string, what: string, remove: readonly string[]): Rung {
  return {
    name,
    what,
    run: async (url, items) => {
      await seedBatonPg(url, items);
      if (remove.length > 0)
        await withClient(url, async (client) => {
          for (const statement of remove) await client.query(statement);
        });
      return drainSeededPg(url, items, PG_BATCH_LOOPS, DRAIN_BATCH);
    },
  };
}

const RUNGS: readonly Rung[] = [
  {
    name: 'G',
    what: 'Graphile Worker, its best configuration',
    run: (url, items) => drainPeer(url, items, GRAPHILE_BEST),
  },
  ...PROTOS.map((proto): Rung => ({
    name: proto.name,
    what: proto.what,
    run: async (url, items) => {
      await seedProto(url, proto, items);
      return drainProto(url, proto, items);
    },
  })),
  baton('Baton', "Baton's drain (2 loops of jobs.batch, 500 each), no sealer", []),
  baton('-ledgerIdx', 'Baton without audit_by_key and audit_by_session', [
    'DROP INDEX audit_by_key',
    'DROP INDEX audit_by_session',
  ]),
  baton('-sessionFk', 'Baton without the jobs → sessions foreign key', [
    'ALTER TABLE jobs DROP CONSTRAINT jobs_session_id_fkey',
  ]),
];

const { values } = parseArgs({
  options: { reps: { type: 'string', default: '3' }, items: { type: 'string', default: '20000' } },
});
const reps = Number(values.reps);
const items = Number(values.items);
if (!Number.isInteger(reps) || reps < 1 || !Number.isInteger(items) || items < 1000) {
  process.stderr.write('ladder: --reps must be a whole number ≥ 1 and --items one ≥ 1000\n');
  process.exit(2);
}

const server = await startBenchServer();
const runs = new Map<string, number[]>(RUNGS.map((rung) => [rung.name, []]));
try {
  for (let rep = 1; rep <= reps; rep++) {
    for (const rung of RUNGS) {
      const url = await freshDatabase(server.url, 'ladder');
      try {
        runs.get(rung.name)?.push(await rung.run(url, items));
      } finally {
        await dropDatabase(server.url, url);
      }
    }
    progress(
      `ladder rep ${rep}/${reps}: ${RUNGS.map((r) => `${r.name} ${runs.get(r.name)?.at(-1)?.toFixed(0)}`).join(', ')}`,
    );
  }
} finally {
  await server.stop();
}

const best = runs.get('G') ?? [];
process.stdout.write(
  `| rung | what | jobs/s (median) | runs | ÷ Graphile best (median of runs) |\n|---|---|---|---|---|\n`,
);
for (const rung of RUNGS) {
  const rates = runs.get(rung.name) ?? [];
  const ratio = median(ratiosOfRuns(rates, best));
  process.stdout.write(
    `| ${rung.name} | ${rung.what} | ${median(rates).toFixed(0)} | ${rates.map((rate) => rate.toFixed(0)).join(', ')} | ${ratio.toFixed(2)} |\n`,
  );
}
