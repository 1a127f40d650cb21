/**
 * Starting one agent process: its command rendered from the template (placeholders become quoted
 * environment references, core/command-template.ts), its environment from the allowlist
 * (agent-env.ts), its scope from the host's containment (a cgroup it enters before the command
 * runs, or the shim's process group), and its output to a private log file and a tail kept
 * for the job's record.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { templateEnvironment } from '../core/command-template.js';
import { withoutPassword } from '../core/redact.js';
import type { JobScope } from '../os/containment.js';
import { RUN_MARKER } from '../os/group-scope.js';
import { agentEnvironment, withoutDatabase } from './agent-env.js';
import { JobLog } from './job-log.js';

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
}

export interface AgentProcess {
  readonly child: ChildProcess;
  /** The last few thousand characters of its output. */
  tail(): string;
  /** Why output did not reach the log file, or null. */
  logProblem(): string | null;
}

export function spawnAgent(params: AgentSpawnParams): AgentProcess {
  const logFile = new JobLog(params.logDir, params.logName, params.logMaxBytes, params.onLogProblem);
  const { file, args } = params.scope.spawnArgs(params.command);
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
  const env = { ...(params.api == null ? all : withoutDatabase(all, params.dbUrl)), ...reach };
  const child = spawn(file, args, {
    cwd: params.cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  if (child.pid !== undefined) params.scope.started(child.pid);
  let tail = '';
  const collect = (chunk: Buffer): void => {
    logFile.write(chunk);
    params.onOutput?.(chunk.length);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('exit', () => void logFile.end());
  child.on('error', () => void logFile.end());
  return { child, tail: () => tail, logProblem: () => logFile.problem() };
}
