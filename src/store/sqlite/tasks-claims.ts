/** Tasks and sessions on SQLite (claims: claims.ts). Each method is one BEGIN IMMEDIATE transaction. */
import type { FencedResult } from '../../core/claim.js';
import { ConflictError, FencedError, NotFoundError } from '../../core/errors.js';
import { PRIORITY_DEFAULT } from '../../core/validate.js';
import type { SessionStartParams, Store, TaskUpdateParams } from '../store.js';
import type { Session } from '../../core/session.js';
import { releaseSessionLocks } from './locks.js';
import { requeueSessionJobs } from './requeue.js';
import { withActor } from '../actor.js';
import { BLOCKERS, CAN_WAIT, UNQUEUED, type ListedTask, type TaskListParams } from '../task-list.js';
import { appendAudit, holderOf, toSession, toTask, type SessionRow, type TaskRow } from './rows.js';
import { fromSync, type SqliteExecutor, type Sync } from './executor.js';
import { TickBatcher } from './tick-batcher.js';
import { addEdge } from './dependencies.js';

type HeartbeatParams = Parameters<Store['sessions']['heartbeat']>[0];

export function taskRow(exec: SqliteExecutor, key: string): TaskRow | undefined {
  return exec.prepare('SELECT * FROM tasks WHERE key = ?').get(key) as TaskRow | undefined;
}

/** The session row, or NotFoundError; FencedError when `mustBeLive` and it is not. */
export function sessionRow(exec: SqliteExecutor, id: number, mustBeLive: boolean): SessionRow {
  const row = exec.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  if (row === undefined) {
    throw new NotFoundError('session', String(id), 'start one with `baton session start`');
  }
  if (mustBeLive && row.state !== 'live') {
    throw new FencedError(`session ${id} is ${row.state}`, 'start a new session with `baton session start`');
  }
  return row;
}

/**
 * Inserts a task, open, or escalated with `p.escalation` as its reason (the vague-issue rule),
 * with its ledger rows: `task:added`, and `task:state` for an escalated one.
 */
export function insertTask(
  exec: SqliteExecutor,
  now: number,
  params: Parameters<Store['tasks']['add']>[0],
): TaskRow {
  const escalated = params.escalation !== undefined;
  const byName = params.byName ?? (params.by === undefined ? null : `session ${params.by}`);
  const row = exec
    .prepare(
      `INSERT INTO tasks (key, title, priority, project, assignee, labels, created_at, body, url,
         review_required, state, state_at, state_by, state_reason)
       VALUES (@key, @title, @priority, @project, @assignee, @labels, @now, @body, @url, @review,
         @state, @now, @byName, @reason)
       RETURNING *`,
    )
    .get({
      key: params.key,
      title: params.title ?? '',
      priority: params.priority ?? PRIORITY_DEFAULT,
      project: params.project ?? null,
      assignee: params.assignee ?? null,
      labels: JSON.stringify(params.labels ?? []),
      now,
      body: params.body ?? '',
      url: params.url ?? null,
      review: params.reviewRequired === true ? 1 : 0,
      state: escalated ? 'escalated' : 'open',
      byName,
      reason: params.escalation ?? null,
    }) as TaskRow;
  const detail = withActor({}, params.actor);
  appendAudit(exec, { at: now, type: 'task:added', key: params.key, session: params.by ?? null, detail });
  if (escalated) {
    appendAudit(exec, {
      at: now,
      type: 'task:state',
      key: params.key,
      session: params.by ?? null,
      detail: { from: 'open', to: 'escalated', action: 'escalate', by: byName, reason: params.escalation },
    });
  }
  return row;
}

/** Sets the fields given, audited `task:updated` with their names; NotFoundError for an unknown task. */
function updateTask(exec: SqliteExecutor, params: TaskUpdateParams): TaskRow {
  const task = taskRow(exec, params.key);
  if (task === undefined) throw new NotFoundError('task', params.key, 'add it with `baton task add`');
  const fields: Record<string, unknown> = {
    title: params.title,
    body: params.body,
    url: params.url,
    labels: params.labels === undefined ? undefined : JSON.stringify(params.labels),
    review_required: params.reviewRequired === undefined ? undefined : params.reviewRequired ? 1 : 0,
  };
  const given = Object.entries(fields).filter(([, value]) => value !== undefined);
  if (given.length === 0) return task;
  const row = exec
    .prepare(
      `UPDATE tasks SET ${given.map(([column]) => `${column} = @${column}`).join(', ')} WHERE id = @id RETURNING *`,
    )
    .get({ ...Object.fromEntries(given), id: task.id }) as TaskRow;
  appendAudit(exec, {
    at: exec.now(),
    type: 'task:updated',
    key: params.key,
    session: params.by.session ?? null,
    detail: { fields: given.map(([column]) => column), by: params.by.name },
  });
  return row;
}

