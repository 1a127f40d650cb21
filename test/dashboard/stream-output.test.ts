/**
 * The job page of a run on another host (docs/decisions/0029-live-output.md): two real `baton up`
 * on one PostgreSQL, box-1 running the agent, box-2 serving the dashboard from a directory whose
 * log folder holds nothing of it. The page's live output shows what box-1's runner streams into
 * the database while the agent runs, and says where the whole log is. It showed only a note that
 * the log was on box-1's disk before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { postgresDatabase, postgresServers } from '../support/databases.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, agentStarted, clusterFixture } from '../e2e/cluster-support.js';

const CHROMIUM = '/usr/bin/chromium';
const server = postgresServers()[0];
const skip = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is absent: install Debian's chromium`
  : server === undefined
    ? 'no PostgreSQL server'
    : false;
const FAST = [
  '--lease-ttl',
  '2',
  '--retry-interval',
  '0.5',
  '--heartbeat-interval',
  '0.5',
  '--stale-after',
  '2',
];

test(
  "box-2's job page shows the live output of box-1's run, streamed through the database",
  { skip },
  async () => {
    const c = await clusterFixture(postgresDatabase(server ?? { name: '', url: '' }));
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const agent = 'for i in $(seq 1 40); do echo "step $i of the agent"; sleep 0.5; done';
      const { job } = await c.store.jobs.enqueue({ key: 'k', command: agent });
      const box1 = c.up('box-1', ...STEADY, '--no-http');
      await waitUntil(() => agentStarted(c.store, 'k'), 20_000, 'the agent on box-1');
      // A standby takes no work: the run stays box-1's, and box-2 only serves the page.
      const away = mkdtempSync(join(tmpdir(), 'baton-box-2-'));
      const box2 = c.upAt(away, {}, 'box-2', [...FAST, ...STEADY, '--standby', '--http', '127.0.0.1:0']);
      await box2.waitForLog(/serving the API and dashboard on \S+/);
      const url = /serving the API and dashboard on (\S+)/.exec(box2.log())?.[1] ?? '';
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      const response = await page.goto(`${url}/jobs/${job.id}`);
      assert.equal(response?.status(), 200);
      const output = page.locator('#output');
      await waitUntil(
        async () => /step 3 of the agent/.test(await output.innerText()),
        20_000,
        'step 3 on the page',
      );
      const shown = await output.innerText();
      assert.match(shown, /Output \(live\)/);
      assert.match(shown, /step 1 of the agent\nstep 2 of the agent\nstep 3 of the agent/);
      assert.match(
        shown,
        new RegExp(
          'streamed from box-1 through the database ' +
            `\\(its last lines; the whole log is job-${job.id}-attempt-1\\.log on box-1's disk\\)`,
        ),
      );
      // The live region reloads: later steps come while the agent still runs.
      const later = /step (\d+) of the agent\n?$/.exec(shown.trimEnd())?.[1] ?? '0';
      await waitUntil(
        async () => new RegExp(`step ${Number(later) + 2} of the agent`).test(await output.innerText()),
        20_000,
        'later steps on the page',
      );
      assert.equal((await c.store.jobs.get(job.id))?.status, 'running', box1.log());
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await c.close();
    }
  },
);
