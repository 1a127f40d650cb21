/**
 * The database lost while `baton up` drains (docs/decisions/0034-graceful-drain.md): its lease
 * cannot be resigned and its session cannot be ended. It used to say `stepped down from term N
 * (stopped)` and `left the cluster`, and exit 0, as after a clean drain. It now says that it could
 * not resign (the lease lasts until its TTL) and that its session was left to the leader's rescue,
 * and exits 5 (the database unreachable). A real `baton up` on a real PostgreSQL, through a relay
 * the test closes (support/pg-relay.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { server, upBehindRelay } from '../support/pg-relay.js';
import { waitUntil } from '../support/wait.js';

const skip = server === undefined ? 'no PostgreSQL server' : false;

test(
  'the database lost as baton up drains: no resign, no session end, not "left the cluster", exit 5',
  { skip },
  async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-drain-lost-'));
    // A long --stale-after: the runner trusts itself through the outage rather than fencing.
    const flags = ['--no-http', '--stale-after', '60s', '--lease-ttl', '5s', '--drain', '3s'];
    const up = await upBehindRelay(flags, cwd);
    const store = await openStore(up.direct);
    try {
      await store.jobs.enqueue({ key: 'long', command: 'exec sleep 60' });
      await waitUntil(() => /job \d+ long: running as pid/.test(up.out()), 30_000, 'the agent to run').catch(
        (error: unknown) => assert.fail(`${String(error)}:\n${up.out()}`),
      );
      up.relay.down().catch(() => undefined); // refuses from now on; it keeps the port closed
      await new Promise((resolve) => setTimeout(resolve, 200));
      up.signal('SIGTERM');
      const code = await up.exited();
      const out = up.out();
      assert.match(
        out,
        /stepped down from term 1, but could not resign its lease \(.*\): it expires on its own within its TTL \(5 s\)/,
        out,
      );
      assert.doesNotMatch(out, /stepped down from term 1 \(stopped\)/, out);
      assert.doesNotMatch(out, /left the cluster/, out);
      assert.match(
        out,
        /baton: baton up stopped, but its session (\d+) could not be ended \(.*\): it is left to the leader's rescue/,
        out,
      );
      assert.equal(code, 5, out);
      // The database again: the session is live on paper, as the line said, and its job with it.
      const session = Number(/its session (\d+) could not be ended/.exec(out)?.[1]);
      const row = await store.sessions.get(session);
      assert.equal(row?.endedAt, null, JSON.stringify(row));
    } finally {
      up.signal('SIGKILL');
      await up.exited();
      await store.close();
    }
  },
);
