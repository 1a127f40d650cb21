/**
 * Jobs without a command wait for a host that can run them (docs/decisions/0047-jobs-wait-for-an-agent-command.md):
 * each register records whether the runner has an agent command; a pass places a job without a
 * command only on such a host (or one whose register did not say), and holds it with its
 * reason while none is live, without letting it take the place of a job that may run; placeMany
 * refuses such a placement itself; stats counts such jobs over the whole queue.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WAITING_FOR_AGENT_COMMAND, WAITING_FOR_AGENT_SLOT } from '../../core/capacity.js';
import { decideDispatch } from '../../core/dispatch-plan.js';
import type { Store } from '../store.js';
import type { TermRef } from '../dispatch-store.js';
import { givenLeader } from './dispatch.js';
import { withFixture, type Harness } from './harness.js';

const STALE_AFTER_MS = 60_000;

/** A host whose runner has (true), has not (false) or did not say (undefined) an agent command. */
async function givenRunner(
  store: Store,
  name: string,
  agentCommand: boolean | undefined,
  ramFreeMb = 8_000,
  slotsMax = 4,
) {
  const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1 });
  const host = await store.hosts.register({
    name,
    session: session.id,
    ramTotalMb: 16_000,
    ramReservedMb: 1_000,
    ramFreeMb,
    slotsMax,
    ...(agentCommand === undefined ? {} : { agentCommand }),
  });
  return { session, host };
}

/** One pass as the dispatcher makes it: read, decide, place, record the reasons. */
async function pass(store: Store, term: TermRef, limit = 50) {
  const { now, jobs } = await store.dispatch.candidates({ limit });
  const decision = decideDispatch(jobs, await store.hosts.fleet(), now, STALE_AFTER_MS);
  const placed = await store.dispatch.placeMany({
    term,
    jobs: decision.place.map((placement) => ({ id: placement.job.id, host: placement.host })),
  });
  await store.dispatch.setAside({
    term,
    waits: decision.wait.map((wait) => ({ id: wait.job.id, reason: wait.reason })),
    skips: [],
  });
  return { candidates: jobs.map((candidate) => candidate.job.key), placed };
}

/** Each job by key: `on <host>` once placed, else its reason (or '' for none). */
async function where(store: Store): Promise<Record<string, string>> {
  const jobs = await store.jobs.list();
  return Object.fromEntries(
    jobs.map((job) => [job.key, job.status === 'claimed' ? `on ${job.host}` : (job.reason ?? '')]),
  );
}

