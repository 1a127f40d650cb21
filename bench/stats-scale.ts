/**
 * store.observe.stats() at scale (docs/decisions/0040): the operator's figures read by `baton status`,
 * the dashboard and every `/metrics` scrape. The history is seeded straight in SQL (setup only,
 * never timed): `finished` done jobs with their tasks, done (fleet-seed.ts), `claims` released claims on
 * those tasks, and `ledger` audit rows, a quarter of them `job:started` and an eighth `job:claimed`
 * with `started: true`; and `pruned` of the done tasks get a second, newer done job, so that their
 * first (old, no longer the newest) is job retention's to remove. Then stats() is timed `reps`
 * times on one store: the first call alone (`firstMs`: a fresh process's cost), and the median of
 * the rest (`statsMs`). Then one retention batch removes the `pruned` old jobs (`pruneMs`) and the
 * next stats() of that store is timed (`afterPruneMs`: decision 0040's cost of a retention pass),
 * and a second store is opened and its first stats() timed (`secondFirstMs`: a later `baton status`,
 * which starts from the counts the first store persisted, when there are any).
 *
 * Run alone:
 * `node dist/bench/stats-scale.js <sqlite path | postgres url> [finished] [ledger] [claims] [pruned]`.
 */
import Database from 'better-sqlite3';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { seedHistory } from './fleet-seed.js';
import { withClient } from './pg-server.js';
import { median, nowMs, progress } from './stats.js';

export interface StatsPlan {
  readonly finished: number;
  readonly ledger: number;
  readonly claims: number;
  readonly pruned: number;
  readonly reps: number;
}

export interface StatsResult {
  readonly firstMs: number;
  readonly statsMs: number;
  readonly pruneMs: number;
  readonly afterPruneMs: number;
  readonly secondFirstMs: number;
  readonly runs: readonly number[];
  readonly seedSeconds: number;
}

const isPg = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

/** The ledger's row types, by id modulo 8: two `job:started`, one `job:claimed` that started its job. */
const LEDGER_TYPE = (id: string): string =>
  `CASE ${id} % 8 WHEN 0 THEN 'job:started' WHEN 4 THEN 'job:started' WHEN 2 THEN 'job:claimed'
     WHEN 6 THEN 'job:claimed' WHEN 1 THEN 'job:enqueued' ELSE 'job:finished' END`;
const LEDGER_DETAIL = (id: string): string =>
  `CASE ${id} % 8 WHEN 2 THEN '{"started":true}' WHEN 6 THEN '{"attempt":1}' ELSE '{}' END`;

/** A second done job, finished as its task was made, for the first done tasks (LIMIT appended). */
const NEWER_JOBS = `INSERT INTO jobs (task_id, status, priority, queued_at, attempt, epoch, host, claimed_at,
    started_at, finished_at, exit_code)
  SELECT id, 'done', priority, created_at, 1, 1, 'gone', created_at, created_at, created_at, 0
  FROM tasks WHERE key LIKE 'done-%' ORDER BY id`;

const HOUR_MS = 3_600_000;

