/** The test-only switches: refused outside the fault suite, and doing exactly what they say in it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { UNSAFE_ENV } from '../../src/store/test-switches.js';
import { bothEngines } from '../support/databases.js';

for (const db of bothEngines()) {
  test(`${db.name}: the unsafe switches throw unless ${UNSAFE_ENV}=1, then drop the fencing of effects`, async () => {
    const url = await db.fresh();
    delete process.env[UNSAFE_ENV];
    await assert.rejects(openStore(url, { unsafeDisableFencing: true }), InvalidInputError);
    await assert.rejects(openStore(url, { unsafeInsideEffectWrite: () => undefined }), InvalidInputError);
    process.env[UNSAFE_ENV] = '1';
    const store = await openStore(url, { unsafeDisableFencing: true });
    try {
      await store.tasks.add({ key: 't' });
      const a = await store.sessions.start({ kind: 'agent', host: 'a', pid: 1 });
      const b = await store.sessions.start({ kind: 'agent', host: 'b', pid: 2 });
      await store.claims.acquire({ key: 't', session: a.id });
      await store.claims.release({ key: 't', session: a.id, epoch: 1, outcome: 'released' });
      await store.claims.acquire({ key: 't', session: b.id });
      const stale = await store.effects.record({ key: 't', session: a.id, epoch: 1, kind: 'w' });
      assert.equal(stale.ok, true, 'with fencing off, a stale effect is accepted');
      const beat = await store.sessions.heartbeat({ session: a.id, claim: { key: 't', epoch: 1 } });
      assert.deepEqual(beat, { ok: true }, 'and the stale holder is not told');
    } finally {
      delete process.env[UNSAFE_ENV];
      await store.close();
    }
  });
}
