/** What `baton up` runs with (cli/commands/up.ts builds it from the flags; daemon/up.ts runs it). */
import type { AgentUidRange } from '../core/agent-uids.js';
import type { ContainmentChoice } from '../core/containment.js';
import type { LogPrunePolicy } from '../os/log-prune.js';
import type { AgentUids } from './agent-uids.js';
import type { LeaderDuty } from './leader-duties.js';
import type { StallPolicy } from './run-progress.js';
import type { Recheck } from './run-recheck.js';
import type { LeaderSealing } from './sealer.js';

export interface UpOptions {
  readonly dbUrl: string;
  readonly host: string;
  readonly leaseTtlMs: number;
  readonly retryIntervalMs: number;
  readonly heartbeatIntervalMs: number;
  readonly staleAfterMs: number;
  readonly pollIntervalMs: number;
  readonly recoveryIntervalMs: number;
  readonly slotsMax: number;
  readonly ramTotalMb: number | null;
  readonly ramReservedMb: number;
  readonly standby: boolean;
  readonly agentCommand: string | null;
  readonly logDir: string;
  /** The cap of each job's log (job-log.ts), and how long and how much of the logs are kept. */
  readonly logMaxBytes?: number | undefined;
  readonly logKeep?: LogPrunePolicy | undefined;
  /** How to keep each job's processes together: a kind, or `auto` for the best this host allows. */
  readonly containment?: ContainmentChoice | undefined;
  /** Variables (or NAME* prefixes) agents inherit beyond the allowlist (agent-env.ts). */
  readonly agentEnv?: readonly string[] | undefined;
  /** Where worktrees of `worktree` workspaces are made, one per claim; default beside logDir. */
  readonly worktreeDir?: string | undefined;
  readonly cwd: string;
  /** A running job with no progress mark for this long is stalled; the action says what then. */
  readonly stall?: StallPolicy | undefined;
  /** The limit on a run's length for jobs queued without one of their own (run-limit.ts). */
  readonly timeLimitMs?: number | null | undefined;
  /** The HTTP API this process serves, if any: agents reach Baton there with a token (agent-token.ts). */
  readonly apiUrl?: string | null | undefined;
  /** Seal the ledger while leading (sealer.ts); null: this process does not seal. */
  readonly ledger?: LeaderSealing | null;
  /** Finished jobs are kept this long, then removed while leading (decision 0039); null: for ever. */
  readonly retainJobsMs?: number | null | undefined;
  /** Applied GitHub outbox rows are kept this long, then removed while leading (decision 0013); null: for ever. */
  readonly retainOutboxMs?: number | null | undefined;
  /** Work done only while leading (the GitHub backlog's sync and projector). */
  readonly leaderDuties?: readonly LeaderDuty[] | undefined;
  /** Asked before each run is spawned (the GitHub issue's re-check); may cancel the run. */
  readonly recheck?: Recheck | undefined;
  /** Each running agent's memory in MB by its job's pid, for the dashboard (agent-run-options.ts). */
  readonly memoryByPid?: Map<number, number> | undefined;
  /** --agent-uids: each running agent runs as a uid of its own from this range (agent-uids.ts). */
  readonly agentUids?: AgentUidRange | null | undefined;
  /** The pool of those uids, made by runUp. */
  readonly uids?: AgentUids | null | undefined;
  /**
   * --drain: on a stop, how long the running agents may take to finish before they are killed
   * and their jobs requeued (drain.ts); 0 or left out, at once.
   */
  readonly drainMs?: number | undefined;
  /** Aborted by a second signal: a drain under way ends at once. */
  readonly stopNow?: AbortSignal | undefined;
}