export function sqliteTasks(exec: SqliteExecutor): Sync<Store['tasks']> {
  return {
    add: (params) =>
      exec.write(() => {
        if (taskRow(exec, params.key) !== undefined) {
          throw new ConflictError(`task ${params.key} already exists`, 'pick another key, or use it as is');
        }
        const row = insertTask(exec, exec.now(), params);
        const by = { name: params.actor ?? params.byName ?? 'unknown', session: params.by };
        for (const on of params.after ?? []) addEdge(exec, { key: params.key, on, by });
        return toTask(row);
      }),
    get: (key) =>
      exec.read(() => {
        const row = taskRow(exec, key);
        return row === undefined ? null : toTask(row);
      }),
    list: (params = {}) =>
      exec.read(() =>
        (
          exec.prepare(listSql(params)).all({
            project: params.project ?? null,
            assignee: params.assignee ?? null,
            state: params.state ?? null,
            label: params.label ?? null,
            after: params.after ?? null,
            limit: params.limit ?? 1000,
          }) as (TaskRow & { waits_for: string })[]
        ).map((row): ListedTask => ({
          ...toTask(row),
          // Sorted here, as the backlog's page does (task-page.ts): a sort in SQL is a temporary b-tree per row.
          waitsFor: (JSON.parse(row.waits_for) as string[]).sort(),
        })),
      ),
    update: (params) => exec.write(() => toTask(updateTask(exec, params))),
    keysBeyondAscii: (limit) =>
      exec.read(() =>
        (
          exec
            .prepare(
              'SELECT key FROM tasks WHERE length(CAST(key AS BLOB)) <> length(key) ORDER BY id LIMIT ?',
            )
            .all(limit) as { key: string }[]
        ).map((row) => row.key),
      ),
  };
}

/** One heartbeat, inside the batch's transaction: the session's, and the named claim's (or all). */
function heartbeatIn(exec: SqliteExecutor, params: HeartbeatParams): FencedResult {
  const session = sessionRow(exec, params.session, false);
  if (session.state !== 'live') {
    // Still names who holds the task now: the caller learns both that its session ended and where the task went.
    const task = params.claim === undefined ? undefined : taskRow(exec, params.claim.key);
    const current = task === undefined ? null : holderOf(exec, task.id);
    return { ok: false, reason: 'fenced', current, sessionEnded: true };
  }
  const now = exec.now();
  exec.prepare('UPDATE sessions SET heartbeat_at = ? WHERE id = ?').run(now, params.session);
  if (params.claim === undefined) {
    // No claim named: renew every claim the session holds (a human's one-liner).
    exec
      .prepare('UPDATE claims SET heartbeat_at = ? WHERE session_id = ? AND released_at IS NULL')
      .run(now, params.session);
    return { ok: true };
  }
  const task = taskRow(exec, params.claim.key);
  if (task === undefined) throw new NotFoundError('task', params.claim.key);
  const changed = exec
    .prepare(
      `UPDATE claims SET heartbeat_at = ?
       WHERE task_id = ? AND session_id = ? AND epoch = ? AND released_at IS NULL`,
    )
    .run(now, task.id, params.session, params.claim.epoch).changes;
  return changed === 1 ? { ok: true } : { ok: false, reason: 'fenced', current: holderOf(exec, task.id) };
}

export function sqliteSessions(exec: SqliteExecutor): Store['sessions'] {
  // A heartbeat need not survive a power cut (SqliteExecutor.writeNotDurable): no fsync of its own.
  const beats = new TickBatcher(exec, (params: HeartbeatParams) => heartbeatIn(exec, params), false);
  const sync: Sync<Omit<Store['sessions'], 'heartbeat' | 'start'>> = {
    end: (id, how = 'stopped', by) =>
      exec.write(() => {
        const row = sessionRow(exec, id, false);
        if (row.state !== 'live') return { ended: false, jobsRequeued: [] };
        const now = exec.now();
        const jobsRequeued = requeueSessionJobs(exec, id);
        releaseAllClaims(exec, now, id, 'abandoned');
        releaseSessionLocks(exec, now, id, 'abandoned');
        exec
          .prepare(
            `UPDATE sessions SET state = 'ended', ended_at = ?, end_reason = ?, ended_by = ? WHERE id = ?`,
          )
          .run(now, how, by ?? null, id);
        appendAudit(exec, { at: now, type: 'session:ended', session: id, detail: withActor({ how }, by) });
        return { ended: true, jobsRequeued };
      }),
    get: (id) =>
      exec.read(() => {
        const row = exec.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
        return row === undefined ? null : toSession(row);
      }),
    list: (params = {}) =>
      exec.read(() =>
        (
          exec
            .prepare(
              // Only an agent's session has a job:spawned row: a runner's, with all its ledger rows, is not read.
              `SELECT s.*, CASE WHEN ? AND s.kind = 'agent' THEN
                 (SELECT CAST(json_extract(a.detail, '$.pid') AS INTEGER) FROM audit_events a
                  WHERE a.session_id = s.id AND a.type = 'job:spawned' ORDER BY a.id LIMIT 1) END AS agent_pid
               FROM sessions s WHERE (? = 0 OR s.state = 'live') ORDER BY s.id`,
            )
            .all(params.agentPids === true ? 1 : 0, params.liveOnly === true ? 1 : 0) as (SessionRow & {
            agent_pid: number | null;
          })[]
        ).map((row) => ({ ...toSession(row), agentPid: row.agent_pid })),
      ),
  };
  // Many sessions of one process beating together share one commit (tick-batcher.ts).
  return {
    ...fromSync(sync),
    heartbeat: (params) => beats.submit(params),
    // Commits with writes sent in the same turn (SqliteExecutor.grouped); a run's goes by runs.begin.
    start: (params) => exec.grouped(() => startSessionIn(exec, params)),
  };
}

