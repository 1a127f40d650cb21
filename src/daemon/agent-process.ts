/**
 * Starting one agent process: its command rendered from the template (placeholders become quoted
 * environment references, core/command-template.ts), its environment from the allowlist
 * (agent-env.ts), its scope from the host's containment (a cgroup it enters before the command
 * runs, or the shim's process group), and its output to a private log file and a tail kept
 * for the job's record.
 */
import { spawn } from 'node:child_process';
import { templateEnvironment } from '../core/command-template.js';
import { withoutPassword } from '../core/redact.js';
import type { Job } from '../core/job.js';
import type { Containment, JobScope } from '../os/containment.js';
import { RUN_MARKER } from '../os/group-scope.js';
import type { WaitingAgent } from '../os/launcher.js';
import { agentEnvironment, withBatonOnPath, withoutDatabase } from './agent-env.js';
import { asAgent, type AgentIdentity } from '../os/agent-uid.js';
import { guardPushOptions, hasGuardedRemote, withPushOptions } from './agent-push-options.js';
import { JobLog, withLogProblem } from './job-log.js';

const TAIL_CHARS = 4000;

export interface AgentSpawnParams {
  /** The shell text to run, already rendered. */
  readonly command: string;
  readonly cwd: string;
  readonly scope: JobScope;
  readonly logDir: string;
  readonly logName: string;
  /** The cap of the log file: its head and its tail are kept (job-log.ts). */
  readonly logMaxBytes: number;
  /** Told when the log cannot be written (a full disk): the job goes on, its output dropped. */
  readonly onLogProblem: (problem: string) => void;
  /** When the job was queued: an older log file of the same name is another job's (job-log.ts). */
  readonly queuedAt?: number | undefined;
  /** The template's values (BATON_KEY, BATON_TITLE, …). */
  readonly values: Parameters<typeof templateEnvironment>[0];
  /** The runner's database URL; the agent gets it without its password, unless `api` is given. */
  readonly dbUrl: string;
  /**
   * The HTTP API the agent reaches Baton through instead, with its own token (scope `agent`,
   * bound to its session): then it gets BATON_URL and BATON_TOKEN and no way into the database.
   */
  readonly api?: { readonly url: string; readonly token: string } | null | undefined;
  /** Names (or NAME* prefixes) the operator lets agents inherit (--agent-env). */
  readonly agentEnv: readonly string[];
  /** Further BATON_* values: the job's epoch and budget, the workspace and branch. */
  readonly more: Readonly<Record<string, string>>;
  /** Told the size of each chunk of output, as a progress mark (run-progress.ts). */
  readonly onOutput?: ((bytes: number) => void) | undefined;
  /** The agent's process, forked by the runner's launcher and waiting in the scope's cgroups. */
  readonly waiting?: WaitingAgent | null | undefined;
  /** The uid it runs as (--agent-uids): its command drops to it once in its scope, with its own HOME. */
  readonly identity?: AgentIdentity | undefined;
}

