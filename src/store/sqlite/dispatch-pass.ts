/**
 * A dispatcher pass on SQLite (docs/decisions/0016-set-based-dispatch.md): the candidates in one
 * read, the placements in write transactions of at most PLACE_CHUNK jobs with a turn of the
 * event loop between them, and the waiting reasons and skips in one more. better-sqlite3 runs
 * every statement on the event loop, so no step of the pass may grow with its batch: the runner's
 * heartbeat and the lease's renewal are timers on that loop.
 */
import { assert } from '../../core/assert.js';
import type { DispatchCandidate } from '../../core/dispatch-plan.js';
import {
  candidateOf,
  type CandidateColumns,
  type CandidateHolderJson,
  type CandidateWorkspaceJson,
} from '../dispatch-candidate.js';
import type { DispatchStore, PlaceResult } from '../dispatch-store.js';
import { placeOne, termIsCurrent } from './dispatch.js';
import { appendAudit, toJob, type JobRow } from './rows.js';
import { fromSync, type SqliteExecutor } from './executor.js';
import { blockerOf, OPEN, taskOpen } from './claim-set.js';
import { existingWorkspace } from './workspaces.js';
import { AGENT_COMMAND_HOST } from './hosts.js';

/** Placements per write transaction: about a millisecond of work on this machine. */
const PLACE_CHUNK = 64;

/**
 * A job (aliased `job`) without a command while no enabled host has a live runner with an agent command
 * (AGENT_COMMAND_HOST): held, read for its reason and never one of the `limit` that may run, so
 * no number of them ahead hides a job that may (decision 0047). While one is live, those jobs are
 * walked apart from the jobs with a command (BARE; review fixes), so neither kind hides the other.
 */
const WAITS_FOR_AGENT_COMMAND = (job: string): string =>
  `(${job}.command IS NULL AND NOT ${AGENT_COMMAND_HOST})`;

/**
 * The queued jobs of open tasks in dispatch order (through jobs_queue), each with what its
 * workspace plan is resolved from: the task's requirements, its assignee when that names an
 * agent, its project, the workspaces those bind with their live locks, and the task's live claim.
 */
const candidateRows = (jobs: string, where: string): string => `
  SELECT j.*, t.key, t.gate, ${blockerOf('t')} AS blocker, t.requires_filesystem, t.workspace AS task_workspace,
    a.name AS agent_name, a.role AS agent_role, a.department AS agent_department,
    a.workspace AS agent_workspace, p.name AS project_name, p.primary_workspace,
    (SELECT json_group_array(json_object('name', w.name, 'path', w.path, 'kind', w.kind,
        'session', wl.session_id, 'jobId', wl.job_id, 'epoch', wl.epoch, 'since', wl.acquired_at,
        'host', ws.host))
     FROM workspaces w LEFT JOIN workspace_locks wl ON wl.workspace = w.name
       LEFT JOIN sessions ws ON ws.id = wl.session_id
     WHERE w.name IN (t.workspace, a.workspace, p.primary_workspace)) AS workspaces,
    (SELECT json_object('session', c.session_id, 'host', cs.host, 'since', c.claimed_at)
     FROM claims c JOIN sessions cs ON cs.id = c.session_id
     WHERE c.task_id = t.id AND c.released_at IS NULL) AS claimed_by,
    ${WAITS_FOR_AGENT_COMMAND('j')} AS waits_for_agent_command
  FROM ${jobs} j JOIN tasks t ON t.id = j.task_id
    LEFT JOIN agents a ON a.name = t.assignee
    LEFT JOIN projects p ON p.name = t.project
  WHERE ${where}`;

const RUNNABLE = `j.status = 'queued' AND j.run_after <= ? AND ${taskOpen('t')}`;

/**
 * A pass's candidates with a command (docs/decisions/0035-task-dependencies.md, review fixes): the
 * first `limit` that may run. The walk goes on past the jobs of gated and blocked tasks, and past
 * those without a command (decision 0047, review fixes), so no number of them ahead can hide a
 * job that may run. Parameters: now, limit.
 */
export const CANDIDATES = `${candidateRows('jobs', `${RUNNABLE} AND j.command IS NOT NULL`)}
  ORDER BY j.priority, j.queued_at, j.id LIMIT ?`;

/**
 * The candidates without a command, walked apart (decision 0047, review fixes): the first `limit`
 * that may run while a live host has an agent command, none while none has (then HELD reads them
 * for their reason). Parameters: now, limit.
 */
export const BARE = `${candidateRows(
  'jobs',
  `${RUNNABLE} AND j.command IS NULL AND NOT ${WAITS_FOR_AGENT_COMMAND('j')}`,
)}
  ORDER BY j.priority, j.queued_at, j.id LIMIT ?`;

