/**
 * The CLI's output through its descriptors (stdio.ts), with the real `baton` on a real database: a
 * reader that stops early ends the call quietly, and a reader that is slow still gets every byte,
 * whether the descriptor took the writes at once or the stream took the rest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { repoRoot } from '../../test/support/cli.js';
import { sqliteDatabase } from '../../test/support/databases.js';
import { openStore } from '../store/open.js';
import { join } from 'node:path';

const TASKS = 1000;

/** A database with TASKS tasks whose keys and titles make `task list --json` about 400 kB. */
async function listed(): Promise<string> {
  const db = await sqliteDatabase().fresh();
  const store = await openStore(db);
  try {
    const title = 'a title long enough to fill the pipe '.repeat(5);
    for (let index = 0; index < TASKS; index++) await store.tasks.add({ key: `k${index}`, title });
  } finally {
    await store.close();
  }
  return db;
}

interface Ended {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function readAll(out: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of out) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Runs `baton ...args`; `read` decides how its stdout is read. */
function baton(
  args: readonly string[],
  read: (out: NodeJS.ReadableStream) => Promise<Buffer>,
): Promise<Ended> {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'baton.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const stdout = read(child.stdout);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => void stdout.then((out) => resolve({ code, stdout: out, stderr }), reject));
  });
}

test('a slow reader gets the whole answer', async () => {
  const db = await listed();
  const ended = await baton(['task', 'list', '--json', '--db', db], async (out) => {
    out.pause();
    // Long enough for the call to fill the pipe and wait on it.
    await pause(500);
    return readAll(out);
  });
  assert.equal(ended.code, 0, ended.stderr);
  assert.ok(ended.stdout.length > 300_000, `a big answer: ${ended.stdout.length} bytes`);
  const tasks = JSON.parse(ended.stdout.toString('utf8')) as { key: string }[];
  assert.equal(tasks.length, TASKS);
  assert.equal(ended.stderr, '');
});

test('a reader that stops early ends the call quietly, with its exit code', async () => {
  const db = await listed();
  const ended = await baton(['task', 'list', '--json', '--db', db], async (out) => {
    // As `baton task list | head -1`: the first chunk, then the pipe is closed.
    const first = await new Promise<Buffer>((resolve) => out.once('data', resolve));
    (out as NodeJS.ReadableStream & { destroy(): void }).destroy();
    return first;
  });
  assert.match(ended.stdout.toString('utf8'), /^\[/);
  assert.ok(ended.stdout.length < 300_000, 'the reader stopped before the end');
  assert.equal(ended.stderr, '', 'no stack trace, no complaint');
  assert.equal(ended.code, 0);
});

test('a non-blocking pipe that fills up takes the rest through the stream, in order', async (t) => {
  const db = await listed();
  const dir = mkdtempSync(join(tmpdir(), 'baton-stdio-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A pipe a parent handed over non-blocking, so that a write into it when full fails with EAGAIN
  // instead of waiting. Node's spawn makes a child's stdio blocking; libuv opening the pipe in the
  // child makes it non-blocking again, for the whole process.
  const preload = join(dir, 'non-blocking.cjs');
  writeFileSync(preload, "new (require('node:net').Socket)({ fd: 1, readable: false, writable: true });\n");
  const args = [
    '--require',
    preload,
    join(repoRoot(), 'bin', 'baton.js'),
    'task',
    'list',
    '--json',
    '--db',
    db,
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.stdout.pause();
  await pause(500);
  const out = await readAll(child.stdout);
  assert.equal(await code, 0, stderr);
  assert.equal(stderr, '');
  const tasks = JSON.parse(out.toString('utf8')) as { key: string }[];
  assert.deepEqual(
    tasks.map((task) => task.key),
    [...Array(TASKS).keys()].map((index) => `k${index}`).sort(),
    'every task, once, in order',
  );
});