export function exerciseAgentCommand(harness: Harness): void {
  describe('jobs without a command and the hosts that can run them', () => {
    test('each register records whether its runner has an agent command; null when it did not say', () =>
      withFixture(harness, async ({ store }) => {
        assert.equal(await store.hosts.agentCommandLive(), false, 'no host at all');
        const first = await givenRunner(store, 'box-1', false);
        assert.equal(first.host.agentCommand, false);
        assert.equal(await store.hosts.agentCommandLive(), false, 'a live host without one');
        const [open] = (await store.hosts.fleet()).open;
        assert.equal(open?.agentCommand, false, 'the fleet carries it');
        await store.sessions.end(first.session.id);
        const second = await givenRunner(store, 'box-1', true);
        assert.equal(second.host.agentCommand, true, 'a new register writes it again');
        assert.equal(await store.hosts.agentCommandLive(), true);
        await store.hosts.setEnabled({ name: 'box-1', enabled: false });
        assert.equal(await store.hosts.agentCommandLive(), false, 'a disabled host runs nothing');
        await store.hosts.setEnabled({ name: 'box-1', enabled: true });
        await store.sessions.end(second.session.id);
        assert.equal(await store.hosts.agentCommandLive(), false, 'its runner ended');
        const older = await givenRunner(store, 'box-1', undefined);
        assert.equal(older.host.agentCommand, null, 'a register that does not say: null');
        assert.equal((await store.hosts.list())[0]?.agentCommand, null);
        assert.equal(await store.hosts.agentCommandLive(), true, 'null is taken as able');
      }));

    test('a pass places a job without a command only on a host with an agent command', () =>
      withFixture(harness, async ({ store }) => {
        // box-a has the more RAM, so it comes first for any job it may take.
        await givenRunner(store, 'box-a', false, 12_000);
        await givenRunner(store, 'box-b', true, 4_000);
        const term = await givenLeader(store);
        await store.jobs.enqueue({ key: 'bare' });
        await store.jobs.enqueue({ key: 'told', command: 'true' });
        await pass(store, term);
        assert.deepEqual(await where(store), { bare: 'on box-b', told: 'on box-a' });
      }));

    test('while no live host has an agent command, such jobs wait with the reason and hide no job behind them', () =>
      withFixture(harness, async ({ store }) => {
        await givenRunner(store, 'box-a', false);
        const term = await givenLeader(store);
        for (const key of ['bare-1', 'bare-2', 'bare-3']) await store.jobs.enqueue({ key });
        await store.jobs.enqueue({ key: 'told', command: 'true' });
        const first = await pass(store, term, 2);
        assert.ok(first.candidates.includes('told'), 'the job with a command is read past them');
        assert.deepEqual(await where(store), {
          told: 'on box-a',
          'bare-1': WAITING_FOR_AGENT_COMMAND,
          'bare-2': WAITING_FOR_AGENT_COMMAND,
          'bare-3': '',
        });
        const waiting = await store.jobs.list({ status: ['queued'] });
        assert.ok(
          waiting.every((job) => job.attempt === 0 && job.epoch === 0),
          'no attempt spent',
        );
        await givenRunner(store, 'box-b', true);
        await pass(store, term);
        assert.deepEqual(await where(store), {
          told: 'on box-a',
          'bare-1': 'on box-b',
          'bare-2': 'on box-b',
          'bare-3': 'on box-b',
        });
      }));

    test('stats counts every queued job without a command while no live host can run one, past the window too', () =>
      withFixture(harness, async ({ store }) => {
        const wait = async () => (await store.observe.stats()).agentCommandWait;
        assert.deepEqual(await wait(), { jobs: 0, withoutReason: 0 }, 'an empty queue');
        await givenRunner(store, 'box-a', false);
        const term = await givenLeader(store);
        for (const key of ['bare-1', 'bare-2', 'bare-3']) await store.jobs.enqueue({ key });
        await store.jobs.enqueue({ key: 'told', command: 'true' });
        assert.deepEqual(await wait(), { jobs: 3, withoutReason: 3 }, 'before any pass: no reason stored');
        await pass(store, term, 2);
        assert.deepEqual(await wait(), { jobs: 3, withoutReason: 1 }, 'bare-3 was beyond the window');
        const stored = (await store.observe.stats()).waitingByReason;
        assert.equal(stored.find((one) => one.name === WAITING_FOR_AGENT_COMMAND)?.count, 2);
        await givenRunner(store, 'box-b', true);
        assert.deepEqual(await wait(), { jobs: 0, withoutReason: 0 }, 'a live host can run them');
        await store.hosts.setEnabled({ name: 'box-b', enabled: false });
        assert.deepEqual(await wait(), { jobs: 3, withoutReason: 1 }, 'a disabled host cannot');
      }));

    // Decision 0047, review fixes: 60 jobs without a command used to fill the pass's 50 places while
    // the one host with an agent command was full, and the jobs with a command behind them waited
    // for ever beside 20 free slots.
    test('jobs without a command take no more of a pass than the free slots of hosts that can run them', () =>
      withFixture(harness, async ({ store }) => {
        await givenRunner(store, 'able', true, 8_000, 1);
        for (const name of ['box-1', 'box-2', 'box-3', 'box-4', 'box-5'])
          await givenRunner(store, name, false);
        const term = await givenLeader(store);
        const bare = Array.from({ length: 60 }, (_, index) => `bare-${String(index + 1).padStart(2, '0')}`);
        for (const key of bare) await store.jobs.enqueue({ key });
        const told = ['told-1', 'told-2', 'told-3', 'told-4', 'told-5'];
        for (const key of told) await store.jobs.enqueue({ key, command: 'true' });
        const first = await pass(store, term);
        assert.equal(first.placed.filter((result) => result.ok).length, 6, 'one tick places all it can');
        const placed = await where(store);
        assert.equal(placed['bare-01'], 'on able');
        for (const key of told) assert.match(placed[key] ?? '', /^on box-\d$/, key);
        await pass(store, term);
        const after = await where(store);
        assert.equal(
          after['bare-02'],
          WAITING_FOR_AGENT_SLOT,
          'a host can run it: the reason says it is full',
        );
        const queued = await store.jobs.list({ status: ['queued'] });
        assert.ok(!queued.some((job) => job.reason === WAITING_FOR_AGENT_COMMAND), 'never "start baton up"');
      }));

    test('placeMany refuses a job without a command on a host without an agent command, changing nothing', () =>
      withFixture(harness, async ({ store }) => {
        await givenRunner(store, 'box-a', false);
        await givenRunner(store, 'box-old', undefined);
        const term = await givenLeader(store);
        const bare = (await store.jobs.enqueue({ key: 'bare' })).job;
        const told = (await store.jobs.enqueue({ key: 'told', command: 'true' })).job;
        const other = (await store.jobs.enqueue({ key: 'other' })).job;
        const results = await store.dispatch.placeMany({
          term,
          jobs: [
            { id: bare.id, host: 'box-a' },
            { id: told.id, host: 'box-a' },
            { id: other.id, host: 'box-old' },
          ],
        });
        assert.deepEqual(
          results.map((result) =>
            result.ok ? `${result.job.key} on ${result.job.host ?? '?'}` : result.reason,
          ),
          ['no_agent_command', 'told on box-a', 'other on box-old'],
        );
        const after = (await store.jobs.list()).find((job) => job.id === bare.id);
        assert.deepEqual(
          { status: after?.status, epoch: after?.epoch, attempt: after?.attempt, host: after?.host },
          { status: 'queued', epoch: 0, attempt: 0, host: null },
        );
        const placedRows = await store.audit.list({ jobId: bare.id });
        assert.ok(!placedRows.some((entry) => entry.type === 'job:placed'), 'no job:placed row');
        const single = await store.dispatch.place({ id: bare.id, host: 'box-a', term });
        assert.deepEqual(single, { ok: false, reason: 'no_agent_command' });
      }));
  });
}