/** What a run needs of its agent's process, a ChildProcess or a LaunchedAgent: pid and `exit`. */
export interface AgentChild {
  readonly pid?: number | undefined;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

export interface AgentProcess {
  readonly child: AgentChild;
  /** The last few thousand characters of its output. */
  tail(): string;
  /** Why output did not reach the log file (cut at its cap, or a write failed), or null. */
  logProblem(): string | null;
  /**
   * Resolves once its log file is closed, the cap's marker and tail written: the run is reported
   * ended only then, so a follower (`baton job log --follow`) that sees it ended reads it whole.
   */
  logClosed(): Promise<void>;
}

/** A job's scope made as its run begins, and its agent's process waiting in it (launcher.ts). */
export interface EarlyScope {
  readonly scope: JobScope;
  readonly waiting: WaitingAgent | null;
}

/**
 * The job's scope with its agent's process waiting in it: the containment's warm slot when one is
 * ready (made before the job came), else the scope made now and the process forked into it, to
 * wait for its command while the run makes its store calls; null when the scope is refused (the
 * run's start makes it again and reports why).
 */
export async function prepareScope(
  containment: Containment,
  job: Pick<Job, 'id' | 'epoch' | 'ramMb'>,
): Promise<EarlyScope | null> {
  const warm = containment.warmScope(job.id, job.epoch, job.ramMb);
  if (warm !== null) return warm;
  const scope = containment.scope(job.id, job.epoch, job.ramMb);
  try {
    scope.create();
  } catch {
    await scope.close();
    return null;
  }
  const enter = scope.enterFiles();
  const waiting =
    enter === null || containment.launcher === null ? null : await containment.launcher.prepare(enter);
  return { scope, waiting };
}

/** What the agent's git pushes with (agent-push-options.ts): none without a guarded remote. */
async function pushOptionsFor(params: AgentSpawnParams): Promise<string[]> {
  if (!(await hasGuardedRemote(params.cwd))) return [];
  const { key, epoch, session } = params.values;
  return guardPushOptions({
    key: String(key),
    epoch: Number(epoch),
    session: Number(session),
    token: params.api?.token,
  });
}

/**
 * Starts the agent: through the launcher where there is one (no fork of this process), else by
 * spawn(); either way in its own session, with its scope's file and arguments.
 */
export async function spawnAgent(params: AgentSpawnParams): Promise<AgentProcess> {
  const { logDir, logName, logMaxBytes, onLogProblem, queuedAt } = params;
  const logFile = new JobLog(logDir, logName, logMaxBytes, onLogProblem, queuedAt);
  const who = params.identity;
  const command = who === undefined ? params.command : asAgent(params.command, who);
  const { file, args } = params.scope.spawnArgs(command);
  const reach: Record<string, string> =
    params.api == null
      ? { BATON_DB: withoutPassword(params.dbUrl) }
      : { BATON_URL: params.api.url, BATON_TOKEN: params.api.token };
  const own = {
    ...templateEnvironment(params.values),
    [RUN_MARKER]: params.scope.marker,
    ...params.scope.env(),
    ...params.more,
  };
  const all = agentEnvironment(process.env, params.agentEnv, own);
  // Its own HOME and TMPDIR, and a name (no passwd entry needed) in place of the runner's.
  const name = who === undefined ? '' : `baton-${who.uid}`;
  const user = who === undefined ? {} : { HOME: who.home, TMPDIR: who.tmp, USER: name, LOGNAME: name };
  const env = withPushOptions(
    withBatonOnPath({
      ...(params.api == null ? all : withoutDatabase(all, params.dbUrl)),
      ...reach,
      ...user,
    }),
    await pushOptionsFor(params),
  );
  let tail = '';
  const collect = (chunk: Buffer): void => {
    logFile.write(chunk);
    params.onOutput?.(chunk.length);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
  };
  const request = { file: '/bin/sh', args: ['-c', command], cwd: params.cwd, env };
  const launched = (await params.waiting?.start(request)) ?? null;
  if (launched !== null) {
    params.scope.started(launched.pid);
    launched.output.on('data', collect);
    launched.output.on('error', () => {});
    launched.on('exit', () => void logFile.end());
    return {
      child: launched,
      tail: () => tail,
      logProblem: () => withLogProblem(logFile.cut(), logFile.problem()),
      logClosed: () => logFile.end(),
    };
  }
  const child = spawn(file, args, {
    cwd: params.cwd,
    detached: true,
    // A pinged shim's stdin is the pipe of its watchdog (os/watchdog.ts); its agent gets /dev/null.
    stdio: [params.scope.pinged ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    env,
  });
  if (child.pid !== undefined) params.scope.started(child.pid, child.stdin);
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('exit', () => void logFile.end());
  child.on('error', () => void logFile.end());
  return {
    child,
    tail: () => tail,
    logProblem: () => withLogProblem(logFile.cut(), logFile.problem()),
    logClosed: () => logFile.end(),
  };
}
