/**
 * Task dependencies on SQLite (lifecycle-store.ts: depend, undepend, dependencies): each change
 * one BEGIN IMMEDIATE transaction, so the cycle check and the insert see the same edges (the
 * single writer), with its ledger row.
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
import type { SqliteExecutor, Sync } from './executor.js';
import { appendAudit } from './rows.js';

/** Whether task @task is reachable from task @on through "depends on" edges. */
const REACHES = `WITH RECURSIVE up(id) AS (
  SELECT @on
  UNION
  SELECT d.depends_on FROM task_deps d JOIN up ON d.task_id = up.id
)
SELECT EXISTS (SELECT 1 FROM up WHERE up.id = @task) AS cycle`;

const LINKS = `SELECT 'waitsFor' AS side, o.key, o.title, o.state
  FROM task_deps d JOIN tasks o ON o.id = d.depends_on WHERE d.task_id = @id
  UNION ALL
  SELECT 'waitedBy', o.key, o.title, o.state
  FROM task_deps d JOIN tasks o ON o.id = d.task_id WHERE d.depends_on = @id
  ORDER BY 1, 2`;

interface LinkRow {
  side: 'waitsFor' | 'waitedBy';
  key: string;
  title: string;
  state: TaskState;
}

function idOf(exec: SqliteExecutor, key: string): number {
  const row = exec.prepare('SELECT id FROM tasks WHERE key = ?').get(key) as { id: number } | undefined;
  if (row === undefined) throw new NotFoundError('task', key);
  return row.id;
}

function linksOf(exec: SqliteExecutor, key: string): TaskDependencies {
  const rows = exec.prepare(LINKS).all({ id: idOf(exec, key) }) as LinkRow[];
  const side = (name: string): TaskDependencies['waitsFor'] =>
    rows
      .filter((row) => row.side === name)
      .map((row) => ({ key: row.key, title: row.title, state: row.state }));
  return { waitsFor: side('waitsFor'), waitedBy: side('waitedBy') };
}

function audit(
  exec: SqliteExecutor,
  now: number,
  params: TaskDependParams,
  type: 'task:depended' | 'task:undepended',
) {
  appendAudit(exec, {
    at: now,
    type,
    key: params.key,
    session: params.by.session ?? null,
    detail: { on: params.on, by: params.by.name },
  });
}

/** Adds the edge inside the caller's write transaction (a depend, a task add with `after`): refused, it throws. */
export function addEdge(exec: SqliteExecutor, params: TaskDependParams): void {
  const task = idOf(exec, params.key);
  const on = idOf(exec, params.on);
  if (task === on) throw selfDependency(params.key);
  const reach = exec.prepare(REACHES).get({ task, on }) as { cycle: 0 | 1 };
  if (reach.cycle === 1) throw cycleRefusal(params.key, params.on);
  const now = exec.now();
  const added = exec
    .prepare(
      `INSERT INTO task_deps (task_id, depends_on, added_at, added_by) VALUES (?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    )
    .run(task, on, now, params.by.name).changes;
  if (added === 1) audit(exec, now, params, 'task:depended');
}

function depend(exec: SqliteExecutor, params: TaskDependParams): TaskDependencies {
  addEdge(exec, params);
  return linksOf(exec, params.key);
}

function undepend(exec: SqliteExecutor, params: TaskDependParams): TaskDependencies {
  const task = idOf(exec, params.key);
  const on = idOf(exec, params.on);
  const removed = exec
    .prepare('DELETE FROM task_deps WHERE task_id = ? AND depends_on = ?')
    .run(task, on).changes;
  if (removed === 0) throw noSuchDependency(params.key, params.on);
  audit(exec, exec.now(), params, 'task:undepended');
  return linksOf(exec, params.key);
}

export function sqliteDependencies(
  exec: SqliteExecutor,
): Sync<Pick<LifecycleStore['lifecycle'], DependencyOps>> {
  return {
    depend: (params) => exec.write(() => depend(exec, params)),
    undepend: (params) => exec.write(() => undepend(exec, params)),
    dependencies: (key) => exec.read(() => linksOf(exec, key)),
  };
}
