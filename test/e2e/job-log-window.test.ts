/**
 * `baton job log` against an output stream that moves while it reads (docs/decisions/0029): a
 * real SQLite database, the runner's writes made by the test through the store as a runner makes
 * them (256 KB a flush, so the 1 MiB window moves on between the CLI's reads), and the real CLI in
 * a directory without logs. `--tail N` with N larger than the window ends, and prints the window's
 * last whole lines in order; without `--follow` it prints N lines, not what came after. A follower
 * of a run given back and rerun on another host, whose log starts anew, says so and prints the
 * rerun's output from its start (in the rerun host's directory too, from its file); a reader in the
 * first host's directory prints the rerun's stream, not its dead file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outputRows } from '../../src/core/output-stream.js';
import { givenHost, givenLeader } from '../../src/store/conformance/dispatch.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT } from './cluster-support.js';

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `baton --db <path> job log <args>` in `cwd` (by default a directory without logs); killed after 20 s (fails the test). */
function jobLog(db: string, args: readonly string[], cwd?: string): Promise<Ran> {
  return spawnLog(db, args, cwd).done;
}

/** The same, with what it printed so far on hand. */
function spawnLog(
  db: string,
  args: readonly string[],
  cwd = mkdtempSync(join(tmpdir(), 'baton-laptop-')),
): { readonly stdout: () => string; readonly stderr: () => string; readonly done: Promise<Ran> } {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'baton.js'), '--db', db, 'job', 'log', ...args], {
    cwd,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const done = new Promise<Ran>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
  return { stdout: () => stdout, stderr: () => stderr, done };
}

/** Line `i` of the agent's output: 64 bytes, so line i starts at byte 64 i. */
const line = (i: number): string => `${String(i).padStart(62, '0')} \n`;
const BLOCK_LINES = 4096; // 256 KiB a flush

/** A job running on box-1, and a writer that appends 256 KiB of numbered lines a flush, as its runner. */
async function givenWriter(store: Store) {
  const { session } = await givenHost(store);
  const term = await givenLeader(store);
  const { job } = await store.jobs.enqueue({ key: 'k' });
  const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
  assert.ok(placed.ok);
  await store.jobs.start({ id: job.id, session: session.id, epoch: placed.job.epoch });
  let lines = 0;
  const flush = async (): Promise<void> => {
    const text = Array.from({ length: BLOCK_LINES }, (_, k) => line(lines + k)).join('');
    const run = { job: job.id, attempt: 1, epoch: placed.job.epoch, offset: lines * 64, ended: false };
    await store.output.append({
      session: session.id,
      rows: outputRows([{ ...run, bytes: Buffer.from(text) }]),
    });
    lines += BLOCK_LINES;
  };
  return { id: job.id, flush, lines: () => lines };
}

/** The numbers of the lines printed, checked to be whole lines of the agent's, one after the other. */
function consecutive(text: string): number[] {
  const printed = text.split('\n').slice(0, -1);
  const first = Number(printed[0]?.trim());
  assert.equal(text, printed.map((_, k) => line(first + k)).join(''), 'whole lines, one after the other');
  return printed.map((_, k) => first + k);
}

