/**
 * `baton doctor`'s `keys` check (decision 0054) on both engines: keys stored before keys were NFC
 * (written here through the store, which keeps a key as given) are named, a pair that is one key
 * in NFC fails the check (exit 7), and nothing is renamed or merged by looking.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { doctorCheck, type DoctorCheck } from '../support/doctor.js';

/** `baton doctor --json` on the database; its `keys` check. */
async function doctor(url: string): Promise<{ code: number; keys: DoctorCheck | undefined }> {
  const { code, check } = await doctorCheck(url, 'keys');
  return { code, keys: check };
}

for (const db of bothEngines()) {
  describe(`${db.name}: baton doctor's keys`, () => {
    test('ok with composed keys; warns on a stored decomposed key; fails on a pair; renames nothing', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      try {
        for (const key of ['plain', 'caf\u00e9', '🚀-launch']) await store.tasks.add({ key });
        const fine = await doctor(url);
        assert.equal(fine.keys?.level, 'ok', fine.keys?.found);
        assert.match(fine.keys?.found ?? '', /every stored task key is in NFC/);

        await store.tasks.add({ key: 'the\u0301 vert'.replace(' ', '-') });
        const stray = await doctor(url);
        assert.equal(stray.code, 0, 'a warning');
        assert.equal(stray.keys?.level, 'warn', stray.keys?.found);
        assert.match(stray.keys?.found ?? '', /1 stored task key\(s\) not in NFC.*the\\u0301-vert/);
        assert.match(stray.keys?.fix ?? '', /0054-unicode-keys\.md/);

        await store.tasks.add({ key: 'cafe\u0301' });
        await store.tasks.add({ key: '\u212a-1' }); // KELVIN SIGN: K in NFC
        await store.tasks.add({ key: 'K-1' });
        const pairs = await doctor(url);
        assert.equal(pairs.code, 7, 'a failure');
        assert.equal(pairs.keys?.level, 'fail', pairs.keys?.found);
        assert.match(pairs.keys?.found ?? '', /^2 set\(s\) of stored task keys are one key in NFC/);
        assert.match(pairs.keys?.found ?? '', /caf\\u00e9\), .*cafe\\u0301\)/);
        assert.match(pairs.keys?.found ?? '', /"K-1" \(K-1\), .*\\u212a-1/);
        const stored = (await store.tasks.list({})).map((task) => task.key).sort();
        assert.deepEqual(
          stored,
          ['K-1', 'cafe\u0301', 'caf\u00e9', 'plain', 'the\u0301-vert', '\u212a-1', '🚀-launch'].sort(),
        );
      } finally {
        await store.close();
      }
    });
  });
}
