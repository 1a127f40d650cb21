/** The dashboard's Hosts view, rendered from host rows as the views read them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HostRow } from '../deps.js';
import { hostsView } from './cluster.js';

function row(name: string, enabled: boolean, liveness: HostRow['liveness']): HostRow {
  return {
    name,
    enabled,
    liveness,
    heartbeatAt: 0,
    lastReportAgeMs: 1_000,
    session: liveness === 'down' ? null : 1,
    ramTotalMb: 4_000,
    ramReservedMb: 512,
    ramFreeMb: 20_000,
    slotsMax: 2,
    jobsActive: 0,
    ramPromisedMb: 0,
    ramPendingMb: 0,
    running: [],
  };
}

const cells = async (host: HostRow): Promise<string[]> =>
  [...String(await hostsView([host], '')).matchAll(/<td>([^<]*)<\/td>/g)].map((match) => match[1] ?? '');

test('a disabled host is a warm standby only while its baton up runs', async () => {
  assert.equal((await cells(row('spare', false, 'live')))[0], 'warm standby');
  assert.equal((await cells(row('gone', false, 'down')))[0], 'disabled');
  // Its `baton up` stopped reporting with its session live: silent, whatever jobs await rescue there.
  assert.equal((await cells(row('paused', false, 'silent')))[0], 'silent');
  assert.equal((await cells(row('box', true, 'down')))[0], 'enabled');
});

test("a host disabled by its baton up's drain says draining while it runs, drained once gone", async () => {
  assert.equal((await cells({ ...row('box', false, 'live'), draining: true }))[0], 'draining');
  assert.equal((await cells({ ...row('box', false, 'down'), draining: true }))[0], 'drained');
  // Killed mid-drain: its session never ended, so no drain ended there.
  assert.equal((await cells({ ...row('box', false, 'silent'), draining: true }))[0], 'silent');
});

test('a draining host offers no Enable button (refused until its baton up stops); a drained one does', async () => {
  const draining = String(await hostsView([{ ...row('box', false, 'live'), draining: true }], ''));
  assert.doesNotMatch(draining, /<button/);
  assert.match(draining, /<td>draining: enable it once its baton up has stopped<\/td>/);
  const drained = String(await hostsView([{ ...row('box', false, 'down'), draining: true }], ''));
  assert.match(drained, /<button hx-post="\/v1\/hosts\/box\/enable"/);
});

test('the RAM columns say budget and free on the machine, with what new jobs get', async () => {
  const page = String(await hostsView([row('small', true, 'live')], ''));
  assert.match(page, /<th scope="col">RAM budget<\/th>/);
  assert.match(page, /<th scope="col">Free on the machine \(for new jobs\)<\/th>/);
  assert.match(page, /<td>20000 MB \(3488 MB for new jobs\)<\/td>/);
});
