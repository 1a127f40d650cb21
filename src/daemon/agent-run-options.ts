/** What a runner hands each of its agent runs (agent-run.ts). */
import type { RetryPolicy } from '../core/retry.js';
import type { Clock } from '../core/time.js';
import type { Containment } from '../os/containment.js';
import type { Store } from '../store/store.js';
import type { StallPolicy } from './run-progress.js';
import type { Recheck } from './run-recheck.js';
import type { AgentUids } from './agent-uids.js';
import type { OutputStreamer } from './output-stream.js';

export interface AgentRunOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly host: string;
  readonly runnerSession: number;
  readonly dbUrl: string;
  /** How this host keeps each job's processes together (cgroup or process group). */
  readonly containment: Containment;
  /** Variables (or NAME* prefixes) agents inherit beyond the allowlist (agent-env.ts). */
  readonly agentEnv: readonly string[];
  readonly logDir: string;
  readonly logMaxBytes?: number | undefined; // the cap of each job's log (job-log.ts)
  readonly defaultCommand: string | null;
  readonly heartbeatIntervalMs: number;
  readonly sampleIntervalMs: number;
  /** Without a successful heartbeat for this long, the agent is presumed fenced and killed. */
  readonly trustMs: number;
  /** Where cognitive runs (lock mode none) run: the runner's own directory. */
  readonly cwd: string;
  /** Where the worktrees of `worktree` workspaces are made, one per claim. */
  readonly worktreeDir: string;
  readonly policy: RetryPolicy;
  /** When a run with no progress mark is stalled, and what then (run-progress.ts). */
  readonly stall: StallPolicy;
  /** The limit on a run's length for jobs without one of their own (run-limit.ts); none when left out. */
  readonly timeLimitMs?: number | null | undefined;
  readonly log: (line: string) => void;
  /** The TTL of the agent's session: the runner's stale threshold (agents heartbeat in seconds). */
  readonly sessionTtlMs?: number | undefined;
  readonly recheck?: Recheck | undefined; // run-recheck.ts
  /** The HTTP API this process serves: agents reach Baton there, with a token (agent-token.ts). */
  readonly apiUrl?: string | null | undefined;
  /**
   * Where each running agent's last memory sample goes, in MB by the pid its job records, while it
   * runs: `baton up`'s dashboard shows it against the budget in the claims view.
   */
  readonly memoryByPid?: Map<number, number> | undefined;
  /** With `baton up --agent-uids`: the uids agents run as, one per running agent (agent-uids.ts). */
  readonly agentUids?: AgentUids | null | undefined;
  /** The runner's output stream (output-stream.ts): a run is watched once spawned, ended before it reports. */
  readonly output?: OutputStreamer | undefined;
}
