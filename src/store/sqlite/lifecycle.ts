/**
 * The task lifecycle's actions on SQLite (lifecycle-store.ts): each one BEGIN IMMEDIATE
 * transaction that reads the task, checks the action against core/task.ts's table and moves it
 * through task-state.ts, with its ledger rows. `next` picks and claims in one transaction: the
 * single writer means no other process can pick the same task in between.
 */
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { planTaskTransition, type Task, type TaskState } from '../../core/task.js';
import type { DependencyOps, LifecycleStore, Setting, TaskEscalateResult } from '../lifecycle-store.js';
import { taskStateRefusal } from '../task-refusal.js';
import { taskOpen } from './claim-set.js';
import { endClaim, expireStaleHolder, grantClaim, renewIfSilent, type LiveClaim } from './claims.js';
import { appendAudit, EXPIRED, holderOf, toClaim, toTask, type TaskRow } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { changeTaskState, facts, type StateChange } from './task-state.js';
import { sessionRow, taskRow } from './tasks-claims.js';

function existing(exec: SqliteExecutor, key: string): TaskRow {
  const task = taskRow(exec, key);
  if (task === undefined) throw new NotFoundError('task', key, 'add it with `baton task add`');
  return task;
}

export function sqliteLifecycle(
  exec: SqliteExecutor,
): Sync<Omit<LifecycleStore['lifecycle'], DependencyOps>> {
  return {
    transition: (params) => exec.write(() => transition(exec, params)),
    escalate: (params) => exec.write(() => escalate(exec, params)),
    gate: (params) =>
      exec.write(() => {
        const task = existing(exec, params.key);
        if (task.state !== 'open') throw taskStateRefusal(facts(task), 'gate');
        if (task.gate === params.gate) return toTask(task);
        const now = exec.now();
        const row = exec
          .prepare('UPDATE tasks SET gate = ? WHERE id = ? RETURNING *')
          .get(params.gate, task.id);
        appendAudit(exec, {
          at: now,
          type: 'task:gated',
          key: params.key,
          session: params.by.session ?? null,
          detail: { gate: params.gate, by: params.by.name },
        });
        return toTask(row as TaskRow);
      }),
    approveGate: (params) =>
      exec.write(() => {
        const task = existing(exec, params.key);
        if (task.gate !== params.gate) {
          throw new ConflictError(
            `task ${params.key} does not wait for ${params.gate} approval`,
            `put it behind the gate with \`baton gate ${params.key} ${params.gate}\` first`,
          );
        }
        const now = exec.now();
        const row = exec.prepare('UPDATE tasks SET gate = NULL WHERE id = ? RETURNING *').get(task.id);
        appendAudit(exec, {
          at: now,
          type: 'task:approved',
          key: params.key,
          session: params.by.session ?? null,
          detail: { gate: params.gate, by: params.by.name, note: params.note ?? null },
        });
        return toTask(row as TaskRow);
      }),
    next: (params) =>
      exec.write(() => {
        sessionRow(exec, params.session, true);
        const now = exec.now();
        renewIfSilent(exec, now, params.session); // so its own held tasks are not candidates
        const task = nextCandidate(exec, now, params);
        if (task === undefined) return null;
        expireStaleHolder(exec, now, task, params.session);
        const claim = grantClaim(exec, now, existing(exec, task.key), params.session, { via: 'next' });
        return { task: toTask(existing(exec, task.key)), claim: toClaim(claim) };
      }),
    escalations: (params = {}) =>
      exec.read(() =>
        (
          exec
            .prepare(`SELECT * FROM tasks WHERE state = 'escalated' ORDER BY state_at, id LIMIT ?`)
            .all(params.limit ?? 1000) as TaskRow[]
        ).map(toTask),
      ),
  };
}

/** `next`'s pick (below); its plan reads the open tasks through tasks_live (task-plans.test.ts). */
export const NEXT_CANDIDATE = `SELECT t.* FROM tasks t
  WHERE t.state = 'open' AND ${taskOpen('t')}
    AND (t.holder_session_id IS NULL OR EXISTS (
      SELECT 1 FROM sessions h WHERE h.id = t.holder_session_id
        AND ${EXPIRED('h')}))
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = t.id
                    AND j.status IN ('queued', 'claimed', 'running'))
    AND (@project IS NULL OR t.project = @project)
    AND (@label IS NULL OR EXISTS (SELECT 1 FROM json_each(t.labels) WHERE value = @label))
  ORDER BY t.priority, t.created_at, t.id LIMIT 1`;

/**
 * The next eligible task: open, behind no gate, without an active job, and free (or held by a
 * session past its TTL); by priority, then age.
 */
