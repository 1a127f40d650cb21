/**
 * A dispatcher pass as a set (docs/decisions/0016-set-based-dispatch.md): the candidates in one
 * read, many placements in one store step, each still guarded, answered and audited on its own,
 * and the waiting reasons and skips in one more. A pass here is what the dispatcher does between
 * its reads and its writes: core's decideDispatch over the store's candidates and fleet.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decideDispatch, skippedReason } from '../../core/dispatch-plan.js';
import { NotFoundError } from '../../core/errors.js';
import type { Store } from '../store.js';
import type { TermRef } from '../dispatch-store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const STALE_AFTER_MS = 60_000;

/** One pass: read, decide, place, record the reasons; the placements' answers. */
async function pass(store: Store, term: TermRef, limit = 50) {
  const { now, jobs } = await store.dispatch.candidates({ limit });
  const decision = decideDispatch(jobs, await store.hosts.fleet(), now, STALE_AFTER_MS);
  const placed = await store.dispatch.placeMany({
    term,
    jobs: decision.place.map((placement) => ({
      id: placement.job.id,
      host: placement.host,
      workspace: placement.workspace,
    })),
  });
  const aside = await store.dispatch.setAside({
    term,
    waits: decision.wait.map((wait) => ({ id: wait.job.id, reason: wait.reason })),
    skips: decision.skip.map((skip) => ({
      id: skip.job.id,
      reason: skippedReason(skip.error),
      detail: { cause: skip.error.message },
      backoffMs: 60_000,
    })),
  });
  return { decision, placed, aside };
}

async function where(store: Store): Promise<Record<string, string>> {
  const jobs = await store.jobs.list();
  return Object.fromEntries(
    jobs.map((job) => [job.key, job.status === 'claimed' ? `on ${job.host}` : (job.reason ?? '')]),
  );
}

