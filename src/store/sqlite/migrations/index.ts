import kernel from './0001-kernel.js';
import dispatch from './0002-dispatch.js';
import workspaces from './0003-workspaces.js';
import effects from './0004-effects.js';
import queueIndex from './0005-queue-index.js';
import wake from './0006-wake.js';
import leanIndexes from './0007-lean-indexes.js';
import hostLoadIndex from './0009-host-load-index.js';
import progress from './0010-progress.js';
import containment from './0011-containment.js';
import taskLifecycle from './0012-task-lifecycle.js';
import ledgerSeals from './0013-ledger-seals.js';
import tokens from './0014-tokens.js';
import github from './0015-github.js';
import hostLoadCovering from './0016-host-load-covering.js';
import jobLeases from './0017-job-leases.js';
import disk from './0018-disk.js';
import runTokens from './0021-run-tokens.js';
import quietStart from './0022-quiet-start.js';
import handOff from './0023-hand-off.js';
import sessionEnd from './0027-session-end.js';
import sessionEndedBy from './0028-session-ended-by.js';
import checkpointsByLastId from './0030-checkpoints-by-last-id.js';
import outputStream from './0031-output-stream.js';
import hostDraining from './0032-host-draining.js';
import taskDependencies from './0033-task-dependencies.js';
import runTimeLimit from './0034-run-time-limit.js';
import jobRetention from './0035-job-retention.js';
import hostTimeLimit from './0036-host-time-limit.js';
import statsMarks from './0037-stats-marks.js';
import statsRetentionLog from './0038-stats-retention-log.js';
import rareFinishes from './0039-rare-finishes.js';
import liveTasks from './0040-live-tasks.js';
import tokensByJob from './0041-tokens-by-job.js';
import tasksByPriority from './0042-tasks-by-priority.js';
import timeLimitSweep from './0043-time-limit-sweep.js';
import hostAgentCommand from './0044-host-agent-command.js';
import statsKeptLedger from './0045-stats-kept-ledger.js';
import outputTrimWalks from './0046-output-trim-walks.js';
import tokenRevokedBy from './0047-token-revoked-by.js';
import queueByCommand from './0048-queue-by-command.js';
import sessionReportOutcomes from './0049-session-report-outcomes.js';
import githubKeysLowerCase from './0050-github-keys-lower-case.js';
import feedbackFrom from './0051-feedback-from.js';
import resolveNoteComment from './0052-resolve-note-comment.js';
import tokenLoginOf from './0053-token-login-of.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Applied in order, each once, inside one BEGIN IMMEDIATE with the version check. */
export const MIGRATIONS: readonly Migration[] = [
  kernel,
  dispatch,
  workspaces,
  effects,
  queueIndex,
  wake,
  leanIndexes,
  hostLoadIndex,
  progress,
  containment,
  taskLifecycle,
  ledgerSeals,
  tokens,
  github,
  hostLoadCovering,
  jobLeases,
  disk,
  runTokens,
  quietStart,
  handOff,
  sessionEnd,
  sessionEndedBy,
  checkpointsByLastId,
  outputStream,
  hostDraining,
  taskDependencies,
  runTimeLimit,
  jobRetention,
  hostTimeLimit,
  statsMarks,
  statsRetentionLog,
  rareFinishes,
  liveTasks,
  tokensByJob,
  tasksByPriority,
  timeLimitSweep,
  hostAgentCommand,
  statsKeptLedger,
  outputTrimWalks,
  tokenRevokedBy,
  queueByCommand,
  sessionReportOutcomes,
  githubKeysLowerCase,
  feedbackFrom,
  resolveNoteComment,
  tokenLoginOf,
];
