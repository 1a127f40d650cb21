/**
 * The job page after a retry: it showed only the current attempt's log, so once an agent was
 * killed and its job ran again, the first attempt's output (the clue to why it died) could be
 * read only on the runner's disk. The page now lists every run from the ledger, as `baton job
 * show` does, with each earlier attempt's log in a collapsed section.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { sqliteDatabase } from '../support/databases.js';
import { clusterFixture, killFirstRunAwaitRerun } from '../e2e/cluster-support.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium`;

test(
  "the job page shows every run of a retried job, with the killed first attempt's output",
  { skip },
  async () => {
    const c = await clusterFixture(sqliteDatabase());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const { job } = await c.store.jobs.enqueue({
        key: 'k',
        command: 'echo "attempt $BATON_ATTEMPT was here"; test "$BATON_ATTEMPT" -gt 1 || exec sleep 60',
      });
      const up = c.up('solo', '--http', '127.0.0.1:0');
      const pid = await killFirstRunAwaitRerun(c.store, job.id, 'k');
      await up.waitForLog(/serving the API and dashboard on \S+/);
      const url = /serving the API and dashboard on (\S+)/.exec(up.log())?.[1] ?? '';
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      const response = await page.goto(`${url}/jobs/${job.id}`);
      assert.equal(response?.status(), 200);

      const rows = await page.locator('#runs tbody tr').allInnerTexts();
      assert.equal(rows.length, 2, rows.join('\n'));
      assert.match(
        rows[0] ?? '',
        new RegExp(`^1\\s+solo\\s+\\S+\\s+${pid}\\s+requeued\\s+—\\s+agent killed by SIGKILL`),
      );
      assert.match(rows[1] ?? '', /^2\s+solo\s+\S+\s+\d+\s+done\s+0\b/);

      const first = page.locator('#runs details#attempt-1');
      assert.match(
        await first.locator('summary').innerText(),
        /attempt 1 on solo: requeued — agent killed by SIGKILL/,
      );
      assert.equal(await first.getAttribute('open'), null, 'an earlier attempt is collapsed');
      await first.locator('summary').click();
      const firstLog = await first.innerText();
      assert.match(firstLog, /attempt 1 was here/);
      assert.match(firstLog, new RegExp(`from .*job-${job.id}-attempt-1\\.log`));
      assert.doesNotMatch(firstLog, /attempt 2 was here/);

      const current = await page.locator('#output').innerText();
      assert.match(current, /Output of attempt 2/);
      assert.match(current, /attempt 2 was here/);
      assert.doesNotMatch(current, /attempt 1 was here/);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await c.close();
    }
  },
);
