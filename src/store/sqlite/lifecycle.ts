/**
 * The task lifecycle's actions on SQLite (lifecycle-store.ts): each one BEGIN IMMEDIATE
 * transaction that reads the task, checks the action against core/task.ts's table and moves it
 * through task-state.ts, with its ledger rows. `next` picks and claims in one transaction: the
 * single writer means no other process can pick the same task in between.
 */
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { SESSION_TTL_FALLBACK_MS } from '../../core/session.js';
import type { LifecycleStore, Setting, TaskEscalateResult } from '../lifecycle-store.js';
import { taskStateRefusal } from '../task-refusal.js';
import { taskOpen } from './claim-set.js';
import { expireStaleHolder, grantClaim } from './claims.js';
import { appendAudit, holderOf, toClaim, toTask, type TaskRow } from './rows.js';
import type { SqliteExecutor, Sync } from './executor.js';
import { changeTaskState, facts } from './task-state.js';
import { sessionRow, taskRow } from './tasks-claims.js';

function existing(exec: SqliteExecutor, key: string): TaskRow {
  const task = taskRow(exec, key);
  if (task === undefined) throw new NotFoundError('task', key, 'add it with `baton task add`');
  return task;
}

export function sqliteLifecycle(exec: SqliteExecutor): Sync<LifecycleStore['lifecycle']> {
  return {
    transition: (p) =>
      exec.write(() => {
        const task = existing(exec, p.key);
        return toTask(changeTaskState(exec, exec.now(), task, p));
      }),
    escalate: (p) => exec.write(() => escalate(exec, p)),
    gate: (p) =>
      exec.write(() => {
        const task = existing(exec, p.key);
        if (task.state !== 'open') throw taskStateRefusal(facts(task), 'gate');
        if (task.gate === p.gate) return toTask(task);
        const now = exec.now();
        const row = exec.prepare('UPDATE tasks SET gate = ? WHERE id = ? RETURNING *').get(p.gate, task.id);
        appendAudit(exec, {
          at: now,
          type: 'task:gated',
          key: p.key,
          session: p.by.session ?? null,
          detail: { gate: p.gate, by: p.by.name },
        });
        return toTask(row as TaskRow);
      }),
    approveGate: (p) =>
      exec.write(() => {
        const task = existing(exec, p.key);
        if (task.gate !== p.gate) {
          throw new ConflictError(
            `task ${p.key} does not wait for ${p.gate} approval`,
            `put it behind the gate with \`baton gate ${p.key} ${p.gate}\` first`,
          );
        }
        const now = exec.now();
        const row = exec.prepare('UPDATE tasks SET gate = NULL WHERE id = ? RETURNING *').get(task.id);
        appendAudit(exec, {
          at: now,
          type: 'task:approved',
          key: p.key,
          session: p.by.session ?? null,
          detail: { gate: p.gate, by: p.by.name, note: p.note ?? null },
        });
        return toTask(row as TaskRow);
      }),
    next: (p) =>
      exec.write(() => {
        sessionRow(exec, p.session, true);
        const now = exec.now();
        const task = nextCandidate(exec, now, p);
        if (task === undefined) return null;
        expireStaleHolder(exec, now, task, p.session);
        const claim = grantClaim(exec, now, existing(exec, task.key), p.session, { via: 'next' });
        return { task: toTask(existing(exec, task.key)), claim: toClaim(claim) };
      }),
    escalations: (p = {}) =>
      exec.read(() =>
        (
          exec
            .prepare(`SELECT * FROM tasks WHERE state = 'escalated' ORDER BY state_at, id LIMIT ?`)
            .all(p.limit ?? 1000) as TaskRow[]
        ).map(toTask),
      ),
  };
}

/**
 * The next eligible task: open, behind no gate, without an active job, and free (or held by a
 * session past its TTL); by priority, then age.
 */
function nextCandidate(
  exec: SqliteExecutor,
  now: number,
  p: { readonly project?: string | undefined; readonly label?: string | undefined },
): TaskRow | undefined {
  return exec
    .prepare(
      `SELECT t.* FROM tasks t
       WHERE ${taskOpen('t')}
         AND (t.holder_session_id IS NULL OR EXISTS (
           SELECT 1 FROM sessions h WHERE h.id = t.holder_session_id
             AND (h.state <> 'live' OR h.heartbeat_at < @now - coalesce(h.ttl_ms, @fallback))))
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.task_id = t.id
                         AND j.status IN ('queued', 'claimed', 'running'))
         AND (@project IS NULL OR t.project = @project)
         AND (@label IS NULL OR EXISTS (SELECT 1 FROM json_each(t.labels) WHERE value = @label))
       ORDER BY t.priority, t.created_at, t.id LIMIT 1`,
    )
    .get({ now, fallback: SESSION_TTL_FALLBACK_MS, project: p.project ?? null, label: p.label ?? null }) as
    TaskRow | undefined;
}

function escalate(
  exec: SqliteExecutor,
  p: Parameters<LifecycleStore['lifecycle']['escalate']>[0],
): TaskEscalateResult {
  const task = existing(exec, p.key);
  const now = exec.now();
  const live = exec
    .prepare('SELECT id, session_id, epoch FROM claims WHERE task_id = ? AND released_at IS NULL')
    .get(task.id) as { id: number; session_id: number; epoch: number } | undefined;
  if (p.claim !== undefined && (live?.session_id !== p.claim.session || live.epoch !== p.claim.epoch)) {
    return { ok: false, reason: 'fenced', current: holderOf(exec, task.id) };
  }
  if (task.state !== 'open' && task.state !== 'in_review') throw taskStateRefusal(facts(task), 'escalate');
  const job = exec
    .prepare(`SELECT id FROM jobs WHERE task_id = ? AND status IN ('queued', 'claimed', 'running')`)
    .get(task.id) as { id: number } | undefined;
  if (live !== undefined) {
    exec.prepare(`UPDATE claims SET released_at = ?, outcome = 'escalated' WHERE id = ?`).run(now, live.id);
    exec.prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ?').run(task.id);
    appendAudit(exec, {
      at: now,
      type: 'claim:released',
      key: p.key,
      session: live.session_id,
      epoch: live.epoch,
      detail: { outcome: 'escalated' },
    });
  }
  const row = changeTaskState(exec, now, existing(exec, p.key), {
    action: 'escalate',
    by: p.by,
    reason: p.reason,
  });
  return { ok: true, task: toTask(row), claimEpoch: live?.epoch ?? null, jobId: job?.id ?? null };
}

interface SettingRow {
  name: string;
  value: string;
  updated_at: number;
  updated_by: string | null;
}

const toSetting = (r: SettingRow): Setting => ({
  name: r.name,
  value: r.value,
  updatedAt: r.updated_at,
  updatedBy: r.updated_by,
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
    set: (p) =>
      exec.write(() => {
        const now = exec.now();
        const row = exec
          .prepare(
            `INSERT INTO settings (name, value, updated_at, updated_by) VALUES (?, ?, ?, ?)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
               updated_by = excluded.updated_by
             RETURNING *`,
          )
          .get(p.name, p.value, now, p.by.name) as SettingRow;
        appendAudit(exec, {
          at: now,
          type: 'setting:set',
          session: p.by.session ?? null,
          detail: { name: p.name, value: p.value, by: p.by.name },
        });
        return toSetting(row);
      }),
    list: () =>
      exec.read(() =>
        (exec.prepare('SELECT * FROM settings ORDER BY name').all() as SettingRow[]).map(toSetting),
      ),
  };
}
