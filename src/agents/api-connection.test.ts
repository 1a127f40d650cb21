/**
 * The client's side of an idle connection closing: a server (or a proxy) that closes a kept-alive
 * connection just as the client sends its next request on it. The server here does it every
 * time, so the race is not left to timing: it answers the first request of each connection and
 * resets the connection when a second one arrives on it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { ApiConnection } from './api-connection.js';
import { RemoteRefusal } from './remote-refusal.js';

interface Closing {
  readonly url: string;
  /** Each request the server read, as `METHOD path`, in order. */
  readonly seen: string[];
  close(): Promise<void>;
}

const ANSWER = '{"ok":true}';

/** Answers the first request on each connection (keep-alive); resets it at the second. */
async function closingServer(): Promise<Closing> {
  const seen: string[] = [];
  const open = new Set<Socket>();
  const server: Server = createServer((socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    let buffered = '';
    let requests = 0;
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        seen.push(head.split(' ').slice(0, 2).join(' '));
        if (++requests > 1) return void socket.resetAndDestroy();
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n' +
            `content-length: ${ANSWER.length}\r\n\r\n${ANSWER}`,
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        // The client keeps its last connection for its next request: not waited for.
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

void test('sends a GET once more, on a new connection, when the server resets the kept-alive one', async () => {
  const server = await closingServer();
  try {
    const api = new ApiConnection(server.url, 'baton_test');
    assert.deepEqual(await api.want('GET', '/v1/leader'), { ok: true });
    assert.deepEqual(await api.want('GET', '/v1/hosts'), { ok: true });
    assert.deepEqual(server.seen, ['GET /v1/leader', 'GET /v1/hosts', 'GET /v1/hosts']);
  } finally {
    await server.close();
  }
});

void test('does not send a POST twice when its connection broke: the server may have acted on it', async () => {
  const server = await closingServer();
  try {
    const api = new ApiConnection(server.url, 'baton_test');
    await api.want('GET', '/v1/leader');
    await assert.rejects(
      api.ask('POST', '/v1/claims/k1', { session: 1 }),
      (error: unknown) => error instanceof RemoteRefusal && error.code === 'store_unavailable',
    );
    assert.deepEqual(server.seen, ['GET /v1/leader', 'POST /v1/claims/k1']);
  } finally {
    await server.close();
  }
});
