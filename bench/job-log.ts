/**
 * `baton job log` (docs/decisions/0026-job-log.md), side by side in one run:
 * - printing a 32 MB log to /dev/null: `cat` of the file, `baton job log` on the database, and
 *   `baton job log` over the HTTP API of a `baton serve` (1 MiB base64 reads), runs alternating;
 * - what a follower costs while it waits (a queued job): its CPU time over 5 s, from /proc.
 * Run: `npm run build && node dist/bench/job-log.js`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open.js';
import { median, nowMs } from './stats.js';

const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));
const RUNS = 5;
const LOG_MB = 32;

function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): number {
  const started = nowMs();
  const result = spawnSync(command, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.status !== 0) throw new Error(`bench: ${command} ${args.join(' ')}: ${String(result.stderr)}`);
  return nowMs() - started;
}

/** CPU time (user + system) of a process so far, in ms, from /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-log-'));
  const db = join(dir, '.baton', 'baton.db');
  const env = { ...process.env, BATON_DB: db, BATON_URL: '', BATON_TOKEN: '' };
  spawnSync(process.execPath, [BIN, 'init'], { cwd: dir, env });
  const store = await openStore(db);
  const runner = await store.sessions.start({ kind: 'daemon', host: 'bench', pid: process.pid });
  await store.jobs.enqueue({ key: 'printed' });
  const job = await store.jobs.claimNext({ session: runner.id, start: true });
  await store.jobs.enqueue({ key: 'waiting' });
  const viewer = await store.tokens.create({ scope: 'viewer' });
  await store.close();
  if (job === null) throw new Error('bench: no job claimed');
  const logs = join(dir, '.baton', 'logs');
  mkdirSync(logs, { recursive: true });
  const file = join(logs, `job-${job.id}-attempt-1.log`);
  const line = 'x'.repeat(99) + '\n';
  writeFileSync(file, line.repeat((LOG_MB * 1024 * 1024) / line.length));

  const serve = spawn(process.execPath, [BIN, 'serve', '--http', '127.0.0.1:0'], { cwd: dir, env });
  let said = '';
  serve.stdout.on('data', (data: Buffer) => (said += data.toString()));
  while (!/https?:\/\/\S+/.test(said)) await sleep(50);
  const url = /(https?:\/\/\S+)/.exec(said)?.[1] ?? '';
  const remote = { ...env, BATON_URL: url, BATON_TOKEN: viewer.secret };
  const times = { cat: [] as number[], local: [] as number[], http: [] as number[] };
  try {
    for (let run = 0; run <= RUNS; run++) {
      const cat = timed('cat', [file], env, dir);
      const local = timed(process.execPath, [BIN, 'job', 'log', String(job.id)], env, dir);
      const http = timed(process.execPath, [BIN, 'job', 'log', String(job.id)], remote, tmpdir());
      if (run === 0) continue; // the file system cache's run
      times.cat.push(cat);
      times.local.push(local);
      times.http.push(http);
    }
    const follower = spawn(process.execPath, [BIN, 'job', 'log', String(job.id + 1), '--follow'], {
      cwd: dir,
      env,
      stdio: 'ignore',
    });
    await sleep(2000); // started and polling
    const before = cpuMs(follower.pid ?? 0);
    await sleep(5000);
    const idle = cpuMs(follower.pid ?? 0) - before;
    follower.kill('SIGINT');
    const [cat, local, http] = [median(times.cat), median(times.local), median(times.http)];
    console.log(`${LOG_MB} MB log to /dev/null, median of ${RUNS} alternating runs:`);
    console.log(
      `  cat ${cat.toFixed(0)} ms; baton job log ${local.toFixed(0)} ms (${(local / cat).toFixed(1)}x cat)`,
    );
    console.log(`  over HTTP ${http.toFixed(0)} ms (${(http / local).toFixed(2)}x the database's)`);
    console.log(
      `a follower waiting on a queued job: ${idle.toFixed(0)} ms CPU in 5 s (${(idle / 50).toFixed(2)}% of a core)`,
    );
  } finally {
    serve.kill('SIGTERM');
  }
}

await main();
