/**
 * The dashboard in a real browser: Debian's chromium, headless, driven by playwright-core, on
 * a real database that the `baton` command changes from another process. Screenshots of every
 * view go to test-artifacts/dashboard/.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { cliOn, repoRoot } from '../support/cli.js';
import { freshPostgresUrl } from '../support/databases.js';
import { freshSqlite, startTestServer, type TestServer } from './server.js';
import { seedFleet, type Seeded } from './seed.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot(), 'test-artifacts', 'dashboard');
const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install Debian's chromium to run the browser tests`;

/** Opens a page that fails the test on any console error or uncaught exception. */
async function openPage(
  browser: Browser,
  width = 1280,
  height = 900,
): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

void describe('the dashboard in a real browser', { skip }, () => {
  let browser: Browser;
  let server: TestServer;
  let seeded: Seeded;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const logDir = mkdtempSync(join(tmpdir(), 'baton-logs-'));
    const db = freshSqlite();
    server = await startTestServer(db, () => {}, {
      logDir,
      hostName: 'box-1',
      rssMb: (pid) => (pid === 4321 ? 812 : null),
    });
    seeded = await seedFleet(server.store, logDir);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('loads every view with no console errors, and keeps a screenshot of each', async () => {
    const { page, errors } = await openPage(browser);
    const views: [string, string, RegExp][] = [
      ['queue', '/', /waiting for workspace api, held by job \d+/],
      ['claims', '/claims', /session \d+ \(claude\)/],
      ['leader', '/leader', /Term/],
      ['hosts', '/hosts', /warm standby/],
      ['workspaces', '/workspaces', /api/],
      ['job', `/jobs/${seeded.runningJob}`, /42 passing/],
      ['sessions', '/sessions', /agent \(claude\)[\s\S]*epoch \d+: held/],
      ['audit', '/audit', /claim:granted/],
    ];
    for (const [name, path, expected] of views) {
      const response = await page.goto(server.url + path);
      assert.equal(response?.status(), 200, path);
      assert.match(await page.locator('#view').innerText(), expected, path);
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    }
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('shows a claim made from the CLI without a reload, within 2 s', async () => {
    const { page, errors } = await openPage(browser);
    await page.goto(`${server.url}/claims`);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await page.evaluate('window.sameDocument = true');
    await server.store.tasks.add({ key: 'cli:task-1', title: 'claimed from the command line' });
    const cli = cliOn(server.db);
    const session = await cli.session();
    const claimed = await cli.run('claim', 'cli:task-1', '--session', session);
    assert.equal(claimed.code, 0, claimed.stderr);
    await page.locator('#view tr', { hasText: 'cli:task-1' }).waitFor({ timeout: 2000 });
    assert.match(
      await page.locator('#view tr', { hasText: 'cli:task-1' }).innerText(),
      new RegExp(`session ${session}`),
    );
    assert.equal(await page.evaluate('window.sameDocument'), true, 'the page was not reloaded');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('force-release from the dashboard sends the operator token and fences the holder', async () => {
    const { page, errors } = await openPage(browser);
    await page.goto(`${server.url}/claims`);
    const row = page.locator('#view tr', { hasText: 'cli:task-1' });
    // Without a token the API refuses, and the page says so in one line.
    await row.getByLabel('Reason').fill('agent stuck on a prompt');
    await row.getByRole('button', { name: 'Force-release cli:task-1' }).click();
    await page.locator('#status', { hasText: 'refused: unauthorized' }).waitFor();
    assert.equal(await server.store.claims.current('cli:task-1').then((c) => c?.epoch), 1);

    await page.getByLabel('Operator token').fill(server.operatorToken);
    await page.getByLabel('Operator token').press('Tab');
    await row.getByLabel('Reason').fill('agent stuck on a prompt');
    await row.getByRole('button', { name: 'Force-release cli:task-1' }).click();
    await page.locator('#status', { hasText: 'force-release cli:task-1: done' }).waitFor();
    // The ledger says who: the operator's token, and why.
    const forced = (await server.store.audit.list({ key: 'cli:task-1' })).filter(
      (e) => e.type === 'claim:force_released',
    );
    assert.equal(forced.length, 1);
    assert.equal(forced[0]?.token, server.operatorTokenId);
    assert.equal(forced[0]?.epoch, 1);
    assert.match(JSON.stringify(forced[0]?.detail), /agent stuck on a prompt/);
    await row.waitFor({ state: 'detached' });
    assert.equal(await server.store.claims.current('cli:task-1'), null);
    // The old holder, a real process, is fenced: its release is refused with exit 3.
    const holder = (await server.store.claims.history('cli:task-1'))[0]?.session;
    const released = await cliOn(server.db).run(
      'release',
      'cli:task-1',
      '--session',
      String(holder),
      '--epoch',
      '1',
    );
    assert.equal(released.code, 3, released.stdout + released.stderr);
    await page.screenshot({ path: join(ARTIFACTS, 'claims-after-force-release.png'), fullPage: true });
    // Chromium reports the deliberate 401 itself; nothing else may fail.
    assert.deepEqual(
      errors.filter((e) => !/status of 401/.test(e)),
      [],
    );
    await page.close();
  });

  test('the host toggle asks the API with the token, and the page shows the new state without a reload', async () => {
    const { page, errors } = await openPage(browser);
    await page.goto(`${server.url}/hosts`);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await page.getByLabel('Operator token').fill(server.operatorToken);
    await page.getByLabel('Operator token').press('Tab');
    await page.getByRole('button', { name: 'Enable box-2' }).click();
    await page.locator('#status', { hasText: 'enable box-2: done' }).waitFor();
    await page.getByRole('button', { name: 'Disable box-2' }).waitFor();
    assert.equal((await server.store.hosts.list()).find((h) => h.name === 'box-2')?.enabled, true);
    await page.getByRole('button', { name: 'Disable box-2' }).click();
    await page.getByRole('button', { name: 'Enable box-2' }).waitFor();
    assert.equal((await server.store.hosts.list()).find((h) => h.name === 'box-2')?.enabled, false);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('can be used by keyboard alone: skip link, views, filters, token and buttons are reachable', async () => {
    const { page, errors } = await openPage(browser);
    await page.goto(`${server.url}/`);
    const focused: string[] = [];
    for (let i = 0; i < 16; i++) {
      await page.keyboard.press('Tab');
      focused.push(
        await page.evaluate<string>(`(() => {
          const el = document.activeElement;
          if (el === null) return '';
          const label = el.getAttribute('aria-label') ?? el.labels?.[0]?.innerText ?? el.innerText ?? '';
          return el.tagName.toLowerCase() + ':' + (label.trim().split('\\n')[0] ?? '');
        })()`),
      );
    }
    assert.equal(focused[0], 'a:Skip to content');
    for (const expected of [
      'a:Queue',
      'a:Tasks',
      'a:Inbox',
      'a:Claims',
      'a:Audit',
      'input:Operator token',
      'select:Status',
      'button:Filter',
    ]) {
      assert.ok(focused.includes(expected), `${expected} in ${focused.join(', ')}`);
    }
    // Enter on a focused view link opens it.
    await page.getByRole('link', { name: 'Hosts' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${server.url}/hosts`);
    // Tab reaches the host toggle, and Enter presses it (refused here: no token in this tab).
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached =
        (await page.evaluate<string | null>('document.activeElement?.textContent?.trim() ?? null')) ===
        'Enable box-2';
    }
    assert.ok(reached, 'Tab reaches the Enable box-2 button');
    await page.keyboard.press('Enter');
    await page.locator('#status', { hasText: 'enable box-2 refused: unauthorized' }).waitFor();
    errors.splice(0, errors.length, ...errors.filter((e) => !/status of 401/.test(e)));
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('reads at phone width without the page scrolling sideways', async () => {
    const { page, errors } = await openPage(browser, 390, 844);
    for (const [name, path] of [
      ['phone-queue', '/'],
      ['phone-claims', '/claims'],
    ] as const) {
      await page.goto(server.url + path);
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - window.innerWidth',
      );
      assert.ok(overflow <= 0, `${path} is ${overflow}px wider than the screen`);
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
});

void describe('the dashboard on PostgreSQL in a real browser', { skip }, () => {
  test('shows a claim made by the CLI in another process without a reload, within 2 s', async () => {
    const server = await startTestServer(await freshPostgresUrl());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const { page, errors } = await openPage(browser);
      await page.goto(`${server.url}/claims`);
      await page.locator('#live', { hasText: 'live' }).waitFor();
      await page.evaluate('window.sameDocument = true');
      await server.store.tasks.add({ key: 'pg:task-1' });
      const cli = cliOn(server.db);
      const session = await cli.session();
      const claimed = await cli.run('claim', 'pg:task-1', '--session', session);
      assert.equal(claimed.code, 0, claimed.stderr);
      await page.locator('#view tr', { hasText: 'pg:task-1' }).waitFor({ timeout: 2000 });
      assert.equal(await page.evaluate('window.sameDocument'), true, 'the page was not reloaded');
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await server.close();
    }
  });
});
