/**
 * The dashboard under `--auth required`, in a real browser (Debian's chromium, headless): a page
 * asked for without a token goes to /login; signing in with a token sets an HttpOnly,
 * SameSite=Strict cookie holding a sign-in's own token (sign-in-cookie.test.ts) that authenticates
 * like the bearer header; a viewer sees the views but its force-release is refused (403, written
 * to the ledger), an operator's goes through and is credited to its sign-in; signing out clears
 * the cookie. A change carried by the cookie from
 * another origin, or with no Origin at all, is refused and changes nothing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Store } from '../../src/store/store.js';
import { repoRoot } from '../support/cli.js';
import { freshSqlite, startTestServer, type TestServer } from './server.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot(), 'test-artifacts', 'dashboard');
const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install Debian's chromium to run the browser tests`;

/** Console errors other than the refusals the test provokes on purpose. */
function watch(page: Page, expected: RegExp): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

async function signIn(page: Page, token: string): Promise<void> {
  // By keyboard: the field is focused on load, Enter submits.
  await page.getByLabel('Token').fill(token);
  await page.getByLabel('Token').press('Enter');
}

/** The id of the sign-in the page's cookie holds, checked to be one of the token `of`. */
async function signInOf(page: Page, store: Store, of: string): Promise<string> {
  const [cookie] = await page.context().cookies();
  const check = await store.tokens.verify(cookie?.value ?? '');
  assert.ok(check.ok && check.token.loginOf === of, `the cookie holds a sign-in of token ${of}`);
  return check.token.id;
}