export function exerciseDispatchPass(harness: Harness): void {
  describe('a dispatcher pass as a set', () => {
    test('reads each candidate with its gate, plan inputs and the live locks on its workspaces', () =>
      withFixture(harness, async ({ store }) => {
        await store.workspaces.add({ name: 'api', path: '/srv/api', kind: 'dir' });
        await store.workspaces.add({ name: 'web', path: '/srv/web', kind: 'worktree' });
        await store.agents.add({ name: 'ada', role: 'engineer', workspace: 'web' });
        await store.projects.add({ name: 'acme', primaryWorkspace: 'api' });
        await store.tasks.add({ key: 'a', assignee: 'ada', project: 'acme' });
        await store.workspaceTasks.setRequirements({ key: 'a', requiresFilesystem: true, workspace: 'api' });
        const human = await givenSession(store, 'laptop', 'human');
        const lock = await store.workspaceLocks.acquire({ workspace: 'api', session: human.id });
        assert.ok(lock.ok);
        const { job } = await store.jobs.enqueue({ key: 'a', ramMb: 700 });
        await store.jobs.enqueue({ key: 'b', priority: 200 });
        const { now, jobs } = await store.dispatch.candidates({ limit: 10 });
        assert.ok(now >= job.queuedAt);
        assert.deepEqual(
          jobs.map((candidate) => candidate.job.key),
          ['a', 'b'],
        );
        const [first, second] = jobs;
        assert.deepEqual(first?.job, job);
        assert.equal(first?.gate, null);
        assert.equal(first?.claimedBy, null);
        assert.deepEqual(first?.plan, {
          task: { key: 'a', requiresFilesystem: true, workspace: 'api' },
          agent: { name: 'ada', role: 'engineer', department: null, workspace: 'web' },
          project: { name: 'acme', primaryWorkspace: 'api' },
        });
        const byName = [...(first?.workspaces ?? [])].sort((left, right) =>
          left.name < right.name ? -1 : 1,
        );
        assert.deepEqual(byName, [
          {
            name: 'api',
            path: '/srv/api',
            kind: 'dir',
            holder: { session: human.id, host: 'laptop', jobId: null, since: lock.lock.acquiredAt, epoch: 1 },
          },
          { name: 'web', path: '/srv/web', kind: 'worktree', holder: null },
        ]);
        assert.deepEqual(second?.plan, {
          task: { key: 'b', requiresFilesystem: false, workspace: null },
          agent: null,
          project: null,
        });
        assert.deepEqual(second?.workspaces, []);
      }));

    test('places many jobs in one step, each guarded, answered in order and audited', () =>
      withFixture(harness, async ({ store }) => {
        const { session: runner } = await givenHost(store);
        const term = await givenLeader(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const ids = [];
        for (const key of ['a', 'b', 'c', 'd']) ids.push((await store.jobs.enqueue({ key })).job.id);
        const [firstId, secondId, thirdId, fourthId] = ids as [number, number, number, number];
        await store.jobs.cancel({ id: thirdId });
        const results = await store.dispatch.placeMany({
          term,
          jobs: [
            { id: firstId, host: 'box-1', workspace: 'w' },
            { id: secondId, host: 'box-1' },
            { id: thirdId, host: 'box-1' },
            { id: fourthId, host: 'box-1', workspace: 'w' },
          ],
        });
        assert.deepEqual(
          results.map((result) => (result.ok ? `${result.job.key}:${result.job.status}` : result.reason)),
          ['a:claimed', 'b:claimed', 'lost', 'workspace_held'],
        );
        const held = results[3];
        assert.ok(held !== undefined && !held.ok && held.reason === 'workspace_held');
        assert.equal(held.holder.jobId, firstId);
        assert.equal(held.holder.session, runner.id);
        const lost = results[2];
        assert.ok(lost !== undefined && !lost.ok && lost.reason === 'lost');
        assert.equal(lost.job?.status, 'cancelled');
        assert.equal((await store.jobs.get(fourthId))?.status, 'queued');
        assert.equal((await store.workspaceLocks.current('w'))?.jobId, firstId);
        const rows = (await store.audit.list({ limit: 1000 })).filter(
          (entry) => entry.type === 'job:placed' || entry.type === 'lock:acquired',
        );
        assert.deepEqual(
          rows.map((entry) => [entry.type, entry.key, entry.session, entry.epoch]),
          [
            ['job:placed', 'a', runner.id, 1],
            ['lock:acquired', 'a', runner.id, 1],
            ['job:placed', 'b', runner.id, 1],
          ],
        );
        assert.deepEqual(rows[0]?.detail, { host: 'box-1', term: term.term, attempt: 1 });
      }));

    test('a pass of 150 jobs places them all, in order, each with its own ledger row', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1', { slotsMax: 1_000 });
        const term = await givenLeader(store);
        const keys = Array.from({ length: 150 }, (_, index) => `j${String(index).padStart(3, '0')}`);
        for (const key of keys) await store.jobs.enqueue({ key });
        const { placed } = await pass(store, term, 200);
        assert.deepEqual(
          placed.map((result) => (result.ok ? result.job.key : result.reason)),
          keys,
        );
        const rows = (await store.audit.list({ limit: 1000 })).filter((entry) => entry.type === 'job:placed');
        assert.deepEqual(
          rows.map((entry) => entry.key),
          keys,
        );
        assert.equal((await store.hosts.list())[0]?.jobsActive, 150);
      }));

    test('a pass places what fits by RAM and slots, on both hosts, and records why the rest wait', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1', { slotsMax: 2 });
        await givenHost(store, 'box-2', { slotsMax: 1 });
        const term = await givenLeader(store);
        // Each host offers 12,000 MB: a 13,000 MB job fits nowhere, the small ones fill the slots.
        await store.jobs.enqueue({ key: 'huge', ramMb: 13_000, priority: 1 });
        for (const key of ['s1', 's2', 's3', 's4'])
          await store.jobs.enqueue({ key, ramMb: 5_000, priority: 2 });
        const first = await pass(store, term);
        assert.equal(first.placed.filter((result) => result.ok).length, 3);
        const placed = await where(store);
        assert.equal(placed.huge, 'needs 13000 MB; the most free is 12000 MB on box-1');
        assert.equal(placed.s4, 'every live host is at its job limit');
        const hosts = ['s1', 's2', 's3'].map((key) => placed[key]).sort();
        assert.deepEqual(hosts, ['on box-1', 'on box-1', 'on box-2']);
        assert.deepEqual(
          [...first.aside.waited].sort(),
          (await store.jobs.list())
            .filter((job) => job.key === 'huge' || job.key === 's4')
            .map((job) => job.id)
            .sort(),
        );
        const host1 = (await store.hosts.list()).find((host) => host.name === 'box-1');
        assert.equal(host1?.jobsActive, 2);
        assert.equal(host1?.ramPromisedMb, 10_000);
        // The next pass places nothing; the big job now waits for a slot, as the small one does.
        const again = await pass(store, term);
        assert.deepEqual(again.placed, []);
        assert.equal((await where(store)).huge, 'every live host is at its job limit');
        assert.equal(again.aside.waited.length, 1);
        // And the one after writes nothing at all: no reason changes.
        const still = await pass(store, term);
        assert.deepEqual(still.aside, { waited: [], skipped: [] });
      }));

    test('a pass gives a workspace to one job, names the holder to the others, and skips the unresolved', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1', { slotsMax: 8 });
        const term = await givenLeader(store);
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        await store.workspaces.add({ name: 'repo', path: '/srv/repo', kind: 'worktree' });
        const bind = (key: string, workspace: string | null) =>
          store.workspaceTasks.setRequirements({ key, requiresFilesystem: true, workspace });
        const keys = ['w1', 'w2', 't1', 't2', 'free', 'orphan'];
        for (const [index, key] of keys.entries()) {
          await store.tasks.add({ key, priority: index });
        }
        await bind('w1', 'w');
        await bind('w2', 'w');
        await bind('t1', 'repo');
        await bind('t2', 'repo');
        await bind('orphan', null);
        for (const key of keys) await store.jobs.enqueue({ key, priority: 1 });
        const { decision, placed } = await pass(store, term);
        assert.equal(decision.behind.length, 1);
        assert.equal(decision.behind[0]?.job.key, 'w2');
        const placedOn = await where(store);
        // A worktree gives each claim its own checkout: both tasks of `repo` run, with no lock.
        assert.deepEqual(
          ['w1', 't1', 't2', 'free'].map((key) => placedOn[key]),
          ['on box-1', 'on box-1', 'on box-1', 'on box-1'],
        );
        assert.equal(placed.length, 4);
        assert.match(placedOn.orphan ?? '', /^SKIPPED workspace_unresolved: task orphan needs/);
        assert.equal(await store.workspaceLocks.current('repo'), null);
        const w1 = (await store.jobs.list()).find((job) => job.key === 'w1');
        // The next pass reads the lock w1's placement took, and says who holds it.
        await pass(store, term);
        assert.equal((await where(store)).w2, `waiting for workspace w, held by job ${w1?.id}`);
        const skipped = (await store.audit.list({ limit: 1000 })).filter(
          (entry) => entry.type === 'job:skipped',
        );
        assert.deepEqual(
          skipped.map((entry) => entry.key),
          ['orphan'],
        );
      }));

    test('a job whose task someone has claimed waits, naming the claim, and is placed once it ends', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1', { slotsMax: 8 });
        const term = await givenLeader(store);
        await store.tasks.add({ key: 'held' });
        const human = await givenSession(store, 'laptop', 'human');
        const claim = await store.claims.acquire({ key: 'held', session: human.id });
        assert.ok(claim.ok);
        await store.jobs.enqueue({ key: 'held' });
        await store.jobs.enqueue({ key: 'free' });
        const { jobs } = await store.dispatch.candidates({ limit: 10 });
        assert.deepEqual(
          jobs.map((candidate) => candidate.claimedBy),
          [{ session: human.id, host: 'laptop', since: claim.claim.claimedAt }, null],
        );
        await pass(store, term);
        assert.deepEqual(await where(store), {
          held: `waiting for held, claimed by session ${human.id} on laptop`,
          free: 'on box-1',
        });
        const { epoch } = claim.claim;
        assert.ok(
          (await store.claims.release({ key: 'held', session: human.id, epoch, outcome: 'released' })).ok,
        );
        await pass(store, term);
        assert.equal((await where(store)).held, 'on box-1');
      }));

    test('no number of gated and blocked jobs ahead hides a job that may run from the pass', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store, 'box-1', { slotsMax: 8 });
        const term = await givenLeader(store);
        await store.tasks.add({ key: 'a', priority: 5 });
        for (let index = 0; index < 60; index++) {
          await store.jobs.enqueue({ key: `b${index}`, priority: 1 });
          await store.lifecycle.depend({ key: `b${index}`, on: 'a', by: { name: 'alice@box' } });
          await store.jobs.enqueue({ key: `g${index}`, priority: 1 });
          await store.lifecycle.gate({ key: `g${index}`, gate: 'design', by: { name: 'alice@box' } });
        }
        const { job } = await store.jobs.enqueue({ key: 'a', priority: 5 });
        const { jobs } = await store.dispatch.candidates({ limit: 50 });
        assert.equal(
          jobs.at(-1)?.job.id,
          job.id,
          'the open job is read, after the held ones in dispatch order',
        );
        const held = jobs.slice(0, -1);
        assert.equal(held.length, 50, 'the gated and blocked jobs among the first 50 come for their reasons');
        assert.ok(held.every((candidate) => candidate.gate !== null || candidate.blockedBy === 'a (open)'));
        await pass(store, term);
        const now = await where(store);
        assert.equal(now.a, 'on box-1');
        assert.equal(now.b0, 'waits for task a (open)');
        assert.equal(now.g0, 'waiting for design approval');
      }));

    test('a replaced term places nothing and records nothing; an unknown workspace places nothing', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const stale = await givenLeader(store, 'leader-a', 1);
        const { job: first } = await store.jobs.enqueue({ key: 'a' });
        const { job: second } = await store.jobs.enqueue({ key: 'b' });
        await new Promise((resolve) => setTimeout(resolve, 20));
        const term = await givenLeader(store, 'leader-b');
        const asks = [
          { id: first.id, host: 'box-1' },
          { id: second.id, host: 'box-1' },
        ];
        const fenced = await store.dispatch.placeMany({ term: stale, jobs: asks });
        assert.deepEqual(fenced, [
          { ok: false, reason: 'fenced' },
          { ok: false, reason: 'fenced' },
        ]);
        const aside = await store.dispatch.setAside({
          term: stale,
          waits: [{ id: first.id, reason: 'x' }],
          skips: [{ id: second.id, reason: 'y', detail: {}, backoffMs: 1 }],
        });
        assert.deepEqual(aside, { waited: [], skipped: [] });
        await assert.rejects(
          store.dispatch.placeMany({
            term,
            jobs: [
              { id: first.id, host: 'box-1' },
              { id: second.id, host: 'box-1', workspace: 'nope' },
            ],
          }),
          NotFoundError,
        );
        assert.deepEqual(
          (await store.jobs.list()).map((job) => [job.status, job.reason]),
          [
            ['queued', null],
            ['queued', null],
          ],
        );
      }));
  });
}
