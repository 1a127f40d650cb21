/**
 * The inbox in a real browser (Debian's chromium, playwright-core): tasks a person must decide on,
 * put there by the `baton` command in another process (an agent's escalation, a run that left its
 * task in review, a design gate), and decided from the page with the operator's token. Each
 * decision goes through the API's lifecycle routes: the ledger names the token, and the row leaves
 * the page without a reload. A screenshot goes to test-artifacts/dashboard/inbox.png.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { cliOn, repoRoot } from '../support/cli.js';
import { freshSqlite, startTestServer, type TestServer } from './server.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot(), 'test-artifacts', 'dashboard');
const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install Debian's chromium to run the browser tests`;

type Obj = Record<string, unknown>;

/** Puts a task in each list by the CLI, as agents and people do: returns the review job's id. */
async function seed(db: string): Promise<number> {
  const t = cliOn(db);
  const session = await t.session();
  for (const key of ['rev-1', 'rev-2']) {
    await t.json(0, 'task', 'add', key, '--title', `Review ${key}`, '--review', 'required');
    await t.json(0, 'enqueue', key);
  }
  let first = 0;
  for (let index = 0; index < 2; index++) {
    const job = await t.json(0, 'job', 'next', '--session', session);
    await t.json(
      0,
      'job',
      'finish',
      String(job['id']),
      '--session',
      session,
      '--epoch',
      String(job['epoch']),
    );
    if (index === 0) first = Number(job['id']);
  }
  await t.json(0, 'task', 'add', 'esc-1', '--title', 'Flaky login');
  const claim = await t.json(0, 'claim', 'esc-1', '--session', session);
  const reason = 'needs a product decision';
  await t.json(
    0,
    'escalate',
    'esc-1',
    '--session',
    session,
    '--epoch',
    String(claim['epoch']),
    '--reason',
    reason,
  );
  await t.json(0, 'task', 'add', 'gate-1', '--title', 'Redesign auth');
  await t.json(0, 'gate', 'gate-1', 'design');
  return first;
}

async function decide(page: Page, row: string, button: string, status: string, fill?: [string, string]) {
  const tr = page.locator('#view tr', { hasText: row });
  if (fill !== undefined) await tr.getByLabel(fill[0]).fill(fill[1]);
  await tr.getByRole('button', { name: button }).click();
  await page.locator('#status', { hasText: status }).waitFor();
  // The live region reloads on the change: the row leaves the page without a reload.
  await tr.waitFor({ state: 'detached' });
}

void describe('the inbox in a real browser', { skip }, () => {
  let browser: Browser;
  let server: TestServer;
  let reviewJob: number;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const db = freshSqlite();
    server = await startTestServer(db);
    reviewJob = await seed(db);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('lists what waits for a person, and each decision is made with the token and leaves the page', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 401/.test(m.text())) errors.push(m.text());
    });
    const response = await page.goto(`${server.url}/inbox`);
    assert.equal(response?.status(), 200);
    const view = page.locator('#view');
    const text = await view.innerText();
    assert.match(text, /Escalated \(1\)[\s\S]*esc-1[\s\S]*Flaky login[\s\S]*needs a product decision/);
    assert.match(text, /In review \(2\)[\s\S]*rev-1[\s\S]*rev-2/);
    assert.match(text, /Behind a gate \(1\)[\s\S]*gate-1[\s\S]*design/);
    const by = view.locator('tr', { hasText: 'rev-1' }).getByRole('link', { name: `job ${reviewJob}` });
    assert.equal(await by.getAttribute('href'), `/jobs/${reviewJob}`, 'the run that left it in review');
    await page.screenshot({ path: join(ARTIFACTS, 'inbox.png'), fullPage: true });

    // Without a token the API refuses, the page says so, and nothing moves.
    const rev1 = view.locator('tr', { hasText: 'rev-1' });
    await rev1.getByRole('button', { name: 'Approve rev-1' }).click();
    await page.locator('#status', { hasText: 'approve rev-1 refused: unauthorized' }).waitFor();
    assert.equal((await server.store.tasks.get('rev-1'))?.state, 'in_review');

    await page.getByLabel('Operator token').fill(server.operatorToken);
    await page.getByLabel('Operator token').press('Tab');
    await decide(page, 'rev-1', 'Approve rev-1', 'approve rev-1: done', ['Note', 'looks right']);
    await decide(page, 'rev-2', 'Reject rev-2', 'reject rev-2: done', ['Why', 'add a test for the retry']);
    await decide(page, 'esc-1', 'Resolve esc-1', 'resolve esc-1: done', ['Note', 'ship the short form']);
    await decide(page, 'gate-1', 'Open the design gate of gate-1', 'approve gate-1 (design): done');
    await page.locator('#view', { hasText: 'Nothing waits for a person' }).waitFor();

    const task = async (key: string) => server.store.tasks.get(key);
    assert.equal((await task('rev-1'))?.state, 'done');
    const rejected = await task('rev-2');
    assert.equal(rejected?.state, 'open');
    assert.equal(rejected?.feedback, 'add a test for the retry', 'the next run reads it as BATON_FEEDBACK');
    const resolved = await task('esc-1');
    assert.equal(resolved?.state, 'open');
    assert.deepEqual(
      [resolved?.feedback, resolved?.feedbackFrom],
      ['ship the short form', 'escalation'],
      'the next run reads the resolve note as BATON_FEEDBACK (decision 0062)',
    );
    assert.equal(rejected?.feedbackFrom, 'review');
    assert.equal((await task('gate-1'))?.gate, null);
    // The ledger names the operator's token for every decision.
    for (const [key, type] of [
      ['rev-1', 'task:state'],
      ['rev-2', 'task:state'],
      ['esc-1', 'task:state'],
      ['gate-1', 'task:approved'],
    ] as const) {
      const rows = (await server.store.audit.list({ key })).filter((entry) => entry.type === type);
      assert.equal(rows.at(-1)?.token, server.operatorTokenId, `${key}: ${JSON.stringify(rows.at(-1))}`);
    }
    const note = (await server.store.audit.list({ key: 'rev-1' })).at(-1)?.detail as Obj;
    assert.match(JSON.stringify(note), /looks right/);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
