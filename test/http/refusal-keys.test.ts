/**
 * A refusal is written to the ledger whatever key the request names. An agent's request beyond
 * its scope naming a key far longer than any key may be (here 9,000 random characters, in a
 * body and in a path) once answered 500 on PostgreSQL, whose index on the row's task key refuses
 * an entry over 8 kB, and left no `auth:refused` row. Now it is 403 like any other, its row names
 * no task, and its target still says what was asked (at most 500 characters).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cliOn } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { call, serve } from './support.js';

for (const db of bothEngines()) {
  void describe(`refusals naming an overlong key (${db.name})`, () => {
    test('are 403 and written to the ledger without the key as their task', async () => {
      const url = await db.fresh();
      const cli = cliOn(url);
      const own = Number(await cli.session());
      const other = Number(await cli.session());
      const agent = await cli.agentToken(own);
      const server = await serve(url);
      try {
        const key = randomBytes(6750).toString('base64url');
        assert.equal(key.length, 9000);
        const attempts = [
          { path: '/v1/effects', body: { key, session: other, epoch: 1, kind: 'pr' } },
          { path: `/v1/tasks/${key}/escalate`, body: { reason: 'mine', session: other, epoch: 1 } },
        ];
        for (const { path, body } of attempts) {
          const answer = await call(server.url, 'POST', path, { token: agent.token, body });
          assert.equal(answer.status, 403, JSON.stringify(answer.body).slice(0, 300));
        }
        const rows = await cli.json<{ key: string | null; token: string; detail: { target: string } }[]>(
          0,
          'audit',
          '--type',
          'auth:refused',
        );
        assert.equal(rows.length, attempts.length, 'one row per refusal');
        for (const row of rows) {
          assert.equal(row.key, null);
          assert.equal(row.token, agent.id);
          assert.equal(row.detail.target.length, 500);
          assert.ok(row.detail.target.includes(key.slice(0, 100)), row.detail.target.slice(0, 100));
        }
      } finally {
        await server.stop();
      }
    });
  });
}
