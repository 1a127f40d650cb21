/**
 * The GitHub outbox's retention in a real `baton up` (docs/decisions/0013-github-backlog.md,
 * "Retention of applied rows"), with no `--github`: the leader's first pass removes a row applied
 * before the retention (aged with SQL, not waited for) and keeps a row never applied, older still.
 * SQLite runs the default (7d), PostgreSQL the flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { withCluster } from './cluster-support.js';

for (const db of bothEngines()) {
  const how = db.engine === 'sqlite' ? 'by default' : 'with --retain-github-outbox 2d';
  test(`baton up removes applied GitHub outbox rows ${how}, and keeps a pending one, on ${db.name}`, () =>
    withCluster(db, async (c) => {
      await c.store.tasks.add({ key: 'github:acme/api#5' });
      const [applied] = await c.store.github.pending({ limit: 10 });
      assert.ok(applied !== undefined);
      await c.store.github.applied([applied.id]);
      await c.store.tasks.add({ key: 'github:acme/hand#6' });
      const [pending] = await c.store.github.pending({ limit: 10 });
      assert.ok(pending !== undefined && pending.id !== applied.id);
      const raw = await rawSql(db, c.url);
      try {
        await raw.exec(
          db.engine === 'sqlite'
            ? 'UPDATE github_outbox SET created_at = created_at - 8 * 86400000, applied_at = applied_at - 8 * 86400000'
            : "UPDATE github_outbox SET created_at = created_at - interval '8 days', applied_at = applied_at - interval '8 days'",
        );
      } finally {
        await raw.close();
      }
      const up = db.engine === 'sqlite' ? c.up('box-1') : c.up('box-1', '--retain-github-outbox', '2d');
      await up.waitForLog(/github outbox retention: removed 1 rows applied before \S+Z\n/, 20_000);
      const left = await c.store.github.pending({ limit: 10, key: 'github:acme/hand#6' });
      assert.deepEqual(
        left.map((row) => row.id),
        [pending.id],
        'the row never applied stays',
      );
      assert.equal(
        (await c.store.github.prune({ olderThanMs: 0, limit: 10 })).removed,
        0,
        'the applied one went',
      );
    }));
}
