/**
 * Job retention in a real `baton up` (docs/decisions/0039-job-retention.md): the leader's first pass
 * removes a finished job that ended before the retention (aged with SQL, not waited for), keeps the
 * task's newest job, and logs what it removed; the flag comes from the command line or, as every
 * flag of `baton up`, from its --config file (decision 0036).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { withCluster } from './cluster-support.js';
import { waitUntil } from '../support/wait.js';

for (const db of bothEngines()) {
  const from = db.engine === 'sqlite' ? '--config' : 'the command line';
  test(`baton up --retain-jobs removes an old finished job while leading, from ${from}, on ${db.name}`, () =>
    withCluster(db, async (c) => {
      const { job: first } = await c.store.jobs.enqueue({ key: 'k1', command: 'true' });
      assert.ok((await c.store.jobs.cancel({ id: first.id })).ok);
      const { job: newest } = await c.store.jobs.retry({ id: first.id });
      assert.ok((await c.store.jobs.cancel({ id: newest.id })).ok);
      const raw = await rawSql(db, c.url);
      try {
        await raw.exec(
          db.engine === 'sqlite'
            ? 'UPDATE jobs SET finished_at = finished_at - 3 * 86400000'
            : "UPDATE jobs SET finished_at = finished_at - interval '3 days'",
        );
      } finally {
        await raw.close();
      }
      const config = join(c.dir, 'up.json');
      writeFileSync(config, JSON.stringify({ 'retain-jobs': '2d' }));
      const up =
        db.engine === 'sqlite' ? c.up('box-1', '--config', config) : c.up('box-1', '--retain-jobs', '2d');
      await up.waitForLog(/job retention: removed 1 finished jobs that ended before \S+Z\n/, 20_000);
      assert.equal(await c.store.jobs.get(first.id), null, 'the old job is gone');
      assert.equal((await c.store.jobs.get(newest.id))?.status, 'cancelled', "the task's newest job stays");
      await waitUntil(async () => (await c.store.retention.state()).removed === 1, 5000, 'the count');
    }));
}