/**
 * The gated and blocked jobs, and those waiting for an agent command (WAITS_FOR_AGENT_COMMAND),
 * among the first `limit` queued jobs of open tasks (the window the pass read before), read with
 * the candidates for their waiting reasons: the window is walked with the task's state alone, and
 * only the jobs held in it are read whole. Parameters: now, limit.
 */
export const HELD = candidateRows(
  `(SELECT jw.* FROM jobs jw JOIN tasks tw ON tw.id = jw.task_id
    WHERE jw.status = 'queued' AND jw.run_after <= ? AND ${OPEN('tw')}
    ORDER BY jw.priority, jw.queued_at, jw.id LIMIT ?)`,
  `(NOT (${taskOpen('t')}) OR ${WAITS_FOR_AGENT_COMMAND('j')})`,
);

/** Dispatch order: priority, then the time queued, then the id. */
const inOrder = (left: JobRow, right: JobRow): number =>
  left.priority - right.priority || left.queued_at - right.queued_at || left.id - right.id;

/** The shared columns (dispatch-candidate.ts), and those each engine decodes its own way. */
interface CandidateRow extends JobRow, CandidateColumns {
  requires_filesystem: number;
  workspaces: string;
  claimed_by: string | null;
}

function toCandidate(row: CandidateRow): DispatchCandidate {
  return candidateOf(
    toJob(row),
    row,
    row.requires_filesystem === 1,
    JSON.parse(row.workspaces) as CandidateWorkspaceJson[],
    row.claimed_by === null ? null : (JSON.parse(row.claimed_by) as CandidateHolderJson),
  );
}

/** Lets the event loop run its timers before the next chunk. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

type Pass = Pick<DispatchStore['dispatch'], 'candidates' | 'placeMany' | 'setAside'>;

/** The candidates (CANDIDATES, BARE) and the held jobs (HELD) at `now`, in dispatch order. */
function candidatesAt(exec: SqliteExecutor, now: number, limit: number) {
  const rows = [CANDIDATES, BARE, HELD].flatMap((sql) => exec.prepare(sql).all(now, limit) as CandidateRow[]);
  return { now, jobs: rows.sort(inOrder).map(toCandidate) };
}

export function sqliteDispatchPass(exec: SqliteExecutor): Pass {
  return {
    ...fromSync<Pick<Pass, 'candidates' | 'setAside'>>({
      candidates: (params) => exec.read(() => candidatesAt(exec, exec.now(), params.limit)),
      setAside: (params) => {
        if (params.waits.length + params.skips.length === 0) return { waited: [], skipped: [] };
        return exec.write(() => {
          const now = exec.now();
          if (!termIsCurrent(exec, params.term, now)) return { waited: [], skipped: [] };
          const mark = exec.prepare(
            `UPDATE jobs SET reason = ? WHERE id = ? AND status = 'queued' AND reason IS NOT ?`,
          );
          const waited = params.waits
            .filter((wait) => mark.run(wait.reason, wait.id, wait.reason).changes === 1)
            .map((wait) => wait.id);
          const read = exec.prepare(
            `SELECT j.reason, t.key FROM jobs j JOIN tasks t ON t.id = j.task_id
             WHERE j.id = ? AND j.status = 'queued'`,
          );
          const push = exec.prepare(`UPDATE jobs SET reason = ?, run_after = ? WHERE id = ?`);
          const skipped = params.skips.filter((skip) => {
            const job = read.get(skip.id) as { reason: string | null; key: string } | undefined;
            if (job === undefined) return false;
            push.run(skip.reason, now + skip.backoffMs, skip.id);
            if (job.reason === skip.reason) return false;
            appendAudit(exec, {
              at: now,
              type: 'job:skipped',
              key: job.key,
              jobId: skip.id,
              detail: skip.detail,
            });
            return true;
          });
          return { waited, skipped: skipped.map((skip) => skip.id) };
        });
      },
    }),
    placeMany: async (params) => {
      assert(
        new Set(params.jobs.map((job) => job.id)).size === params.jobs.length,
        'placeMany asks for distinct jobs',
      );
      // An unknown workspace refuses the whole call before anything is placed (never removed).
      exec.read(() => {
        for (const job of params.jobs)
          if (job.workspace !== undefined) existingWorkspace(exec, job.workspace);
      });
      const results: PlaceResult[] = [];
      for (let index = 0; index < params.jobs.length; index += PLACE_CHUNK) {
        if (index > 0) await turn();
        const chunk = params.jobs.slice(index, index + PLACE_CHUNK);
        const placed = exec.write((): PlaceResult[] => {
          const now = exec.now();
          if (!termIsCurrent(exec, params.term, now))
            return chunk.map(() => ({ ok: false, reason: 'fenced' }));
          return chunk.map((ask) => placeOne(exec, now, { ...ask, term: params.term }));
        });
        results.push(...placed);
      }
      return results;
    },
  };
}
