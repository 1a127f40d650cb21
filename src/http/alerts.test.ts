/**
 * The alerts Baton ships (deploy/prometheus/baton-alerts.yml), checked by Prometheus's promtool:
 * the file loads, its own tests pass, every metric and label it reads is in a real scrape of
 * /metrics on both engines, and real conditions made in a real store fire the alerts they should.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import { Coordinator } from '../coordinator/coordinator.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { bothEngines } from '../../test/support/databases.js';
import {
  folderWith,
  groupingLabels,
  promtool,
  references,
  samples,
  timeline,
  withoutAnnotations,
} from '../../test/support/promtool.js';
import { metricsRoutes } from './metrics.js';

const DEPLOY = join(fileURLToPath(new URL('../../..', import.meta.url)), 'deploy', 'prometheus');
const RULES = join(DEPLOY, 'baton-alerts.yml');
/** Labels Prometheus adds to every scraped series: the rules group by them, /metrics never has them. */
const TARGET_LABELS = new Set(['job', 'instance']);

/**
 * BatonHostNotServing and BatonHostDrainedTooLong as they were before they named the host (over the
 * fleet-wide baton_hosts and baton_host_drained_oldest_age_seconds): an operator's copy of them must
 * still fire, so those series are still served as they were.
 */
const LEGACY_RULES = `
  - name: legacy
    rules:
      - alert: LegacyHostNotServing
        expr: max by (job, liveness) (baton_hosts{liveness=~"silent|down", enabled="true"}) > 0
        for: 2m
      - alert: LegacyHostDrainedTooLong
        expr: max by (job) (baton_host_drained_oldest_age_seconds) > 900
`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the shipped alert rules', () => {
  test('promtool check rules loads them, and their own promtool tests pass', () => {
    const checked = promtool(['check', 'rules', RULES]);
    assert.equal(checked.code, 0, checked.said);
    assert.match(checked.said, /SUCCESS: 9 rules found/);
    const tested = promtool(['test', 'rules', join(DEPLOY, 'baton-alerts.test.yml')]);
    assert.equal(tested.code, 0, tested.said);
    assert.match(tested.said, /SUCCESS/);
  });
});

/**
 * What the operator is paged for, made real: a host whose runner went silent on the database clock
 * (its session's 50 ms TTL passed) beside one that is live, a standby that is down and a host
 * drained by its own baton up that never came back, a claim
 * whose holder passed its TTL, an escalated task, failed and OOM-killed jobs, a queued job nothing
 * explains, a registered ledger key with rows no checkpoint covers, and no leader.
 */
async function troubles(store: Store, coordinator: Coordinator): Promise<void> {
  const register = async (name: string, ttlMs?: number, enabled = true) => {
    const session = await store.sessions.start({ kind: 'daemon', host: name, pid: 1, ttlMs });
    const capacity = { ramTotalMb: 8000, ramReservedMb: 0, ramFreeMb: 8000, slotsMax: 2 };
    await store.hosts.register({ name, session: session.id, enabled, ...capacity });
    return session;
  };
  // A standby whose runner stopped pages nobody: it is not meant to take work.
  await store.sessions.end((await register('spare-box', undefined, false)).id);
  await register('quiet-box', 50);
  // A host its own drain disabled, whose baton up then stopped and never came back: drained.
  const drained = await register('drained-box');
  assert.equal(await store.hosts.drain({ name: 'drained-box', session: drained.id }), true);
  await store.sessions.end(drained.id);
  const worker = await store.sessions.start({ kind: 'agent', host: 'live-box', pid: 2 });
  for (const [key, status] of [
    ['f1', 'failed'],
    ['f2', 'failed'],
    ['f3', 'failed'],
    ['big', 'oom_killed'],
  ] as const) {
    await store.jobs.enqueue({ key });
    const job = await store.jobs.claimNext({ session: worker.id, start: true });
    assert.ok(job !== null);
    await store.jobs.finish({ id: job.id, session: worker.id, epoch: job.epoch, status });
  }
  await store.jobs.enqueue({ key: 'stuck-in-queue' });
  await store.tasks.add({ key: 'ask-a-human' });
  const by = { name: 'agent' };
  const escalated = await coordinator.lifecycle.escalate({
    key: 'ask-a-human',
    reason: 'needs a decision',
    by,
  });
  assert.ok(escalated.ok);
  const fleeting = await store.sessions.start({ kind: 'agent', host: 'live-box', pid: 3, ttlMs: 50 });
  await store.tasks.add({ key: 'held' });
  assert.ok((await store.claims.acquire({ key: 'held', session: fleeting.id })).ok);
  await store.ledger.addKey({ id: 'a'.repeat(16), publicKey: 'cHVibGljIGtleQ==' });
  await sleep(150);
  await register('live-box');
}

