/**
 * A new CLI listing tokens of an older `baton serve` (one from before `revokedBy`) over the API: its
 * GET /v1/tokens carries no revoker. The CLI reads it as null, named by nobody, in --json and the table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { repoRoot } from '../../test/support/cli.js';

/** Two tokens as an older server lists them: one revoked, one live, neither with `revokedBy`. */
const OLDER = [
  { id: 'aaaaaaaaaaaa', scope: 'viewer', session: null, host: null, task: null, name: 'gone' },
  { id: 'bbbbbbbbbbbb', scope: 'viewer', session: null, host: null, task: null, name: 'kept' },
].map((token, index) => ({
  ...token,
  createdAt: '2026-01-01T00:00:00.000Z',
  expiresAt: null,
  revokedAt: index === 0 ? '2026-01-02T00:00:00.000Z' : null,
}));

function baton(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_URL: url, BATON_TOKEN: 'not-checked' };
  delete env['BATON_DB'];
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/baton.js', ...args],
      { cwd: repoRoot(), env },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

test('baton token list --all against an older server: no revokedBy read as null, "(nobody named)"', async () => {
  const server = createServer((request, response) => {
    const found = request.method === 'GET' && request.url?.split('?')[0] === '/v1/tokens';
    response.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(found ? OLDER : { error: { code: 'not_found', message: 'no such route' } }));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const json = await baton(url, 'token', 'list', '--all', '--json');
    assert.equal(json.code, 0, json.stderr);
    const listed = JSON.parse(json.stdout) as { name: string; revokedBy?: unknown }[];
    assert.deepEqual(
      listed.map((token) => [token.name, token.revokedBy]),
      [
        ['gone', null],
        ['kept', null],
      ],
    );
    const text = await baton(url, 'token', 'list', '--all');
    assert.equal(text.code, 0, text.stderr);
    const line = (id: string) => text.stdout.split('\n').find((row) => row.startsWith(id)) ?? '';
    assert.ok(line('aaaaaaaaaaaa').endsWith('2026-01-02T00:00:00.000Z (nobody named)'), text.stdout);
    assert.ok(line('bbbbbbbbbbbb').endsWith(' -'), text.stdout);
  } finally {
    await new Promise((closed) => server.close(closed));
  }
});
