import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Hono } from 'hono';
import { Registry } from 'prom-client';
import { Coordinator } from '../coordinator/coordinator.js';
import { openStore } from '../store/open.js';
import { timedStore } from '../store/timed.js';
import { bothEngines } from '../../test/support/databases.js';
import { rawSql } from '../../test/support/raw-sql.js';
import { metricsRoutes, storeLatencyObserver } from './metrics.js';

const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on the text: its exit code and what it said. */
function promtool(text: string): { code: number | null; said: string } {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { code: r.status, said: `${r.stdout}${r.stderr}` };
}

/** The sample's value, by its name and labels as printed (`name{a="b"}`). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line !== undefined, `${series} in\n${text}`);
  return Number(line.slice(series.length + 1));
}

for (const db of bothEngines()) {
  describe(`/metrics (${db.name})`, () => {
    test('passes promtool check metrics, and its values follow the work', async () => {
      const registry = new Registry();
      const store = timedStore(await openStore(await db.fresh()), storeLatencyObserver(registry));
      const coordinator = new Coordinator(store);
      const app = new Hono();
      app.route('/metrics', metricsRoutes({ reads: coordinator.views, registry }));
      const scrape = async (): Promise<string> => {
        const response = await app.request('/metrics');
        assert.equal(response.status, 200);
        assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
        return response.text();
      };
      try {
        const before = await scrape();
        assert.equal(sample(before, 'baton_claims_granted_total'), 0);
        assert.equal(sample(before, 'baton_queue_jobs{status="queued"}'), 0);
        assert.equal(sample(before, 'baton_leader_term'), 0);

        // Work: a leader, a host, jobs placed, run, finished, one OOM-killed, one waiting, a
        // claim held and another taken from its holder.
        const daemon = await store.sessions.start({ kind: 'daemon', host: 'box', pid: 1 });
        const lease = await store.leases.acquire({
          name: 'dispatcher',
          holder: String(daemon.id),
          ttlMs: 60_000,
        });
        assert.ok(lease.ok);
        const term = { lease: 'dispatcher', holder: String(daemon.id), term: lease.lease.term };
        const worker = await store.sessions.start({ kind: 'agent', host: 'box', pid: 2 });
        for (const [key, status] of [
          ['a', 'done'],
          ['b', 'oom_killed'],
        ] as const) {
          await store.jobs.enqueue({ key });
          const job = await store.jobs.claimNext({ session: worker.id, start: true });
          assert.ok(job !== null);
          await store.jobs.finish({ id: job.id, session: worker.id, epoch: job.epoch, status });
        }
        const waiting = await store.jobs.enqueue({ key: 'c', ramMb: 99_000 });
        assert.ok(
          await store.dispatch.markWaiting({
            id: waiting.job.id,
            reason: 'needs 99000 MB; the most free is 1 MB on box',
            term,
          }),
        );
        await store.tasks.add({ key: 'held' });
        await store.tasks.add({ key: 'lost' });
        assert.ok((await store.claims.acquire({ key: 'held', session: worker.id })).ok);
        const victim = await store.sessions.start({ kind: 'agent', host: 'box', pid: 3 });
        assert.ok((await store.claims.acquire({ key: 'lost', session: victim.id })).ok);
        await coordinator.endSession(victim.id);

        const after = await scrape();
        assert.equal(sample(after, 'baton_queue_jobs{status="queued"}'), 1);
        assert.equal(sample(after, 'baton_jobs_started_total'), 2);
        assert.equal(sample(after, 'baton_jobs_finished_total{outcome="done"}'), 1);
        assert.equal(sample(after, 'baton_jobs_finished_total{outcome="oom_killed"}'), 1);
        assert.equal(sample(after, 'baton_oom_kills_total'), 1);
        assert.equal(sample(after, 'baton_jobs_waiting{reason="ram"}'), 1);
        assert.equal(sample(after, 'baton_claims_held'), 1);
        assert.equal(sample(after, 'baton_claims_fenced_total'), 1);
        assert.equal(sample(after, 'baton_claims_ended_total{outcome="abandoned"}'), 1);
        assert.ok(sample(after, 'baton_claims_granted_total') >= 2);
        assert.equal(sample(after, 'baton_leader_term'), lease.lease.term);
        assert.equal(sample(after, 'baton_leader_present'), 1);
        assert.ok(sample(after, 'baton_claim_oldest_heartbeat_age_seconds') >= 0);
        // What alerts page on (src/http/alerts.test.ts makes each condition): none here but an
        // unsealed ledger, which pages nobody without a key.
        assert.equal(sample(after, 'baton_claims_past_ttl'), 0);
        assert.equal(sample(after, 'baton_hosts{liveness="silent",enabled="true",draining="false"}'), 0);
        assert.equal(sample(after, 'baton_tasks{state="escalated"}'), 0);
        assert.equal(sample(after, 'baton_task_oldest_wait_age_seconds{state="escalated"}'), 0);
        assert.equal(sample(after, 'baton_ledger_sealing_configured'), 0);
        assert.ok(sample(after, 'baton_ledger_unsealed_rows') > sample(before, 'baton_ledger_unsealed_rows'));
        assert.ok(
          sample(after, 'baton_store_call_duration_seconds_count{method="claims.acquire",outcome="ok"}') >= 2,
        );

        if (!existsSync(PROMTOOL)) {
          assert.fail(`${PROMTOOL} is absent: install Debian's prometheus package`);
        }
        for (const text of [before, after]) {
          const checked = promtool(text);
          assert.equal(checked.code, 0, checked.said);
          assert.equal(checked.said.trim(), '');
        }
      } finally {
        await store.close();
      }
    });

    test('a job that job retention removed is still counted as finished, and counted as pruned', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const app = new Hono();
      app.route('/metrics', metricsRoutes({ reads: new Coordinator(store).views }));
      try {
        const worker = await store.sessions.start({ kind: 'agent', host: 'box', pid: 2 });
        await store.jobs.enqueue({ key: 'a' });
        for (const status of ['oom_killed', 'done'] as const) {
          const job = await store.jobs.claimNext({ session: worker.id, start: true });
          assert.ok(job !== null);
          await store.jobs.finish({ id: job.id, session: worker.id, epoch: job.epoch, status });
          if (status === 'oom_killed') await store.jobs.retry({ id: job.id });
        }
        const raw = await rawSql(db, url);
        await raw.exec(
          db.engine === 'sqlite'
            ? 'UPDATE jobs SET finished_at = finished_at - 2 * 86400000'
            : "UPDATE jobs SET finished_at = finished_at - interval '2 days'",
        );
        await raw.close();
        const pruned = await store.retention.pruneJobs({ olderThanMs: 86_400_000, limit: 10 });
        assert.deepEqual(pruned.ok && pruned.removed, 1, 'the oom_killed job goes, the newest stays');
        const text = await (await app.request('/metrics')).text();
        assert.equal(sample(text, 'baton_jobs_pruned_total'), 1);
        assert.equal(sample(text, 'baton_jobs_finished_total{outcome="oom_killed"}'), 1);
        assert.equal(sample(text, 'baton_oom_kills_total'), 1);
        assert.equal(sample(text, 'baton_jobs_finished_total{outcome="done"}'), 1);
        assert.equal(sample(text, 'baton_queue_jobs{status="oom_killed"}'), 0, 'the gauge is what is there');
      } finally {
        await store.close();
      }
    });

    test('counts runs timed out by who stopped them, from the database: another process reads the same', async () => {
      const url = await db.fresh();
      const store = await openStore(url);
      const routes = (reads: Coordinator['views']) => {
        const app = new Hono();
        app.route('/metrics', metricsRoutes({ reads, registry: new Registry() }));
        return async (): Promise<string> => (await app.request('/metrics')).text();
      };
      const scrape = routes(new Coordinator(store).views);
      const series = (by: string) => `baton_jobs_timed_out_total{by="${by}"}`;
      try {
        const before = await scrape();
        for (const by of ['runner', 'finish', 'leader']) assert.equal(sample(before, series(by)), 0);
        const worker = await store.sessions.start({ kind: 'agent', host: 'box', pid: 2 });
        const jobs = [];
        for (const key of ['run', 'finish', 'swept']) {
          await store.jobs.enqueue({ key, timeLimitMs: 1_000 });
          jobs.push(await store.jobs.claimNext({ session: worker.id, start: true }));
        }
        const [run, finish, swept] = jobs;
        assert.ok(run && finish && swept);
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        const guard = { session: worker.id, defaultLimitMs: null };
        assert.ok((await store.progress.markTimedOut({ ...guard, id: run.id, epoch: run.epoch })).timedOut);
        const said = { id: finish.id, session: worker.id, epoch: finish.epoch, status: 'done' as const };
        assert.ok((await store.progress.failTimedOut(said)).timedOut);
        const daemon = await store.sessions.start({ kind: 'daemon', host: 'box', pid: 1 });
        // `run` is failed too (no second row: its runner's verdict wrote it), and `swept`.
        assert.equal(
          (await store.progress.sweepTimedOut({ max: 10, leaderSession: daemon.id })).failed.length,
          2,
        );
        const after = await scrape();
        for (const by of ['runner', 'finish', 'leader']) assert.equal(sample(after, series(by)), 1, by);
        // A new process (a restarted `baton up`, another leader) reads the same from the database.
        const other = await openStore(url);
        try {
          const again = await routes(new Coordinator(other).views)();
          for (const by of ['runner', 'finish', 'leader']) assert.equal(sample(again, series(by)), 1, by);
          assert.equal(promtool(again).code, existsSync(PROMTOOL) ? 0 : null);
        } finally {
          await other.close();
        }
      } finally {
        await store.close();
      }
    });
  });
}
