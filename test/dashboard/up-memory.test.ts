/**
 * The claims view of `baton up`'s own dashboard shows each running agent's memory against its
 * budget, as the README's screenshot promises. `baton up` gave its dashboard no way to measure it,
 * so every row said "RSS not measurable from here" about an agent of this very process; it now
 * shows the runner's last sample of the job's scope.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { sqliteDatabase } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { agentStarted, clusterFixture } from '../e2e/cluster-support.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium`;
const HOLD_64_MB = `node -e 'const held = Buffer.alloc(64 * 1048576, 1); setInterval(() => held[0]++, 1000)'`;

test("baton up's claims view shows a running agent's memory against its budget", { skip }, async () => {
  const c = await clusterFixture(sqliteDatabase());
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    await c.store.jobs.enqueue({ key: 'hog', command: HOLD_64_MB, ramMb: 512 });
    const up = c.up('solo', '--http', '127.0.0.1:0');
    await waitUntil(async () => agentStarted(c.store, 'hog'), 15_000, 'the agent to start');
    await up.waitForLog(/serving the API and dashboard on \S+/);
    const url = /serving the API and dashboard on (\S+)/.exec(up.log())?.[1] ?? '';
    const page = await browser.newPage();
    const row = page.locator('#view tr', { hasText: 'hog' });
    // Read again until the agent has allocated its 64 MB and the runner sampled them.
    const shown = async (): Promise<string> => {
      await page.goto(`${url}/claims`);
      return row.innerText();
    };
    await waitUntil(
      async () => /RSS ([6-9]\d|\d{3}) MB; budget 512 MB/.test(await shown()),
      10_000,
      'the RSS',
    );
    const mb = Number(/RSS (\d+) MB; budget 512 MB/.exec(await row.innerText())?.[1]);
    assert.ok(mb >= 60 && mb < 512, `RSS ${mb} MB`);
    assert.doesNotMatch(await row.innerText(), /not measurable/);
  } finally {
    await browser.close();
    await c.close();
  }
});
