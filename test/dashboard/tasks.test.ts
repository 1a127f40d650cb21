/**
 * The dashboard's Tasks pages: the backlog (/tasks) and one task's page (/tasks/:key), on both
 * engines, seeded through the store as agents and people leave tasks (a queued job, a claim with a
 * pull request, a dependency, a review, an escalation, a gate, a done and a closed task); then in a
 * real browser (Debian's chromium): the page's own form filters, a key leads to the task's page, and
 * the page follows a change without a reload. A screenshot goes to test-artifacts/dashboard/.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Store } from '../../src/store/store.js';
import { repoRoot } from '../support/cli.js';
import { freshPostgresUrl } from '../support/databases.js';
import { freshSqlite, startTestServer, type TestServer } from './server.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot(), 'test-artifacts', 'dashboard');
const GH = 'github:acme/api#7';
const PR = 'https://github.com/acme/api/pull/8';
const by = { name: 'alice@box' };

interface Seeded {
  readonly queuedJob: number;
  readonly reviewJob: number;
  readonly holder: number;
  readonly epoch: number;
}

/** A task in each state, a held one with a pull request, a queued job and a dependency. */
async function seed(store: Store): Promise<Seeded> {
  await store.tasks.add({ key: 'done-1', title: 'Shipped' });
  await store.lifecycle.transition({ key: 'done-1', action: 'complete', by });
  await store.tasks.add({ key: 'closed-1', title: 'Will not do' });
  await store.lifecycle.transition({ key: 'closed-1', action: 'close', by, reason: 'duplicate' });
  await store.tasks.add({ key: 'rev-1', title: 'Needs a look', reviewRequired: true });
  const { job: review } = await store.jobs.enqueue({ key: 'rev-1' });
  const runner = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 4242 });
  const taken = await store.jobs.claimNext({ session: runner.id, start: true });
  assert.equal(taken?.id, review.id);
  assert.ok(
    (await store.jobs.finish({ id: review.id, session: runner.id, epoch: taken.epoch, status: 'done' })).ok,
  );
  await store.tasks.add({ key: 'esc-1', title: 'Flaky login' });
  await store.lifecycle.escalate({ key: 'esc-1', reason: 'needs a product decision', by });
  await store.tasks.add({ key: 'gate-1', title: 'Redesign auth' });
  await store.lifecycle.gate({ key: 'gate-1', gate: 'design', by });
  await store.tasks.add({ key: 'dep-a', title: 'Schema first' });
  await store.tasks.add({ key: 'blk-b', title: 'Then the API' });
  await store.lifecycle.depend({ key: 'blk-b', on: 'dep-a', by });
  await store.lifecycle.depend({ key: 'blk-b', on: 'done-1', by });
  const { job: queued } = await store.jobs.enqueue({ key: 'run-1' });
  const url = 'https://github.com/acme/api/issues/7';
  await store.tasks.add({ key: GH, title: 'Fix login', url, labels: ['ui'], project: 'web' });
  const person = await store.sessions.start({ kind: 'human', host: 'desk-2', pid: 77 });
  const claim = await store.claims.acquire({ key: GH, session: person.id });
  assert.ok(claim.ok);
  const pr = await store.effects.record({
    key: GH,
    session: person.id,
    epoch: claim.claim.epoch,
    kind: 'pr',
    payload: { url: PR },
  });
  assert.ok(pr.ok);
  return { queuedJob: queued.id, reviewJob: review.id, holder: person.id, epoch: claim.claim.epoch };
}

/** The page with its whitespace folded, and none beside a tag. */
const flat = (text: string): string => text.replace(/\s+/g, ' ').replace(/> /g, '>').replace(/ </g, '<');

async function get(server: TestServer, path: string, status = 200): Promise<string> {
  const response = await fetch(`${server.url}${path}`);
  const body = await response.text();
  assert.equal(response.status, status, `${path}: ${body}`);
  return flat(body);
}

