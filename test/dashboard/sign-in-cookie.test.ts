/**
 * The dashboard's sign-in cookie is seen by every page on the host's other ports (a browser sends a
 * host's cookies to all its ports): an agent's dev server on 127.0.0.1:5173, previewed in the
 * operator's browser, reads it. So it holds a sign-in's own token, never the secret signed in with
 * (decision 0012, amendment "The sign-in cookie"). In a real browser (Debian's chromium), on both
 * engines: what another local server receives is not the secret; it manages no tokens, signs in to
 * nothing, is refused as a bearer token; signing out revokes it, and it expires after 12 hours on
 * the database clock.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { verifiedTokens } from '../../src/coordinator/token-cache.js';
import { SHARED_CLOCK_ENV, moveClockOf } from '../support/clock.js';
import { bothEngines, handBack } from '../support/databases.js';
import { startTestServer, type TestServer } from './server.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install Debian's chromium to run the browser tests`;
const HOUR = 3_600_000;

// The server's store reads the shared test clock, which the test moves instead of sleeping.
Object.assign(process.env, SHARED_CLOCK_ENV);

/** A local server on another port, as an agent's dev server: it keeps each request's Cookie header. */
async function otherLocalServer(): Promise<{ url: string; cookies: string[]; server: Server }> {
  const cookies: string[] = [];
  const server = createServer((request, response) => {
    cookies.push(request.headers.cookie ?? '');
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>dev server</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, cookies, server };
}

const cookieValues = (header: string): Map<string, string> =>
  new Map(
    header
      .split(';')
      .filter((part) => part.includes('='))
      .map((part) => [part.slice(0, part.indexOf('=')).trim(), part.slice(part.indexOf('=') + 1).trim()]),
  );

for (const db of bothEngines()) {
  void describe(`the sign-in cookie on ${db.name}, in a real browser`, { skip }, () => {
    let browser: Browser;
    let server: TestServer;
    let url: string;
    let other: Awaited<ReturnType<typeof otherLocalServer>>;
    let cookieName: string;

    before(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
      url = await db.fresh();
      const deps = { pollMs: 100, tokenRecheckMs: 200 };
      server = await startTestServer(url, () => {}, deps, 'required', { unsafeSharedClock: true });
      other = await otherLocalServer();
      cookieName = `baton_token_${new URL(server.url).port}`;
    });

    after(async () => {
      await browser?.close();
      await server?.close();
      await new Promise((resolve) => other?.server.close(resolve));
      if (url !== undefined) await handBack(db, url);
    });

    /** Signs in as the operator in a fresh browser, then opens the other server: what it was sent. */
    async function signInAndHarvest(): Promise<{ page: Page; value: string; id: string }> {
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${server.url}/claims`);
      await page.getByLabel('Token').fill(server.operatorToken);
      await page.getByLabel('Token').press('Enter');
      await page.waitForURL(`${server.url}/claims`);
      await page.goto(other.url);
      const sent = cookieValues(other.cookies.at(-1) ?? '');
      assert.deepEqual([...sent.keys()], [cookieName], 'the browser sends the cookie to the other port');
      const value = sent.get(cookieName) ?? '';
      const check = await server.store.tokens.verify(value);
      assert.ok(check.ok, 'the harvested value is a token that opens');
      return { page, value, id: check.token.id };
    }

    const asCookie = (value: string, init: RequestInit = {}): RequestInit => ({
      ...init,
      headers: { ...(init.headers as Record<string, string>), cookie: `${cookieName}=${value}` },
    });
    const bearer = (value: string): RequestInit => ({ headers: { authorization: `Bearer ${value}` } });

    test('another local port is sent a sign-in of its own, not the secret, which mints nothing', async () => {
      const { page, value, id } = await signInAndHarvest();
      assert.notEqual(value, server.operatorToken, 'the secret signed in with is never the cookie');
      const signIn = await server.store.tokens.get(id);
      assert.equal(signIn?.loginOf, server.operatorTokenId);
      assert.deepEqual([signIn?.scope, signIn?.name], ['operator', 'dashboard sign-in']);
      assert.equal(signIn?.expiresAt, (signIn?.createdAt ?? 0) + 12 * HOUR);
      // It opens what the page may (reads, changes from this server's pages) ...
      assert.equal((await fetch(`${server.url}/v1/tasks`, asCookie(value))).status, 200);
      // ... but no token management, by cookie or header, and no sign-in of its own.
      const tokens = await fetch(`${server.url}/v1/tokens`, asCookie(value));
      assert.equal(tokens.status, 403);
      assert.match(await tokens.text(), /a dashboard sign-in may not manage tokens/);
      const mint = await fetch(
        `${server.url}/v1/tokens`,
        asCookie(value, {
          method: 'POST',
          headers: { origin: server.url, 'content-type': 'application/json' },
          body: JSON.stringify({ scope: 'operator' }),
        }),
      );
      assert.equal(mint.status, 403);
      for (const path of ['/v1/tokens', '/v1/tasks']) {
        const asBearer = await fetch(`${server.url}${path}`, bearer(value));
        assert.equal(asBearer.status, 401, `${path} as a bearer token`);
        assert.match(await asBearer.text(), /opens the dashboard by its cookie alone/);
      }
      const again = await fetch(`${server.url}/login`, {
        method: 'POST',
        headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: `token=${encodeURIComponent(value)}`,
      });
      assert.equal(again.status, 401);
      assert.match(await again.text(), /that is a dashboard sign-in, not a token/);
      assert.equal(again.headers.get('set-cookie'), null);
      // The secret signed in with, put in the cookie by hand, opens nothing there.
      assert.equal((await fetch(`${server.url}/v1/tasks`, asCookie(server.operatorToken))).status, 401);
      // Signing out revokes it: the harvested value opens nothing from then on.
      await page.goto(`${server.url}/claims`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('Signed out.').waitFor();
      assert.equal((await fetch(`${server.url}/v1/tasks`, asCookie(value))).status, 401);
      const revoked = await server.store.tokens.get(id);
      assert.equal(revoked?.revokedBy, `sign-out of token ${server.operatorTokenId}`);
      assert.equal((await fetch(`${server.url}/v1/tokens`, bearer(server.operatorToken))).status, 200);
      await page.context().close();
    });

    test('a sign-in expires 12 hours on, on the database clock', async () => {
      const { value, id } = await signInAndHarvest();
      assert.equal((await fetch(`${server.url}/v1/tasks`, asCookie(value))).status, 200);
      await moveClockOf(db, url, 12 * HOUR + 1_000);
      // This process trusts a verified token for 2 s (token-cache.ts): drop it rather than wait.
      verifiedTokens.forget(id);
      const expired = await fetch(`${server.url}/v1/tasks`, asCookie(value));
      assert.equal(expired.status, 401);
      assert.match(await expired.text(), /the token is expired/);
      assert.equal((await fetch(`${server.url}/v1/tasks`, bearer(server.operatorToken))).status, 200);
    });
  });
}
