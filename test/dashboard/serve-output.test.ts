/**
 * `baton serve` beside a `baton up` in the same directory (the README's walk): its job page said
 * the output was "on box-1's disk, which this process cannot read" though the log was right
 * there in `.baton/logs/`. It now reads that folder, as `baton up`'s own dashboard does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { repoRoot } from '../support/cli.js';
import { waitUntil } from '../support/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const BIN = join(repoRoot(), 'bin', 'baton.js');
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium`;

function baton(cwd: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd });
    let stdout = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve(stdout.trim()) : reject(new Error(`${args[0]}: ${code}`)),
    );
  });
}

test("baton serve's job page shows a run's output from the log folder beside it", { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-serve-'));
  await baton(dir, 'init');
  await baton(dir, 'enqueue', 'k', '--command', 'true');
  const session = await baton(dir, 'session', 'start', '--kind', 'agent');
  const job = JSON.parse(await baton(dir, 'job', 'next', '--session', session, '--json')) as { id: number };
  mkdirSync(join(dir, '.baton', 'logs'), { recursive: true });
  writeFileSync(join(dir, '.baton', 'logs', `job-${job.id}-attempt-1.log`), 'step 1 of 3: compiling\n');
  const serve = spawn(process.execPath, [BIN, 'serve', '--http', '127.0.0.1:0'], { cwd: dir });
  let said = '';
  serve.stdout.on('data', (data: Buffer) => (said += data.toString()));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    await waitUntil(
      () => /serving the API and dashboard on (\S+)/.test(said),
      10_000,
      'baton serve to start',
    );
    const url = /serving the API and dashboard on (\S+)/.exec(said)?.[1] ?? '';
    const page = await browser.newPage();
    const response = await page.goto(`${url}/jobs/${job.id}`);
    assert.equal(response?.status(), 200);
    const output = await page.locator('#output').innerText();
    assert.match(output, /step 1 of 3: compiling/);
    assert.match(output, new RegExp(`from .*\\.baton/logs/job-${job.id}-attempt-1\\.log`));
  } finally {
    await browser.close();
    serve.kill('SIGTERM');
  }
});
