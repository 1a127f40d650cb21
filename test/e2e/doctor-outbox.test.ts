/**
 * `baton doctor`'s `github-outbox` check (docs/decisions/0013-github-backlog.md, "Keys no sync
 * applies") on both engines: a `github:` task added by hand writes outbox rows that no sync
 * applies; doctor names the repository (a warning, exit 0) and removes nothing; once a sync has run
 * for the repository, as the keys spell it, the check is ok.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { doctorCheck, type DoctorCheck } from '../support/doctor.js';

/** `baton doctor --json` on the database; its `github-outbox` check. */
async function doctor(url: string): Promise<{ code: number; outbox: DoctorCheck | undefined }> {
  const { code, check } = await doctorCheck(url, 'github-outbox');
  return { code, outbox: check };
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton doctor's github-outbox`, () => {
    test('warns of rows of github: keys no sync has run for, keeps them, and is ok once one has', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      try {
        await store.tasks.add({ key: 'local-1' });
        const fine = await doctor(url);
        assert.equal(fine.outbox?.level, 'ok', fine.outbox?.found);

        await store.tasks.add({ key: 'github:acme/hand#5' });
        await store.jobs.enqueue({ key: 'github:acme/hand#5' });
        const waiting = await doctor(url);
        assert.equal(waiting.code, 0, 'a warning');
        assert.equal(waiting.outbox?.level, 'warn', waiting.outbox?.found);
        assert.match(
          waiting.outbox?.found ?? '',
          /^2 GitHub outbox row\(s\) .*: acme\/hand \(2, oldest 0 d\)$/,
        );
        assert.match(waiting.outbox?.fix ?? '', /`baton up --github acme\/hand`/);
        assert.equal(await store.github.backlog(), 2, 'doctor removes nothing');

        await store.github.saveCursor({ repo: 'Acme/Hand', since: '2026-01-01T00:00:00Z' });
        assert.equal(
          (await doctor(url)).outbox?.level,
          'warn',
          'a cursor in capitals (a pair 0050 left) applies none: keys are lower-case',
        );
        await store.github.saveCursor({ repo: 'acme/hand labels:ai', since: '2026-01-01T00:00:00Z' });
        const synced = await doctor(url);
        assert.equal(synced.outbox?.level, 'ok', synced.outbox?.found);
      } finally {
        await store.close();
      }
    });
  });
}