function nextCandidate(
  exec: SqliteExecutor,
  now: number,
  params: { readonly project?: string | undefined; readonly label?: string | undefined },
): TaskRow | undefined {
  return exec.prepare(NEXT_CANDIDATE).get({
    now,
    project: params.project ?? null,
    label: params.label ?? null,
  }) as TaskRow | undefined;
}

/** A person's move of the task; one out of open ends its live claim first (endLiveClaim). */
function transition(
  exec: SqliteExecutor,
  params: Parameters<LifecycleStore['lifecycle']['transition']>[0],
): Task {
  const task = existing(exec, params.key);
  const now = exec.now();
  const plan = planTaskTransition(
    { state: task.state as TaskState, reviewRequired: task.review_required === 1 },
    params.action,
  );
  if (plan.ok && plan.to !== 'open') endLiveClaim(exec, now, task, params);
  return toTask(changeTaskState(exec, now, existing(exec, params.key), params));
}

/**
 * Only an open task takes claims: a move out of open (close, complete, approve) ends the task's
 * live claim `released` in its transaction, before the move, with a `claim:released` row naming
 * the action and who took it, so the old holder's heartbeat, effect and release are fenced.
 */
function endLiveClaim(exec: SqliteExecutor, now: number, task: TaskRow, change: StateChange): void {
  const live = liveClaim(exec, task.id);
  if (live !== undefined)
    endClaim(exec, now, task, live, { outcome: 'released', action: change.action, by: change.by.name });
}

function liveClaim(exec: SqliteExecutor, taskId: number): LiveClaim | undefined {
  return exec
    .prepare('SELECT id, session_id, epoch FROM claims WHERE task_id = ? AND released_at IS NULL')
    .get(taskId) as LiveClaim | undefined;
}

function escalate(
  exec: SqliteExecutor,
  params: Parameters<LifecycleStore['lifecycle']['escalate']>[0],
): TaskEscalateResult {
  const task = existing(exec, params.key);
  const now = exec.now();
  const live = liveClaim(exec, task.id);
  if (
    params.claim !== undefined &&
    (live?.session_id !== params.claim.session || live.epoch !== params.claim.epoch)
  ) {
    const current = holderOf(exec, task.id);
    const session = exec.prepare('SELECT state FROM sessions WHERE id = ?').get(params.claim.session) as
      { state: string } | undefined;
    // An ended (or rescued) session is told so, as its release is.
    if (session !== undefined && session.state !== 'live') {
      return { ok: false, reason: 'fenced', current, sessionEnded: true };
    }
    return { ok: false, reason: 'fenced', current };
  }
  if (task.state !== 'open' && task.state !== 'in_review') throw taskStateRefusal(facts(task), 'escalate');
  const job = exec
    .prepare(`SELECT id FROM jobs WHERE task_id = ? AND status IN ('queued', 'claimed', 'running')`)
    .get(task.id) as { id: number } | undefined;
  if (live !== undefined) endClaim(exec, now, task, live, { outcome: 'escalated' });
  const row = changeTaskState(exec, now, existing(exec, params.key), {
    action: 'escalate',
    by: params.by,
    reason: params.reason,
  });
  return { ok: true, task: toTask(row), claimEpoch: live?.epoch ?? null, jobId: job?.id ?? null };
}

interface SettingRow {
  name: string;
  value: string;
  updated_at: number;
  updated_by: string | null;
}

const toSetting = (row: SettingRow): Setting => ({
  name: row.name,
  value: row.value,
  updatedAt: row.updated_at,
  updatedBy: row.updated_by,
});

export function sqliteSettings(exec: SqliteExecutor): Sync<LifecycleStore['settings']> {
  return {
    get: (name) =>
      exec.read(
        () =>
          (
            exec.prepare('SELECT value FROM settings WHERE name = ?').get(name) as
              { value: string } | undefined
          )?.value ?? null,
      ),
    set: (params) =>
      exec.write(() => {
        const now = exec.now();
        const row = exec
          .prepare(
            `INSERT INTO settings (name, value, updated_at, updated_by) VALUES (?, ?, ?, ?)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
               updated_by = excluded.updated_by
             RETURNING *`,
          )
          .get(params.name, params.value, now, params.by.name) as SettingRow;
        appendAudit(exec, {
          at: now,
          type: 'setting:set',
          session: params.by.session ?? null,
          detail: { name: params.name, value: params.value, by: params.by.name },
        });
        return toSetting(row);
      }),
    list: () =>
      exec.read(() =>
        (exec.prepare('SELECT * FROM settings ORDER BY name').all() as SettingRow[]).map(toSetting),
      ),
  };
}
