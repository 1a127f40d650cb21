/**
 * Progress of one agent run, apart from its liveness (core/progress.ts). The run feeds it the
 * bytes its agent prints; each tick sends them as a mark, looks at the run's worktree for changed
 * files and commits (workspace runs only: a cognitive run shares the runner's directory), and
 * then asks the store whether the run has stalled, judged on the database clock together with
 * the marks the agent's hooks and MCP calls made. A stall is logged and audited once; with the
 * action `kill` the run must end, failed with reason `stalled`; with `escalate` the run hands its
 * task to a human, asked again on every tick until the store has answered.
 */
import type { Job } from '../core/job.js';
import { STALL_ACTION_DEFAULT, STALL_AFTER_MS_DEFAULT, type StallAction } from '../core/progress.js';
import { sampleWorktree, worktreeChanges, type WorktreeSample } from '../os/worktree-changes.js';
import type { AgentIdentity } from '../os/agent-uid.js';
import type { Store } from '../store/store.js';

export interface StallPolicy {
  /** A running job with no progress mark for this long is stalled. */
  readonly stallAfterMs: number;
  /** What then: `escalate` hands it to a human, `kill` fails it (reason `stalled`), `none` only reports. */
  readonly action: StallAction;
}

/** 15 minutes, then a human is asked. */
export const DEFAULT_STALL_POLICY: StallPolicy = {
  stallAfterMs: STALL_AFTER_MS_DEFAULT,
  action: STALL_ACTION_DEFAULT,
};

export interface RunProgressOptions {
  readonly store: Store;
  readonly job: Job;
  readonly runnerSession: number;
  readonly agentSession: number;
  /** The worktree or workspace directory to watch, or null for a run without a workspace. */
  readonly workspaceDir: string | null;
  /** The agent's uid, with --agent-uids: its worktree is looked at with its rights (os/git.ts). */
  readonly gitAs?: AgentIdentity | undefined;
  readonly stall: StallPolicy;
  readonly log: (line: string) => void;
}

export class RunProgress {
  private pendingBytes = 0;
  private sample: WorktreeSample | null = null;
  private lastProgressAt: number | null = null;
  /** A stall to escalate that the store has not yet taken (the escalation failed or is pending). */
  private escalation = false;

  constructor(private readonly options: RunProgressOptions) {}

  /** Looks at the worktree before the agent starts, so its first changes count. */
  async baseline(): Promise<void> {
    if (this.options.workspaceDir !== null)
      this.sample = await sampleWorktree(this.options.workspaceDir, this.options.gitAs).catch(() => null);
  }

  /** Counts output the agent printed; sent with the next tick. */
  output(bytes: number): void {
    this.pendingBytes += bytes;
  }

  /** Sends the output counted since the last tick: the agent's last words, once it has exited. */
  async flush(): Promise<void> {
    await this.markOutput().catch(() => undefined);
  }

  /** When the run was marked stalled, its last progress (ms since the epoch); null while progressing. */
  get stalledSince(): number | null {
    return this.lastProgressAt;
  }

  /**
   * Sends the marks gathered since the last tick, then judges a stall: 'kill' when the run must
   * end, 'escalate' while its stall waits to be handed to a human (see escalate()).
   */
  async tick(): Promise<'kill' | 'escalate' | null> {
    if (this.escalation) return 'escalate';
    // A mark that fails (the database is away) must not keep the stall from being judged.
    await this.markOutput().catch(() => undefined);
    await this.markWorktree().catch(() => undefined);
    const { job, runnerSession } = this.options;
    const guard = { id: job.id, session: runnerSession, epoch: job.epoch };
    const verdict = await this.options.store.progress.markStalled({
      ...guard,
      stallAfterMs: this.options.stall.stallAfterMs,
    });
    if (verdict.stalled) {
      this.lastProgressAt = verdict.lastProgressAt;
      const since = new Date(verdict.lastProgressAt).toISOString();
      this.options.log(
        `job ${job.id} ${job.key}: stalled, no progress since ${since} (action ${this.options.stall.action})`,
      );
      if (this.options.stall.action === 'kill') return 'kill';
      if (this.options.stall.action === 'escalate') {
        this.escalation = true;
        return 'escalate';
      }
    } else if (verdict.reason === 'progressing') {
      this.lastProgressAt = null;
    }
    return null;
  }

  /**
   * Hands the stalled run's task to a human under the agent's claim: the claim and the job end
   * `escalated` in one step; true when the run must then be killed. Fenced means the task is no
   * longer this run's to escalate (the heartbeat kills it); a failure leaves it for the next tick.
   */
  async escalate(claimEpoch: number): Promise<boolean> {
    const { job } = this.options;
    try {
      const result = await this.options.store.lifecycle.escalate({
        key: job.key,
        reason: this.reason(),
        by: { name: `runner of job ${job.id}`, session: this.options.runnerSession },
        claim: { session: this.options.agentSession, epoch: claimEpoch },
      });
      this.escalation = false;
      if (result.ok) this.options.log(`job ${job.id} ${job.key}: stalled, escalated to a human`);
      return result.ok;
    } catch {
      return false; // The database is away: the next tick asks again.
    }
  }

  /** Why a run killed for a stall failed: the job's reason. */
  reason(): string {
    const since = this.lastProgressAt === null ? '' : ` since ${new Date(this.lastProgressAt).toISOString()}`;
    return `stalled: no progress${since} (stall-after ${this.options.stall.stallAfterMs / 1000} s)`;
  }

  private async markOutput(): Promise<void> {
    const bytes = this.pendingBytes;
    if (bytes === 0) return;
    this.pendingBytes = 0;
    try {
      await this.mark({ outputBytes: bytes, note: 'output' });
    } catch (error) {
      this.pendingBytes += bytes;
      throw error;
    }
  }

  private async markWorktree(): Promise<void> {
    const dir = this.options.workspaceDir;
    if (dir === null) return;
    const next = await sampleWorktree(dir, this.options.gitAs);
    const before = this.sample;
    this.sample = next;
    if (before === null || next === null) return;
    const { filesChanged, commits } = await worktreeChanges(dir, before, next, this.options.gitAs);
    if (filesChanged === 0 && commits === 0) return;
    const note =
      commits > 0
        ? `commit ${next.head?.slice(0, 7) ?? ''}`
        : `${filesChanged} file${filesChanged > 1 ? 's' : ''} changed`;
    await this.mark({ filesChanged, commits, note });
  }

  private async mark(change: {
    outputBytes?: number;
    filesChanged?: number;
    commits?: number;
    note: string;
  }) {
    await this.options.store.progress.mark({ session: this.options.agentSession, ...change });
  }
}