async function seedRestPg(url: string, plan: StatsPlan): Promise<void> {
  await withClient(url, async (client) => {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ended_at, state)
       VALUES ('agent', 'bench', 1, 'seed', now(), now(), now(), 'ended')`,
    );
    await client.query(
      `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome)
       SELECT t.id, (SELECT max(id) FROM sessions), 1, t.created_at, t.created_at, t.created_at, 'done'
       FROM tasks t WHERE t.key LIKE 'done-%' ORDER BY t.id LIMIT $1::int`,
      [plan.claims],
    );
    await client.query(
      `INSERT INTO audit_events (at, type, task_key, detail)
       SELECT now(), ${LEDGER_TYPE('g')}, 'done-' || lpad((g % 1000000)::text, 7, '0'), (${LEDGER_DETAIL('g')})::jsonb
       FROM generate_series(1, $1::int) g`,
      [plan.ledger],
    );
    await client.query(`UPDATE tasks SET state = 'done', state_at = created_at WHERE key LIKE 'done-%'`);
    await client.query(`${NEWER_JOBS} LIMIT $1::int`, [plan.pruned]);
    await client.query('COMMIT');
    await client.query('VACUUM ANALYZE');
  });
}

function seedRestSqlite(path: string, plan: StatsPlan): void {
  const db = new Database(path);
  try {
    db.transaction(() => {
      const now = Date.now();
      db.prepare(
        `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ended_at, state)
         VALUES ('agent', 'bench', 1, 'seed', ?, ?, ?, 'ended')`,
      ).run(now, now, now);
      db.prepare(
        `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at, released_at, outcome)
         SELECT t.id, (SELECT max(id) FROM sessions), 1, t.created_at, t.created_at, t.created_at, 'done'
         FROM tasks t WHERE t.key LIKE 'done-%' ORDER BY t.id LIMIT ?`,
      ).run(plan.claims);
      db.prepare(
        `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @n)
         INSERT INTO audit_events (at, type, task_key, detail)
         SELECT @now, ${LEDGER_TYPE('i')}, 'done-' || substr('000000' || (i % 1000000), -7), ${LEDGER_DETAIL('i')}
         FROM g`,
      ).run({ n: plan.ledger, now });
      db.prepare(`UPDATE tasks SET state = 'done', state_at = created_at WHERE key LIKE 'done-%'`).run();
      db.prepare(`${NEWER_JOBS} LIMIT ?`).run(plan.pruned);
    }).immediate();
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}

/** Seeds the history of `plan` in the (new) database at `url`, then times stats() on it. */
export async function measureStats(url: string, plan: StatsPlan, engine: string): Promise<StatsResult> {
  const t0 = nowMs();
  await seedHistory(url, { queued: 0, finished: plan.finished });
  if (isPg(url)) await seedRestPg(url, plan);
  else seedRestSqlite(url, plan);
  const seedSeconds = (nowMs() - t0) / 1000;
  progress(
    `stats ${engine}: seeded ${plan.finished} done jobs, ${plan.claims} claims and ${plan.ledger} ledger rows ` +
      `in ${seedSeconds.toFixed(1)} s`,
  );
  const store = await openStore(url);
  try {
    const runs: number[] = [];
    for (let rep = 0; rep < plan.reps; rep++)
      runs.push(await timedStats(store, plan, plan.finished + plan.pruned));
    const start = nowMs();
    const pruned = await store.retention.pruneJobs({ olderThanMs: HOUR_MS, limit: plan.pruned });
    const pruneMs = nowMs() - start;
    if (!pruned.ok || pruned.removed !== plan.pruned) throw new Error(`bench: ${JSON.stringify(pruned)}`);
    const afterPruneMs = await timedStats(store, plan, plan.finished);
    const second = await openStore(url);
    const secondFirstMs = await timedStats(second, plan, plan.finished).finally(() => second.close());
    const result = {
      firstMs: runs[0] ?? Number.NaN,
      statsMs: median(runs.slice(1)),
      pruneMs,
      afterPruneMs,
      secondFirstMs,
      runs,
      seedSeconds,
    };
    progress(
      `stats ${engine}: first call ${result.firstMs.toFixed(1)} ms, then ${result.statsMs.toFixed(1)} ms; ` +
        `a retention batch of ${plan.pruned} ${pruneMs.toFixed(1)} ms, the next call ${afterPruneMs.toFixed(1)} ms; ` +
        `a second store's first call ${secondFirstMs.toFixed(1)} ms`,
    );
    return result;
  } finally {
    await store.close();
  }
}

/** One stats() call, in ms, checked against the seeded history (`done` done jobs). */
async function timedStats(store: Store, plan: StatsPlan, done: number): Promise<number> {
  const start = nowMs();
  const stats = await store.observe.stats();
  const ms = nowMs() - start;
  const counted = stats.jobsByStatus.find((entry) => entry.name === 'done')?.count;
  if (counted !== done) throw new Error(`bench: stats counted ${counted} done jobs, not ${done}`);
  if (stats.claimsGranted !== plan.claims)
    throw new Error(`bench: stats counted ${stats.claimsGranted} claims`);
  return ms;
}

const isMain = process.argv[1]?.endsWith('stats-scale.js') === true;
if (isMain) {
  const [url, finished, ledger, claims, pruned] = process.argv.slice(2);
  if (url === undefined)
    throw new Error(
      'usage: stats-scale.js <sqlite path | postgres url> [finished] [ledger] [claims] [pruned]',
    );
  const plan: StatsPlan = {
    finished: Number(finished ?? 1_000_000),
    ledger: Number(ledger ?? 2_000_000),
    claims: Number(claims ?? 1_000_000),
    pruned: Number(pruned ?? 1000),
    reps: 21,
  };
  const result = await measureStats(url, plan, isPg(url) ? 'postgresql' : 'sqlite');
  process.stdout.write(`${JSON.stringify({ plan, ...result })}\n`);
}
