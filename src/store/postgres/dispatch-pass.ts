/**
 * A dispatcher pass on PostgreSQL, in a fixed number of statements whatever its size
 * (docs/decisions/0016-set-based-dispatch.md): the candidates in one read, the placements in one
 * statement (placement.ts), the waiting reasons and skips in one more.
 */
import { assert } from '../../core/assert.js';
import type { DispatchCandidate } from '../../core/dispatch-plan.js';
import {
  candidateOf,
  type CandidateColumns,
  type CandidateHolderJson,
  type CandidateWorkspaceJson,
} from '../dispatch-candidate.js';
import type { DispatchStore } from '../dispatch-store.js';
import { LIVE_TERM, place, placeMany, termParams } from './placement.js';
import { NOW, jobFields, ms, msInterval, toJob, type JobRow } from './rows.js';
import type { PgExecutor } from './executor.js';
import { blockerOf, jobTaskOpen } from './claim-set.js';
import { AGENT_COMMAND_HOST } from './hosts.js';

/**
 * A job without a command while no enabled host has a live runner with an agent command
 * (AGENT_COMMAND_HOST): held, read for its reason and never one of the `limit` that may run, so
 * no number of them ahead hides a job that may (decision 0047). While one is live, those jobs are
 * walked apart from the jobs with a command (review fixes), so neither kind hides the other.
 */
const WAITS_FOR_AGENT_COMMAND = `(jobs.command IS NULL AND NOT ${AGENT_COMMAND_HOST})`;

/**
 * The queued jobs of open tasks in dispatch order (through jobs_queue), each with what its
 * workspace plan is resolved from: the task's requirements, its assignee when that names an
 * agent, its project, the workspaces those bind with their live locks, and the task's live
 * claim (a few index lookups per job).
 */
const candidateRows = (jobs: string, where: string): string => `
  SELECT ${jobFields('jobs')}, t.key, t.gate, ${blockerOf('t')} AS blocker,
    t.requires_filesystem, t.workspace AS task_workspace,
    a.name AS agent_name, a.role AS agent_role, a.department AS agent_department,
    a.workspace AS agent_workspace, p.name AS project_name, p.primary_workspace,
    (SELECT coalesce(json_agg(json_build_object('name', w.name, 'path', w.path, 'kind', w.kind,
        'session', wl.session_id, 'jobId', wl.job_id, 'epoch', wl.epoch,
        'since', (extract(epoch FROM wl.acquired_at) * 1000)::bigint, 'host', ws.host)), '[]'::json)
     FROM workspaces w LEFT JOIN workspace_locks wl ON wl.workspace = w.name
       LEFT JOIN sessions ws ON ws.id = wl.session_id
     WHERE w.name IN (t.workspace, a.workspace, p.primary_workspace)) AS workspaces,
    (SELECT json_build_object('session', cl.session_id, 'host', cs.host,
        'since', (extract(epoch FROM cl.claimed_at) * 1000)::bigint)
     FROM claims cl JOIN sessions cs ON cs.id = cl.session_id
     WHERE cl.task_id = t.id AND cl.released_at IS NULL) AS claimed_by,
    ${WAITS_FOR_AGENT_COMMAND} AS waits_for_agent_command
  FROM ${jobs} JOIN tasks t ON t.id = jobs.task_id
    LEFT JOIN agents a ON a.name = t.assignee COLLATE "C"
    LEFT JOIN projects p ON p.name = t.project COLLATE "C"
  WHERE ${where}`;

/** A queued job that may run now: its task open, ungated, waiting for no task (taskOpen). */
const RUNNABLE = `jobs.status = 'queued' AND jobs.run_after <= n.t AND t.state = 'open' AND ${jobTaskOpen('jobs')}
  AND NOT ${WAITS_FOR_AGENT_COMMAND}`;

const IN_ORDER = 'ORDER BY jobs.priority, jobs.queued_at, jobs.id LIMIT $1::int';

/**
 * A pass's candidates (docs/decisions/0035-task-dependencies.md, review fixes): the first `limit`
 * jobs with a command that may run and the first `limit` without one (two walks of jobs_queue, so
 * no number of jobs without a command, waiting for a full host with an agent command, hides a job
 * with a command from the other hosts: decision 0047, review fixes; each walk goes on past the
 * jobs of gated and blocked tasks, so no number of them ahead can hide a job that may run), and,
 * for their waiting reasons, the gated and blocked
 * ones, and those waiting for an agent command, among the first `limit` queued jobs of open
 * tasks (the window the pass read before: walked with the task's state alone, only the jobs held
 * in it read whole). `now` is read once, for the backoff and for the caller.
 */
