/**
 * `npm run demo`: a small backlog worked by two `baton up` processes on a fresh SQLite file, in
 * about a minute. The demo agent sleeps, writes a file, sometimes fails, and one job blows its
 * RAM budget; once the leader runs jobs, it is SIGKILLed: the standby takes over and requeues them.
 *
 *   npm run demo [-- --quick]     (--quick: shorter sleeps, for CI)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TERMINAL_JOB_STATES, type Job } from '../src/core/job.js';
import { openStore } from '../src/store/open.js';

const quick = process.argv.includes('--quick');
const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'bin', 'baton.js');
const dir = mkdtempSync(join(tmpdir(), 'baton-demo-'));
const db = join(dir, 'baton.db');
const say = (line: string): void => void process.stdout.write(`${line}\n`);

const AGENT = `#!/bin/sh
# The demo agent: works on $BATON_KEY for a few seconds, writes its result, and sometimes fails.
echo "agent for $BATON_KEY (job $BATON_JOB, attempt $BATON_ATTEMPT, claim epoch $BATON_EPOCH)"
sleep "$(( \${DEMO_SLEEP:-3} + BATON_JOB % 3 ))"
case "$BATON_KEY" in
  *#4) echo "tests failed" >&2; exit 1 ;;
  *#6) node -e "const a=[];setInterval(()=>a.push(Buffer.alloc(2e7,1)),20)" ;;
esac
mkdir -p work && echo "done by session $BATON_SESSION on $BATON_HOST" > "work/$(echo "$BATON_KEY" | tr '/#:' '___').txt"
`;

const backlog = [
  { key: 'github:acme/api#1', title: 'Fix the login race', priority: 10 },
  { key: 'github:acme/api#2', title: 'Add rate limiting', priority: 20 },
  { key: 'github:acme/api#3', title: 'Upgrade the ORM', priority: 20 },
  { key: 'github:acme/api#4', title: 'Flaky payments test', priority: 30 },
  { key: 'github:acme/api#5', title: 'Document the API', priority: 40 },
  { key: 'github:acme/api#6', title: 'Index the search corpus', priority: 50, ramMb: 120 },
  { key: 'github:acme/api#7', title: 'Remove dead code', priority: 60 },
  { key: 'github:acme/api#8', title: 'Tidy the README', priority: 70 },
  { key: 'github:acme/api#9', title: 'Split the billing module', priority: 80 },
  { key: 'github:acme/api#10', title: 'Cache the config', priority: 80 },
  { key: 'github:acme/api#11', title: 'Retry webhooks', priority: 90 },
  { key: 'github:acme/api#12', title: 'Lint the migrations', priority: 90 },
];

function up(host: string): ChildProcess {
  const out = openSync(join(dir, `up-${host}.log`), 'a');
  return spawn(
    process.execPath,
    [
      bin,
      '--db',
      db,
      'up',
      '--host',
      host,
      '--slots',
      '2',
      '--lease-ttl',
      '3',
      '--retry-interval',
      '0.5',
      '--heartbeat-interval',
      '0.5',
      '--stale-after',
      '2',
    ],
    { cwd: dir, stdio: ['ignore', out, out], env: { ...process.env, DEMO_SLEEP: quick ? '1' : '4' } },
  );
}

mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'demo-agent.sh'), AGENT, { mode: 0o755 });
const store = await openStore(db);
say(`Baton demo in ${dir}\n`);
for (const t of backlog) {
  await store.tasks.add({ key: t.key, title: t.title, priority: t.priority });
  await store.jobs.enqueue({
    key: t.key,
    command: 'sh demo-agent.sh',
    ramMb: t.ramMb ?? null,
    attemptMax: 2,
  });
}
say(`Queued ${backlog.length} jobs. Starting two runners, "alpha" and "beta"; one of them leads.\n`);
const procs = new Map([
  ['alpha', up('alpha')],
  ['beta', up('beta')],
]);
const started = Date.now();
/** The jobs running on the leader when it was SIGKILLed, with the epoch each ran under. */
let victims: { id: number; key: string; epoch: number }[] | null = null;
let last = '';
const KILL_WAIT_MS = 60_000;
for (;;) {
  // Quick polls until the leader is killed, so that the jobs seen running on it are still running.
  await new Promise((r) => setTimeout(r, victims === null ? 250 : 1000));
  const jobs = await store.jobs.list({ limit: 100 });
  const line = jobs
    .map((j) => `${j.key.replace('github:acme/api', '')}:${j.status}${j.host ? `@${j.host}` : ''}`)
    .join('  ');
  if (line !== last) say(`${String(Math.round((Date.now() - started) / 1000)).padStart(3)}s  ${line}`);
  last = line;
  if (victims === null) victims = await killLeaderWhenBusy(jobs);
  if (victims === null && Date.now() - started > KILL_WAIT_MS) {
    say(
      `no job ran on the leader within ${KILL_WAIT_MS / 1000} s, so it was not killed; see the logs in ${dir}`,
    );
    process.exitCode = 1;
    break;
  }
  if (jobs.every((j) => (TERMINAL_JOB_STATES as readonly string[]).includes(j.status))) {
    if (victims === null) {
      say('every job ended before one ran on the leader, so it was not killed: no failover to show');
      process.exitCode = 1;
    }
    break;
  }
  if (Date.now() - started > 120_000) {
    say('the demo took too long; see the logs in ' + dir);
    process.exitCode = 1;
    break;
  }
}

