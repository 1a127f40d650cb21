/**
 * The output stream (docs/decisions/0029-live-output.md) under a real `baton up` on PostgreSQL,
 * side by side in one run: three agents, one at a time, each about 6 s long:
 * - quiet: prints one line, then sleeps;
 * - lines: ten short lines a second;
 * - flood: 1 MB a second (1 MB at once, then a pause, six times).
 * For each run: the output stream's append statements (counted by a row trigger that notes each
 * inserting transaction, added to this bench's database only), their rows and bytes; the most
 * bytes the database kept of the attempt while it ran (sampled every 100 ms) and after it ended;
 * and the CPU time of the `baton up` process over the run, against the quiet run's.
 * Run: `npm run build && node dist/bench/output-stream.js` (BATON_BENCH_PG_URL, default the
 * local postgres:postgres server; a database of its own is made and dropped).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openStore } from '../src/store/open.js';

const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));
const SERVER = process.env['BATON_BENCH_PG_URL'] ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

const AGENTS = {
  quiet: 'echo started; sleep 6',
  lines: 'for i in $(seq 1 60); do echo "step $i: compiling module $i of 60"; sleep 0.1; done',
  flood: `for i in 1 2 3 4 5 6; do head -c 1000000 /dev/zero | tr '\\0' x; echo; sleep 1; done`,
};

const COUNTER = `
CREATE TABLE bench_rows (xid bigint NOT NULL, bytes integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION bench_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO bench_rows (xid, bytes) VALUES (txid_current(), length(NEW.bytes)); RETURN NEW; END $$;
CREATE TRIGGER bench_row AFTER INSERT ON output_chunks FOR EACH ROW EXECUTE FUNCTION bench_row();`;

/** CPU time (user + system) of a process so far, in ms, from /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

interface Figures {
  readonly seconds: number;
  readonly appends: number;
  readonly rows: number;
  readonly bytes: number;
  readonly keptMax: number;
  readonly keptAfter: number;
  readonly logBytes: number;
  readonly cpuMs: number;
}

async function runOne(
  client: pg.Client,
  url: string,
  dir: string,
  upPid: number,
  agent: string,
): Promise<Figures> {
  const store = await openStore(url);
  const { job } = await store.jobs.enqueue({
    key: `bench-${agent}`,
    command: AGENTS[agent as keyof typeof AGENTS],
  });
  await store.close();
  const kept = async (): Promise<number> =>
    Number(
      (
        await client.query<{ kept: string }>(
          'SELECT coalesce(sum(length(bytes)), 0) AS kept FROM output_chunks WHERE job_id = $1',
          [job.id],
        )
      ).rows[0]?.kept ?? 0,
    );
  let keptMax = 0;
  let cpuBefore = 0;
  for (;;) {
    const { rows } = await client.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [
      job.id,
    ]);
    const status = rows[0]?.status ?? 'queued';
    if (status === 'running' && cpuBefore === 0) cpuBefore = cpuMs(upPid);
    if (!['queued', 'claimed', 'running'].includes(status)) break;
    keptMax = Math.max(keptMax, await kept());
    await sleep(100);
  }
  const cpu = cpuMs(upPid) - cpuBefore;
  const times = await client.query<{ started: Date; finished: Date }>(
    'SELECT started_at AS started, finished_at AS finished FROM jobs WHERE id = $1',
    [job.id],
  );
  const { started, finished } = times.rows[0] ?? { started: new Date(), finished: new Date() };
  const counted = await client.query<{ appends: string; rows: string; bytes: string }>(
    `SELECT count(DISTINCT xid) AS appends, count(*) AS rows, coalesce(sum(bytes), 0) AS bytes FROM bench_rows
     WHERE at BETWEEN $1 AND $2::timestamptz + interval '1 second'`,
    [started, finished],
  );
  const figures = counted.rows[0] ?? { appends: '0', rows: '0', bytes: '0' };
  const log = readFileSync(join(dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`));
  return {
    seconds: (finished.getTime() - started.getTime()) / 1000,
    appends: Number(figures.appends),
    rows: Number(figures.rows),
    bytes: Number(figures.bytes),
    keptMax,
    keptAfter: await kept(),
    logBytes: log.length,
    cpuMs: cpu,
  };
}

async function main(): Promise<void> {
  const name = `baton_bench_stream_${process.pid}`;
  const admin = new pg.Client({ connectionString: SERVER });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-stream-'));
  const up = spawn(
    process.execPath,
    [BIN, '--db', url.href, 'up', '--host', 'bench', '--slots', '1', '--no-http'],
    {
      cwd: dir,
      stdio: 'ignore',
    },
  );
  const client = new pg.Client({ connectionString: url.href });
  try {
    await sleep(3000); // migrated and joined
    await client.connect();
    await client.query(COUNTER);
    const results: Record<string, Figures> = {};
    for (const agent of Object.keys(AGENTS))
      results[agent] = await runOne(client, url.href, dir, up.pid ?? 0, agent);
    const quiet = results['quiet']?.cpuMs ?? 1;
    console.log(
      'agent  run s  log bytes  appends  appends/s  rows  bytes sent  kept max  kept after  up CPU ms (x quiet)',
    );
    for (const [agent, f] of Object.entries(results)) {
      console.log(
        `${agent.padEnd(6)} ${f.seconds.toFixed(1).padStart(5)} ${String(f.logBytes).padStart(10)} ` +
          `${String(f.appends).padStart(8)} ${(f.appends / f.seconds).toFixed(2).padStart(10)} ` +
          `${String(f.rows).padStart(5)} ${String(f.bytes).padStart(11)} ${String(f.keptMax).padStart(9)} ` +
          `${String(f.keptAfter).padStart(11)} ${f.cpuMs.toFixed(0).padStart(10)} (${(f.cpuMs / quiet).toFixed(1)}x)`,
      );
    }
  } finally {
    up.kill('SIGTERM');
    await new Promise((resolve) => up.once('exit', resolve));
    await client.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
