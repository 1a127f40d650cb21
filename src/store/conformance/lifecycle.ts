/**
 * The task lifecycle (core/task.ts) on every engine: finished means finished, reviews, closing,
 * reopening, escalations and gates, each guarded, each audited with who made it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, TaskStateError } from '../../core/errors.js';
import { finishedTaskMove } from '../../core/audit-event.js';
import type { Store } from '../store.js';
import { givenHost, givenLeader } from './dispatch.js';
import { givenSession, givenTask, withFixture, type Harness } from './harness.js';

const ALICE = { name: 'alice@box' };

/** A session holding the task, and the epoch it holds it at. */
async function givenHeld(store: Store, key: string) {
  const session = await givenSession(store);
  const result = await store.claims.acquire({ key, session: session.id });
  assert.ok(result.ok);
  return { session: session.id, epoch: result.claim.epoch };
}

/** Runs the task's queued job to `done` in pull mode. */
async function runToDone(store: Store, key: string): Promise<number> {
  const session = await givenSession(store);
  const job = await store.jobs.claimNext({ session: session.id, start: true });
  assert.ok(job !== null && job.key === key);
  const result = await store.jobs.finish({
    id: job.id,
    session: session.id,
    epoch: job.epoch,
    status: 'done',
  });
  assert.ok(result.ok);
  return job.id;
}

async function refusedAs(work: Promise<unknown>, code: string): Promise<TaskStateError> {
  const error = await work.then(
    () => assert.fail(`expected ${code}`),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof TaskStateError, String(error));
  assert.equal(error.code, code);
  return error;
}

