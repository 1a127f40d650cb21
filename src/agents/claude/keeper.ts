/**
 * The keeper of a Baton session the Claude Code hooks started: a small detached process that
 * heartbeats the session while the Claude Code process lives (hooks run only around tool calls,
 * and a person may think for minutes between them), and ends the session, releasing its claim,
 * once Claude Code is gone without its SessionEnd hook (killed, crashed). It stops by itself
 * when the session ends or is declared stale. This is liveness only: progress comes from the
 * tool calls.
 */
import type { SessionId } from '../../core/session.js';
import { isRunning, type ProcessIdentity } from '../../os/process-ancestry.js';
import type { AgentClient } from '../client.js';

export interface KeeperOptions {
  readonly client: AgentClient;
  readonly session: SessionId;
  /** The Claude Code process; null to keep the session until it ends. */
  readonly claude: ProcessIdentity | null;
  readonly intervalMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

export type KeeperEnd = 'session-ended' | 'claude-gone';

const END_TRIES = 30;

/** How often the keeper looks whether Claude Code still runs (a read of /proc). */
const WATCH_MS = 250;

export async function keepSession(o: KeeperOptions): Promise<KeeperEnd> {
  let sinceBeatMs = Infinity;
  for (;;) {
    if (o.claude !== null && !isRunning(o.claude)) {
      await endSession(o);
      return 'claude-gone';
    }
    if (sinceBeatMs >= o.intervalMs) {
      sinceBeatMs = 0;
      const beat = await o.client.heartbeat({ session: o.session }).catch(() => null);
      // Ended by the hooks (SessionEnd), by an operator, or rescued as stale: nothing left to keep.
      if (beat !== null && !beat.ok) return 'session-ended';
    }
    const napMs = Math.min(WATCH_MS, o.intervalMs);
    await o.sleep(napMs);
    sinceBeatMs += napMs;
  }
}

/** Ends the session, retrying while the database is away: its claim must not outlive Claude Code. */
async function endSession(o: KeeperOptions): Promise<void> {
  for (let attempt = 1; attempt <= END_TRIES; attempt++) {
    try {
      await o.client.endSession(o.session);
      return;
    } catch {
      await o.sleep(o.intervalMs);
    }
  }
}
