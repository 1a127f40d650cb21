/**
 * A refusal over HTTP names what the route takes: the body's or query's fields, never a CLI flag
 * (`--older-than`, `--attempt`, `--session` for escalate and for an agent token), and never a field the route refuses (the progress
 * hint once named filesChanged, which the route answers with "unknown field"). Reopen and reject
 * need a reason, as `baton reopen` and `baton reject` need --reason, and the document says so. A
 * real `baton serve` on both engines; none of these refusals changes anything.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { bothEngines } from '../support/databases.js';
import { rawSql } from '../support/raw-sql.js';
import { call, dumpTables, serve, wholeNumberWords } from './support.js';

interface Refusal {
  readonly message: string;
  readonly hint: string | null;
}

/** The refusal's line, without what the tests here do not compare. */
const line = ({ message, hint }: Refusal): Refusal => ({ message, hint });

type Document = {
  paths: Record<
    string,
    { post?: { requestBody?: { content: Record<string, { schema: { $ref?: string } }> } } }
  >;
  components: { schemas: Record<string, { required?: string[] }> };
};

/** The fields the body of POST `path` requires, as /openapi.json says. */
function required(doc: Document, path: string): string[] {
  const ref = doc.paths[path]?.post?.requestBody?.content['application/json']?.schema.$ref ?? '';
  return doc.components.schemas[ref.replace('#/components/schemas/', '')]?.required ?? [];
}

for (const db of bothEngines()) {
  describe(`HTTP refusals name the route's own fields (${db.name})`, () => {
    test("progress, reopen, reject, job prune, the job log, escalate and a token's bindings", async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const server = await serve(url);
      const raw = await rawSql(db, url);
      try {
        const { secret } = await store.tokens.create({ scope: 'operator', name: 'names' });
        await store.tasks.add({ key: 'k' });
        const session = (await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 })).id;
        const refused = async (method: string, path: string, body?: unknown): Promise<Refusal> => {
          const r = await call(server.url, method, path, { token: secret, body });
          assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
          const error = r.body['error'] as Refusal;
          assert.doesNotMatch(`${error.message} ${error.hint ?? ''}`, /--[a-z]/, `${path}: no CLI flag`);
          return line(error);
        };
        const before = await dumpTables(db, raw);

        const progress = `/v1/sessions/${session}/progress`;
        const mark = await refused('POST', progress, { note: 'x' });
        assert.equal(mark.message, 'a progress mark must count something');
        assert.equal(mark.hint, 'give toolCalls, the number of tool calls since the last mark (1 or more)');
        await refused('POST', progress, { toolCalls: 0 });

        for (const verb of ['reopen', 'reject']) {
          const reason = await refused('POST', `/v1/tasks/k/${verb}`, {});
          assert.equal(reason.message, 'reason is required', verb);
        }
        const prune = await refused('POST', '/v1/jobs/prune', { olderThan: '-5d' });
        assert.match(prune.message, /^olderThan must be a duration/);
        const off = await refused('POST', '/v1/jobs/prune', { olderThan: 'off' });
        assert.equal(off.message, 'olderThan must be a duration such as 30d, got "off"');
        const bare = await refused('POST', '/v1/jobs/prune', { olderThan: '30' });
        assert.match(bare.message, /^olderThan needs a unit/);
        const attempt = await refused('GET', '/v1/jobs/1/log?attempt=0');
        assert.equal(attempt.message, wholeNumberWords('attempt', 1, Number.MAX_SAFE_INTEGER, '0'));
        const half = await refused('POST', '/v1/tasks/k/escalate', { reason: 'why', session });
        assert.equal(half.hint, 'give both "session" and "epoch" (an agent: its claim\'s), or neither');
        const tokens: [body: Record<string, unknown>, message: string, hint: string][] = [
          [
            { scope: 'agent' },
            'an agent token is bound to one session',
            'give "session", the id of the session the token acts for',
          ],
          [
            { scope: 'host' },
            'a host token is bound to one host',
            'give "host", the name of the host the token acts for',
          ],
          [{ scope: 'viewer', session }, 'a viewer token is not bound to a session', 'leave out "session"'],
          [{ scope: 'operator', host: 'vm' }, 'an operator token is not bound to a host', 'leave out "host"'],
        ];
        for (const [body, message, hint] of tokens) {
          assert.deepEqual(
            await refused('POST', '/v1/tokens', body),
            { message, hint },
            JSON.stringify(body),
          );
        }
        assert.equal(await dumpTables(db, raw), before, 'nothing changed');

        const marked = await call(server.url, 'POST', progress, { token: secret, body: { toolCalls: 1 } });
        assert.equal(marked.status, 200, 'the field the hint names is taken');
        const doc = (await call(server.url, 'GET', '/openapi.json')).body as unknown as Document;
        assert.deepEqual(required(doc, '/v1/tasks/{key}/reopen'), ['reason']);
        assert.deepEqual(required(doc, '/v1/tasks/{key}/reject'), ['reason']);
        assert.deepEqual(required(doc, '/v1/tasks/{key}/resolve'), [], "resolve's note stays optional");
      } finally {
        await raw.close();
        await server.stop();
        await store.close();
      }
    });
  });
}