export const CANDIDATES = `
WITH n AS (SELECT ${NOW} AS t)
SELECT n.t AS now, c.* FROM n LEFT JOIN LATERAL (
  (${candidateRows('jobs', `${RUNNABLE} AND jobs.command IS NOT NULL`)} ${IN_ORDER})
  UNION ALL
  (${candidateRows('jobs', `${RUNNABLE} AND jobs.command IS NULL`)} ${IN_ORDER})
  UNION ALL
  ${candidateRows(
    `(SELECT jw.* FROM jobs jw JOIN tasks tw ON tw.id = jw.task_id
      WHERE jw.status = 'queued' AND jw.run_after <= n.t AND tw.state = 'open'
      ORDER BY jw.priority, jw.queued_at, jw.id LIMIT $1::int) jobs`,
    `(NOT ${jobTaskOpen('jobs')} OR ${WAITS_FOR_AGENT_COMMAND})`,
  )}
) c ON true
ORDER BY c.priority, c.queued_at, c.id`;

/** The shared columns (dispatch-candidate.ts), and those each engine decodes its own way. */
interface CandidateRow extends JobRow, CandidateColumns {
  requires_filesystem: boolean;
  workspaces: CandidateWorkspaceJson[];
  claimed_by: CandidateHolderJson | null;
  now: Date;
}

function toCandidate(row: CandidateRow): DispatchCandidate {
  return candidateOf(toJob(row), row, row.requires_filesystem, row.workspaces, row.claimed_by);
}

/**
 * The reasons of waiting jobs ($4 ids, $5 reasons), written only where they change, and the
 * skips ($6 ids, $7 reasons, $8 backoffs, $9 ledger details), each job locked after the lease
 * (through `l`) to read the reason it had, so a skip is audited only when its reason changes.
 * Returns the jobs whose reason changed, by kind.
 */
const SET_ASIDE = `
WITH ${LIVE_TERM}, wr AS (
  SELECT * FROM unnest($4::bigint[], $5::text[]) AS wr(id, reason)
), w AS (
  UPDATE jobs SET reason = wr.reason FROM wr, l
  WHERE jobs.id = wr.id AND jobs.status = 'queued' AND jobs.reason IS DISTINCT FROM wr.reason
  RETURNING jobs.id
), sr AS (
  SELECT * FROM unnest($6::bigint[], $7::text[], $8::bigint[], $9::text[]) AS sr(id, reason, backoff_ms, detail)
), o AS (
  SELECT jobs.id, jobs.reason FROM jobs
  WHERE jobs.id IN (SELECT sr.id FROM sr) AND jobs.status = 'queued' AND EXISTS (SELECT 1 FROM l)
  ORDER BY jobs.id
  FOR UPDATE OF jobs
), s AS (
  UPDATE jobs SET reason = sr.reason, run_after = ${NOW} + ${msInterval('sr.backoff_ms')}
  FROM o JOIN sr ON sr.id = o.id
  WHERE jobs.id = o.id AND jobs.status = 'queued'
  RETURNING jobs.id, jobs.task_id, jobs.run_after, sr.backoff_ms, sr.detail,
    o.reason IS DISTINCT FROM sr.reason AS changed
), a AS (
  INSERT INTO audit_events (at, type, task_key, job_id, detail)
  SELECT run_after - ${msInterval('backoff_ms')}, 'job:skipped', (SELECT key FROM tasks WHERE id = s.task_id),
    id, detail::jsonb
  FROM s WHERE changed ORDER BY id
)
SELECT 'waited' AS kind, id FROM w UNION ALL SELECT 'skipped', id FROM s WHERE changed`;

type Pass = Pick<DispatchStore['dispatch'], 'place' | 'placeMany' | 'candidates' | 'setAside'>;

/** `took` counts the jobs taken from the queue, for the queue's upkeep (upkeep.ts). */
export function postgresDispatchPass(exec: PgExecutor, took: (count: number) => void): Pass {
  return {
    place: async (params) => {
      const placed = await place(exec, params);
      if (placed.ok) took(1);
      return placed;
    },
    placeMany: async (params) => {
      const placed = await placeMany(exec, params);
      took(placed.filter((row) => row.ok).length);
      return placed;
    },
    candidates: async (params) => {
      // Always one row at least: `now`, with null job columns when nothing is queued.
      const rows = await exec.rows<CandidateRow>(CANDIDATES, [params.limit]);
      const now = rows[0]?.now;
      assert(now !== undefined, 'the candidates read returns the time');
      return { now: ms(now), jobs: rows.filter((row) => row.id !== null).map(toCandidate) };
    },
    setAside: async (params) => {
      if (params.waits.length + params.skips.length === 0) return { waited: [], skipped: [] };
      const rows = await exec.rows<{ kind: 'waited' | 'skipped'; id: number }>(SET_ASIDE, [
        ...termParams(params.term),
        params.waits.map((wait) => wait.id),
        params.waits.map((wait) => wait.reason),
        params.skips.map((skip) => skip.id),
        params.skips.map((skip) => skip.reason),
        params.skips.map((skip) => skip.backoffMs),
        params.skips.map((skip) => JSON.stringify(skip.detail)),
      ]);
      const ids = (kind: string): number[] => rows.filter((row) => row.kind === kind).map((row) => row.id);
      return { waited: ids('waited'), skipped: ids('skipped') };
    },
  };
}