/** `promtool test rules` input: the rules without their words, the scrapes' timeline, what fires when. */
function scrapeTest(before: string, after: string): string {
  const fires = (minute: number, alert: string, labels = '') =>
    `      - eval_time: ${minute}m\n        alertname: ${alert}\n        exp_alerts:\n` +
    `          - exp_labels: { job: baton${labels} }\n`;
  const quiet = (minute: number, alert: string) =>
    `      - eval_time: ${minute}m\n        alertname: ${alert}\n        exp_alerts: []\n`;
  const scraped = (first: string, second: string) =>
    `    input_series:\n${timeline(first, second, 'job="baton", instance="test:9464"', 45).join('\n')}\n`;
  return [
    'rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n',
    "  - name: 'the troubles, scraped'\n    interval: 1m\n",
    scraped(before, after),
    '    alert_rule_test:\n',
    fires(5, 'BatonNoLeader', ', severity: critical'),
    fires(5, 'BatonHostNotServing', ', severity: warning, host: quiet-box, liveness: silent'),
    fires(5, 'BatonJobsOomKilled', ', severity: warning'),
    fires(5, 'BatonClaimsNotRescued', ', severity: critical'),
    fires(8, 'BatonJobsFailing', ', severity: warning'),
    fires(15, 'BatonLedgerSealingStopped', ', severity: warning'),
    quiet(15, 'BatonHostDrainedTooLong'),
    fires(16, 'BatonHostDrainedTooLong', ', severity: warning, host: drained-box'),
    // The rules of these two before they named the host, on the fleet-wide series still served.
    quiet(15, 'LegacyHostDrainedTooLong'),
    fires(16, 'LegacyHostDrainedTooLong'),
    fires(5, 'LegacyHostNotServing', ', liveness: silent'),
    fires(25, 'BatonQueueStalled', ', severity: critical'),
    fires(40, 'BatonEscalationsWaiting', ', severity: warning'),
    "  - name: 'an empty database, scraped: only the missing leader'\n    interval: 1m\n",
    scraped(before, before),
    '    alert_rule_test:\n',
    fires(40, 'BatonNoLeader', ', severity: critical'),
    ...['HostNotServing', 'JobsOomKilled', 'ClaimsNotRescued', 'JobsFailing', 'LedgerSealingStopped']
      .concat(['QueueStalled', 'EscalationsWaiting', 'HostDrainedTooLong'])
      .map((alert) => quiet(40, `Baton${alert}`)),
    quiet(40, 'LegacyHostDrainedTooLong'),
    quiet(40, 'LegacyHostNotServing'),
  ].join('');
}

/** Every metric the rules read is scraped, with every label value they match and every label they group by. */
function assertScrapeHasWhatRulesRead(rules: string, scrape: string): void {
  const scraped = samples(scrape);
  for (const reference of references(rules)) {
    const series = scraped.filter((sample) => sample.name === reference.name);
    assert.ok(series.length > 0, `the rules read ${reference.name}, which /metrics does not serve`);
    for (const { label, values } of reference.matchers) {
      for (const value of values) {
        assert.ok(
          series.some((sample) => sample.labels[label] === value),
          `the rules match ${reference.name}{${label}="${value}"}, which /metrics does not serve`,
        );
      }
    }
  }
  for (const { label, metrics } of groupingLabels(rules)) {
    if (TARGET_LABELS.has(label)) continue;
    assert.ok(
      scraped.some((sample) => metrics.includes(sample.name) && label in sample.labels),
      `the rules group by ${label}, which none of ${metrics.join(', ')} has in /metrics`,
    );
  }
}