/** The backlog's rows, as the task keys of their first cells. */
const keysOf = (page: string): string[] =>
  [...page.matchAll(/<tr><th scope="row"><a href="\/tasks\/[^"]*">([^<]*)<\/a>/g)].map((m) => m[1] ?? '');

/** The row of one task in the backlog. */
function rowOf(page: string, key: string): string {
  const row = page.split('<tr>').find((part) => part.includes(`>${key}</a>`) && part.startsWith('<th'));
  assert.ok(row !== undefined, `no row for ${key}`);
  return row;
}

const ENGINES = [
  { name: 'SQLite', db: () => Promise.resolve(freshSqlite()) },
  { name: 'PostgreSQL', db: freshPostgresUrl },
];

for (const engine of ENGINES) {
  void describe(`the Tasks pages (${engine.name})`, () => {
    test('the backlog shows the active tasks with state, gate, blockers, job and holder, and filters', async () => {
      const server = await startTestServer(await engine.db());
      try {
        const seeded = await seed(server.store);
        const page = await get(server, '/tasks');
        assert.match(page, /<a href="\/tasks" aria-current="page">Tasks<\/a>/);
        assert.deepEqual(keysOf(page), [GH, 'run-1', 'blk-b', 'dep-a', 'gate-1', 'esc-1', 'rev-1']);
        const gh = rowOf(page, GH);
        assert.match(gh, /href="\/tasks\/github%3Aacme%2Fapi%237"/);
        assert.match(gh, /<a href="https:\/\/github.com\/acme\/api\/issues\/7"/);
        assert.match(gh, /<td>Fix login<\/td><td>open<br \/>/);
        assert.match(gh, new RegExp(`<td>session ${seeded.holder}</td><td>ui<br />web</td>`));
        assert.match(
          rowOf(page, 'blk-b'),
          /<td><a href="\/tasks\/dep-a">dep-a<\/a><\/td>/,
          'names its blocker',
        );
        assert.doesNotMatch(rowOf(page, 'blk-b'), /done-1/, 'a done dependency blocks nothing');
        assert.match(
          rowOf(page, 'run-1'),
          new RegExp(`<a href="/jobs/${seeded.queuedJob}">job ${seeded.queuedJob}</a>queued`),
        );
        assert.match(rowOf(page, 'gate-1'), /<td>design<\/td>/);
        assert.match(rowOf(page, 'esc-1'), /<td>escalated<br \/>.*ago/);
        assert.match(rowOf(page, 'rev-1'), /<td>in_review<br \/>/);

        assert.deepEqual(keysOf(await get(server, '/tasks?state=done')), ['done-1']);
        assert.deepEqual(keysOf(await get(server, '/tasks?state=closed')), ['closed-1']);
        assert.equal(keysOf(await get(server, '/tasks?state=any')).length, 9);
        assert.deepEqual(keysOf(await get(server, '/tasks?blocked=1')), ['blk-b']);
        assert.deepEqual(keysOf(await get(server, '/tasks?label=ui&project=web')), [GH]);
        const first = await get(server, '/tasks?limit=4');
        assert.deepEqual(keysOf(first), [GH, 'run-1', 'blk-b', 'dep-a']);
        const older = /<a href="(\/tasks\?limit=4&amp;before=\d+)">Older tasks<\/a>/.exec(first)?.[1];
        assert.ok(older !== undefined, first);
        assert.deepEqual(keysOf(await get(server, older.replace(/&amp;/g, '&'))), [
          'gate-1',
          'esc-1',
          'rev-1',
        ]);
        const bad = await get(server, '/tasks?state=finished', 400);
        assert.match(bad, /<p class="late" role="alert">invalid_input: task state must be one of/);
      } finally {
        await server.close();
      }
    });

    test("a task's page shows its state, claim, dependencies both ways, jobs, pull requests and history", async () => {
      const server = await startTestServer(await engine.db());
      try {
        const seeded = await seed(server.store);
        const gh = await get(server, `/tasks/${encodeURIComponent(GH)}`);
        assert.match(gh, /<title>Task github:acme\/api#7 &middot; Baton<\/title>/);
        assert.match(
          gh,
          new RegExp(`session ${seeded.holder} on desk-2 since [^,]*, claim epoch ${seeded.epoch}`),
        );
        assert.match(
          gh,
          new RegExp(`<a href="${PR}">${PR}</a></td><td>${seeded.holder}</td><td>${seeded.epoch}</td>`),
        );
        assert.match(gh, /<dt>Labels, project, priority<\/dt><dd>ui; web; 100<\/dd>/);
        const blocked = await get(server, '/tasks/blk-b');
        assert.match(
          blocked,
          new RegExp(
            '<dt>Waits for</dt><dd><a href="/tasks/dep-a">dep-a</a>\\(open\\),' +
              '<a href="/tasks/done-1">done-1</a>\\(done\\)</dd>',
          ),
        );
        assert.match(
          await get(server, '/tasks/dep-a'),
          /<dt>Waited for by<\/dt><dd><a href="\/tasks\/blk-b">blk-b<\/a>\(open\)<\/dd>/,
        );
        const review = await get(server, '/tasks/rev-1');
        assert.match(
          review,
          new RegExp(`<a href="/jobs/${seeded.reviewJob}">${seeded.reviewJob}</a></td><td>done</td><td>1/`),
        );
        assert.match(review, /open \u2192 in_review \(finish\)<\/td><td>job \d+/, 'its history');
        assert.match(review, /<dt>Review<\/dt><dd>required/);
        assert.match(review, /<button type="submit">Approve rev-1<\/button>/, "the inbox's buttons");
        assert.match(await get(server, '/tasks/esc-1'), /needs a product decision.*Resolve esc-1/);
        assert.match(await get(server, '/tasks/gate-1'), /Open the design gate of gate-1/);
        const closed = await get(server, '/tasks/closed-1');
        assert.match(
          closed,
          /open \u2192 closed \(close\)<\/td><td>alice@box<\/td><td class="reason">duplicate<\/td>/,
        );
        assert.doesNotMatch(closed, /<h3 id="decide-h">/, 'nothing to decide');
        const missing = await get(server, '/tasks/nope', 404);
        assert.match(missing, /not_found: task nope/);
        assert.match(missing, /<a href="\/">Back to the queue<\/a>/);
        await get(server, '/ui/frag/task/nope', 404);
        // The other views' task keys lead here.
        assert.match(
          await get(server, `/jobs/${seeded.queuedJob}`),
          /<dd><a href="\/tasks\/run-1">run-1<\/a><\/dd>/,
        );
        assert.match(await get(server, '/'), /<td><a href="\/tasks\/run-1">run-1<\/a><\/td>/);
        assert.match(await get(server, '/inbox'), /<a href="\/tasks\/esc-1">esc-1<\/a>/);
        assert.match(
          await get(server, '/claims'),
          /<th scope="row"><a href="\/tasks\/github%3Aacme%2Fapi%237">/,
        );
      } finally {
        await server.close();
      }
    });

    test('history lists dependency changes; past ten jobs a link to the Queue; held jobs say why they wait', async () => {
      const server = await startTestServer(await engine.db());
      try {
        await seed(server.store);
        await server.store.lifecycle.undepend({ key: 'blk-b', on: 'done-1', by });
        const story = await get(server, '/tasks/blk-b');
        assert.match(
          story,
          new RegExp(
            '<td>waits for dep-a</td><td>alice@box</td>.*<td>waits for done-1</td><td>alice@box</td>' +
              '.*<td>no longer waits for done-1</td><td>alice@box</td>',
          ),
          'the edges in order',
        );

        // No dispatcher ran: the reasons are read, not stored.
        const { job: blocked } = await server.store.jobs.enqueue({ key: 'blk-b' });
        const { job: gated } = await server.store.jobs.enqueue({ key: 'gate-1' });
        assert.equal(blocked.reason, null);
        const queue = await get(server, '/');
        assert.match(
          queue,
          new RegExp(`/jobs/${blocked.id}".*?<td class="reason">waits for task dep-a \\(open\\)</td>`),
        );
        assert.match(
          queue,
          new RegExp(`/jobs/${gated.id}".*?<td class="reason">waiting for design approval</td>`),
        );
        assert.match(await get(server, `/jobs/${blocked.id}`), /waits for task dep-a \(open\)/);
        assert.match(
          story.length > 0 ? await get(server, '/tasks/blk-b') : '',
          /waits for task dep-a \(open\)/,
        );

        const ids: number[] = [];
        for (let index = 0; index < 11; index += 1) {
          const { job } = await server.store.jobs.enqueue({ key: 'many' });
          ids.push(job.id);
          if (index < 10) assert.ok((await server.store.jobs.cancel({ id: job.id, actor: 'alice@box' })).ok);
        }
        const many = await get(server, '/tasks/many');
        assert.match(many, /The first 10 shown:<a href="\/\?key=many">all of its jobs in the Queue<\/a>/);
        const linked = (page: string): number =>
          ids.filter((id) => page.includes(`<a href="/jobs/${id}">`)).length;
        assert.equal(linked(many), 10, 'ten of its eleven jobs');
        assert.equal(linked(await get(server, '/?key=many')), 11, 'the Queue filtered by the task lists all');
        assert.doesNotMatch(await get(server, '/tasks/rev-1'), /all of its jobs in the Queue/);
      } finally {
        await server.close();
      }
    });
  });
}

const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install Debian's chromium to run the browser tests`;

void describe('the Tasks pages in a real browser', { skip }, () => {
  test("the form filters, a key opens the task's page, and the page follows a change live", async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const server = await startTestServer(freshSqlite());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      await seed(server.store);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      await page.goto(`${server.url}/`);
      await page.getByRole('navigation').getByRole('link', { name: 'Tasks' }).click();
      await page.waitForURL(/\/tasks$/);
      const view = page.locator('#view');
      await view.locator('tr', { hasText: 'blk-b' }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, 'tasks.png'), fullPage: true });
      await page.getByLabel('State').selectOption('done');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/state=done/);
      assert.deepEqual(await view.locator('tbody th').allInnerTexts(), ['done-1']);
      await page.getByLabel('State').selectOption('active');
      await page.getByLabel('Blocked only').check();
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/blocked=1/);
      assert.deepEqual(await view.locator('tbody th').allInnerTexts(), ['blk-b']);
      await view.locator('tr', { hasText: 'blk-b' }).getByRole('link', { name: 'dep-a' }).click();
      await page.waitForURL(/\/tasks\/dep-a$/);
      await page.locator('#live', { hasText: 'live' }).waitFor();
      await page.evaluate('window.sameDocument = true');
      assert.match(await view.innerText(), /open since/);
      // Done elsewhere: the page's region reloads on the change, in the same document.
      await server.store.lifecycle.transition({ key: 'dep-a', action: 'complete', by });
      await view.getByText('done since').waitFor({ timeout: 5000 });
      assert.equal(await page.evaluate('window.sameDocument'), true);
      await page.screenshot({ path: join(ARTIFACTS, 'task.png'), fullPage: true });
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await server.close();
    }
  });
});
