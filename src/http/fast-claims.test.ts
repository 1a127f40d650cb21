import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Coordinator } from '../coordinator/coordinator.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import { httpApp } from './app.js';
import { fastClaims, hotBody } from './fast-claims.js';

/** One request, raw, on its own connection; the whole answer as sent. */
function exchange(server: Server, text: string): Promise<string> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (data: Buffer) => (answer += data.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

interface Side {
  readonly store: Store;
  readonly server: Server;
  /** The secrets of the operator, viewer and agent (session 1) tokens, and their ids, in order. */
  readonly secrets: readonly string[];
  readonly ids: readonly string[];
  /** Whether the last request reached Hono. */
  reachedHono: boolean;
}

/** A database with two agent sessions, tasks and three tokens, served with or without the fast path. */
async function side(url: string, fast: boolean): Promise<Side> {
  const store = await openStore(url);
  for (const pid of [1, 2]) await store.sessions.start({ kind: 'agent', host: 'h', pid });
  for (const key of ['a1', 'gh:acme/api#12', 'café', '100%', 'b2']) await store.tasks.add({ key });
  const made = [
    await store.tokens.create({ scope: 'operator', name: 'op' }),
    await store.tokens.create({ scope: 'viewer', name: 'view' }),
    await store.tokens.create({ scope: 'agent', session: 1 }),
  ];
  const listener = getRequestListener(
    httpApp({ coordinator: new Coordinator(store), auth: 'reads-open' }).fetch,
  );
  const built: Side = {
    store,
    server: createServer(),
    secrets: made.map((one) => one.secret),
    ids: made.map((one) => one.token.id),
    reachedHono: false,
  };
  const hono = (req: Parameters<typeof listener>[0], res: Parameters<typeof listener>[1]): void => {
    built.reachedHono = true;
    void listener(req, res);
  };
  built.server.on('request', fast ? fastClaims(new Coordinator(store), hono, () => undefined) : hono);
  await new Promise<void>((resolve) => built.server.listen(0, '127.0.0.1', resolve));
  return built;
}

interface Asked {
  readonly path: string;
  readonly body: string;
  /** The token by its index in Side.secrets, a literal Authorization header, or none. */
  readonly auth?: number | string | null;
  readonly headers?: string;
  /** Whether the fast path answers it (else Hono does). */
  readonly fast: boolean;
}

function requestText(asked: Asked, secrets: readonly string[], port: number): string {
  const auth = asked.auth === undefined ? 0 : asked.auth;
  const authorization =
    auth === null ? '' : `Authorization: ${typeof auth === 'string' ? auth : `Bearer ${secrets[auth]}`}\r\n`;
  const headers =
    asked.headers ?? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(asked.body)}\r\n`;
  const head = `POST ${asked.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${authorization}${headers}`;
  return `${head}Connection: close\r\n\r\n${asked.body}`;
}

const claim = (session: number) => JSON.stringify({ session });
const release = (session: number, epoch: number, outcome?: unknown) =>
  JSON.stringify({ session, epoch, outcome });
const ASKED: readonly Asked[] = [
  { path: '/v1/claims/a1', body: claim(1), fast: true },
  { path: '/v1/claims/a1', body: claim(1), fast: true },
  { path: '/v1/claims/a1', body: claim(2), fast: true },
  { path: '/v1/claims/a1/release', body: release(1, 1), fast: true },
  { path: '/v1/claims/a1/release', body: release(1, 1), fast: true },
  { path: '/v1/claims/gh%3Aacme%2Fapi%2312', body: claim(2), fast: true },
  { path: '/v1/claims/gh%3Aacme%2Fapi%2312/release', body: release(2, 1, 'done'), fast: true },
  { path: '/v1/claims/caf%C3%A9', body: claim(1), fast: true },
  { path: '/v1/claims/100%25', body: claim(2), auth: 2, fast: true },
  { path: '/v1/claims/gh%3Aacme%2Fapi%2312', body: claim(1), auth: 1, fast: true },
  { path: '/v1/claims/caf%C3%A9/release', body: release(1, 1), auth: 1, fast: true },
  { path: '/v1/claims/nosuch', body: claim(1), fast: true },
  { path: '/v1/claims/b2', body: claim(99), fast: true },
  { path: '/v1/claims/b2', body: claim(1), auth: 'Bearer nope', fast: true },
  { path: '/v1/claims/b2/release', body: release(1, 7, 'failed'), fast: true },
  { path: '/v1/claims/b2', body: JSON.stringify({ session: 1, x: 1 }), fast: false },
  { path: '/v1/claims/b2', body: '{"session":"1"}', fast: false },
  { path: '/v1/claims/b2', body: '{"session":1.5}', fast: false },
  { path: '/v1/claims/b2/release', body: '{"session":1,"epoch":1,"outcome":null}', fast: false },
  { path: '/v1/claims/b2/release', body: release(1, 1, 'lost'), fast: false },
  { path: '/v1/claims/b2', body: '\uFEFF{"session":1}', fast: false },
  { path: '/v1/claims/b2', body: '{"session":1', fast: false },
  { path: '/v1/claims/b2', body: '[1]', fast: false },
  { path: '/v1/claims/b%ZZ', body: claim(1), fast: false },
  { path: '/v1/claims/b%C3', body: claim(1), fast: false },
  { path: '/v1/claims/%2E%2E/release', body: release(1, 1), fast: false },
  { path: '/v1/claims/b2?x=1', body: claim(1), fast: false },
  { path: '/v1/claims/b2', body: claim(1), auth: null, fast: false },
  { path: '/v1/claims/b2', body: claim(1), auth: 'Basic eDp5', fast: false },
  {
    path: '/v1/claims/b2',
    body: claim(1),
    headers: `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${claim(1).length}\r\n`,
    fast: false,
  },
  { path: '/v1/claims/b2', body: `${' '.repeat(2000)}${claim(2)}`, fast: false },
  {
    path: '/v1/claims/b2/release',
    body: `${release(2, 1).length.toString(16)}\r\n${release(2, 1)}\r\n0\r\n\r\n`,
    headers: 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n',
    fast: false,
  },
];

/** The answer with what differs between two databases made alike masked: times, token ids. */
const masked = (text: string, ids: readonly string[]): string =>
  ids
    .reduce((all, id, index) => all.split(id).join(`<token ${index}>`), text)
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/^Date: .*$/m, 'Date: <date>');

for (const db of bothEngines()) {
  describe(`the fast claim path (${db.name})`, () => {
    test('answers and writes the ledger byte for byte as Hono does, and leaves the rest to it', async () => {
      const fast = await side(await db.fresh(), true);
      const hono = await side(await db.fresh(), false);
      try {
        for (const asked of ASKED) {
          const answers: string[] = [];
          for (const one of [fast, hono]) {
            one.reachedHono = false;
            const { port } = one.server.address() as AddressInfo;
            answers.push(masked(await exchange(one.server, requestText(asked, one.secrets, port)), one.ids));
          }
          const [fastAnswer, honoAnswer] = answers;
          assert.equal(fastAnswer, honoAnswer, `${asked.path} ${asked.body}`);
          assert.equal(fast.reachedHono, !asked.fast, `${asked.path} ${asked.body}: reached Hono`);
        }
        const ledger = async (one: Side) =>
          masked(JSON.stringify((await one.store.audit.list()).map(({ at: _at, ...row }) => row)), one.ids);
        assert.equal(await ledger(fast), await ledger(hono));
        assert.match(await ledger(fast), /auth:refused.*POST \/v1\/claims\/gh%3Aacme%2Fapi%2312"/);
        assert.match(await ledger(fast), /auth:refused.*POST \/v1\/claims\/café\/release"/);
      } finally {
        for (const one of [fast, hono]) {
          one.server.closeAllConnections();
          await new Promise((resolve) => one.server.close(resolve));
          await one.store.close();
        }
      }
    });
  });
}

describe('hotBody', () => {
  test("takes only what the routes' strict schemas take as they are", () => {
    assert.deepEqual(hotBody('{"session":3}', 'k', false), { key: 'k', session: 3 });
    assert.deepEqual(hotBody('{"session":3,"epoch":2}', 'k', true), { key: 'k', session: 3, epoch: 2 });
    assert.deepEqual(hotBody('{"epoch":2,"outcome":"done","session":3}', 'k', true), {
      key: 'k',
      session: 3,
      epoch: 2,
      outcome: 'done',
    });
    for (const [text, release] of [
      ['{"session":3,"epoch":2}', false],
      ['{"session":3}', true],
      ['{"session":0}', false],
      ['{"session":-0}', false],
      ['{"session":9007199254740992}', false],
      ['{"session":3,"__proto__":{}}', false],
      ['{"session":3,"epoch":2,"outcome":"lost"}', true],
      ['{"session":3,"epoch":2,"extra":1}', true],
      ['null', false],
      ['3', false],
    ] as const)
      assert.equal(hotBody(text, 'k', release), null, text);
  });
});
