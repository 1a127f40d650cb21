/**
 * Refusals in plain words (docs/decisions/0059): a token beyond its scope is told what it may not
 * do as a person would say it, and an approval without its gate is told the gate is required and
 * how to name it. A real `baton serve` (SQLite); nothing changes either way.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { sqliteDatabase } from '../support/databases.js';
import { call, serve } from './support.js';

type ErrorBody = { code: string; message: string; hint: string | null };

describe('refusals in plain words', () => {
  test("a viewer's approve and an approve without its gate", async () => {
    const url = await sqliteDatabase().fresh();
    const store = await openStore(url);
    const server = await serve(url);
    try {
      await store.tasks.add({ key: 'risky' });
      await store.lifecycle.gate({ key: 'risky', gate: 'design', by: { name: 'test' } });
      const { secret: viewer } = await store.tokens.create({ scope: 'viewer', name: 'reader' });
      const { secret: operator } = await store.tokens.create({ scope: 'operator', name: 'person' });
      const approve = (token: string, body: unknown) =>
        call(server.url, 'POST', '/v1/tasks/risky/approve', { token, body });

      const refused = await approve(viewer, { gate: 'design' });
      assert.equal(refused.status, 403);
      const scope = refused.body['error'] as ErrorBody;
      assert.equal(
        scope.message,
        "refused: a viewer token may not change a task's state, gate or dependencies",
      );
      assert.equal(
        scope.hint,
        "ask an operator for a token that may change a task's state, gate or dependencies",
      );

      const missing = await approve(operator, {});
      assert.equal(missing.status, 400);
      const error = missing.body['error'] as ErrorBody;
      assert.equal(error.code, 'invalid_input');
      assert.equal(error.message, 'gate is required (design or review)');
      assert.match(
        error.hint ?? '',
        /^design opens the design gate of an open task, review approves a task in review/,
      );
      const wrong = await approve(operator, { gate: 'desing' });
      assert.equal(
        (wrong.body['error'] as ErrorBody).message,
        'gate must be one of design, review, got "desing"',
      );
      assert.equal((await store.tasks.get('risky'))?.gate, 'design', 'nothing changed');
    } finally {
      await server.stop();
      await store.close();
    }
  });
});
