/**
 * Scopes hold, through a real `baton serve` on both engines: an agent token of session A tries
 * every mutating route of /openapi.json on session B's claim and job, and a viewer token tries
 * them too. Each is refused with 403, each refusal is in the ledger with the token and route, and
 * every table is otherwise byte-for-byte as it was. Without a token each is 401 and nothing at all
 * is written. The agent's own claim goes through, credited to its token.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliOn } from '../support/cli.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, dumpTables, serve } from './support.js';

interface Ids {
  readonly victim: number;
  readonly key: string;
  readonly job: number;
  readonly token: string;
}

/** For every mutating route, a request aimed at the victim's claim, job or session. */
function hostile(ids: Ids): Record<string, { path: string; body?: unknown }> {
  const k = encodeURIComponent(ids.key);
  const s = ids.victim;
  return {
    'POST /v1/tasks': { path: '/v1/tasks', body: { key: 'k-new' } },
    'POST /v1/sessions': { path: '/v1/sessions', body: { host: 'host-b' } },
    'POST /v1/sessions/{id}/end': { path: `/v1/sessions/${s}/end` },
    'POST /v1/sessions/{id}/heartbeat': { path: `/v1/sessions/${s}/heartbeat` },
    'POST /v1/sessions/{id}/progress': { path: `/v1/sessions/${s}/progress`, body: { toolCalls: 1 } },
    'POST /v1/claims/{key}': { path: `/v1/claims/${k}`, body: { session: s } },
    'POST /v1/claims/{key}/heartbeat': { path: `/v1/claims/${k}/heartbeat`, body: { session: s, epoch: 1 } },
    'POST /v1/claims/{key}/release': {
      path: `/v1/claims/${k}/release`,
      body: { session: s, epoch: 1, outcome: 'done' },
    },
    'POST /v1/claims/{key}/force-release': {
      path: `/v1/claims/${k}/force-release`,
      body: { reason: 'mine now' },
    },
    'POST /v1/jobs': { path: '/v1/jobs', body: { key: ids.key, command: 'true', ramMb: 100, priority: 1 } },
    'POST /v1/jobs/{id}/cancel': { path: `/v1/jobs/${ids.job}/cancel` },
    'POST /v1/jobs/{id}/retry': { path: `/v1/jobs/${ids.job}/retry` },
    'POST /v1/jobs/prune': { path: '/v1/jobs/prune', body: { olderThan: '30d' } },
    'POST /v1/next': { path: '/v1/next', body: { session: s } },
    'POST /v1/tasks/{key}/escalate': {
      path: `/v1/tasks/${k}/escalate`,
      body: { reason: 'stuck', session: s, epoch: 1 },
    },
    'POST /v1/tasks/{key}/reopen': { path: `/v1/tasks/${k}/reopen`, body: { reason: 'again', session: s } },
    'POST /v1/tasks/{key}/resolve': { path: `/v1/tasks/${k}/resolve`, body: { reason: 'ok', session: s } },
    'POST /v1/tasks/{key}/reject': { path: `/v1/tasks/${k}/reject`, body: { reason: 'no', session: s } },
    'POST /v1/tasks/{key}/close': { path: `/v1/tasks/${k}/close`, body: { reason: 'gone', done: true } },
    'POST /v1/tasks/{key}/approve': { path: `/v1/tasks/${k}/approve`, body: {} },
    'POST /v1/tasks/{key}/gate': { path: `/v1/tasks/${k}/gate`, body: { gate: 'design' } },
    'POST /v1/tasks/{key}/depend': { path: `/v1/tasks/${k}/depend`, body: { on: 'github:acme/api#8' } },
    'POST /v1/tasks/{key}/undepend': { path: `/v1/tasks/${k}/undepend`, body: { on: 'github:acme/api#8' } },
    'POST /v1/effects': { path: '/v1/effects', body: { key: ids.key, session: s, epoch: 1, kind: 'pr' } },
    'POST /v1/hosts/{name}/enable': { path: '/v1/hosts/host-b/enable' },
    'POST /v1/hosts/{name}/disable': { path: '/v1/hosts/host-b/disable' },
    'POST /v1/hosts/{name}/retire': { path: '/v1/hosts/host-b/retire' },
    'POST /v1/tokens': { path: '/v1/tokens', body: { scope: 'operator' } },
    'POST /v1/tokens/{id}/revoke': { path: `/v1/tokens/${ids.token}/revoke` },
    'POST /v1/settings/{name}': { path: '/v1/settings/vague-words', body: { value: '3' } },
    'POST /v1/jobs/next': { path: '/v1/jobs/next', body: { session: s } },
    'POST /v1/jobs/next-batch': { path: '/v1/jobs/next-batch', body: { session: s, size: 5 } },
    'POST /v1/jobs/finish-batch': {
      path: '/v1/jobs/finish-batch',
      body: { session: s, finish: [{ id: ids.job, epoch: 1, status: 'failed' }], next: 5 },
    },
    'POST /v1/jobs/{id}/finish': {
      path: `/v1/jobs/${ids.job}/finish`,
      body: { session: s, epoch: 1, status: 'failed' },
    },
    'POST /v1/workspaces': { path: '/v1/workspaces', body: { name: 'w', path: '/tmp' } },
    'POST /v1/agents': { path: '/v1/agents', body: { name: 'a', role: 'engineer' } },
    'POST /v1/projects': { path: '/v1/projects', body: { name: 'p' } },
    'POST /v1/tasks/{key}/requirements': {
      path: `/v1/tasks/${k}/requirements`,
      body: { requiresFilesystem: true },
    },
    'POST /v1/tasks/{key}/update': { path: `/v1/tasks/${k}/update`, body: { title: 'mine' } },
  };
}

