/** Tasks, sessions and claims on SQLite. Each method is one BEGIN IMMEDIATE transaction. */
import type { ClaimResult, FencedResult } from '../../core/claim.js';
import { ConflictError, FencedError, NotFoundError } from '../../core/errors.js';
import { PRIORITY_DEFAULT } from '../../core/validate.js';
import type { Store } from '../store.js';
import { releaseSessionLocks } from './locks.js';
import {
  appendAudit,
  holderOf,
  toClaim,
  toSession,
  toTask,
  type ClaimRow,
  type SessionRow,
  type TaskRow,
} from './rows.js';
import type { SqliteRunner } from './runner.js';

const CLAIM_COLUMNS = `t.key, c.session_id, c.epoch, c.claimed_at, c.heartbeat_at,
  c.released_at, c.outcome`;

export function taskRow(run: SqliteRunner, key: string): TaskRow | undefined {
  return run.prepare('SELECT * FROM tasks WHERE key = ?').get(key) as TaskRow | undefined;
}

/** The session row, or NotFoundError; FencedError when `mustBeLive` and it is not. */
export function sessionRow(run: SqliteRunner, id: number, mustBeLive: boolean): SessionRow {
  const row = run.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  if (row === undefined) {
    throw new NotFoundError('session', String(id), 'start one with `baton session start`');
  }
  if (mustBeLive && row.state !== 'live') {
    throw new FencedError(`session ${id} is ${row.state}`, 'start a new session with `baton session start`');
  }
  return row;
}

export function insertTask(run: SqliteRunner, now: number, p: Parameters<Store['tasks']['add']>[0]): TaskRow {
  const row = run
    .prepare(
      `INSERT INTO tasks (key, title, priority, project, assignee, labels, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    )
    .get(
      p.key,
      p.title ?? '',
      p.priority ?? PRIORITY_DEFAULT,
      p.project ?? null,
      p.assignee ?? null,
      JSON.stringify(p.labels ?? []),
      now,
    ) as TaskRow;
  appendAudit(run, { at: now, type: 'task:added', key: p.key, session: p.by ?? null });
  return row;
}

export function sqliteTasks(run: SqliteRunner): Store['tasks'] {
  return {
    add: (p) =>
      Promise.resolve(
        run.write(() => {
          if (taskRow(run, p.key) !== undefined) {
            throw new ConflictError(`task ${p.key} already exists`, 'pick another key, or use it as is');
          }
          return toTask(insertTask(run, run.now(), p));
        }),
      ),
    get: (key) =>
      Promise.resolve(
        run.read(() => {
          const row = taskRow(run, key);
          return row === undefined ? null : toTask(row);
        }),
      ),
    list: (p = {}) =>
      Promise.resolve(
        run.read(() =>
          (
            run
              .prepare(
                `SELECT * FROM tasks
                 WHERE (@project IS NULL OR project = @project)
                   AND (@assignee IS NULL OR assignee = @assignee)
                 ORDER BY priority, key LIMIT @limit`,
              )
              .all({
                project: p.project ?? null,
                assignee: p.assignee ?? null,
                limit: p.limit ?? 1000,
              }) as TaskRow[]
          ).map(toTask),
        ),
      ),
  };
}

export function sqliteSessions(run: SqliteRunner): Store['sessions'] {
  return {
    start: (p) =>
      Promise.resolve(
        run.write(() => {
          const now = run.now();
          const row = run
            .prepare(
              `INSERT INTO sessions (kind, host, pid, name, started_at, heartbeat_at)
               VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
            )
            .get(p.kind, p.host, p.pid, p.name ?? null, now, now) as SessionRow;
          appendAudit(run, {
            at: now,
            type: 'session:started',
            session: row.id,
            detail: { kind: p.kind, pid: p.pid },
          });
          return toSession(row);
        }),
      ),
    end: (id) =>
      Promise.resolve(
        run.write(() => {
          const row = sessionRow(run, id, false);
          if (row.state !== 'live') return false;
          const now = run.now();
          releaseAllClaims(run, now, id, 'abandoned');
          releaseSessionLocks(run, now, id, 'abandoned');
          run.prepare(`UPDATE sessions SET state = 'ended', ended_at = ? WHERE id = ?`).run(now, id);
          appendAudit(run, { at: now, type: 'session:ended', session: id });
          return true;
        }),
      ),
    heartbeat: (p) =>
      Promise.resolve(
        run.write((): FencedResult => {
          const session = sessionRow(run, p.session, false);
          if (session.state !== 'live') return { ok: false, reason: 'fenced', current: null };
          const now = run.now();
          run.prepare('UPDATE sessions SET heartbeat_at = ? WHERE id = ?').run(now, p.session);
          if (p.claim === undefined) return { ok: true };
          const task = taskRow(run, p.claim.key);
          if (task === undefined) throw new NotFoundError('task', p.claim.key);
          const changed = run
            .prepare(
              `UPDATE claims SET heartbeat_at = ?
               WHERE task_id = ? AND session_id = ? AND epoch = ? AND released_at IS NULL`,
            )
            .run(now, task.id, p.session, p.claim.epoch).changes;
          return changed === 1
            ? { ok: true }
            : { ok: false, reason: 'fenced', current: holderOf(run, task.id) };
        }),
      ),
    get: (id) =>
      Promise.resolve(
        run.read(() => {
          const row = run.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
          return row === undefined ? null : toSession(row);
        }),
      ),
    list: (p = {}) =>
      Promise.resolve(
        run.read(() =>
          (
            run
              .prepare(`SELECT * FROM sessions WHERE (? = 0 OR state = 'live') ORDER BY id`)
              .all(p.liveOnly === true ? 1 : 0) as SessionRow[]
          ).map(toSession),
        ),
      ),
  };
}

