/**
 * What a finished agent run means for its job and its claim, decided from what the runner saw:
 * why it killed the agent (if it did), how the agent exited, and whether the kernel's OOM killer
 * acted. Pure, so every branch is tested without a process; the runner only applies the verdict.
 */

/** Why the runner killed an agent's scope, if it did. */
export type KillReason = 'fenced' | 'cancelled' | 'escalated' | 'oom' | 'shutdown' | 'stalled' | 'timed_out';

export interface RunObservation {
  readonly killedFor: KillReason | null;
  /**
   * Whether the kill as fenced was its runner's own fence (a refused heartbeat, or woken past the
   * agents' watchdog), not its claim's or its job's move. Absent: not.
   */
  readonly runnerFenced?: boolean;
  readonly exit: { readonly code: number | null; readonly signal: string | null };
  /** The job's own scope counted OOM kills (a cgroup with a memory controller). */
  readonly oomInScope: boolean;
  /** Without a count of the scope's own: the machine's OOM count rose while the agent got SIGKILL. */
  readonly oomOnMachine: boolean;
  readonly peakRssMb: number;
  readonly budgetMb: number | null;
  readonly containment: string;
  /** Why a stalled run was stopped (run-progress.ts), when it was. */
  readonly stallReason: string | null;
  /** Why a run past its time limit was stopped (run-limit.ts), when it was. */
  readonly timeoutReason?: string | null | undefined;
}

export type RunVerdict =
  /** Nothing is written to the job: it is no longer ours (fenced), or someone else ended it. */
  | { readonly kind: 'leave'; readonly release: 'released' | null; readonly log: string }
  | {
      readonly kind: 'finish';
      readonly status: 'done' | 'failed' | 'oom_killed';
      readonly exitCode: number | null;
      readonly reason: string | null;
      /** Whether the output's tail is kept with the job. */
      readonly keepTail: boolean;
      readonly release: 'done' | 'failed';
      readonly log: string;
    }
  /**
   * A crash by a signal nobody here sent: retry under the policy, the attempt counted. Or the
   * runner shutting down gracefully: requeued at once, the attempt not counted.
   */
  | {
      readonly kind: 'requeue';
      readonly reason: string;
      readonly release: 'failed' | 'released';
      readonly attemptCounts: boolean;
    };

export function judgeRun(observation: RunObservation): RunVerdict {
  switch (observation.killedFor) {
    case 'fenced':
      // An agent its runner's fence found already exited 0 (the kill is SIGKILL, and a shim whose
      // watchdog killed the agent exits SILENT_RUNNER_EXIT): its own success, which the job's
      // guard writes if the job is still this runner's, instead of running the work again.
      if (
        observation.runnerFenced === true &&
        observation.exit.code === 0 &&
        observation.exit.signal === null
      ) {
        const own = judgeExit(observation);
        return own.kind === 'finish'
          ? { ...own, log: `${own.log}: exited 0 before its runner's fence` }
          : own;
      }
      // The job is no longer ours to report on, least of all as a success.
      return { kind: 'leave', release: null, log: 'agent killed (fenced)' };
    case 'shutdown':
      // The operator stopped the host, not the agent failing: back to the queue at once, the
      // attempt given back (a runner that dies instead is rescued, its attempt counted).
      return { kind: 'requeue', reason: 'runner shut down', release: 'released', attemptCounts: false };
    case 'cancelled':
      return { kind: 'leave', release: 'released', log: 'cancelled, process tree killed' };
    case 'escalated':
      return { kind: 'leave', release: null, log: 'escalated to a human, process tree killed' };
    case 'stalled': {
      const reason = observation.stallReason ?? 'stalled';
      return failed('failed', null, reason, `failed, ${reason}`);
    }
    case 'timed_out': {
      // Failed like any failing agent, not requeued: a run that ran past its limit would run past it again.
      const reason = observation.timeoutReason ?? 'timed out';
      return failed('failed', null, reason, `failed, ${reason}`);
    }
    case 'oom':
    case null:
      return judgeExit(observation);
  }
}

function judgeExit(observation: RunObservation): RunVerdict {
  const rss = Math.round(observation.peakRssMb);
  const budget = observation.budgetMb ?? 0;
  if (observation.killedFor === 'oom' || observation.oomInScope || observation.oomOnMachine) {
    const reason = observation.oomInScope
      ? `killed by the kernel OOM killer at its ${budget} MB budget (${observation.containment}, peak ${rss} MB)`
      : observation.killedFor === 'oom'
        ? `RSS ${rss} MB passed the ${budget} MB budget`
        : // The machine's OOM count moved while this job died unasked: its own cgroup cannot say.
          'killed by the kernel OOM killer';
    return failed('oom_killed', null, reason, `oom_killed, ${reason}`);
  }
  if (observation.exit.signal !== null) {
    const reason = `agent killed by ${observation.exit.signal}`;
    return { kind: 'requeue', reason, release: 'failed', attemptCounts: true };
  }
  const exitCode = observation.exit.code ?? 128;
  if (exitCode === 0) {
    return {
      kind: 'finish',
      status: 'done',
      exitCode,
      reason: null,
      keepTail: false,
      release: 'done',
      log: 'done',
    };
  }
  const reason = `exit code ${exitCode}${SHELL_EXITS.get(exitCode) ?? ''}`;
  return failed('failed', exitCode, reason, `failed (${reason})`);
}

/**
 * The exits the shell that runs an agent command (`sh -c`) makes itself, named: a newcomer whose
 * `claude -p …` fails at once sees why in `baton queue list`, not a bare number. An agent may exit
 * so for its own reasons too, hence "as the shell exits when".
 */
const SHELL_EXITS: ReadonlyMap<number, string> = new Map([
  [
    126,
    ': as the shell exits when it found the program but could not run it (not executable, or a directory)',
  ],
  [
    127,
    ": as the shell exits when it finds no such command (not on baton up's PATH?" +
      " `baton doctor --agent-command '<command>'` checks it)",
  ],
]);

function failed(
  status: 'failed' | 'oom_killed',
  exitCode: number | null,
  reason: string,
  log: string,
): RunVerdict {
  return { kind: 'finish', status, exitCode, reason, keepTail: true, release: 'failed', log };
}