for (const db of bothEngines()) {
  describe(`the alert rules on a real /metrics (${db.name})`, () => {
    test('read only what /metrics serves, and fire on real troubles made in the store', async () => {
      const store = await openStore(await db.fresh());
      const coordinator = new Coordinator(store);
      const app = new Hono();
      app.route('/metrics', metricsRoutes({ reads: coordinator.views }));
      const scrape = async (): Promise<string> => (await app.request('/metrics')).text();
      try {
        const before = await scrape();
        await troubles(store, coordinator);
        const after = await scrape();
        const value = (series: string) => samples(after).find((sample) => sample.series === series)?.value;
        assert.equal(value('baton_hosts{liveness="silent",enabled="true",draining="false"}'), 1);
        assert.equal(value('baton_hosts{liveness="live",enabled="true",draining="false"}'), 1);
        assert.equal(value('baton_hosts{liveness="down",enabled="false",draining="false"}'), 1);
        assert.equal(value('baton_hosts{liveness="down",enabled="false",draining="true"}'), 1);
        assert.equal(value('baton_hosts{liveness="live",enabled="false",draining="true"}'), 0);
        // drained-box's last report, just now: the age BatonHostDrainedTooLong pages on past 900 s.
        const drainedFor = value('baton_host_drained_oldest_age_seconds') ?? -1;
        assert.ok(drainedFor >= 0 && drainedFor < 60, String(drainedFor));
        assert.equal(
          samples(before).find((sample) => sample.series === 'baton_host_drained_oldest_age_seconds')?.value,
          0,
        );
        // Per host, only the hosts out of service: the rules name them.
        assert.equal(value('baton_host_not_serving{host="quiet-box",liveness="silent"}'), 1);
        const perHost = (name: string) => samples(after).filter((sample) => sample.name === name);
        assert.deepEqual(
          perHost('baton_host_not_serving').map((sample) => sample.series),
          ['baton_host_not_serving{host="quiet-box",liveness="silent"}'],
          'no series for a host served, a standby or a drained host',
        );
        assert.deepEqual(
          perHost('baton_host_drained_age_seconds').map((sample) => sample.labels['host']),
          ['drained-box'],
        );
        assert.equal(value('baton_host_drained_age_seconds{host="drained-box"}'), drainedFor);
        assert.equal(
          perHost('baton_host_drained_age_seconds').length + perHost('baton_host_not_serving').length,
          2,
        );
        assert.ok(
          !/baton_host_(not_serving|drained_age_seconds)\{/.test(before),
          'none in an empty database',
        );
        assert.equal(value('baton_claims_past_ttl'), 1);
        assert.equal(value('baton_tasks{state="escalated"}'), 1);
        assert.equal(value('baton_ledger_sealing_configured'), 1);
        assert.ok((value('baton_ledger_unsealed_rows') ?? 0) > 10);
        for (const text of [before, after]) {
          const checked = promtool(['check', 'metrics'], text);
          assert.equal(checked.code, 0, checked.said);
        }
        const rules = readFileSync(RULES, 'utf8');
        assertScrapeHasWhatRulesRead(rules, after);
        const dir = folderWith({
          'rules.yml': withoutAnnotations(rules) + LEGACY_RULES,
          'test.yml': scrapeTest(before, after),
        });
        const checked = promtool(['check', 'rules', join(dir, 'rules.yml')]);
        assert.match(checked.said, /SUCCESS: 11 rules found/, checked.said);
        const tested = promtool(['test', 'rules', join(dir, 'test.yml')]);
        rmSync(dir, { recursive: true });
        assert.equal(tested.code, 0, tested.said);
      } finally {
        await store.close();
      }
    });
  });
}
