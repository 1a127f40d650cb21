/**
 * Idle keep-alive connections (issue 17): `baton serve` keeps one open longer than its clients
 * keep theirs, so a client reusing its connection never meets the server closing it. With Node's
 * default keepAliveTimeout (5 s, the same as Node's and undici's client idle timeouts) a request
 * sent on a connection idle for 5 s could reach a socket the server was closing: ECONNRESET.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sqliteDatabase } from '../support/databases.js';
import { serve } from './support.js';

/** Node's default keepAliveTimeout, the one that raced its clients. */
const NODE_DEFAULT_KEEP_ALIVE_MS = 5_000;

interface Got {
  readonly status: number;
  readonly keepAlive: string;
  readonly reusedSocket: boolean;
}

function get(agent: Agent, url: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/healthz`, { agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          keepAlive: String(res.headers['keep-alive'] ?? ''),
          reusedSocket: req.reusedSocket,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

void test("keeps an idle keep-alive connection open past Node's default 5 s, and says for how long", async () => {
  const server = await serve(await sqliteDatabase().fresh());
  // One connection, kept however long the server keeps it (no idle timeout of the client's own).
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await get(agent, server.url);
    assert.equal(first.status, 200);
    // Clients schedule their own idle close from this (Node's agent closes 1 s before it).
    const announced = Number(/timeout=(\d+)/.exec(first.keepAlive)?.[1]);
    assert.ok(announced >= 60, `Keep-Alive: ${first.keepAlive}`);
    await sleep(NODE_DEFAULT_KEEP_ALIVE_MS + 1_000);
    const second = await get(agent, server.url);
    assert.equal(second.status, 200);
    assert.equal(second.reusedSocket, true, 'the server closed the idle connection');
  } finally {
    agent.destroy();
    await server.stop();
  }
});
