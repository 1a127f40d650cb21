/**
 * Reproduces a finding of the chaos suite (docs/chaos-report.md): the PostgreSQL store set no
 * client-side query timeout, so a call on a connection that went silent (a partition, a
 * blackholing proxy) waits until the network comes back or TCP keepalive gives up (7200 s by
 * default on Linux). Every loop of `baton up` that makes such a call stalled with it. Now
 * fixed: the pool's query_timeout gives the call up as an unknown outcome and drops the connection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open.js';
import { freshPostgresUrl } from '../support/databases.js';
import { PgProxy } from './proxy.js';

test('a PostgreSQL call on a blackholed connection gives up within a bound', async () => {
  const url = new URL(await freshPostgresUrl());
  const proxy = new PgProxy(url.hostname, Number(url.port));
  url.port = String(await proxy.add('client'));
  const store = await openStore(url.toString());
  try {
    const s = await store.sessions.start({ kind: 'agent', host: 'h', pid: 1 });
    proxy.blackhole('client', 15_000);
    const sent = Date.now();
    const outcome = await Promise.race([
      store.sessions.heartbeat({ session: s.id }).then(
        () => 'answered',
        () => 'gave up',
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
    ]);
    assert.equal(outcome, 'gave up', `after ${Date.now() - sent} ms the call was ${String(outcome)}`);
  } finally {
    proxy.endBlackhole('client');
    await store.close().catch(() => undefined);
    await proxy.close();
  }
});
