/**
 * The job page's output (src/dashboard/views/job.ts jobOutput) after a run was given back on box-1 and rerun on box-2:
 * a log folder marked as box-1's (`.baton/logs.host`) still holds box-1's dead file of the attempt's
 * name, and the page shows box-2's stream instead; box-2's own folder shows its file. A real
 * SQLite store and real files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase } from '../support/databases.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { outputRows } from '../../src/core/output-stream.js';
import { givenHost, givenLeader } from '../../src/store/conformance/dispatch.js';
import { openStore } from '../../src/store/open.js';
import { jobOutput } from '../../src/dashboard/views/job.js';

test("the job page shows the stream of a run now on another host, not this host's dead file", async () => {
  const store = await openStore(await sqliteDatabase().fresh());
  try {
    const views = new Coordinator(store).views;
    const box2 = (await givenHost(store, 'box-2')).session.id;
    const term = await givenLeader(store);
    const { job } = await store.jobs.enqueue({ key: 'k' });
    const placed = await store.dispatch.place({ id: job.id, host: 'box-2', term });
    assert.ok(placed.ok);
    await store.jobs.start({ id: job.id, session: box2, epoch: placed.job.epoch });
    const bytes = Buffer.from('box-2 line\n');
    const run = { job: job.id, attempt: 1, epoch: placed.job.epoch, offset: 0, bytes, ended: false };
    await store.output.append({ session: box2, rows: outputRows([run]) });
    const running = await store.jobs.get(job.id);
    assert.ok(running !== null && running.host === 'box-2');
    const folder = (host: string, text: string): string => {
      const logDir = join(mkdtempSync(join(tmpdir(), `baton-${host}-`)), 'logs');
      mkdirSync(logDir);
      writeFileSync(join(logDir, `job-${job.id}-attempt-1.log`), text);
      writeFileSync(`${logDir}.host`, `${host}\n`);
      return logDir;
    };
    const tail = (id: number, attempt: number, max: number) => views.streamTail(id, attempt, max);
    const onBox1 = await jobOutput(running, folder('box-1', 'box-1 dead line\n'), tail);
    assert.equal(onBox1.text, 'box-2 line\n');
    assert.match(onBox1.note ?? '', /^streamed from box-2 through the database/);
    const onBox2 = await jobOutput(running, folder('box-2', 'box-2 line\nand more\n'), tail);
    assert.equal(onBox2.text, 'box-2 line\nand more\n');
  } finally {
    await store.close();
  }
});
