/**
 * `audit` with a task key: no rows for a task no one added is refused (NotFoundError, `baton
 * audit --task nope` exits 4), and finding that out costs one light lookup of the task, not the
 * task's whole detail (its claim, holder, jobs, history and pull requests). The store calls are
 * counted through timedStore, as /metrics counts them.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError } from '../core/errors.js';
import { openStore } from '../store/open.js';
import { timedStore } from '../store/timed.js';
import { bothEngines } from '../../test/support/databases.js';
import { Coordinator } from './coordinator.js';

for (const db of bothEngines()) {
  describe(`audit by task (${db.name})`, () => {
    test('refuses a task no one added after one lookup of the task alone; a known one is unchanged', async () => {
      const store = await openStore(await db.fresh());
      const calls: string[] = [];
      const baton = new Coordinator(timedStore(store, (method) => calls.push(method)));
      try {
        await store.tasks.add({ key: 'a1' });
        const counted = async <T>(work: () => Promise<T>): Promise<{ value: T | Error; calls: string[] }> => {
          calls.length = 0;
          const value = await work().catch((error: Error) => error);
          return { value, calls: [...calls] };
        };

        const unknown = await counted(() => baton.audit({ key: 'nope' }));
        assert.ok(unknown.value instanceof NotFoundError, 'a NotFoundError');
        assert.deepEqual(
          [unknown.value.message, unknown.value.hint],
          ['task nope not found', 'add it with `baton task add`'],
        );
        assert.deepEqual(unknown.calls, ['audit.list', 'tasks.get']);

        const known = await counted(() => baton.audit({ key: 'a1' }));
        assert.ok(!(known.value instanceof Error), 'a known task is not refused');
        assert.deepEqual(
          known.value.map((entry) => entry.type),
          ['task:added'],
        );
        assert.deepEqual(known.calls, ['audit.list'], 'rows found: no lookup');

        const none = await counted(() => baton.audit({ key: 'a1', type: 'job:stalled' }));
        assert.deepEqual([none.value, none.calls], [[], ['audit.list', 'tasks.get']], 'known, no such rows');
        const paged = await counted(() => baton.audit({ key: 'nope', after: '1000' }));
        assert.deepEqual([paged.value, paged.calls], [[], ['audit.list']], 'a later page is not refused');
      } finally {
        await store.close();
      }
    });
  });
}