async function mutatingRoutes(url: string): Promise<string[]> {
  const doc = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, object> };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops)
      .filter((m) => m !== 'get' && m !== 'parameters')
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

for (const db of bothEngines()) {
  void describe(`scopes over HTTP (${db.name})`, () => {
    test("an agent token of session A is refused on every mutating route aimed at session B's claim and job; a viewer mutates nothing", async () => {
      const url = await db.fresh();
      const cli = cliOn(url);
      const a = Number(await cli.session());
      const b = Number(await cli.session());
      const key = 'github:acme/api#7';
      for (const args of [
        ['task', 'add', key],
        ['claim', key, '--session', String(b)],
      ]) {
        const run = await cli.run(...args);
        assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
      }
      const { job } = await cli.json<{ job: { id: number } }>(0, 'enqueue', 'github:acme/api#8');
      const agent = await cli.agentToken(a);
      const viewer = await cli.json<{ id: string; token: string }>(0, 'token', 'create', '--scope', 'viewer');
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const attempts = hostile({ victim: b, key, job: job.id, token: viewer.id });
        const routes = await mutatingRoutes(server.url);
        assert.ok(routes.length >= 20, `the document lists ${routes.length} mutating routes`);
        for (const route of routes) assert.ok(route in attempts, `the test covers ${route}`);
        const before = await dumpTables(db, raw);
        for (const holder of [agent, viewer, undefined]) {
          for (const route of routes) {
            const attempt = attempts[route];
            assert.ok(attempt !== undefined);
            const answer = await call(server.url, 'POST', attempt.path, {
              token: holder?.token,
              body: attempt.body,
            });
            const expected = holder === undefined ? 401 : 403;
            assert.equal(
              answer.status,
              expected,
              `${route} with ${holder?.id ?? 'no token'}: ${JSON.stringify(answer.body)}`,
            );
            const error = answer.body['error'] as { code: string; message: string };
            assert.equal(error.code, holder === undefined ? 'unauthorized' : 'forbidden');
          }
        }
        assert.equal(await dumpTables(db, raw), before, 'nothing changed but auth:refused rows');
        const refused = await cli.json<{ token: string | null; detail: { token: string; route: string } }[]>(
          0,
          'audit',
          '--type',
          'auth:refused',
        );
        assert.equal(refused.length, routes.length * 2, 'one row per refusal; none without a token');
        for (const [i, holder] of [agent, viewer].entries()) {
          const rows = refused.slice(i * routes.length, (i + 1) * routes.length);
          assert.ok(rows.every((r) => r.token === holder.id && r.detail.token === holder.id));
          assert.deepEqual(
            rows.map((r) => r.detail.route),
            routes.map((r) => `POST ${attempts[r]?.path ?? ''}`),
          );
        }
        // The agent's own session goes through, and the ledger names its token.
        const own = await call(server.url, 'POST', `/v1/claims/${encodeURIComponent('github:acme/api#8')}`, {
          token: agent.token,
          body: { session: a },
        });
        assert.equal(own.status, 200, JSON.stringify(own.body));
        const granted = await cli.json<{ token: string | null; session: number }[]>(
          0,
          'audit',
          '--type',
          'claim:granted',
        );
        assert.deepEqual(
          granted.map((g) => [g.session, g.token]),
          [
            [b, null],
            [a, agent.id],
          ],
        );
        // An operator may force-release B's claim; the ledger names the operator's token.
        const operator = await cli.json<{ id: string; token: string }>(
          0,
          'token',
          'create',
          '--scope',
          'operator',
        );
        const forced = await call(server.url, 'POST', `/v1/claims/${encodeURIComponent(key)}/force-release`, {
          token: operator.token,
          body: { reason: 'the holder is stuck' },
        });
        assert.equal(forced.status, 200, JSON.stringify(forced.body));
        const [row] = await cli.json<{ token: string | null }[]>(
          0,
          'audit',
          '--type',
          'claim:force_released',
        );
        assert.equal(row?.token, operator.id);
        const again = await call(server.url, 'POST', `/v1/claims/${encodeURIComponent(key)}/force-release`, {
          token: operator.token,
          body: { reason: 'twice' },
        });
        assert.equal(again.status, 404);
        assert.equal((again.body['error'] as { code: string }).code, 'no_claim');
      } finally {
        await raw.close();
        await server.stop();
      }
    });
  });
}
