/**
 * Wake-ups on PostgreSQL: one connection per store LISTENs on `baton_wake` (migration 0006's
 * triggers NOTIFY it) while anyone waits. pg does not listen again after a lost connection, so
 * this does: it wakes every waiter at once (a notification may have been missed; they look
 * again), then reconnects every second while anyone still waits. Until then, waiters fall back
 * on their timeouts.
 *
 * A placement this store made itself (payload `placed`, migration 0024, sent by one of its own
 * pool's connections) wakes none of its waiters: `baton up`'s dispatcher hands the jobs it placed
 * to its runner at once (up.ts) and looks again by itself when its batch was full
 * (dispatcher.ts). Woken, both read the queue beside the run that was starting, for nothing.
 * Another process's placements wake as before; a hand-off that did not happen (the placement's
 * answer lost) is found by the runner's poll. Any other change (payload empty) wakes only the
 * waiters that asked for `any`: it places no job on a runner.
 */
import type pg from 'pg';
import { PassfileClient } from './pgpass.js';
import { WakeHub, type Wakeups } from '../wakeups.js';

const RECONNECT_MS = 1000;

/** Closes a LISTEN connection that is no longer used, whatever state it is in. */
function drop(stale: pg.Client | null): void {
  if (stale === null) return;
  stale.removeAllListeners('notification');
  stale.on('error', () => {});
  void stale.end().catch(() => undefined);
}

export function postgresWakeups(
  config: pg.ClientConfig,
  ownBackend: (pid: number) => boolean,
): { wakeups: Wakeups; close: () => Promise<void> } {
  let client: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let retry: NodeJS.Timeout | null = null;
  let closed = false;

  const lost = (gone: pg.Client): void => {
    if (client !== gone) return;
    client = null;
    drop(gone);
    hub.wake();
    schedule();
  };
  const schedule = (): void => {
    if (closed || retry !== null || hub.waiting === 0) return;
    retry = setTimeout(() => {
      retry = null;
      void listen();
    }, RECONNECT_MS);
    retry.unref();
  };
  const listen = (): Promise<void> => {
    if (closed || client !== null || hub.waiting === 0) return Promise.resolve();
    connecting ??= (async () => {
      const fresh = new PassfileClient(config);
      fresh.on('error', () => lost(fresh));
      fresh.on('end', () => lost(fresh));
      fresh.on('notification', (msg) => {
        if (msg.payload !== 'placed') return hub.wake('other');
        if (!ownBackend(msg.processId)) hub.wake('placement');
      });
      try {
        await fresh.connect();
        await fresh.query('LISTEN baton_wake');
        if (closed || hub.waiting === 0) return drop(fresh);
        client = fresh;
        hub.wake(); // anything committed before LISTEN took effect: look once
      } catch {
        drop(fresh);
        schedule();
      }
    })().finally(() => (connecting = null));
    return connecting;
  };
  const hub = new WakeHub((active) => {
    if (active) return;
    drop(client);
    client = null;
  });
  return {
    wakeups: {
      waiter: async (wakeFor) => {
        const waiter = hub.add(wakeFor);
        await listen();
        return waiter;
      },
    },
    close: async () => {
      closed = true;
      if (retry !== null) clearTimeout(retry);
      await connecting;
      drop(client);
      client = null;
    },
  };
}
