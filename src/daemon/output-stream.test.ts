/**
 * The runner's output stream (output-stream.ts) against a real SQLite store and a real log file:
 * a flush writes what the file gained since the last one, in one store call; a flush with
 * nothing new makes none (a quiet agent costs nothing); a store call that fails is logged once and
 * its bytes go with the next flush; the run's last flush keeps only its end, and the run is no
 * longer watched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { daemonFixture } from '../../test/support/daemon-fixture.js';
import { joinOutput, OUTPUT_KEEP_ENDED } from '../core/output-stream.js';
import type { Store } from '../store/store.js';
import { OutputStreamer } from './output-stream.js';

test('flushes what the log gained, nothing when nothing did, and goes on after a failed write', async () => {
  const f = await daemonFixture();
  try {
    const runner = await f.store.sessions.start({ kind: 'daemon', host: 'h1', pid: 1 });
    await f.store.jobs.enqueue({ key: 'k' });
    const job = await f.store.jobs.claimNext({ session: runner.id, start: true });
    assert.ok(job !== null);
    const logDir = mkdtempSync(join(tmpdir(), 'baton-stream-'));
    const path = join(logDir, `job-${job.id}-attempt-1.log`);
    let calls = 0;
    let failNext = false;
    const store: Pick<Store, 'output'> = {
      output: {
        ...f.store.output,
        append: async (params) => {
          calls += 1;
          if (failNext) {
            failNext = false;
            throw new Error('the database is away');
          }
          return f.store.output.append(params);
        },
      },
    };
    const said: string[] = [];
    const streamer = new OutputStreamer({
      store,
      session: runner.id,
      logDir,
      log: (line) => said.push(line),
    });
    const kept = async () => {
      const read = await f.store.output.read({ job: job.id, attempt: 1, offset: 0 });
      return Buffer.from(joinOutput(read, 0, 1 << 20)?.bytes ?? new Uint8Array()).toString();
    };

    streamer.watch(job);
    await streamer.flush();
    assert.equal(calls, 0, 'no file yet: nothing written');
    writeFileSync(path, 'one\n');
    await streamer.flush();
    await streamer.flush();
    assert.equal(calls, 1, 'one write for new bytes, none for a flush with nothing new');
    assert.equal(await kept(), 'one\n');

    appendFileSync(path, 'two\n');
    failNext = true;
    await streamer.flush();
    assert.equal(said.length, 1);
    assert.match(
      said[0] ?? '',
      /^output stream: not written to the database \(Error: the database is away\); retrying$/,
    );
    appendFileSync(path, 'three\n');
    await streamer.flush();
    assert.equal(await kept(), 'one\ntwo\nthree\n', 'the failed flush’s bytes went with the next');

    appendFileSync(path, 'x'.repeat(200_000));
    failNext = true; // the last flush fails once: no later flush would send it, so it is tried again
    await streamer.end(job);
    const last = await f.store.output.read({ job: job.id, attempt: 1, offset: 0 });
    assert.equal(last.size, 14 + 200_000);
    const from = last.rows[0]?.offset ?? 0;
    assert.ok(from >= last.size - 2 * OUTPUT_KEEP_ENDED, `the last flush kept the end alone (from ${from})`);
    const before = calls;
    await streamer.flush();
    assert.equal(calls, before, 'an ended run is no longer watched');
  } finally {
    await f.store.close();
  }
});
