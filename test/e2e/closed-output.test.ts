/**
 * A `baton up` whose stdout is closed under it (`baton up | head -1`, a log reader that died) stops
 * as SIGTERM stops it, not quietly (docs/decisions/0057): its running agents are drained, or with
 * `--drain 0` killed and their jobs requeued, its session ends, and it exits 8 with one line on
 * stderr. Its host is not left marked as a planned stop (drained): it reads down, as after a crash. Before, it exited 0 at once and left its jobs `running` under a live session. Real `baton
 * up` processes whose stdout is a pipe the test closes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { isAlive, ROOT, withCluster, type ClusterFixture } from './cluster-support.js';

const BIN = join(ROOT, 'bin', 'baton.js');
const TIMINGS = ['--lease-ttl', '2', '--retry-interval', '0.5', '--heartbeat-interval', '0.5'];

interface Piped {
  readonly child: ChildProcess;
  /** What it wrote before the test closed its stdout. */
  readonly out: () => string;
  readonly err: () => string;
  /** Closes its stdout once it has written a line matching `pattern` (waited up to 20 s). */
  readonly closeAfter: (pattern: RegExp) => Promise<string>;
  readonly exited: Promise<number | null>;
}

/** `baton up --host h1` with the given flags, its stdout and stderr pipes to this process. */
function pipedUp(c: ClusterFixture, ...extra: string[]): Piped {
  const args = [BIN, '--db', c.url, 'up', '--host', 'h1', '--no-http', '--stale-after', '10', ...TIMINGS];
  const child = spawn(process.execPath, [...args, ...extra], {
    cwd: c.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const closeAfter = (pattern: RegExp): Promise<string> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${pattern} in 20 s:\n${out}\n${err}`)), 20_000);
      const look = (): void => {
        const found = pattern.exec(out);
        if (found === null) return;
        clearTimeout(timer);
        child.stdout?.off('data', look);
        child.stdout?.destroy(); // the reader goes away: the pipe's read end is closed
        resolve(found[0]);
      };
      child.stdout?.on('data', look);
    });
  return { child, out: () => out, err: () => err, closeAfter, exited };
}

/** Kills a `baton up` a failed test left running. */
function killLeft(up: Piped): void {
  if (up.child.exitCode === null && up.child.signalCode === null) up.child.kill('SIGKILL');
}

async function liveSessions(c: ClusterFixture): Promise<string[]> {
  const sessions = await c.store.sessions.list({ liveOnly: true });
  return sessions.map((session) => `${session.id} ${session.kind} ${session.name ?? ''}`);
}

/** h1's flags: a host stopped by a closed stdout is no planned stop (drain.ts STOP_OUTPUT_CLOSED). */
async function hostFlags(c: ClusterFixture): Promise<{ enabled: boolean; draining: boolean } | undefined> {
  const host = (await c.store.hosts.list()).find((each) => each.name === 'h1');
  return host === undefined ? undefined : { enabled: host.enabled, draining: host.draining };
}

/** h1's enable and disable rows in the ledger, oldest first: each `type by`. */
async function hostRows(c: ClusterFixture): Promise<string[]> {
  const rows = [...(await c.store.audit.list({ host: 'h1' }))].sort((a, b) => a.id - b.id);
  return rows
    .filter((row) => row.type === 'host:enabled' || row.type === 'host:disabled')
    .map((row) => `${row.type} ${String(row.detail['by'])}`);
}

const db = sqliteDatabase();
const LINE =
  /^baton: baton up: its standard output was closed \(the reader of its output went away\): leaving the cluster as on SIGTERM \(running agents get --drain (\d+) s to finish, then are killed and their jobs requeued; its session ends, its host left enabled: no planned stop\); exit 8 — send its output to a file or a reader that stays\n$/;

test('with --drain 0, a closed stdout kills the agent, requeues its job, ends the session; exit 8', () =>
  withCluster(db, async (c) => {
    const { job } = await c.store.jobs.enqueue({ key: 'a', command: 'exec sleep 40' });
    const up = pipedUp(c, '--drain', '0', '--slots', '2');
    try {
      const started = await up.closeAfter(/job \d+ a: running as pid (\d+)/);
      const agentPid = Number(/pid (\d+)/.exec(started)?.[1]);
      assert.ok(isAlive(agentPid), 'the agent runs');
      // Its next line (placing b) finds the pipe closed: without a line it could not know.
      const { job: next } = await c.store.jobs.enqueue({ key: 'b', command: 'exec sleep 40' });
      assert.equal(await up.exited, 8, up.err());
      assert.match(up.err(), LINE);
      assert.equal(LINE.exec(up.err())?.[1], '0');
      for (const id of [job.id, next.id]) {
        const left = await c.store.jobs.get(id);
        assert.notEqual(left?.status, 'running', `job ${id} is not left running: ${left?.reason ?? ''}`);
      }
      const requeued = await c.store.jobs.get(job.id);
      assert.deepEqual([requeued?.status, requeued?.attempt], ['queued', 0], requeued?.reason ?? '');
      assert.match(requeued?.reason ?? '', /^requeued: runner shut down/);
      assert.deepEqual(await liveSessions(c), [], 'its session and its agents ended');
      assert.equal(isAlive(agentPid), false, 'the agent was killed');
      // No planned stop: h1 is not marked stopped (drained) but left enabled, down as after a crash.
      assert.deepEqual(await hostFlags(c), { enabled: true, draining: false });
      assert.deepEqual(await hostRows(c), []);
    } finally {
      killLeft(up);
    }
  }));

test('with a drain, a closed stdout drains as SIGTERM does: the agent finishes, the host is left enabled; exit 8', () =>
  withCluster(db, async (c) => {
    const go = join(c.dir, 'go');
    const gated = `for i in $(seq 600); do test -e '${go}' && exit 0; sleep 0.1; done; exit 1`;
    const { job } = await c.store.jobs.enqueue({ key: 'a', command: gated });
    const up = pipedUp(c, '--drain', '30s', '--slots', '2');
    try {
      await up.closeAfter(/job \d+ a: running as pid \d+/);
      const { job: next } = await c.store.jobs.enqueue({ key: 'b', command: 'exit 0' });
      const draining = async (): Promise<boolean> =>
        (await c.store.hosts.list()).some((host) => host.name === 'h1' && host.draining);
      await waitUntil(draining, 20_000, `h1 marked draining:\n${up.err()}`);
      assert.equal(up.child.exitCode, null, 'it waits for its agent');
      const live = await c.store.sessions.list({ liveOnly: true });
      assert.ok(
        live.some((session) => session.kind === 'daemon'),
        'its session is live while it drains: its agent runs',
      );
      assert.equal((await c.store.jobs.get(job.id))?.status, 'running');
      writeFileSync(go, '');
      assert.equal(await up.exited, 8, up.err());
      assert.match(up.err(), LINE);
      assert.equal(LINE.exec(up.err())?.[1], '30');
      const done = await c.store.jobs.get(job.id);
      assert.deepEqual([done?.status, done?.attempt], ['done', 1], 'it finished: a drain, not a kill');
      // b started before its placement's line found the pipe closed (it ran to its end), or was
      // placed as the drain began and given back: either way, nothing is left running.
      assert.ok(['done', 'queued'].includes((await c.store.jobs.get(next.id))?.status ?? ''));
      assert.deepEqual(await liveSessions(c), []);
      // Marked while its agent finished, so nothing was placed on it; then no planned stop: enabled.
      assert.deepEqual(await hostFlags(c), { enabled: true, draining: false });
      assert.deepEqual(await hostRows(c), ['host:disabled drain', 'host:enabled baton up (stdout closed)']);
    } finally {
      killLeft(up);
    }
  }));

test('closed before its first line (baton up | true), it stops and ends its session; exit 8', () =>
  withCluster(db, async (c) => {
    const up = pipedUp(c, '--drain', '0');
    try {
      up.child.stdout?.destroy(); // before it writes: the stop is asked for before its loops begin
      assert.equal(await Promise.race([up.exited, sleep(20_000).then(() => 'still running')]), 8, up.err());
      assert.match(up.err(), LINE);
      assert.deepEqual(await liveSessions(c), []);
    } finally {
      killLeft(up);
    }
  }));

/**
 * The reviewer's `baton up --drain 5s | head -1` with a job queued at its start: the stop comes
 * while its dispatcher's first pass places the job here and its run starts (the hand-off). Before,
 * in most rounds the run was not counted, its agent started after the stop, the heartbeats stopped
 * and the process hung past --drain. Now nothing more starts (a run still starting gives its job
 * back; one spawned already is drained, then killed), and it exits 8 within --drain and a margin.
 */
test('closed after its first line while a queued job is being placed, it starts nothing; exit 8', () =>
  withCluster(db, async (c) => {
    for (let round = 1; round <= 6; round++) {
      const pidFile = join(c.dir, `agent-${round}.pid`);
      const key = `hand-off-${round}`;
      const { job } = await c.store.jobs.enqueue({ key, command: `echo $$ > '${pidFile}'; exec sleep 120` });
      const up = pipedUp(c, '--drain', '3s', '--slots', '2');
      const started = Date.now();
      try {
        await up.closeAfter(/database .*: opened/);
        const code = await Promise.race([up.exited, sleep(3_000 + 12_000).then(() => 'still running')]);
        assert.equal(code, 8, `round ${round}, after ${Date.now() - started} ms: ${up.err()}`);
        const agent = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : null;
        assert.equal(agent !== null && isAlive(agent), false, `round ${round}: no agent left running`);
        const back = await c.store.jobs.get(job.id);
        assert.deepEqual(
          [back?.status, back?.attempt],
          ['queued', 0],
          `round ${round}: ${back?.reason ?? ''}`,
        );
        assert.deepEqual(await liveSessions(c), [], `round ${round}: no live session`);
      } finally {
        killLeft(up);
      }
      assert.equal((await c.store.jobs.cancel({ id: job.id })).ok, true);
    }
  }));

/**
 * `baton serve` likewise, found at its serving line: its reader gone before it, it stops as on
 * SIGTERM (the server closes) and exits 8 with its one line. After that line it writes nothing, so
 * it serves on until signalled (decision 0057).
 */
test('baton serve whose stdout is closed before its serving line stops; exit 8', () =>
  withCluster(db, async (c) => {
    const serve = spawn(process.execPath, [BIN, '--db', c.url, 'serve', '--http', '127.0.0.1:0'], {
      cwd: c.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    serve.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    serve.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => serve.once('exit', (code) => resolve(code)));
    try {
      serve.stdout.destroy();
      assert.equal(await Promise.race([exited, sleep(20_000).then(() => 'still serving')]), 8, err);
      assert.match(
        err,
        /^baton: baton serve: its standard output was closed \(the reader of its output went away\): stopping as on SIGTERM; exit 8 — send its output to a file or a reader that stays\n$/,
      );
    } finally {
      if (serve.exitCode === null && serve.signalCode === null) serve.kill('SIGKILL');
    }
  }));

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
