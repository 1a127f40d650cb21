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

export async function keepSession(options: KeeperOptions): Promise<KeeperEnd> {
  let sinceBeatMs = Infinity;
  for (;;) {
    if (options.claude !== null && !isRunning(options.claude)) {
      await endSession(options);
      return 'claude-gone';
    }
    if (sinceBeatMs >= options.intervalMs) {
      sinceBeatMs = 0;
      const beat = await options.client.heartbeat({ session: options.session }).catch(() => null);
      // Ended by the hooks (SessionEnd), by an operator, or rescued as stale: nothing left to keep.
      if (beat !== null && !beat.ok) return 'session-ended';
    }
    const napMs = Math.min(WATCH_MS, options.intervalMs);
    await options.sleep(napMs);
    sinceBeatMs += napMs;
  }
}

/** Ends the session, retrying while the database is away: its claim must not outlive Claude Code. */
async function endSession(options: KeeperOptions): Promise<void> {
  for (let attempt = 1; attempt <= END_TRIES; attempt++) {
    try {
      await options.client.endSession(options.session);
      return;
    } catch {
      await options.sleep(options.intervalMs);
    }
  }
}
