/**
 * A port the user names with --http is that port or nothing: taken by another process, `baton
 * serve` and `baton up` refuse with one line and exit 3, and serve nothing (a scraper or a
 * BATON_URL set for that port would otherwise reach the other process). Only the default, which
 * no one named, moves on to the next free port. Real sockets held by this process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBind } from '../../src/http/bind.js';
import { meterStore, serveHttp } from '../../src/http/server.js';
import { openStore } from '../../src/store/open.js';
import { repoRoot, type Run } from '../support/cli.js';
import { assertOneErrorLine } from '../support/cli-suite.js';
import { sqliteDatabase } from '../support/databases.js';

const BIN = join(repoRoot(), 'bin', 'baton.js');

/** A port this process listens on, for the test's life. */
async function occupied(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

/** `baton ...args` on `db`, killed after 20 s: a command that serves instead of refusing never ends. */
function baton(db: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DB: db };
  delete env['BATON_URL'];
  delete env['BATON_TOKEN'];
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

for (const command of [['serve'], ['up', '--host', 'box-1']]) {
  test(`baton ${command[0]} --http on a taken port: one line, exit 3, nothing served`, async () => {
    const db = await sqliteDatabase().fresh();
    const { port, server } = await occupied();
    try {
      const run = await baton(db, ...command, '--http', `127.0.0.1:${port}`);
      const line = assertOneErrorLine(run, 3, `baton ${command.join(' ')}`);
      assert.match(line, new RegExp(`cannot serve HTTP on 127\\.0\\.0\\.1:${port}: another process listens`));
      assert.match(line, /ss -ltnp/);
      assert.doesNotMatch(run.stdout, /serving the API/, 'nothing served on another port');
      assert.doesNotMatch(run.stdout, /joined as session/, 'baton up never joined');
    } finally {
      server.close();
    }
  });
}

test('baton up --http on a taken port refuses before it makes a database: a new path stays empty', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'baton-port-taken-'));
  const db = join(dir, '.baton', 'baton.db');
  const { port, server } = await occupied();
  try {
    const run = await baton(db, 'up', '--host', 'box-1', '--http', `127.0.0.1:${port}`);
    assertOneErrorLine(run, 3, 'baton up');
    assert.deepEqual(await readdir(dir), [], 'no .baton/, no database file');
  } finally {
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('the default bind (no --http) still moves on to the next free port, and says so', async () => {
  const db = await sqliteDatabase().fresh();
  const { port, server } = await occupied();
  const store = await openStore(db, { intent: 'use' });
  try {
    // The default's rule, on a port this test holds rather than 7070, which others may use.
    const bind = { ...parseBind(`127.0.0.1:${port}`, true) };
    const served = await serveHttp(meterStore(store), { bind, auth: 'reads-open' });
    try {
      assert.notEqual(served.url, `http://127.0.0.1:${port}`);
      assert.equal(served.taken, port);
      assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
    } finally {
      await served.close();
    }
  } finally {
    await store.close();
    server.close();
  }
});