void describe('the dashboard under --auth required, in a real browser', { skip }, () => {
  let browser: Browser;
  let server: TestServer;
  let viewer: { id: string; secret: string };
  let holder: number;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    server = await startTestServer(freshSqlite(), () => {}, { pollMs: 100, tokenRecheckMs: 200 }, 'required');
    const made = await server.store.tokens.create({ scope: 'viewer', name: 'a viewer' });
    viewer = { id: made.token.id, secret: made.secret };
    await server.store.tasks.add({ key: 'stuck', title: 'an agent stuck on a prompt' });
    holder = (await server.store.sessions.start({ kind: 'agent', host: 'laptop', pid: 777 })).id;
    assert.ok((await server.store.claims.acquire({ key: 'stuck', session: holder })).ok);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('sends a page asked for without a token to /login, and refuses a token that opens nothing', async () => {
    const page = await browser.newPage();
    const errors = watch(page, /status of 401/);
    const response = await page.goto(`${server.url}/claims`);
    assert.equal(new URL(page.url()).pathname, '/login');
    assert.equal(new URL(page.url()).searchParams.get('next'), '/claims');
    assert.equal(response?.status(), 200);
    assert.equal(await page.evaluate('document.activeElement?.id'), 'login-token', 'the field has focus');
    await page.screenshot({ path: join(ARTIFACTS, 'login.png'), fullPage: true });
    await signIn(page, 'baton_not-a-token');
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /that token opens nothing: it is unknown/);
    assert.deepEqual(await page.context().cookies(), []);
    // The API itself still answers JSON, not the page.
    const api = await fetch(`${server.url}/v1/tasks`, { headers: { accept: 'text/html' } });
    assert.equal(api.status, 401);
    assert.equal(((await api.json()) as { error: { code: string } }).error.code, 'unauthorized');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('a viewer signed in sees the views, but its force-release is refused and written to the ledger', async () => {
    const page = await browser.newPage();
    const errors = watch(page, /status of 403/);
    await page.goto(`${server.url}/claims`);
    await signIn(page, viewer.secret);
    await page.waitForURL(`${server.url}/claims`);
    const [cookie] = await page.context().cookies();
    assert.equal(cookie?.name, `baton_token_${new URL(server.url).port}`);
    assert.notEqual(cookie?.value, viewer.secret, "a sign-in's own token, not the secret signed in with");
    assert.equal(cookie?.httpOnly, true);
    assert.equal(cookie?.sameSite, 'Strict');
    assert.equal(cookie?.secure, false, 'plain http: not Secure');
    assert.match(
      await page.locator('header').innerText(),
      new RegExp(`Signed in: viewer token ${viewer.id}`),
    );
    const row = page.locator('#view tr', { hasText: 'stuck' });
    assert.match(await row.innerText(), new RegExp(`session ${holder}`));
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await row.getByLabel('Reason').fill('looks stuck');
    await row.getByRole('button', { name: 'Force-release stuck' }).click();
    await page.locator('#status', { hasText: 'force-release stuck refused: forbidden' }).waitFor();
    assert.equal((await server.store.claims.current('stuck'))?.session, holder);
    const refused = await server.store.audit.list({ type: 'auth:refused' });
    assert.equal(refused.length, 1);
    assert.equal(
      refused[0]?.detail['token'],
      await signInOf(page, server.store, viewer.id),
      "credited to the sign-in's token",
    );
    await page.goto(`${server.url}/audit`);
    assert.match(await page.locator('#view').innerText(), /auth:refused/);
    await page.screenshot({ path: join(ARTIFACTS, 'signed-in-viewer.png'), fullPage: true });
    // Signing out clears the cookie; the next page goes back to /login.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('Signed out.').waitFor();
    assert.deepEqual(await page.context().cookies(), []);
    await page.goto(`${server.url}/claims`);
    assert.equal(new URL(page.url()).pathname, '/login');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('a page whose token is revoked stops its live updates and says to sign in again', async () => {
    const page = await browser.newPage();
    const errors = watch(page, /status of 401/);
    const made = await server.store.tokens.create({ scope: 'viewer', name: 'revoked while watching' });
    await page.goto(`${server.url}/claims`);
    await signIn(page, made.secret);
    await page.waitForURL(`${server.url}/claims`);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await server.store.tokens.revoke({ id: made.token.id, actor: 'test' });
    await page.locator('#live', { hasText: 'stopped: the token no longer opens: sign in again' }).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('refuses a change carried by the cookie from another origin or with none, changing nothing', async () => {
    const signIn = await server.coordinator.tokens.signIn(
      (await server.store.tokens.get(server.operatorTokenId))!,
    );
    const cookie = `baton_token_${new URL(server.url).port}=${signIn.secret}`;
    const before = await server.store.audit.list({});
    const path = `${server.url}/v1/claims/stuck/force-release`;
    const body = JSON.stringify({ reason: 'from elsewhere' });
    for (const origin of ['http://evil.example', null]) {
      const headers: Record<string, string> = { cookie, 'content-type': 'application/json' };
      if (origin !== null) headers['origin'] = origin;
      const r = await fetch(path, { method: 'POST', headers, body });
      assert.equal(r.status, 403, `Origin ${origin}`);
      assert.match(((await r.json()) as { error: { message: string } }).error.message, /this server's pages/);
    }
    assert.equal((await server.store.claims.current('stuck'))?.session, holder);
    assert.deepEqual(await server.store.audit.list({}), before);
    // Signing in from a foreign page is refused the same way.
    const login = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${server.operatorToken}`,
    });
    assert.equal(login.status, 403);
    assert.equal(login.headers.get('set-cookie'), null);
  });

  test('an operator signed in force-releases, credited to its sign-in', async () => {
    const page = await browser.newPage();
    const errors = watch(page, /^$/);
    await page.goto(`${server.url}/claims`);
    await signIn(page, server.operatorToken);
    await page.waitForURL(`${server.url}/claims`);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    const row = page.locator('#view tr', { hasText: 'stuck' });
    await row.getByLabel('Reason').fill('agent stuck on a prompt');
    await row.getByRole('button', { name: 'Force-release stuck' }).click();
    await page.locator('#status', { hasText: 'force-release stuck: done' }).waitFor();
    await row.waitFor({ state: 'detached' });
    assert.equal(await server.store.claims.current('stuck'), null);
    const forced = (await server.store.audit.list({ key: 'stuck' })).filter(
      (e) => e.type === 'claim:force_released',
    );
    assert.equal(forced.length, 1);
    assert.equal(forced[0]?.token, await signInOf(page, server.store, server.operatorTokenId));
    assert.deepEqual(errors, []);
    await page.close();
  });
});
