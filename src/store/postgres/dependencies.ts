/**
 * Task dependencies on PostgreSQL (lifecycle-store.ts: depend, undepend, dependencies). An add is
 * one transaction under DEPEND_LOCK (pg_advisory_xact_lock): two adds at once that together close
 * a cycle touch disjoint task rows (X→Y and U→V closing X→Y→U→V→X), so row locks alone would let
 * both see no cycle; under the one lock the second reads the first's committed edge (READ
 * COMMITTED: each statement a new snapshot) and is refused. Edges change rarely: one lock costs
 * nothing. The waiting task's row is locked FOR UPDATE, as a gate locks it.
 */
import { NotFoundError } from '../../core/errors.js';
import type { TaskState } from '../../core/task.js';
import { cycleRefusal, noSuchDependency, selfDependency } from '../dependency-refusal.js';
import type {
  DependencyOps,
  LifecycleStore,
  TaskDependencies,
  TaskDependParams,
} from '../lifecycle-store.js';
import type { PgExecutor, Querier } from './executor.js';
import { NOW, hostOf } from './rows.js';

/** Serialises dependency adds (pg_advisory_xact_lock), so a cycle check sees every committed edge. */
const DEPEND_LOCK = 0x64657073; // 'deps'

const ENDS = `SELECT id, key FROM tasks WHERE key IN ($1::text, $2::text) ORDER BY id FOR UPDATE`;

/** Whether task $1 is reachable from task $2 through "depends on" edges (then $1 → $2 closes a cycle). */
const REACHES = `WITH RECURSIVE up(id) AS (
  SELECT $2::bigint
  UNION
  SELECT d.depends_on FROM task_deps d JOIN up ON d.task_id = up.id
)
SELECT EXISTS (SELECT 1 FROM up WHERE up.id = $1::bigint) AS cycle`;

/** Adds edge $1 → $2 (keys $3, $4; by $5, session $6) with its ledger row, unless it exists. */
const INSERT_EDGE = `WITH e AS (
  INSERT INTO task_deps (task_id, depends_on, added_at, added_by)
  VALUES ($1::bigint, $2::bigint, ${NOW}, $5::text)
  ON CONFLICT DO NOTHING RETURNING task_id
)
INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
SELECT ${NOW}, 'task:depended', $3::text, $6::bigint, ${hostOf('$6::bigint')},
  jsonb_build_object('on', $4::text, 'by', $5::text)
FROM e`;

/** Removes edge $1 → $2 (keys $3, $4; by $5, session $6) with its ledger row; a row when it existed. */
const DELETE_EDGE = `WITH e AS (
  DELETE FROM task_deps WHERE task_id = $1::bigint AND depends_on = $2::bigint RETURNING task_id
), a AS (
  INSERT INTO audit_events (at, type, task_key, session_id, host, detail)
  SELECT ${NOW}, 'task:undepended', $3::text, $6::bigint, ${hostOf('$6::bigint')},
    jsonb_build_object('on', $4::text, 'by', $5::text)
  FROM e
)
SELECT task_id FROM e`;

/** Task $1's dependencies and dependents (null side for an unknown task: one row still). */
const LINKS = `SELECT k.id AS task_id, x.side, x.key, x.title, x.state
FROM (SELECT 1) one LEFT JOIN tasks k ON k.key = $1::text LEFT JOIN LATERAL (
  SELECT 'waitsFor' AS side, o.key, o.title, o.state
  FROM task_deps d JOIN tasks o ON o.id = d.depends_on WHERE d.task_id = k.id
  UNION ALL
  SELECT 'waitedBy', o.key, o.title, o.state
  FROM task_deps d JOIN tasks o ON o.id = d.task_id WHERE d.depends_on = k.id
) x ON true
ORDER BY x.side, x.key`;

interface LinkRow {
  task_id: string | null;
  side: 'waitsFor' | 'waitedBy' | null;
  key: string;
  title: string;
  state: TaskState;
}

async function linksOf(querier: Querier, key: string): Promise<TaskDependencies> {
  const rows = await querier.rows<LinkRow>(LINKS, [key]);
  if (rows[0]?.task_id === null || rows[0] === undefined) throw new NotFoundError('task', key);
  const side = (name: string): TaskDependencies['waitsFor'] =>
    rows
      .filter((row) => row.side === name)
      .map((row) => ({ key: row.key, title: row.title, state: row.state }));
  return { waitsFor: side('waitsFor'), waitedBy: side('waitedBy') };
}

/** Both tasks' ids, locked in id order; NotFoundError for the first unknown key. */
async function ends(querier: Querier, params: TaskDependParams): Promise<{ task: string; on: string }> {
  const rows = await querier.rows<{ id: string; key: string }>(ENDS, [params.key, params.on]);
  const id = (key: string): string => {
    const row = rows.find((found) => found.key === key);
    if (row === undefined) throw new NotFoundError('task', key);
    return row.id;
  };
  return { task: id(params.key), on: id(params.on) };
}

const edgeValues = (ids: { task: string; on: string }, params: TaskDependParams): unknown[] => [
  ids.task,
  ids.on,
  params.key,
  params.on,
  params.by.name,
  params.by.session ?? null,
];

/** Adds the edge inside the caller's transaction (a depend, a task add with `after`): refused, it throws. */
export async function addEdge(querier: Querier, params: TaskDependParams): Promise<void> {
  await querier.rows('SELECT pg_advisory_xact_lock($1::bigint)', [DEPEND_LOCK]);
  const ids = await ends(querier, params);
  if (params.key === params.on) throw selfDependency(params.key);
  const [reach] = await querier.rows<{ cycle: boolean }>(REACHES, [ids.task, ids.on]);
  if (reach?.cycle === true) throw cycleRefusal(params.key, params.on);
  await querier.rows(INSERT_EDGE, edgeValues(ids, params));
}

export function postgresDependencies(exec: PgExecutor): Pick<LifecycleStore['lifecycle'], DependencyOps> {
  return {
    depend: (params) =>
      exec.transaction(async (querier) => {
        await addEdge(querier, params);
        return linksOf(querier, params.key);
      }),
    undepend: (params) =>
      exec.transaction(async (querier) => {
        const ids = await ends(querier, params);
        const removed = await querier.rows(DELETE_EDGE, edgeValues(ids, params));
        if (removed.length === 0) throw noSuchDependency(params.key, params.on);
        return linksOf(querier, params.key);
      }),
    dependencies: (key) => linksOf(exec, key),
  };
}
