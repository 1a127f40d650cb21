import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../core/errors.js';
import type { Store } from '../store.js';
import type { TermRef } from '../dispatch-store.js';
import { givenSession, withFixture, type Harness } from './harness.js';

const POLICY = { backoffBaseMs: 60_000, backoffMaxMs: 60_000 };

export async function givenHost(
  store: Store,
  name = 'box-1',
  over: { enabled?: boolean; slotsMax?: number } = {},
) {
  const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
  const host = await store.hosts.register({
    name,
    session: session.id,
    enabled: over.enabled ?? true,
    ramTotalMb: 16_000,
    ramReservedMb: 1_000,
    ramFreeMb: 12_000,
    slotsMax: over.slotsMax ?? 4,
  });
  return { session, host };
}

export async function givenLeader(store: Store, holder = 'leader-a', ttlMs = 60_000): Promise<TermRef> {
  const result = await store.leases.acquire({ name: 'dispatcher', holder, ttlMs });
  assert.ok(result.ok);
  return { lease: 'dispatcher', holder, term: result.lease.term };
}

export function exerciseDispatch(harness: Harness): void {
  describe('hosts', () => {
    test('registers a host and lists its capacity with its active jobs and promised RAM', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k', ramMb: 3000 });
        await store.dispatch.place({ id: job.id, host: 'box-1', term });
        const [host] = await store.hosts.list();
        assert.equal(host?.name, 'box-1');
        assert.equal(host?.session, session.id);
        assert.equal(host?.enabled, true);
        assert.equal(host?.ramTotalMb, 16_000);
        assert.equal(host?.ramReservedMb, 1_000);
        assert.equal(host?.ramFreeMb, 12_000);
        assert.equal(host?.slotsMax, 4);
        assert.equal(host?.jobsActive, 1);
        assert.equal(host?.ramPromisedMb, 3000);
        assert.equal(host?.ramPendingMb, 3000);
      }));

    test('refuses a host served by another live session and hands it over once that one ended', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const other = await store.sessions.start({ kind: 'daemon', host: 'box-1', pid: 2 });
        const params = {
          name: 'box-1',
          session: other.id,
          enabled: true,
          ramTotalMb: 1,
          ramReservedMb: 0,
          ramFreeMb: 1,
          slotsMax: 1,
        };
        await assert.rejects(store.hosts.register(params), ConflictError);
        await store.sessions.end(session.id);
        assert.equal((await store.hosts.register(params)).session, other.id);
      }));

    test('takes a heartbeat with free RAM only from the session serving the host', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const stranger = await givenSession(store);
        assert.equal(
          await store.hosts.heartbeat({ name: 'box-1', session: session.id, ramFreeMb: 9000 }),
          true,
        );
        assert.equal(
          await store.hosts.heartbeat({ name: 'box-1', session: stranger.id, ramFreeMb: 1 }),
          false,
        );
        assert.equal((await store.hosts.list())[0]?.ramFreeMb, 9000);
        await store.sessions.end(session.id);
        assert.equal(
          await store.hosts.heartbeat({ name: 'box-1', session: session.id, ramFreeMb: 1 }),
          false,
        );
      }));

    test('disables a host into a warm standby and enables it again, audited', () =>
      withFixture(harness, async ({ store }) => {
        await givenHost(store);
        const off = await store.hosts.setEnabled({ name: 'box-1', enabled: false, actor: 'alice@box' });
        assert.equal(off.host.enabled, false);
        assert.equal(
          (await store.hosts.setEnabled({ name: 'box-1', enabled: true, actor: 'bob@box' })).host.enabled,
          true,
        );
        const rows = await store.audit.list();
        const by = (type: string) => rows.find((entry) => entry.type === type)?.detail['by'];
        assert.equal(by('host:disabled'), 'alice@box', 'the ledger names who disabled it');
        assert.equal(by('host:enabled'), 'bob@box');
      }));
  });

  describe('dispatch', () => {
    test('places a queued job on a host under the live term, assigned to its runner', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const result = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(result.ok);
        assert.equal(result.job.status, 'claimed');
        assert.equal(result.job.host, 'box-1');
        assert.equal(result.job.session, session.id);
        assert.equal(result.job.term, term.term);
        assert.equal(result.job.epoch, 1);
        assert.equal(result.job.attempt, 1);
        assert.deepEqual(
          (await store.dispatch.assigned(session.id)).map((assigned) => assigned.id),
          [job.id],
        );
        const placed = (await store.audit.list({ jobId: job.id })).find(({ type }) => type === 'job:placed');
        assert.deepEqual(placed?.detail, { host: 'box-1', term: term.term, attempt: 1 });
      }));

    test('refuses a placement carrying a replaced term and changes nothing', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        await givenHost(store);
        const old = await givenLeader(store, 'leader-a', 80);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        await moveClock(120);
        const expired = await store.dispatch.place({ id: job.id, host: 'box-1', term: old });
        assert.deepEqual(expired, { ok: false, reason: 'fenced' });
        await givenLeader(store, 'leader-b');
        assert.deepEqual(await store.dispatch.place({ id: job.id, host: 'box-1', term: old }), {
          ok: false,
          reason: 'fenced',
        });
        assert.deepEqual(await store.jobs.get(job.id), job);
        assert.equal(await store.dispatch.markWaiting({ id: job.id, reason: 'x', term: old }), false);
      }));

    test('will not place on a disabled host or one whose runner is no longer live', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store, 'box-1', { enabled: false });
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const disabled = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.equal(disabled.ok, false);
        await store.hosts.setEnabled({ name: 'box-1', enabled: true });
        await store.sessions.end(session.id);
        const dead = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.equal(dead.ok, false);
        assert.equal((await store.jobs.get(job.id))?.status, 'queued');
      }));

    test('lists dispatchable jobs in order and records why one waits', () =>
      withFixture(harness, async ({ store }) => {
        const term = await givenLeader(store);
        await store.jobs.enqueue({ key: 'b', priority: 2 });
        const { job: first } = await store.jobs.enqueue({ key: 'a', priority: 1 });
        assert.deepEqual(
          (await store.dispatch.queued({ limit: 10 })).map((job) => job.key),
          ['a', 'b'],
        );
        assert.equal(await store.dispatch.markWaiting({ id: first.id, reason: 'needs 4096 MB', term }), true);
        assert.equal((await store.jobs.get(first.id))?.reason, 'needs 4096 MB');
      }));

    test('records the agent session and pid on a running job, guarded by epoch', () =>
      withFixture(harness, async ({ store }) => {
        const { session } = await givenHost(store);
        const term = await givenLeader(store);
        const { job } = await store.jobs.enqueue({ key: 'k' });
        const placed = await store.dispatch.place({ id: job.id, host: 'box-1', term });
        assert.ok(placed.ok);
        await store.jobs.start({ id: job.id, session: session.id, epoch: 1 });
        const agent = await givenSession(store, 'box-1');
        const stale = await store.dispatch.attach({
          id: job.id,
          session: session.id,
          epoch: 2,
          agentSession: agent.id,
          pid: 7,
        });
        assert.equal(stale.ok, false);
        const result = await store.dispatch.attach({
          id: job.id,
          session: session.id,
          epoch: 1,
          agentSession: agent.id,
          pid: 7,
        });
        assert.ok(result.ok);
        assert.equal(result.job.agentSession, agent.id);
        assert.equal(result.job.pid, 7);
      }));

    test('ends a claimed job as failed or cancelled, but done only once running', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store);
        await store.jobs.enqueue({ key: 'a' });
        await store.jobs.enqueue({ key: 'b' });
        const jobA = await store.jobs.claimNext({ session: session.id });
        const jobB = await store.jobs.claimNext({ session: session.id });
        assert.ok(jobA !== null && jobB !== null);
        const early = await store.jobs.finish({ id: jobA.id, session: session.id, epoch: 1, status: 'done' });
        assert.equal(early.ok, false);
        const cancelled = await store.jobs.finish({
          id: jobA.id,
          session: session.id,
          epoch: 1,
          status: 'cancelled',
          reason: 'held',
        });
        assert.ok(cancelled.ok);
        assert.equal(cancelled.job.reason, 'held');
        const failed = await store.jobs.finish({
          id: jobB.id,
          session: session.id,
          epoch: 1,
          status: 'failed',
          exitCode: 2,
          outputTail: 'boom',
        });
        assert.ok(failed.ok);
        assert.equal(failed.job.outputTail, 'boom');
      }));

    test('retries an ended job as a new job with the same command and budget', () =>
      withFixture(harness, async ({ store }) => {
        const { job } = await store.jobs.enqueue({
          key: 'k',
          command: 'run {{key}}',
          ramMb: 64,
          priority: 3,
        });
        await assert.rejects(store.jobs.retry({ id: job.id }), ConflictError);
        await store.jobs.cancel({ id: job.id });
        const result = await store.jobs.retry({ id: job.id });
        assert.equal(result.created, true);
        assert.notEqual(result.job.id, job.id);
        assert.equal(result.job.command, 'run {{key}}');
        assert.equal(result.job.ramMb, 64);
        assert.equal(result.job.priority, 3);
        assert.equal(result.job.status, 'queued');
      }));
  });

  describe('recovery', () => {
    async function givenRunningJob(store: Store, attemptMax = 3) {
      const { session } = await givenHost(store);
      const term = await givenLeader(store);
      const { job } = await store.jobs.enqueue({ key: 'k', attemptMax });
      await store.dispatch.place({ id: job.id, host: 'box-1', term });
      await store.jobs.start({ id: job.id, session: session.id, epoch: 1 });
      const agent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 3 });
      await store.claims.acquire({ key: 'k', session: agent.id });
      await store.dispatch.attach({
        id: job.id,
        session: session.id,
        epoch: 1,
        agentSession: agent.id,
        pid: 3,
      });
      return { runner: session, agent, job, term };
    }

    test('rescues a session whose heartbeats stopped: claims recovered, job requeued with backoff', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { runner, agent, job } = await givenRunningJob(store);
        await moveClock(120);
        const report = await store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY });
        assert.deepEqual([...report.sessions].sort(), [runner.id, agent.id].sort());
        assert.equal(report.claimsReleased, 1);
        assert.deepEqual(report.jobsRequeued, [job.id]);
        const after = await store.jobs.get(job.id);
        assert.equal(after?.status, 'queued');
        assert.equal(after?.host, null);
        assert.ok(after !== null && after.runAfter >= (await store.now()) + 50_000);
        assert.equal((await store.dispatch.queued({ limit: 10 })).length, 0, 'in backoff');
        assert.equal((await store.claims.history('k'))[0]?.outcome, 'recovered');
        assert.equal((await store.sessions.get(agent.id))?.state, 'stale');
      }));

    test('fails the job of a stale session once its attempts are exhausted', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { job } = await givenRunningJob(store, 1);
        await moveClock(120);
        const report = await store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY });
        assert.deepEqual(report.jobsFailed, [job.id]);
        assert.equal((await store.jobs.get(job.id))?.status, 'failed');
      }));

    test('requeues the job of a runner that ended without finishing it', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, agent, job } = await givenRunningJob(store);
        await store.sessions.end(agent.id);
        await store.sessions.end(runner.id);
        const report = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(report.sessions, []);
        assert.deepEqual(report.jobsRequeued, [job.id]);
        assert.equal((await store.jobs.get(job.id))?.status, 'queued');
        const again = await store.recovery.rescueStale({ staleAfterMs: 60_000, policy: POLICY });
        assert.deepEqual(again.jobsRequeued, []);
      }));

    test('requeues a crashed job with backoff under its epoch, and fails it once attempts run out', () =>
      withFixture(harness, async ({ store }) => {
        const { runner, job } = await givenRunningJob(store, 2);
        const stale = await store.dispatch.requeue({
          id: job.id,
          session: runner.id,
          epoch: 2,
          reason: 'x',
          policy: POLICY,
        });
        assert.equal(stale.ok, false);
        const result = await store.dispatch.requeue({
          id: job.id,
          session: runner.id,
          epoch: 1,
          reason: 'killed by SIGKILL',
          policy: POLICY,
        });
        assert.ok(result.ok);
        assert.equal(result.job.status, 'queued');
        assert.equal(result.job.reason, 'requeued: killed by SIGKILL');
        assert.ok(result.job.runAfter > (await store.now()));
        const again = await store.dispatch.requeue({
          id: job.id,
          session: runner.id,
          epoch: 1,
          reason: 'x',
          policy: POLICY,
        });
        assert.equal(again.ok, false, "a requeued job is no longer that session's");
        await store.jobs.cancel({ id: job.id });
        const { job: second } = await store.jobs.enqueue({ key: 'k2', attemptMax: 1 });
        const term = await givenLeader(store, 'leader-a');
        const placed = await store.dispatch.place({ id: second.id, host: 'box-1', term });
        assert.ok(placed.ok);
        const failed = await store.dispatch.requeue({
          id: second.id,
          session: runner.id,
          epoch: 1,
          reason: 'boom',
          policy: POLICY,
        });
        assert.ok(failed.ok);
        assert.equal(failed.job.status, 'failed');
      }));

    test('leaves a session that keeps heartbeating alone', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const { runner, agent, job } = await givenRunningJob(store);
        const silent = await store.sessions.start({ kind: 'agent', host: 'box-1', pid: 4 });
        // Wide margins, as a loaded machine may pause for seconds between any two statements
        // (cases run a few at a time): the sweep must find the silent session (younger than the
        // other two) stale and leave the two that beat since alone.
        await moveClock(60_000);
        await store.hosts.heartbeat({ name: 'box-1', session: runner.id, ramFreeMb: 1 });
        await store.sessions.heartbeat({ session: agent.id, claim: { key: 'k', epoch: 1 } });
        const report = await store.recovery.rescueStale({ staleAfterMs: 30_000, policy: POLICY });
        assert.deepEqual(report.sessions, [silent.id]);
        assert.equal((await store.jobs.get(job.id))?.status, 'running');
      }));

    test('rescues each session, claim and job once when two sweeps race', () =>
      withFixture(harness, async ({ clocked, moveClock }) => {
        const store = await clocked();
        const other = await clocked();
        const { job } = await givenRunningJob(store);
        await moveClock(120);
        const [first, second] = await Promise.all([
          store.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY }),
          other.recovery.rescueStale({ staleAfterMs: 100, policy: POLICY }),
        ]);
        assert.equal(first.sessions.length + second.sessions.length, 2);
        assert.equal(first.claimsReleased + second.claimsReleased, 1);
        assert.deepEqual([...first.jobsRequeued, ...second.jobsRequeued], [job.id]);
        const requeues = (await store.audit.list({ jobId: job.id })).filter(
          (entry) => entry.type === 'job:requeued',
        );
        assert.equal(requeues.length, 1);
      }));
  });
}