export function exerciseLifecycle(harness: Harness): void {
  describe('task lifecycle', () => {
    test('a claim released done finishes the task: never claimed, enqueued or placed again until reopened', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 't');
        const held = await givenHeld(store, 't');
        await store.claims.release({ key: 't', session: held.session, epoch: 1, outcome: 'done' });
        const task = await store.tasks.get('t');
        assert.equal(task?.state, 'done');
        assert.equal(task?.stateBy, `session ${held.session}`);
        const other = await givenSession(store);
        const refusal = await refusedAs(store.claims.acquire({ key: 't', session: other.id }), 'task_done');
        assert.match(refusal.message, new RegExp(`task t is done since .*Z by session ${held.session}`));
        assert.match(refusal.hint ?? '', /baton reopen t --reason/);
        await refusedAs(store.jobs.enqueue({ key: 't' }), 'task_done');
        assert.equal((await store.tasks.get('t'))?.epoch, 1, 'nothing was granted');
        assert.deepEqual(await store.jobs.list({ key: 't' }), []);
        const reopened = await store.lifecycle.transition({
          key: 't',
          action: 'reopen',
          by: ALICE,
          reason: 'flaky',
        });
        assert.equal(reopened.state, 'open');
        assert.equal(reopened.stateReason, 'flaky');
        assert.ok((await store.claims.acquire({ key: 't', session: other.id })).ok);
      }));

    test('a job that ends done finishes its task; a retry of it is refused as task_done', () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'j' });
        const id = await runToDone(store, 'j');
        assert.equal(id, job.id);
        const task = await store.tasks.get('j');
        assert.equal(task?.state, 'done');
        assert.equal(task?.stateBy, `job ${job.id}`);
        await refusedAs(store.jobs.retry({ id: job.id }), 'task_done');
        await refusedAs(store.jobs.enqueue({ key: 'j' }), 'task_done');
      }));

    test('finishing a task cancels its queued job, so a done task is never placed', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const term = await givenLeader(store);
        await givenTask(store, 'q');
        const held = await givenHeld(store, 'q');
        const { job } = await store.jobs.enqueue({ key: 'q' });
        await store.claims.release({ key: 'q', session: held.session, epoch: 1, outcome: 'done' });
        const cancelled = await store.jobs.get(job.id);
        assert.equal(cancelled?.status, 'cancelled');
        assert.equal(cancelled?.reason, `task done by session ${held.session}`);
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.equal(placed.ok, false);
        assert.deepEqual(await store.dispatch.queued({ limit: 10 }), []);
        const types = (await store.audit.list({ key: 'q' })).map((entry) => entry.type);
        assert.deepEqual(types.slice(-3), ['claim:released', 'task:state', 'job:cancelled']);
      }));

    test('a task requiring review waits in review; reject reopens it keeping the reason, approve finishes it', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: 'r', title: 'review me', reviewRequired: true });
        await store.jobs.enqueue({ key: 'r' });
        await runToDone(store, 'r');
        assert.equal((await store.tasks.get('r'))?.state, 'in_review');
        const session = await givenSession(store);
        await refusedAs(store.claims.acquire({ key: 'r', session: session.id }), 'task_in_review');
        const rejected = await store.lifecycle.transition({
          key: 'r',
          action: 'reject',
          by: ALICE,
          reason: 'add a test',
        });
        assert.equal(rejected.state, 'open');
        assert.equal(rejected.feedback, 'add a test');
        await store.jobs.enqueue({ key: 'r' });
        await runToDone(store, 'r');
        const waiting = await store.tasks.get('r');
        assert.equal(waiting?.state, 'in_review');
        assert.equal(waiting?.feedback, 'add a test', 'kept until the task is done');
        const approved = await store.lifecycle.transition({ key: 'r', action: 'approve', by: ALICE });
        assert.equal(approved.state, 'done');
        assert.equal(approved.stateBy, 'alice@box');
        assert.equal(approved.feedback, null);
        await refusedAs(store.lifecycle.transition({ key: 'r', action: 'reject', by: ALICE }), 'task_done');
        // A job's finish records its task's move in its own job:finished row (decision 0023).
        const states = (await store.audit.list({ key: 'r' })).flatMap((entry) => {
          const move = finishedTaskMove(entry);
          if (move !== null) return [`${move.from}>${move.to}:${entry.type}`];
          const { from, to, action } = entry.detail;
          return entry.type === 'task:state' ? [`${String(from)}>${String(to)}:${String(action)}`] : [];
        });
        assert.deepEqual(states, [
          'open>in_review:job:finished',
          'in_review>open:reject',
          'open>in_review:job:finished',
          'in_review>done:approve',
        ]);
      }));

    test('closing a task cancels its job and refuses claims as task_closed; only done or closed tasks reopen', () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({ key: 'c' });
        await refusedAs(store.lifecycle.transition({ key: 'c', action: 'reopen', by: ALICE }), 'task_open');
        const closed = await store.lifecycle.transition({
          key: 'c',
          action: 'close',
          by: ALICE,
          reason: 'dup',
        });
        assert.equal(closed.state, 'closed');
        assert.equal((await store.jobs.get(job.id))?.status, 'cancelled');
        const session = await givenSession(store);
        const refusal = await refusedAs(
          store.claims.acquire({ key: 'c', session: session.id }),
          'task_closed',
        );
        assert.match(refusal.message, /closed since .* by alice@box \(dup\)/);
        assert.equal(await store.jobs.claimNext({ session: session.id }), null);
        const entry = (await store.audit.list({ key: 'c', type: 'task:state' }))[0];
        assert.deepEqual(entry?.detail, {
          from: 'open',
          to: 'closed',
          action: 'close',
          by: 'alice@box',
          reason: 'dup',
        });
        assert.equal(
          (await store.lifecycle.transition({ key: 'c', action: 'reopen', by: ALICE })).state,
          'open',
        );
        const done = await store.lifecycle.transition({ key: 'c', action: 'complete', by: ALICE });
        assert.equal(done.state, 'done');
      }));
  });

  describe('escalations', () => {
    test('an escalation under the live claim ends claim and job escalated and queues the task for a human', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 'e');
        const held = await givenHeld(store, 'e');
        const { job } = await store.jobs.enqueue({ key: 'e' });
        const stale = await store.lifecycle.escalate({
          key: 'e',
          reason: 'needs a key',
          by: { name: 'agent', session: held.session },
          claim: { session: held.session, epoch: 2 },
        });
        assert.equal(stale.ok, false, 'a stale epoch is fenced');
        assert.equal((await store.tasks.get('e'))?.state, 'open', 'and changes nothing');
        const result = await store.lifecycle.escalate({
          key: 'e',
          reason: 'needs a key',
          by: { name: 'agent', session: held.session },
          claim: { session: held.session, epoch: 1 },
        });
        assert.ok(result.ok);
        assert.equal(result.task.state, 'escalated');
        assert.equal(result.task.stateReason, 'needs a key');
        assert.equal(result.claimEpoch, 1);
        assert.equal(result.jobId, job.id);
        assert.equal((await store.claims.history('e'))[0]?.outcome, 'escalated');
        const ended = await store.jobs.get(job.id);
        assert.equal(ended?.status, 'escalated');
        assert.equal(ended?.reason, 'escalated: needs a key');
        assert.equal(await store.claims.current('e'), null);
        await refusedAs(store.jobs.enqueue({ key: 'e' }), 'task_escalated');
        assert.deepEqual(
          (await store.lifecycle.escalations()).map((task) => task.key),
          ['e'],
        );
        const resolved = await store.lifecycle.transition({
          key: 'e',
          action: 'resolve',
          by: ALICE,
          reason: 'key added',
        });
        assert.equal(resolved.state, 'open');
        assert.deepEqual(await store.lifecycle.escalations(), []);
      }));

    test('a close or a completion ends the live claim released, and fences its old holder', () =>
      withFixture(harness, async ({ store }) => {
        for (const action of ['close', 'complete'] as const) {
          const key = `h-${action}`;
          await givenTask(store, key);
          const held = await givenHeld(store, key);
          await store.lifecycle.transition({ key, action, by: ALICE, reason: 'wont do' });
          assert.equal(await store.claims.current(key), null, action);
          assert.equal((await store.tasks.get(key))?.holder, null);
          assert.equal((await store.claims.history(key))[0]?.outcome, 'released');
          const rows = await store.audit.list({ key });
          const end = rows.find((entry) => entry.type === 'claim:released');
          assert.deepEqual(end?.detail, { outcome: 'released', action, by: ALICE.name });
          assert.equal(end?.epoch, held.epoch);
          assert.ok(rows.indexOf(end) < rows.findIndex((entry) => entry.type === 'task:state'));
          const claim = { key, epoch: held.epoch };
          assert.equal((await store.sessions.heartbeat({ session: held.session, claim })).ok, false);
          const effect = await store.effects.record({ ...claim, session: held.session, kind: 'pr-push' });
          assert.ok(!effect.ok && effect.reason === 'fenced');
          const release = await store.claims.release({ ...claim, session: held.session, outcome: 'done' });
          assert.ok(!release.ok && release.reason === 'fenced');
        }
      }));

    test('lists escalations oldest first, and a task added escalated by the vague-issue rule is among them', () =>
      withFixture(harness, async ({ store }) => {
        // Escalated in this order; two escalations in one millisecond keep it by task id.
        await givenTask(store, 'a');
        await store.lifecycle.escalate({ key: 'a', reason: 'stuck', by: ALICE });
        await store.tasks.add({
          key: 'vague',
          title: 'fix',
          escalation: 'insufficient-info',
          byName: 'rule',
        });
        const queue = await store.lifecycle.escalations();
        assert.deepEqual(
          queue.map((task) => [task.key, task.stateReason]),
          [
            ['a', 'stuck'],
            ['vague', 'insufficient-info'],
          ],
        );
        const added = (await store.audit.list({ key: 'vague' })).map((entry) => entry.type);
        assert.deepEqual(added, ['task:added', 'task:state']);
        await refusedAs(store.lifecycle.escalate({ key: 'a', reason: 'again', by: ALICE }), 'task_escalated');
      }));
  });

  describe('gates', () => {
    test('a gated task is neither placed nor pulled; approving the gate lets it run, both audited with who', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'g' });
        await store.lifecycle.gate({ key: 'g', gate: 'design', by: ALICE });
        await store.lifecycle.gate({ key: 'g', gate: 'design', by: ALICE });
        const [queued] = await store.dispatch.queued({ limit: 10 });
        assert.equal(queued?.gate, 'design');
        assert.deepEqual(await store.dispatch.place({ id: job.id, host: 'box-1', term }), {
          ok: false,
          reason: 'gated',
          gate: 'design',
        });
        const session = await givenSession(store);
        assert.equal(await store.jobs.claimNext({ session: session.id }), null);
        assert.equal((await store.jobs.get(job.id))?.status, 'queued');
        await assert.rejects(
          store.lifecycle.approveGate({ key: 'nogate', gate: 'design', by: ALICE }),
          /not found/,
        );
        const opened = await store.lifecycle.approveGate({
          key: 'g',
          gate: 'design',
          by: ALICE,
          note: 'lgtm',
        });
        assert.equal(opened.gate, null);
        await assert.rejects(
          store.lifecycle.approveGate({ key: 'g', gate: 'design', by: ALICE }),
          ConflictError,
        );
        assert.ok((await store.dispatch.place({ id: job.id, host: 'box-1', term })).ok);
        const gates = await store.audit.list({ key: 'g' });
        assert.deepEqual(
          gates
            .filter((entry) => entry.type === 'task:gated' || entry.type === 'task:approved')
            .map((entry) => [entry.type, entry.detail]),
          [
            ['task:gated', { gate: 'design', by: 'alice@box' }],
            ['task:approved', { gate: 'design', by: 'alice@box', note: 'lgtm' }],
          ],
        );
      }));
  });

  describe('task fields and settings', () => {
    test('updates only the fields given, audited with their names and who; refuses an unknown task', () =>
      withFixture(harness, async ({ store }) => {
        await store.tasks.add({ key: 'u', title: 'old', body: 'b', url: 'https://x.test/1', labels: ['a'] });
        const same = await store.tasks.update({ key: 'u', by: ALICE });
        assert.equal(same.title, 'old');
        const changed = await store.tasks.update({
          key: 'u',
          title: 'new',
          url: null,
          labels: ['bug', 'ui'],
          reviewRequired: true,
          by: { name: 'importer', session: undefined },
        });
        assert.deepEqual(
          [changed.title, changed.body, changed.url, changed.labels, changed.reviewRequired],
          ['new', 'b', null, ['bug', 'ui'], true],
        );
        const rows = await store.audit.list({ key: 'u', type: 'task:updated' });
        assert.deepEqual(
          rows.map((entry) => entry.detail),
          [{ fields: ['title', 'url', 'labels', 'review_required'], by: 'importer' }],
        );
        await assert.rejects(store.tasks.update({ key: 'nope', title: 'x', by: ALICE }), /not found/);
      }));

    test('keeps settings for every store, each change audited with who made it', () =>
      withFixture(harness, async ({ store, openAnother }) => {
        assert.equal(await store.settings.get('vague-words'), null);
        await store.settings.set({ name: 'vague-words', value: '5', by: ALICE });
        const set = await store.settings.set({ name: 'vague-words', value: '7', by: ALICE });
        assert.deepEqual([set.name, set.value, set.updatedBy], ['vague-words', '7', 'alice@box']);
        const other = await openAnother();
        assert.equal(await other.settings.get('vague-words'), '7');
        assert.deepEqual(
          (await other.settings.list()).map((setting) => [setting.name, setting.value]),
          [['vague-words', '7']],
        );
        await other.close();
        const rows = await store.audit.list({ type: 'setting:set' });
        assert.deepEqual(
          rows.map((entry) => entry.detail),
          [
            { name: 'vague-words', value: '5', by: 'alice@box' },
            { name: 'vague-words', value: '7', by: 'alice@box' },
          ],
        );
      }));
  });
}