test('--tail N larger than a window that moves while it reads ends, and prints the window’s last lines in order', async () => {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  try {
    const writer = await givenWriter(store);
    for (let i = 0; i < 8; i++) await writer.flush(); // 2 MiB: the window holds the last 1 MiB
    let writing = true;
    const writes = (async () => {
      while (writing) {
        await writer.flush();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const tail = await jobLog(db, [String(writer.id), '--tail', '100000']);
    writing = false;
    await writes;
    assert.equal(tail.code, 0, `ended (${tail.stderr})`);
    const printed = consecutive(tail.stdout);
    assert.ok(printed.length >= BLOCK_LINES * 2, `the window's lines (${printed.length})`);
    assert.ok(printed.length <= 20_000, `no more than the window and one row (${printed.length})`);

    // Still running, not following: the last 3 lines as they were, not the ones written since.
    writing = true;
    const more = (async () => {
      while (writing) {
        await writer.flush();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const three = await jobLog(db, [String(writer.id), '--tail', '3']);
    writing = false;
    await more;
    assert.equal(three.code, 0, three.stderr);
    assert.equal(consecutive(three.stdout).length, 3, three.stdout.slice(0, 400));
    assert.equal(three.stderr, '');
  } finally {
    await store.close();
  }
});

test('a follower of a run given back and rerun on another host says so, and prints the rerun from its start', async () => {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  try {
    const box1 = (await givenHost(store, 'box-1')).session.id;
    const box2 = (await givenHost(store, 'box-2')).session.id;
    const term = await givenLeader(store);
    const { job } = await store.jobs.enqueue({ key: 'k' });
    const first = await store.dispatch.place({ id: job.id, host: 'box-1', term });
    assert.ok(first.ok);
    await store.jobs.start({ id: job.id, session: box1, epoch: first.job.epoch });
    const append = (session: number, epoch: number, offset: number, text: string, ended = false) =>
      store.output.append({
        session,
        rows: outputRows([{ job: job.id, attempt: 1, epoch, offset, bytes: Buffer.from(text), ended }]),
      });
    const before = 'box-1 line 1\nbox-1 line 2\n';
    await append(box1, first.job.epoch, 0, before);
    const follower = spawnLog(db, [String(job.id), '--follow']);
    // A second follower in box-2's directory, where the rerun's log file will be written.
    const box2Dir = mkdtempSync(join(tmpdir(), 'baton-box-2-'));
    mkdirSync(join(box2Dir, '.baton', 'logs'), { recursive: true });
    writeFileSync(join(box2Dir, '.baton', 'logs.host'), 'box-2\n');
    const followerOnBox2 = spawnLog(db, [String(job.id), '--follow'], box2Dir);
    await waitUntil(() => Promise.resolve(follower.stdout() === before), 10_000, "box-1's lines printed");
    await waitUntil(() => Promise.resolve(followerOnBox2.stdout() === before), 10_000, 'and on box-2');
    // box-1 shuts down gracefully: the run is given back, its attempt with it, and box-2 runs it anew.
    const back = {
      id: job.id,
      session: box1,
      epoch: first.job.epoch,
      reason: 'stopping',
      attemptCounts: false,
    };
    assert.ok((await store.dispatch.requeue({ ...back, policy: { backoffBaseMs: 1, backoffMaxMs: 1 } })).ok);
    // box-1's `baton up` has ended: its host reads down, and the followers say the job was given
    // back (not that it awaits a rescue, nor that box-1 should be started again).
    await store.sessions.end(box1);
    const givenBack = `baton: host box-1 is down (its \`baton up\` stopped or was rescued); job ${job.id} was given back to the queue (requeued: stopping; the agent did not fail, so the attempt does not count): following on until it runs again or ends\n`;
    for (const each of [follower, followerOnBox2])
      await waitUntil(() => Promise.resolve(each.stderr() === givenBack), 10_000, 'given back said').catch(
        () => {
          throw new Error(`given back not said: ${JSON.stringify(each.stderr())}`);
        },
      );
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await store.dispatch.place({ id: job.id, host: 'box-2', term });
    assert.ok(again.ok);
    assert.equal(again.job.attempt, 1, 'the rerun keeps the attempt number');
    await store.jobs.start({ id: job.id, session: box2, epoch: again.job.epoch });
    // box-2's runner writes its file (a follower there reads it from then on) and streams it.
    const rerun = Array.from({ length: 6 }, (_, at) => `box-2 line ${at + 1}\n`).join('');
    writeFileSync(join(box2Dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`), rerun);
    await waitUntil(
      () => followerOnBox2.stdout() === before + rerun,
      10_000,
      'the file printed from its start',
    );
    await append(box2, again.job.epoch, 0, rerun);
    await append(box2, again.job.epoch, rerun.length, '', true);
    await store.jobs.finish({
      id: job.id,
      session: box2,
      epoch: again.job.epoch,
      status: 'done',
      exitCode: 0,
    });
    const ran = await follower.done;
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout, before + rerun, "box-1's lines, then the whole rerun");
    const again2 = `baton: job ${job.id} attempt 1 was run again on box-2: printing its output from its start\n`;
    assert.equal(
      ran.stderr,
      givenBack + again2,
      'and nothing after: the run ended on box-2, not without its runner',
    );
    // On box-2 the rerun's bytes come from its file, not the stream: printed from its start too.
    const ranOnBox2 = await followerOnBox2.done;
    assert.deepEqual(
      [ranOnBox2.code, ranOnBox2.stdout, ranOnBox2.stderr],
      [0, before + rerun, givenBack + again2],
    );

    // box-1's directory still holds its run's file, now dead: the reader there prints box-2's
    // stream; box-2's own directory prints its file.
    const withFile = (host: string, text: string): string => {
      const cwd = mkdtempSync(join(tmpdir(), `baton-${host}-`));
      mkdirSync(join(cwd, '.baton', 'logs'), { recursive: true });
      writeFileSync(join(cwd, '.baton', 'logs', `job-${job.id}-attempt-1.log`), text);
      writeFileSync(join(cwd, '.baton', 'logs.host'), `${host}\n`);
      return cwd;
    };
    const onBox1 = await jobLog(db, [String(job.id)], withFile('box-1', before));
    assert.deepEqual([onBox1.code, onBox1.stdout], [0, rerun], onBox1.stderr);
    const onBox2 = await jobLog(db, [String(job.id)], withFile('box-2', `${rerun}(the file)\n`));
    assert.deepEqual([onBox2.code, onBox2.stdout, onBox2.stderr], [0, `${rerun}(the file)\n`, '']);
  } finally {
    await store.close();
  }
});