/**
 * SIGKILLs the leader once the store shows jobs running on its host (a fixed delay killed it before
 * any was placed on a loaded machine, and nothing was requeued): those jobs, or null while none is.
 */
async function killLeaderWhenBusy(
  jobs: readonly Job[],
): Promise<{ id: number; key: string; epoch: number }[] | null> {
  const lease = await store.leases.get('dispatcher');
  if (lease?.holder == null) return null;
  const leader = await store.sessions.get(Number(lease.holder));
  const victim = leader === null ? undefined : procs.get(leader.host);
  const running = jobs.filter((j) => j.status === 'running' && j.host === leader?.host);
  if (victim === undefined || leader === null || running.length === 0) return null;
  victim.kill('SIGKILL');
  const keys = running.map((j) => j.key.replace('github:acme/api', '')).join(', ');
  say(
    `\n      SIGKILL the leader (${leader.host}, term ${lease.term}) while it runs ${keys}; ` +
      'its agents die with it and are requeued\n',
  );
  return running.map((j) => ({ id: j.id, key: j.key, epoch: j.epoch }));
}

const lease = await store.leases.get('dispatcher');
say(`\nAll jobs ended. The dispatcher lease is at term ${lease?.term ?? '?'}.`);
for (const j of await store.jobs.list({ limit: 100 })) {
  const line = `  ${j.key.padEnd(20)} ${j.status.padEnd(10)} attempt ${j.attempt}  ${j.host ?? '-'}  ${j.reason ?? ''}`;
  say(line.trimEnd());
}
const ended = new Map((await store.jobs.list({ limit: 100 })).map((j) => [j.id, j]));
const requeued = (victims ?? []).filter((v) => (ended.get(v.id)?.epoch ?? 0) > v.epoch);
if (victims !== null) {
  const words = requeued.map((v) => {
    const j = ended.get(v.id);
    return `${v.key} (${j?.status ?? '?'} on ${j?.host ?? '-'})`;
  });
  say(`\nRequeued after the SIGKILL and run again: ${words.length === 0 ? 'none' : words.join(', ')}`);
  if (requeued.length === 0) process.exitCode = 1;
}
say(`\nTry: node bin/baton.js --db ${db} audit --task github:acme/api#6`);
for (const p of procs.values()) p.kill('SIGTERM');
await store.close();
