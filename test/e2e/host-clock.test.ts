/**
 * A host's silence judged on the database's clock, against its runner session's TTL, the same way
 * everywhere. The dashboard's Hosts view called a host silent after a fixed 10 s whatever its
 * runner's TTL, so it disagreed with `baton hosts`; and both compared the database's timestamps
 * with the reader's own clock, so a CLI, an API server or a dashboard on a machine whose clock ran
 * ahead called every live host silent. Here the reading processes' clocks run an hour ahead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { ROOT, agentStarted, clusterFixture } from './cluster-support.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium`;
const BIN = join(ROOT, 'bin', 'baton.js');

interface Run {
  readonly code: number;
  readonly stdout: string;
}

/** `baton` in a process whose clock (Date.now) runs an hour ahead of the database's. */
function skewedBaton(env: NodeJS.ProcessEnv, cwd: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env });
    let stdout = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout }));
  });
}

async function hostsCell(page: Page, url: string): Promise<string> {
  await page.goto(`${url}/hosts`);
  // The row's cell under the "Last report" heading, wherever the table puts that column.
  const heads = await page.locator('#view th').allInnerTexts();
  const cells = await page.locator('#view tr', { hasText: 'solo' }).locator('th, td').allInnerTexts();
  return cells[heads.indexOf('Last report')] ?? '';
}

test(
  'baton hosts, the API and the dashboard judge a host on the database clock, against its TTL',
  { skip },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    const preload = join(c.dir, 'clock-ahead.cjs');
    writeFileSync(preload, 'const real = Date.now;\nDate.now = () => real() + 3_600_000;\n');
    const env = { ...process.env, NODE_OPTIONS: `--require ${preload}` };
    let serve: ChildProcess | null = null;
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      await c.store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
      // The runner's TTL is its --stale-after: 2 s here.
      const up = c.up('solo');
      await waitUntil(async () => agentStarted(c.store, 'long'), 15_000, 'the agent to start');
      serve = spawn(process.execPath, [BIN, '--db', c.url, 'serve', '--http', '127.0.0.1:0'], {
        cwd: c.dir,
        env,
      });
      let said = '';
      serve.stdout?.on('data', (data: Buffer) => (said += data.toString()));
      await waitUntil(
        () => /serving the API and dashboard on \S+/.test(said),
        10_000,
        'baton serve to start',
      );
      const url = /serving the API and dashboard on (\S+)/.exec(said)?.[1] ?? '';
      const { secret } = await c.store.tokens.create({ scope: 'operator', name: 'clock test' });
      const viaDb = () => skewedBaton(env, c.dir, '--db', c.url, 'hosts');
      const viaApi = () => skewedBaton(env, c.dir, '--api', url, '--token', secret, 'hosts');
      const apiLiveness = async () =>
        ((await (await fetch(`${url}/v1/hosts`)).json()) as { liveness: string }[])[0]?.liveness;
      const page = await browser.newPage();

      for (const shown of [await viaDb(), await viaApi()]) {
        assert.equal(shown.code, 0);
        assert.match(shown.stdout, /solo .* (ms|s) ago\n$/, shown.stdout);
        assert.doesNotMatch(shown.stdout, /SILENT|DOWN|min ago/);
      }
      assert.equal(await apiLiveness(), 'live');
      const served = await hostsCell(page, url);
      assert.match(served, /^[\d.]+ (ms|s) ago$/, served);

      up.signal('SIGKILL');
      await up.exited();
      await waitUntil(
        async () => /SILENT/.test((await c.baton('hosts')).stdout),
        10_000,
        'the host to show silent',
      );
      // The runner's TTL has passed; the dashboard's old fixed 10 s had not.
      assert.match(await hostsCell(page, url), /^[\d.]+ s ago — silent$/);
      assert.equal(await apiLiveness(), 'silent');
      for (const shown of [await viaDb(), await viaApi()])
        assert.match(shown.stdout, /solo .* s ago, SILENT/);
    } finally {
      serve?.kill('SIGTERM');
      await browser.close();
      await c.close();
    }
  },
);