/** Releases every live claim of a session, inside the caller's transaction. */
export function releaseAllClaims(
  exec: SqliteExecutor,
  now: number,
  session: number,
  outcome: 'abandoned' | 'recovered',
): number {
  const live = exec
    .prepare(
      `SELECT c.id, c.task_id, c.epoch, t.key FROM claims c JOIN tasks t ON t.id = c.task_id
       WHERE c.session_id = ? AND c.released_at IS NULL`,
    )
    .all(session) as { id: number; task_id: number; epoch: number; key: string }[];
  for (const claim of live) {
    exec.prepare('UPDATE claims SET released_at = ?, outcome = ? WHERE id = ?').run(now, outcome, claim.id);
    exec
      .prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ? AND epoch = ?')
      .run(claim.task_id, claim.epoch);
    appendAudit(exec, {
      at: now,
      type: 'claim:released',
      key: claim.key,
      session,
      epoch: claim.epoch,
      detail: { outcome },
    });
  }
  return live.length;
}

/** sessions.start: a live session, with its `session:started` row. */
export function startSessionIn(exec: SqliteExecutor, params: SessionStartParams): Session {
  const now = exec.now();
  const row = exec
    .prepare(
      `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at, ttl_ms)
               VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    )
    .get(
      params.kind,
      params.host,
      params.pid,
      params.name ?? null,
      now,
      now,
      params.ttlMs ?? null,
    ) as SessionRow;
  appendAudit(exec, {
    at: now,
    type: 'session:started',
    session: row.id,
    detail: {
      kind: params.kind,
      pid: params.pid,
      ...(params.ttlMs === undefined ? {} : { ttlMs: params.ttlMs }),
    },
  });
  return toSession(row);
}

/**
 * The tasks after the page before's last one in the list's order (priority, then key), a range of
 * tasks_by_priority (docs/decisions/0045): no task after a key no task has (the coordinator says so).
 */
const AFTER = '(priority, key) > ((SELECT a.priority FROM tasks a WHERE a.key = @after), @after)';

/**
 * A task list's statement, with only the conditions asked for (its plans: task-plans.test.ts).
 * SQLite does not drop `@p IS NULL OR …` for a value given, so it would scan every task; a list of
 * one live state (unqueued, gated, `--state in_review`) reads the live tasks' index (tasks_live).
 */
export function listSql(params: TaskListParams): string {
  const terms = ['1'];
  if (params.project !== undefined) terms.push('project = @project');
  if (params.assignee !== undefined) terms.push('assignee = @assignee');
  if (params.state !== undefined) terms.push('state = @state');
  if (params.label !== undefined)
    terms.push('EXISTS (SELECT 1 FROM json_each(tasks.labels) WHERE value = @label)');
  if (params.gated === true) terms.push("gate IS NOT NULL AND state = 'open'");
  if (params.gated === false) terms.push("NOT (gate IS NOT NULL AND state = 'open')");
  if (params.unqueued === true) terms.push(`(${UNQUEUED})`);
  if (params.blocked !== undefined) {
    terms.push(`${params.blocked ? '' : 'NOT '}(${CAN_WAIT} AND EXISTS (SELECT 1 ${BLOCKERS}))`);
  }
  if (params.after !== undefined) terms.push(AFTER);
  return `SELECT *, (SELECT json_group_array(b.key) ${BLOCKERS}) AS waits_for FROM tasks
    WHERE ${terms.join(' AND ')} ORDER BY priority, key LIMIT @limit`;
}