/** Releases every live claim of a session, inside the caller's transaction. */
export function releaseAllClaims(
  run: SqliteRunner,
  now: number,
  session: number,
  outcome: 'abandoned' | 'recovered',
): number {
  const live = run
    .prepare(
      `SELECT c.id, c.task_id, c.epoch, t.key FROM claims c JOIN tasks t ON t.id = c.task_id
       WHERE c.session_id = ? AND c.released_at IS NULL`,
    )
    .all(session) as { id: number; task_id: number; epoch: number; key: string }[];
  for (const c of live) {
    run.prepare('UPDATE claims SET released_at = ?, outcome = ? WHERE id = ?').run(now, outcome, c.id);
    run
      .prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ? AND epoch = ?')
      .run(c.task_id, c.epoch);
    appendAudit(run, {
      at: now,
      type: 'claim:released',
      key: c.key,
      session,
      epoch: c.epoch,
      detail: { outcome },
    });
  }
  return live.length;
}

export function sqliteClaims(run: SqliteRunner): Store['claims'] {
  const current = (taskId: number): ClaimRow | undefined =>
    run
      .prepare(
        `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
         WHERE c.task_id = ? AND c.released_at IS NULL`,
      )
      .get(taskId) as ClaimRow | undefined;
  return {
    acquire: (p) =>
      Promise.resolve(
        run.write((): ClaimResult => {
          const task = taskRow(run, p.key);
          if (task === undefined) {
            throw new NotFoundError('task', p.key, 'add it with `baton task add`');
          }
          sessionRow(run, p.session, true);
          if (task.holder_session_id === p.session) {
            const mine = current(task.id);
            if (mine !== undefined) return { ok: true, claim: toClaim(mine), granted: false };
          }
          const holder = holderOf(run, task.id);
          if (holder !== null) return { ok: false, reason: 'held', holder };
          const now = run.now();
          const epoch = task.epoch + 1;
          run
            .prepare(
              `UPDATE tasks SET epoch = ?, holder_session_id = ?, claimed_at = ?
               WHERE id = ? AND holder_session_id IS NULL`,
            )
            .run(epoch, p.session, now, task.id);
          run
            .prepare(
              `INSERT INTO claims (task_id, session_id, epoch, claimed_at, heartbeat_at)
               VALUES (?, ?, ?, ?, ?)`,
            )
            .run(task.id, p.session, epoch, now, now);
          appendAudit(run, { at: now, type: 'claim:granted', key: p.key, session: p.session, epoch });
          return { ok: true, claim: toClaim(current(task.id) as ClaimRow), granted: true };
        }),
      ),
    release: (p) =>
      Promise.resolve(
        run.write((): FencedResult => {
          const task = taskRow(run, p.key);
          if (task === undefined) throw new NotFoundError('task', p.key);
          sessionRow(run, p.session, false);
          const now = run.now();
          const changed = run
            .prepare(
              `UPDATE claims SET released_at = ?, outcome = ?
               WHERE task_id = ? AND session_id = ? AND epoch = ? AND released_at IS NULL`,
            )
            .run(now, p.outcome, task.id, p.session, p.epoch).changes;
          if (changed === 0) return { ok: false, reason: 'fenced', current: holderOf(run, task.id) };
          run
            .prepare('UPDATE tasks SET holder_session_id = NULL, claimed_at = NULL WHERE id = ?')
            .run(task.id);
          appendAudit(run, {
            at: now,
            type: 'claim:released',
            key: p.key,
            session: p.session,
            epoch: p.epoch,
            detail: { outcome: p.outcome },
          });
          return { ok: true };
        }),
      ),
    current: (key) =>
      Promise.resolve(
        run.read(() => {
          const task = taskRow(run, key);
          if (task === undefined) throw new NotFoundError('task', key);
          const row = current(task.id);
          return row === undefined ? null : toClaim(row);
        }),
      ),
    history: (key) =>
      Promise.resolve(
        run.read(() =>
          (
            run
              .prepare(
                `SELECT ${CLAIM_COLUMNS} FROM claims c JOIN tasks t ON t.id = c.task_id
                 WHERE t.key = ? ORDER BY c.epoch`,
              )
              .all(key) as ClaimRow[]
          ).map(toClaim),
        ),
      ),
  };
}
